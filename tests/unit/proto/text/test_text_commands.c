/* SPDX-License-Identifier: BSD-3-Clause */
/* The classic text commands: exact reply bytes for every command and error. */
#include "test_text_support.h"

#include "stats/stats_detail.h"
#include "store/store_compat.h"

static void test_set_get(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "set a 5 0 3\r\nabc\r\n", "STORED\r\n");
    EXPECT(t, "get a\r\n", "VALUE a 5 3\r\nabc\r\nEND\r\n");
    EXPECT(t, "get nope\r\n", "END\r\n");
    EXPECT(t, "get a nope a\r\n", "VALUE a 5 3\r\nabc\r\nVALUE a 5 3\r\nabc\r\nEND\r\n");
    EXPECT(t, "set e 0 0 0\r\n\r\nget e\r\n", "STORED\r\nVALUE e 0 0\r\n\r\nEND\r\n");
    /* bare "\n" line endings, several spaces between tokens */
    EXPECT(t, "set  b  1  0  2\nhi\r\nget b\n", "STORED\r\nVALUE b 1 2\r\nhi\r\nEND\r\n");
    /* binary-safe values */
    EXPECT(t, "set z 0 0 5\r\n\r\n\0\n\r\r\nget z\r\n",
           "STORED\r\nVALUE z 0 5\r\n\r\n\0\n\r\r\nEND\r\n");
    assert_int_equal(t->stats.cmd_get, 8); /* one per key */
    assert_int_equal(t->stats.get_hits, 6);
    assert_int_equal(t->stats.get_misses, 2);
    assert_int_equal(t->stats.cmd_set, 4);
    tt_free(t);
}

static void test_gets_cas(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "set a 0 0 1\r\n1\r\n", "STORED\r\n");
    tt_feed(t, "gets a\r\n", 8, 0);
    size_t n;
    char *got = tt_drain(t, &n);
    unsigned long long cas = 0;
    assert_int_equal(sscanf(got, "VALUE a 0 1 %llu\r\n", &cas), 1);
    char want[128], req[128];
    snprintf(want, sizeof want, "VALUE a 0 1 %llu\r\n1\r\nEND\r\n", cas);
    assert_string_equal(got, want);
    free(got);

    snprintf(req, sizeof req, "cas a 0 0 1 %llu\r\n2\r\n", cas);
    tt_expect_n(t, req, strlen(req), "STORED\r\n", 8, "cas match");
    tt_expect_n(t, req, strlen(req), "EXISTS\r\n", 8, "cas stale");
    EXPECT(t, "cas nope 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n");
    EXPECT(t, "cas a 0 0 1 noreply\r\nx\r\nget a\r\n", "VALUE a 0 1\r\n2\r\nEND\r\n");
    EXPECT(t, "cas a 0 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n");
    assert_int_equal(t->stats.cas_hits, 1);
    assert_int_equal(t->stats.cas_badval, 1);
    assert_int_equal(t->stats.cas_misses, 1);
    tt_free(t);
}

static void test_add_replace_append_prepend(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "add a 1 0 1\r\nx\r\n", "STORED\r\n");
    EXPECT(t, "add a 2 0 1\r\ny\r\n", "NOT_STORED\r\n");
    EXPECT(t, "replace b 0 0 1\r\ny\r\n", "NOT_STORED\r\n");
    EXPECT(t, "replace a 3 0 1\r\nz\r\n", "STORED\r\n");
    EXPECT(t, "append a 9 0 2\r\n12\r\n", "STORED\r\n");
    EXPECT(t, "prepend a 9 0 2\r\n00\r\n", "STORED\r\n");
    EXPECT(t, "get a\r\n", "VALUE a 3 5\r\n00z12\r\nEND\r\n");
    EXPECT(t, "append nope 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    EXPECT(t, "prepend nope 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    tt_free(t);
}

static void test_noreply(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "set a 0 0 1 noreply\r\n1\r\nadd a 0 0 1 noreply\r\n2\r\nget a\r\n",
           "VALUE a 0 1\r\n1\r\nEND\r\n");
    /* errors are suppressed too */
    EXPECT(t, "incr a x noreply\r\n", "");
    EXPECT(t, "set a 0 0 1 noreply\r\nxy\r\n", "CLIENT_ERROR bad command line format\r\n");
    EXPECT(t, "delete a noreply\r\ndelete a noreply\r\nget a\r\n", "END\r\n");
    EXPECT(t, "touch a 1 noreply\r\nverbosity 1 noreply\r\nflush_all noreply\r\n", "");
    /* noreply counts only as the last token; on get it is a key */
    EXPECT(t, "set k 0 0 1 noreply extra\r\n1\r\n", "STORED\r\n");
    EXPECT(t, "get noreply\r\n", "END\r\n");
    tt_free(t);
}

static void test_keys_and_lengths(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    char k250[251], k251[252], buf[1024];
    memset(k250, 'k', 250);
    k250[250] = '\0';
    memset(k251, 'k', 251);
    k251[251] = '\0';
    int n = snprintf(buf, sizeof buf, "set %s 0 0 1\r\nx\r\n", k250);
    tt_expect_n(t, buf, (size_t)n, "STORED\r\n", 8, "250-byte key");
    /* 251 bytes: refused, the data swallowed (1.6.45) */
    n = snprintf(buf, sizeof buf, "set %s 0 0 1\r\nx\r\n", k251);
    EXPECT(t, "", "");
    tt_expect_n(t, buf, (size_t)n, "CLIENT_ERROR bad command line format\r\n", 38, "251 set");
    /* a multiget with a bad key sends only the error (+ 1.6.45's empty line) */
    n = snprintf(buf, sizeof buf, "get %s %s\r\n", k250, k251);
    tt_expect_n(t, buf, (size_t)n, "CLIENT_ERROR bad command line format\r\n\r\n", 40, "251 get");
    /* the error undoes only its own line: the requests before it in the
     * read keep their replies, whether their value was copied (short) or
     * referenced (over REPLY_COPY_MAX) */
    static char big[700 + 1], in[2048], want[2048];
    memset(big, 'v', 700);
    n = snprintf(buf, sizeof buf, "set big 0 0 700\r\n%s\r\n", big);
    tt_expect_n(t, buf, (size_t)n, "STORED\r\n", 8, "700-byte value");
    n = snprintf(in, sizeof in, "get %s\r\nget big\r\nget %s\r\nget big %s\r\nget big\r\n", k250,
                 k251, k251);
    int w = snprintf(want, sizeof want,
                     "VALUE %s 0 1\r\nx\r\nEND\r\nVALUE big 0 700\r\n%s\r\nEND\r\n"
                     "CLIENT_ERROR bad command line format\r\n\r\n"
                     "CLIENT_ERROR bad command line format\r\n\r\n"
                     "VALUE big 0 700\r\n%s\r\nEND\r\n",
                     k250, big, big);
    tt_expect_n(t, in, (size_t)n, want, (size_t)w, "errors among hits in one read");
    n = snprintf(buf, sizeof buf, "delete %s\r\nincr %s 1\r\ntouch %s 1\r\n", k251, k251, k251);
    tt_expect_n(t, buf, (size_t)n,
                "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"
                "CLIENT_ERROR bad command line format\r\n",
                38 * 3, "251 others");
    /* control characters and tabs are part of keys */
    EXPECT(t, "set a\tb 0 0 1\r\nx\r\nget a\tb\r\n", "STORED\r\nVALUE a\tb 0 1\r\nx\r\nEND\r\n");
    tt_free(t);
}

static void test_data_length_rules(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    /* unknown length: nothing swallowed, the next line is a command */
    EXPECT(t, "set a 0 0 -1\r\nget a\r\n", "CLIENT_ERROR bad command line format\r\nEND\r\n");
    EXPECT(t, "set a 0 0 abc\r\nget a\r\n", "CLIENT_ERROR bad command line format\r\nEND\r\n");
    EXPECT(t, "set a 0 0 2147483648\r\n", "CLIENT_ERROR bad command line format\r\n");
    /* bad flags / exptime with a known length: swallowed */
    EXPECT(t, "set a -1 0 1\r\nx\r\nget a\r\n", "CLIENT_ERROR bad command line format\r\nEND\r\n");
    EXPECT(t, "set a 18446744073709551616 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n");
    EXPECT(t, "set a 0 zz 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n");
    /* flags truncated mod 2^32 */
    EXPECT(t, "set f 4294967296 0 1\r\nx\r\nget f\r\n", "STORED\r\nVALUE f 0 1\r\nx\r\nEND\r\n");
    EXPECT(t, "set f 18446744073709551615 0 1\r\nx\r\nget f\r\n",
           "STORED\r\nVALUE f 4294967295 1\r\nx\r\nEND\r\n");
    EXPECT(t, "set f +7 0 1\r\nx\r\nget f\r\n", "STORED\r\nVALUE f 7 1\r\nx\r\nEND\r\n");
    EXPECT(t, "set f 5\0z 0 1\r\nx\r\nget f\r\n", "STORED\r\nVALUE f 5 1\r\nx\r\nEND\r\n");
    /* the length is a strict token in 1.6.45; "x\r\n" is then too short */
    EXPECT(t, "set f 6 0 1\tq\r\nx\r\nget f\r\n",
           "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"
           "VALUE f 5 1\r\nx\r\nEND\r\n");
    /* bad data chunk: no resync, the leftover is the next command */
    EXPECT(t, "set b 0 0 1\r\nab\r\n",
           "CLIENT_ERROR bad data chunk\r\nCLIENT_ERROR bad command line format\r\n");
    EXPECT(t, "get b\r\n", "END\r\n");
    EXPECT(t, "set a 0 0 1\r\n", "");
    EXPECT(t, "x\r\n", "STORED\r\n");
    tt_free(t);
}

static void test_too_large(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "set big 0 0 1\r\nx\r\n", "STORED\r\n");
    size_t vlen = TT_ITEM_MAX + 10;
    char *req = malloc(vlen + 64);
    int h = sprintf(req, "set big 0 0 %zu\r\n", vlen);
    memset(req + h, 'v', vlen);
    memcpy(req + h + vlen, "\r\nget big\r\n", 11);
    tt_expect_n(t, req, (size_t)h + vlen + 11, "SERVER_ERROR object too large for cache\r\nEND\r\n",
                46, "too large");
    assert_int_equal(t->stats.store_too_large, 1);
    /* noreply hides the error, the data is still swallowed */
    h = sprintf(req, "set big 0 0 %zu noreply\r\n", vlen);
    memset(req + h, 'v', vlen);
    memcpy(req + h + vlen, "\r\nget big\r\n", 11);
    tt_expect_n(t, req, (size_t)h + vlen + 11, "END\r\n", 5, "too large noreply");
    free(req);
    tt_free(t);
}

static void no_evictions(struct settings *s)
{
    s->evictions = false;
}

static void test_no_memory(void **state)
{
    (void)state;
    struct tt *t = tt_new_with(no_evictions);
    size_t vlen = 32 * 1024;
    char *req = malloc(vlen + 64);
    char *got = NULL;
    size_t n = 0;
    bool full = false;
    /* -M: fill the cache until the store refuses (TT_MEM is 8 MiB) */
    for (int i = 0; i < 1000 && !full; i++) {
        int h = sprintf(req, "set k%d 0 0 %zu\r\n", i, vlen);
        memset(req + h, 'v', vlen);
        memcpy(req + h + vlen, "\r\n", 2);
        tt_feed(t, req, (size_t)h + vlen + 2, 0);
        got = tt_drain(t, &n);
        if (strcmp(got, "STORED\r\n") != 0) {
            assert_string_equal(got, "SERVER_ERROR out of memory storing object\r\n");
            full = true;
        }
        free(got);
    }
    assert_true(full);
    assert_int_equal(t->stats.store_no_memory, 1);
    /* a refused set removes the old value; the data was swallowed */
    int h = sprintf(req, "set k0 0 0 %zu\r\n", vlen);
    memset(req + h, 'v', vlen);
    memcpy(req + h + vlen, "\r\nget k0\r\n", 10);
    tt_feed(t, req, (size_t)h + vlen + 10, 0);
    got = tt_drain(t, &n);
    assert_string_equal(got, "SERVER_ERROR out of memory storing object\r\nEND\r\n");
    free(got);
    free(req);
    tt_free(t);
}

static void test_arith(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "incr n 1\r\n", "NOT_FOUND\r\n");
    EXPECT(t, "set n 0 0 20\r\n18446744073709551615\r\nincr n 2\r\n", "STORED\r\n1\r\n");
    EXPECT(t, "decr n 5\r\n", "0\r\n");
    EXPECT(t, "set n 0 0 3\r\n100\r\ndecr n 1\r\nget n\r\n",
           "STORED\r\n99\r\nVALUE n 0 3\r\n99 \r\nEND\r\n");
    EXPECT(t, "incr n 1\r\n", "100\r\n");
    EXPECT(t, "incr n -1\r\nincr n abc\r\nincr n 18446744073709551616\r\n",
           "CLIENT_ERROR invalid numeric delta argument\r\n"
           "CLIENT_ERROR invalid numeric delta argument\r\n"
           "CLIENT_ERROR invalid numeric delta argument\r\n");
    EXPECT(t, "set s 0 0 3\r\nabc\r\nincr s 1\r\n",
           "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    EXPECT(t, "incr\r\nincr n\r\n",
           "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n");
    assert_int_equal(t->stats.incr_misses, 1);
    assert_int_equal(t->stats.incr_hits, 2);
    assert_int_equal(t->stats.decr_hits, 2);
    tt_free(t);
}

static void test_touch_gat_delete(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "set a 3 0 1\r\nx\r\n", "STORED\r\n");
    EXPECT(t, "touch a 100\r\ntouch zz 100\r\n", "TOUCHED\r\nNOT_FOUND\r\n");
    EXPECT(t, "touch a abc\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
    EXPECT(t, "gat 100 a zz\r\n", "VALUE a 3 1\r\nx\r\nEND\r\n");
    EXPECT(t, "gat x a\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
    EXPECT(t, "gat 100\r\n", "CLIENT_ERROR bad command line format\r\n");
    tt_feed(t, "gats 0 a\r\n", 10, 0);
    size_t n;
    char *got = tt_drain(t, &n);
    unsigned long long cas;
    assert_int_equal(sscanf(got, "VALUE a 3 1 %llu\r\n", &cas), 1);
    free(got);
    assert_int_equal(t->stats.cmd_touch, 2 + 2 + 1);
    assert_int_equal(t->stats.touch_hits, 1 + 1 + 1);
    assert_int_equal(t->stats.touch_misses, 2);
    assert_int_equal(t->stats.cmd_get, 0);
    EXPECT(t, "delete a\r\ndelete a\r\n", "DELETED\r\nNOT_FOUND\r\n");
    EXPECT(t, "set a 0 0 1\r\nx\r\ndelete a 0\r\n", "STORED\r\nDELETED\r\n");
    EXPECT(t, "delete\r\n", "CLIENT_ERROR bad command line format\r\n");
    EXPECT(t, "delete a b c d e\r\ndelete a b noreply\r\ndelete a b c noreply\r\n",
           "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n");
    assert_int_equal(t->stats.delete_hits, 2);
    assert_int_equal(t->stats.delete_misses, 2); /* "delete a b noreply" ran */
    tt_free(t);
}

static void test_misc_commands(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "version\r\n", "VERSION 1.6.45\r\n");
    EXPECT(t, "verbosity 1\r\nverbosity\r\nverbosity x\r\n",
           "OK\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n");
    EXPECT(t, "GET a\r\nfoo\r\nxy\r\n", "ERROR\r\nERROR\r\nERROR\r\n");
    /* 1.6.45: under 4 bytes with the line end, or a leading space */
    EXPECT(t, "x\r\nab\n get a\r\n",
           "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"
           "ERROR\r\n");
    EXPECT(t, "\r\n", "CLIENT_ERROR bad command line format\r\n");
    EXPECT(t, "get\r\nset a 0 0\r\n",
           "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n");
    EXPECT(t, "shutdown\r\n", "SERVER_ERROR: shutdown not enabled\r\n");
    EXPECT(t, "cache_memlimit 4\r\ncache_memlimit 2000000000\r\ncache_memlimit\r\ncache_memlimit x\r\n",
           "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"
           "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\nERROR\r\nERROR\r\n");
    EXPECT(t, "set a 0 0 1\r\nx\r\nflush_all\r\nget a\r\n", "STORED\r\nOK\r\nEND\r\n");
    EXPECT(t, "flush_all abc\r\nflush_all 0 noreply\r\nflush_all 1000 2 3\r\n",
           "CLIENT_ERROR invalid exptime argument\r\nOK\r\n");
    assert_int_equal(t->stats.cmd_flush, 4);
    /* 1.6.45: the delay is the first argument, noreply the last, the rest ignored */
    EXPECT(t, "set a 0 0 1\r\nx\r\nflush_all 0 2 3\r\nget a\r\nflush_all x 2 3\r\n"
              "flush_all noreply 2\r\nflush_all 0 2 noreply\r\n",
           "STORED\r\nOK\r\nEND\r\nCLIENT_ERROR invalid exptime argument\r\n"
           "CLIENT_ERROR invalid exptime argument\r\n");
    assert_int_equal(t->stats.cmd_flush, 8);
#ifndef NODELAY_DEBUG
    EXPECT(t, "debugtime 10\r\n", "ERROR\r\n");
#endif
    tt_free(t);
}

static void no_flush(struct settings *s)
{
    s->flush_enabled = false;
    s->dump_enabled = false;
    s->watch_enabled = false;
}

static void test_disabled(void **state)
{
    (void)state;
    struct tt *t = tt_new_with(no_flush);
    EXPECT(t, "flush_all\r\n", "CLIENT_ERROR flush_all not allowed\r\n");
    assert_int_equal(t->stats.cmd_flush, 1);
    /* refused whatever the arguments, silently under noreply (1.6.45) */
    EXPECT(t, "flush_all 1 2 3\r\nflush_all x 2\r\nflush_all 1 2 noreply\r\nversion\r\n",
           "CLIENT_ERROR flush_all not allowed\r\nCLIENT_ERROR flush_all not allowed\r\n"
           "VERSION 1.6.45\r\n");
    assert_int_equal(t->stats.cmd_flush, 4);
    EXPECT(t, "lru_crawler metadump all\r\n", "ERROR metadump not allowed\r\n");
    EXPECT(t, "stats cachedump 1 1\r\n", "CLIENT_ERROR stats cachedump not allowed\r\n");
    EXPECT(t, "watch\r\n", "CLIENT_ERROR watch commands not allowed\r\n");
    tt_free(t);
}

static void detail_on(struct settings *s)
{
    SETTINGS_SET(s, detail_enabled, true);
}

/* The server's recording, reached as the real server's ops reach it. */
static void detail_record(void *ctx, const char *key, size_t nkey, char op, bool hit)
{
    (void)ctx;
    stats_detail_record(key, nkey, op, hit);
}

/* With stats detail on, every key of get/gat, every set and delete is
 * recorded per prefix (the recording itself is the server's). */
static void test_stats_detail_bookkeeping(void **state)
{
    (void)state;
    stats_detail_clear();
    struct tt *t = tt_new_with(detail_on);
    struct server_ops ops = server_ops_none;
    ops.stats_detail = detail_record;
    t->s.ops = &ops;
    EXPECT(t, "set p:a 0 0 1\r\nx\r\nget p:a p:b\r\ngat 0 p:a\r\ndelete p:a\r\nget q\r\n",
           "STORED\r\nVALUE p:a 0 1\r\nx\r\nEND\r\nVALUE p:a 0 1\r\nx\r\nEND\r\nDELETED\r\nEND\r\n");
    struct reply_queue q;
    reply_init(&q);
    assert_int_equal(stats_detail_dump(&q), 0);
    char buf[512];
    struct iovec iov[16];
    int n = reply_iov(&q, iov, 16);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    buf[len] = '\0';
    assert_string_equal(buf, "PREFIX p get 3 hit 2 set 1 del 1\r\nEND\r\n");
    reply_release(&q);
    stats_detail_clear();
    tt_free(t);
}

static void test_stats_parsing(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "stats detail\r\nstats detail foo\r\n",
           "CLIENT_ERROR usage: stats detail on|off|dump\r\n"
           "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
    EXPECT(t, "stats cachedump\r\nstats cachedump x 1\r\nstats cachedump 64 1\r\n",
           "CLIENT_ERROR bad command line\r\nCLIENT_ERROR bad command line format\r\n"
           "CLIENT_ERROR Illegal slab id\r\n");
    EXPECT(t, "stats no_such_group\r\n", "ERROR\r\n");
    tt_free(t);
}

/* A fake server: what the protocol asked of it, and canned answers. */
struct fake_server {
    int shutdowns, graceful;
    unsigned verbosity;
    size_t memlimit;
};

static void fake_shutdown(void *ctx, bool graceful)
{
    struct fake_server *f = ctx;
    f->shutdowns++;
    f->graceful += graceful;
}

static void fake_verbosity(void *ctx, unsigned level)
{
    ((struct fake_server *)ctx)->verbosity = level;
}

static int fake_memlimit(void *ctx, size_t mb)
{
    ((struct fake_server *)ctx)->memlimit = mb;
    return mb == 13 ? -1 : 0;
}

static enum server_stats_rc fake_stats(void *ctx, const char *args, size_t len,
                                       struct server_stats_out *out)
{
    (void)ctx;
    assert_non_null(out->raw);
    if (len == 0) {
        assert_int_equal(stats_emit_u64(&out->emit, "pid", 7), 0);
        assert_int_equal(stats_emit_str(&out->emit, "version", "x y"), 0);
        return SERVER_STATS_END;
    }
    if (len == 5 && memcmp(args, "reset", 5) == 0)
        return SERVER_STATS_RESET;
    if (len == 9 && memcmp(args, "detail on", 9) == 0)
        return SERVER_STATS_OK;
    if (len == 11 && memcmp(args, "detail dump", 11) == 0)
        return reply_str(out->raw, "PREFIX a get 1 hit 0 set 0 del 0\r\nEND\r\n") == 0
                   ? SERVER_STATS_DONE
                   : SERVER_STATS_NOMEM;
    if (len == 5 && memcmp(args, "items", 5) == 0) {
        assert_int_equal(stats_emit_u64(&out->emit, "half", 1), 0); /* rolled back */
        out->msg = "CLIENT_ERROR refused";
        return SERVER_STATS_REFUSED;
    }
    return SERVER_STATS_UNKNOWN;
}

static void shutdown_on(struct settings *s)
{
    s->shutdown_command = true;
}

/* The protocol reaches the server only through the session's ops: a fake
 * one sees every request and frames every answer. */
static void test_server_ops(void **state)
{
    (void)state;
    struct tt *t = tt_new_with(shutdown_on);
    struct fake_server f = {0};
    struct server_ops ops = {
        .ctx = &f,
        .shutdown = fake_shutdown,
        .set_verbosity = fake_verbosity,
        .set_memlimit = fake_memlimit,
        .stats = fake_stats,
        .stats_detail = server_ops_none.stats_detail,
    };
    t->s.ops = &ops;
    EXPECT(t, "stats\r\n", "STAT pid 7\r\nSTAT version x y\r\nEND\r\n");
    EXPECT(t, "stats reset\r\nstats detail on\r\n", "RESET\r\nOK\r\n");
    EXPECT(t, "stats detail dump\r\n", "PREFIX a get 1 hit 0 set 0 del 0\r\nEND\r\n");
    EXPECT(t, "stats items\r\nstats bogus\r\n", "CLIENT_ERROR refused\r\nERROR\r\n");
    EXPECT(t, "verbosity 5\r\n", "OK\r\n");
    assert_int_equal(f.verbosity, 5);
    EXPECT(t, "cache_memlimit 64\r\ncache_memlimit 13\r\n",
           "OK\r\nMEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n");
    assert_int_equal(f.memlimit, 13);
    EXPECT(t, "shutdown graceful\r\n", "");
    assert_int_equal(f.shutdowns, 1);
    assert_int_equal(f.graceful, 1);
    tt_free(t);

    /* without a server (server_ops_none) stats has no group to show */
    t = tt_new();
    EXPECT(t, "stats\r\ncache_memlimit 64\r\n",
           "ERROR\r\nMEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n");
    tt_free(t);
}

static void test_compat_commands(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "slabs reassign 1 0\r\nslabs reassign 1 1\r\nslabs reassign -1 2\r\nslabs reassign x 1\r\n",
           "NOSPARE source class has no spare pages\r\nSAME src and dst class are identical\r\n"
           "BADCLASS invalid src or dst class id\r\nCLIENT_ERROR bad command line format\r\n");
    /* ids are the size classes items are reported in (1..39 with the
     * default -I, fewer with this harness's) */
    unsigned largest = store_class_largest(t->store);
    assert_true(largest > 2 && largest < 64);
    char req[96];
    snprintf(req, sizeof req, "slabs reassign 2 1\r\nslabs reassign 1 %u\r\nslabs reassign 1 %u\r\n",
             largest, largest + 1);
    static const char want[] =
        "NOSPARE source class has no spare pages\r\nNOSPARE source class has no spare pages\r\n"
        "BADCLASS invalid src or dst class id\r\n";
    tt_expect_n(t, req, strlen(req), want, sizeof want - 1, "reassign by class id");
    EXPECT(t, "slabs automove 1\r\nslabs automove 3\r\nslabs automove x\r\nslabs\r\n",
           "OK\r\nERROR\r\nCLIENT_ERROR bad command line format\r\nERROR\r\n");
    EXPECT(t, "slabs automove ratio 0.5\r\nslabs automove window 2\r\nslabs automove window 1800\r\n"
              "slabs automove window 67108864\r\nslabs automove window +3\r\n",
           "OK\r\nCLIENT_ERROR automove window too low or too high\r\nOK\r\n"
           "CLIENT_ERROR automove window too low or too high\r\n"
           "CLIENT_ERROR bad command line format\r\n");
    EXPECT(t, "lru tune 10 10 0.1 2\r\nlru tune 50 50 0.1 2\r\nlru tune 10 10 0 2\r\n",
           "OK\r\nERROR hot and warm pcts must not exceed 80\r\n"
           "ERROR hot/warm age factors must be greater than 0\r\n");
    EXPECT(t, "lru mode flat\r\nlru mode x\r\nlru temp_ttl 10\r\nlru\r\n", "OK\r\nERROR\r\nOK\r\nERROR\r\n");
    EXPECT(t, "lru_crawler crawl all\r\nlru_crawler crawl 1,2\r\nlru_crawler crawl 99\r\n",
           "OK\r\nOK\r\nBADCLASS invalid class id\r\n");
    EXPECT(t, "lru_crawler sleep 2000000\r\nlru_crawler tocrawl 5\r\nlru_crawler\r\n",
           "CLIENT_ERROR sleep must be one second or less\r\nOK\r\nERROR\r\n");
    EXPECT(t, "lru_crawler enable\r\nlru_crawler disable\r\nlru_crawler crawl all\r\n"
              "lru_crawler metadump all\r\nlru_crawler enable\r\n",
           "ERROR failed to start lru crawler thread\r\nOK\r\nCLIENT_ERROR lru crawler disabled\r\n"
           "CLIENT_ERROR lru crawler disabled\r\nOK\r\n");
    EXPECT(t, "watch foo\r\nextstore item_size 1\r\nextstore item_size\r\nrefresh_certs\r\n",
           "ERROR\r\nOK\r\nERROR\r\nError TLS not enabled\r\n");
    /* prefixes in memcached's order; free_memchunks checked and ignored */
    EXPECT(t, "extstore d 3\r\nextstore m 0.5\r\nextstore max_f 1e999\r\n"
              "extstore f 1 2\r\nextstore f 1\r\nextstore free_memchunks 64 1\r\n"
              "extstore item_size +1 noreply\r\nextstore max_frag nan\r\n",
           "OK\r\nERROR\r\nERROR\r\nOK\r\nERROR\r\nERROR\r\nOK\r\n");
    EXPECT(t, "slabs automove ratio 1e999\r\nlru tune 10 10 1e-400 2\r\n", "ERROR\r\nERROR\r\n");
    tt_free(t);
}

static void test_dump(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "set a/b 7 0 2\r\nxy\r\n", "STORED\r\n");
    EXPECT(t, "lru_crawler mgdump all\r\n", "OK\r\nmg a/b\r\nEN\r\n");
    tt_feed(t, "lru_crawler metadump all\r\n", 26, 0);
    size_t n;
    char *got = tt_drain(t, &n);
    long la;
    unsigned long long cas;
    unsigned cls;
    char tail[64];
    assert_int_equal(sscanf(got, "OK\r\nkey=a%%2Fb exp=-1 la=%ld cas=%llu fetch=no cls=%u %63[^\n]",
                            &la, &cas, &cls, tail),
                     4);
    assert_non_null(strstr(tail, " flags=7"));
    assert_true(n > 5 && memcmp(got + n - 5, "END\r\n", 5) == 0);
    free(got);
    EXPECT(t, "lru_crawler metadump 99\r\n", "BADCLASS invalid class id\r\n");
    EXPECT(t, "version\r\nlru_crawler metadump all\r\n",
           "VERSION 1.6.45\r\nERROR cannot pipeline other commands before metadump\r\n");
    tt_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_get),
        cmocka_unit_test(test_gets_cas),
        cmocka_unit_test(test_add_replace_append_prepend),
        cmocka_unit_test(test_noreply),
        cmocka_unit_test(test_keys_and_lengths),
        cmocka_unit_test(test_data_length_rules),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_no_memory),
        cmocka_unit_test(test_arith),
        cmocka_unit_test(test_touch_gat_delete),
        cmocka_unit_test(test_misc_commands),
        cmocka_unit_test(test_disabled),
        cmocka_unit_test(test_stats_detail_bookkeeping),
        cmocka_unit_test(test_stats_parsing),
        cmocka_unit_test(test_server_ops),
        cmocka_unit_test(test_compat_commands),
        cmocka_unit_test(test_dump),
    };
    return cmocka_run_group_tests(tests, tt_group_setup, NULL);
}
