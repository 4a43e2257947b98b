/* SPDX-License-Identifier: BSD-3-Clause */
/* The text framing: requests split at every byte, pipelines, values read
 * straight into item memory, the line limit, the HTTP guard, quit, -R
 * yields and ascii authentication. */
#include <fcntl.h>
#include <unistd.h>

#include "test_text_support.h"
#include "proto/text/text_internal.h"

/* A script mixing every kind of line; its replies must not depend on how
 * the bytes are cut into reads. */
static const char script[] =
    "set a 1 0 3\r\nabc\r\n"
    "get a b a\r\n"
    "add a 0 0 1\r\nx\r\n"
    "set b 0 0 0 noreply\r\n\r\n"
    "append a 0 0 2\r\nde\r\n"
    "gets b\n"
    "incr c 1\r\n"
    "set c 0 0 2\r\n10\r\n"
    "incr c 5\r\ndecr c 100\r\n"
    "set d 0 0 1\r\nxy\r\n" /* bad data chunk, leftover "\n" */
    "touch a 0\r\n"
    "delete b\r\n"
    "bogus line\r\n"
    "\r\n"
    "get a\r\n"
    "version\r\n";

static char *run_split(size_t chunk, size_t *n)
{
    struct tt *t = tt_new();
    tt_feed(t, script, sizeof script - 1, chunk);
    char *out = tt_drain(t, n);
    /* gets prints a CAS that differs per store instance: blank it */
    char *v = strstr(out, "VALUE b 0 0 ");
    if (v)
        for (char *p = v + 12; *p >= '0' && *p <= '9'; p++)
            *p = '#';
    assert_false(t->closed);
    tt_free(t);
    return out;
}

static void test_split_every_byte(void **state)
{
    (void)state;
    size_t n_whole;
    char *whole = run_split(0, &n_whole);
    const char *want_start = "STORED\r\nVALUE a 1 3\r\nabc\r\nVALUE a 1 3\r\nabc\r\nEND\r\n"
                             "NOT_STORED\r\nSTORED\r\nVALUE b 0 0 ";
    assert_memory_equal(whole, want_start, strlen(want_start));
    const char *want_end = "\r\nNOT_FOUND\r\nSTORED\r\n15\r\n0\r\n"
                           "CLIENT_ERROR bad data chunk\r\nCLIENT_ERROR bad command line format\r\n"
                           "TOUCHED\r\nDELETED\r\nERROR\r\nCLIENT_ERROR bad command line format\r\n"
                           "VALUE a 1 5\r\nabcde\r\nEND\r\nVERSION 1.6.45\r\n";
    assert_true(n_whole > strlen(want_end));
    assert_memory_equal(whole + n_whole - strlen(want_end), want_end, strlen(want_end));
    for (size_t chunk = 1; chunk < sizeof script; chunk++) {
        size_t n;
        char *got = run_split(chunk, &n);
        if (n != n_whole || memcmp(got, whole, n) != 0) {
            fprintf(stderr, "chunk %zu differs:\n[%s]\n[%s]\n", chunk, got, whole);
            fail();
        }
        free(got);
    }
    /* and cut once at every position */
    for (size_t cut = 1; cut < sizeof script - 1; cut++) {
        struct tt *t = tt_new();
        tt_feed(t, script, cut, 0);
        tt_feed(t, script + cut, sizeof script - 1 - cut, 0);
        size_t n;
        char *got = tt_drain(t, &n);
        char *v = strstr(got, "VALUE b 0 0 ");
        if (v)
            for (char *p = v + 12; *p >= '0' && *p <= '9'; p++)
                *p = '#';
        assert_int_equal(n, n_whole);
        assert_memory_equal(got, whole, n);
        free(got);
        tt_free(t);
    }
    free(whole);
}

static void test_large_value_sink(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    size_t vlen = 50000;
    char *req = malloc(vlen + 64);
    int h = sprintf(req, "set big 3 0 %zu\r\n", vlen);
    for (size_t i = 0; i < vlen; i++)
        req[h + i] = (char)('a' + i % 26);
    memcpy(req + h + vlen, "\r\n", 2);
    /* the first read leaves most of the value unread: the session asks for
     * it to be read straight into the item */
    tt_feed(t, req, (size_t)h + 100, 0);
    assert_true(t->s.sink_len == vlen - 100);
    assert_int_equal(t->in.len, 0);
    tt_feed(t, req + h + 100, vlen - 100 + 2, 1000);
    size_t n;
    char *got = tt_drain(t, &n);
    assert_string_equal(got, "STORED\r\n");
    free(got);
    assert_null(t->s.sink);
    tt_feed(t, "get big\r\n", 9, 0);
    got = tt_drain(t, &n);
    assert_int_equal(n, 19 + vlen + 7);
    assert_memory_equal(got, "VALUE big 3 50000\r\n", 19);
    assert_memory_equal(got + 19, req + h, vlen);
    assert_memory_equal(got + 19 + vlen, "\r\nEND\r\n", 7);
    free(got);
    free(req);
    tt_free(t);
}

static void test_pipeline(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    char req[8192], want[8192];
    size_t nr = 0, nw = 0;
    for (int i = 0; i < 20; i++) {
        nr += (size_t)snprintf(req + nr, sizeof req - nr, "set k%d 0 0 %d\r\n%0*d\r\nget k%d\r\n",
                               i, i + 1, i + 1, i, i);
        nw += (size_t)snprintf(want + nw, sizeof want - nw, "STORED\r\nVALUE k%d 0 %d\r\n%0*d\r\nEND\r\n",
                               i, i + 1, i + 1, i);
    }
    tt_expect_n(t, req, nr, want, nw, "pipeline");
    tt_free(t);
}

/* A read's lookups are prefetched as one batch that steps over storage
 * commands' values (text_prefetch_ahead): values that look like commands,
 * lengths that lie or do not parse, and a value not all in the read must
 * answer exactly as the same requests sent one read each, where nothing is
 * batched. */
static const char *const batch_reqs[] = {
    "set a 0 0 9\r\nget b\r\nxy\r\n", /* a value holding a lookup line */
    "get a\r\n",
    "gets zz\r\n",
    "set b 0 0 3\r\nabcdef\r\n",       /* the length lies: bad data chunk */
    "get b\r\n",
    "set c 0 0 x1\r\n",                /* does not parse */
    "cas a 0 0 2 999\r\nzz\r\n",     /* EXISTS */
    "prepend a 0 0 1\r\n>\r\n",
    "gat 0 a b\r\n",
    "mg a v\r\n",
    "set d 0 0 12345678901\r\n",       /* too long to step over */
    "add e 0 0 2\r\nee\r\n",
    "get a e d\r\n",
    " get a\r\n",                      /* names no command: ERROR */
    "get  a\r\n",                      /* two spaces, */
    "get a \r\n",                      /* a trailing one: the same get */
    "version\r\n",                     /* ends a batch, the next starts after it */
    "gets a zz a\r\n",
    "get a\r\r\n",                     /* key "a\r": a miss */
    "set f 0 0 4\r\nfi",               /* the value goes on in the next read */
};

static void test_batch_steps_over_values(void **state)
{
    (void)state;
    size_t n = sizeof batch_reqs / sizeof *batch_reqs;
    char all[1024];
    size_t len = 0;
    struct tt *one = tt_new();
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(batch_reqs[i]);
        memcpy(all + len, batch_reqs[i], l);
        len += l;
        tt_feed(one, batch_reqs[i], l, 0);
    }
    tt_feed(one, "ve\r\nget f\r\n", 11, 0);
    size_t n_one;
    char *want = tt_drain(one, &n_one);
    struct tt *batch = tt_new();
    tt_feed(batch, all, len, 0);
    tt_feed(batch, "ve\r\nget f\r\n", 11, 0);
    size_t n_batch;
    char *got = tt_drain(batch, &n_batch);
    assert_int_equal(n_batch, n_one);
    assert_memory_equal(got, want, n_one);
    assert_non_null(strstr(got, "VALUE a 0 9\r\nget b\r\nxy\r\nEND\r\n"));
    assert_non_null(strstr(got, "CLIENT_ERROR bad data chunk\r\n"));
    assert_non_null(strstr(got, "VALUE a 0 10\r\n>get b\r\nxy\r\nVALUE e 0 2\r\nee\r\nEND\r\n"));
    assert_non_null(strstr(got, "STORED\r\nVALUE f 0 4\r\nfive\r\nEND\r\n"));
    free(want);
    free(got);
    tt_free(one);
    tt_free(batch);
}

/* What text_tokenize must make of a line, a byte at a time as memcached's
 * tokenizer: words split on spaces, the 24th keeping the unsplit rest
 * without its trailing spaces. */
static size_t naive_tokens(const char *raw, size_t len, struct text_token *tok)
{
    size_t n = 0, i = 0;
    while (i < len) {
        while (i < len && raw[i] == ' ')
            i++;
        if (i == len)
            break;
        size_t b = i;
        if (n == TEXT_MAX_TOKENS - 1) {
            size_t e = len;
            while (raw[e - 1] == ' ')
                e--;
            tok[n++] = (struct text_token){raw + b, e - b};
            break;
        }
        while (i < len && raw[i] != ' ')
            i++;
        tok[n++] = (struct text_token){raw + b, i - b};
    }
    return n;
}

/* The tokenizer reads eight bytes at a time: words of every length,
 * spaces at every offset, lines that end in or out of a word. */
static void test_tokenize_every_offset(void **state)
{
    (void)state;
    static const char alphabet[] = "  ab\r\t";
    uint64_t x = 7;
    char raw[80];
    for (int round = 0; round < 20000; round++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = (size_t)(x >> 58) + (round % 3 == 0 ? 0 : 10); /* up to 73 */
        uint64_t y = x;
        for (size_t i = 0; i < len; i++) {
            y = y * 6364136223846793005ull + 1442695040888963407ull;
            /* runs of letters long enough to span words */
            raw[i] = (y >> 60) < 12 ? 'k' : alphabet[(y >> 40) % (sizeof alphabet - 1)];
        }
        struct text_line l;
        struct text_token want[TEXT_MAX_TOKENS];
        text_tokenize(&l, raw, len);
        size_t n = naive_tokens(raw, len, want);
        assert_int_equal(l.ntok, n);
        for (size_t i = 0; i < n; i++) {
            assert_ptr_equal(l.tok[i].s, want[i].s);
            assert_int_equal(l.tok[i].len, want[i].len);
        }
    }
}

static void test_u64toa(void **state)
{
    (void)state;
    uint64_t v[128];
    size_t n = 0;
    v[n++] = 0;
    v[n++] = UINT64_MAX;
    for (uint64_t p = 1; p <= 1000000000000000000ull; p *= 10) {
        v[n++] = p - 1;
        v[n++] = p;
        v[n++] = p + 1;
        v[n++] = p * 9 + 99;
    }
    v[n++] = 10000000000000000000ull;
    v[n++] = 18446744073709551614ull;
    for (size_t i = 0; i < n; i++) {
        char want[32], got[32];
        snprintf(want, sizeof want, "%llu", (unsigned long long)v[i]);
        char *e = text_u64toa(v[i], got);
        assert_int_equal((size_t)(e - got), strlen(want));
        assert_memory_equal(got, want, strlen(want));
    }
    /* every value of the short path (under 10000) and past it */
    for (uint64_t x = 0; x < 100000; x++) {
        char want[32], got[32];
        snprintf(want, sizeof want, "%llu", (unsigned long long)x);
        char *e = text_u64toa(x, got);
        assert_int_equal((size_t)(e - got), strlen(want));
        assert_memory_equal(got, want, strlen(want));
    }
}

/* A multiget that pauses after every value (its connection may owe next
 * to nothing) goes on where it stopped: among the tokens, past them in
 * the unsplit rest, gat's too; the replies are those of the same line
 * run in one go. */
static void test_multiget_paused_per_key(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "get k0 k1 nope k2  k3 k4 k5 k6 k7 k8 k9 k10 k11 k12 k13 k14 k15 k16 k17 k18 k19 "
        "k20 k21 k22   k23 k24 nope k25 k26 k27 k28 k29 k0   \r\n",
        "gets k3 k29 k4\r\n",
        "gat 0 k1 k2 k3 k4 k5 k6 k7 k8 k9 k10 k11 k12 k13 k14 k15 k16 k17 k18 k19 k20 k21 "
        "k22 k23 k24 k25\r\n",
        "get k5\r\n",
    };
    for (size_t li = 0; li < sizeof lines / sizeof *lines; li++) {
        char *out[2];
        size_t nout[2];
        for (int paused = 0; paused < 2; paused++) {
            struct tt *t = tt_new();
            char set[64];
            for (int k = 0; k < 30; k++) {
                int n = snprintf(set, sizeof set, "set k%d %d 0 2\r\nv%d\r\n", k, k, k % 10);
                tt_feed(t, set, (size_t)n, 0);
            }
            size_t nset;
            free(tt_drain(t, &nset));
            const char *in = lines[li];
            size_t len = strlen(in), off = 0;
            t->s.reply_allow = paused ? 1 : SIZE_MAX;
            char *acc = malloc(16384);
            size_t nacc = 0;
            int calls = 0;
            while (off < len) {
                size_t used;
                enum proto_status st = proto_process(&t->s, in + off, len - off, &used);
                off += used;
                size_t n;
                char *got = tt_drain(t, &n);
                memcpy(acc + nacc, got, n);
                nacc += n;
                free(got);
                calls++;
                assert_true(st == PROTO_OK || st == PROTO_PAUSE);
                assert_true(calls < 100);
            }
            /* paused after each value: one call a hit and one more */
            if (paused && li != 3)
                assert_true(calls > 2);
            out[paused] = acc;
            nout[paused] = nacc;
            tt_free(t);
        }
        assert_int_equal(nout[1], nout[0]);
        assert_memory_equal(out[1], out[0], nout[0]);
        assert_non_null(strstr(out[0], li == 0 ? "VALUE k29 29 2\r\nv9\r\nVALUE k0 0 2\r\nv0\r\nEND\r\n"
                                     : li == 2 ? "VALUE k25 25 2\r\nv5\r\nEND\r\n"
                                     : li == 3 ? "VALUE k5 5 2\r\nv5\r\nEND\r\n"
                                               : "VALUE k4 4 2 "));
        free(out[0]);
        free(out[1]);
    }
}

static void two_per_event(struct settings *s)
{
    s->reqs_per_event = 2;
}

static void test_reqs_per_event(void **state)
{
    (void)state;
    struct tt *t = tt_new_with(two_per_event);
    const char *in = "version\r\nversion\r\nversion\r\nversion\r\nversion\r\nver";
    size_t used = 0;
    enum proto_status st = proto_process(&t->s, in, strlen(in), &used);
    assert_int_equal(st, PROTO_YIELD);
    assert_int_equal(used, 18);
    assert_int_equal(reply_pending(&t->s.reply), 2 * 16);
    st = proto_process(&t->s, in + 18, strlen(in) - 18, &used);
    assert_int_equal(st, PROTO_YIELD);
    st = proto_process(&t->s, in + 36, strlen(in) - 36, &used);
    /* one complete request and a partial one: nothing left to yield for */
    assert_int_equal(st, PROTO_OK);
    assert_int_equal(used, 9);
    tt_free(t);
}

static void test_line_limit(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    char junk[3000];
    memset(junk, 'x', sizeof junk);
    tt_feed(t, junk, 2048, 0);
    assert_false(t->closed);
    tt_feed(t, junk, 1, 0);
    assert_true(t->closed);
    tt_free(t);

    /* a multiget line may be any length */
    t = tt_new();
    EXPECT(t, "set k1 0 0 1\r\n1\r\n", "STORED\r\n");
    size_t n = 0;
    static char big[200000];
    n += (size_t)sprintf(big, "get");
    for (int i = 0; i < 20000; i++)
        n += (size_t)sprintf(big + n, " k%d", i);
    tt_feed(t, big, n, 1000);
    assert_false(t->closed);
    EXPECT(t, "\r\n", "VALUE k1 0 1\r\n1\r\nEND\r\n");
    assert_int_equal(t->stats.cmd_get, 20000);
    tt_free(t);

    t = tt_new();
    memcpy(junk, "  gets ", 7);
    tt_feed(t, junk, sizeof junk, 0);
    assert_false(t->closed);
    tt_free(t);
}

static void test_http_and_quit(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "GET / HTTP/1.1\r\nversion\r\n", "");
    assert_true(t->closed);
    tt_free(t);

    t = tt_new();
    EXPECT(t, "get / HTTP/1.1\r\n", "END\r\n"); /* a real get: keys "/" and "HTTP/1.1" */
    assert_false(t->closed);
    EXPECT(t, "version\r\nquit\r\nversion\r\n", "VERSION 1.6.45\r\n");
    assert_true(t->closed);
    tt_free(t);
}

static void ascii_only(struct settings *s)
{
    s->binding_protocol = "ascii";
}

static void binary_only(struct settings *s)
{
    s->binding_protocol = "binary";
}

static void test_negotiation(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    assert_int_equal(t->s.kind, PROTO_KIND_NEGOTIATING);
    EXPECT(t, "version\r\n", "VERSION 1.6.45\r\n");
    assert_int_equal(t->s.kind, PROTO_KIND_TEXT);
    tt_free(t);

    /* 0x80 first: the binary protocol (a VERSION request, answered 0x81) */
    static const char bin_version[24] = {(char)0x80, 0x0b};
    t = tt_new();
    tt_feed(t, bin_version, sizeof bin_version, 0);
    assert_int_equal(t->s.kind, PROTO_KIND_BINARY);
    size_t n;
    char *got = tt_drain(t, &n);
    assert_true(n >= 24);
    assert_int_equal((unsigned char)got[0], 0x81);
    assert_int_equal(got[1], 0x0b);
    free(got);
    tt_free(t);

    t = tt_new_with(ascii_only);
    assert_int_equal(t->s.kind, PROTO_KIND_TEXT);
    tt_free(t);
    t = tt_new_with(binary_only);
    assert_int_equal(t->s.kind, PROTO_KIND_BINARY);
    tt_free(t);
}

static char auth_path[64];

static void with_auth(struct settings *s)
{
    s->auth_file = auth_path;
}

static void test_ascii_auth(void **state)
{
    (void)state;
    strcpy(auth_path, "/tmp/nodelay-text-auth-XXXXXX");
    int fd = mkstemp(auth_path);
    assert_true(fd >= 0);
    const char *file = "alice:s3cret\nbob:pw"; /* no trailing newline */
    assert_int_equal(write(fd, file, strlen(file)), (ssize_t)strlen(file));
    close(fd);
    assert_int_equal(text_auth_load(auth_path), 0);

    struct tt *t = tt_new_with(with_auth);
    assert_false(t->s.authenticated);
    EXPECT(t, "get a\r\n", "CLIENT_ERROR unauthenticated\r\n");
    EXPECT(t, "set x 0 0 9\r\nalice bad\r\n", "CLIENT_ERROR authentication failure\r\n");
    EXPECT(t, "set x 0 0 5\r\nalice\r\n", "CLIENT_ERROR bad authentication token format\r\n");
    EXPECT(t, "set x 0 0 6\r\nbob pw\r\n", "STORED\r\n");
    assert_true(t->s.authenticated);
    EXPECT(t, "get a\r\n", "END\r\n");
    assert_int_equal(t->stats.auth_cmds, 2);
    assert_int_equal(t->stats.auth_errors, 1);
    tt_free(t);

    t = tt_new_with(with_auth);
    EXPECT(t, "set x 0 0 12\r\nalice s3cret\r\nversion\r\n", "STORED\r\nVERSION 1.6.45\r\n");
    tt_free(t);

    t = tt_new_with(with_auth);
    /* as 1.6.45: refused, the connection stays, nothing is swallowed: the
     * next line is another attempt */
    EXPECT(t, "set x 0 0 2147483646\r\n", "CLIENT_ERROR auth token too long\r\n");
    assert_false(t->closed);
    EXPECT(t, "set foo 0 0 12\r\nalice s3cret\r\n", "STORED\r\n");
    tt_free(t);

    /* reload replaces the list */
    fd = open(auth_path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "carol:x\n", 8), 8);
    close(fd);
    assert_int_equal(text_auth_load(auth_path), 0);
    t = tt_new_with(with_auth);
    EXPECT(t, "set x 0 0 6\r\nbob pw\r\nset x 0 0 7\r\ncarol x\r\n",
           "CLIENT_ERROR authentication failure\r\nSTORED\r\n");
    tt_free(t);
    assert_int_equal(text_auth_load("/nonexistent/nodelay-auth"), -1);
    text_auth_unload();
    unlink(auth_path);
}

#ifdef NODELAY_DEBUG
static void test_debugtime(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "set a 0 10 1\r\nx\r\nget a\r\n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
    EXPECT(t, "debugtime 11\r\nget a\r\n", "OK\r\nEND\r\n");
    EXPECT(t, "debugtime x\r\ndebugtime\r\n", "ERROR\r\nERROR\r\n");
    EXPECT(t, "debugtime p\r\ndebugtime r\r\n", "OK\r\nOK\r\n");
    tt_free(t);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_every_byte),
        cmocka_unit_test(test_large_value_sink),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_batch_steps_over_values),
        cmocka_unit_test(test_tokenize_every_offset),
        cmocka_unit_test(test_u64toa),
        cmocka_unit_test(test_multiget_paused_per_key),
        cmocka_unit_test(test_reqs_per_event),
        cmocka_unit_test(test_line_limit),
        cmocka_unit_test(test_http_and_quit),
        cmocka_unit_test(test_negotiation),
        cmocka_unit_test(test_ascii_auth),
#ifdef NODELAY_DEBUG
        cmocka_unit_test(test_debugtime),
#endif
    };
    return cmocka_run_group_tests(tests, tt_group_setup, NULL);
}
