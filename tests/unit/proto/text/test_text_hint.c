/* SPDX-License-Identifier: BSD-3-Clause */
/* The read hint (proto_read_hint): what it found of a read's first line is
 * kept for the text_process that runs it (text_hint), so the replies must
 * be the same bytes whether each read was hinted or not: as the readiness
 * path hints (over the read buffer), as io_uring's does (over the receive's
 * own buffer, copied after, maybe in parts smaller than the line), with
 * lines and keys cut across reads at every byte. */
#include "test_text_support.h"

enum hint_mode {
    HINT_NONE,
    HINT_READY, /* over the read buffer, as conn_ready_batch_event */
    HINT_URING, /* over the received bytes before their copy, as conn_uring_hint */
};

/* One read of len bytes with its hint as mode says; piece > 0 hands the
 * bytes to the input unit in parts of that size (a receive copied into a
 * buffer with less room), after the hint saw them all. */
static void hint_read(struct tt *t, enum hint_mode mode, const char *data, size_t len,
                      size_t piece)
{
    struct store_prefetch_run run;
    char *copy = NULL;
    if (mode == HINT_URING) {
        /* the receive's buffer: overwritten once copied, so that nothing
         * may still point into it */
        copy = malloc(len);
        assert_non_null(copy);
        memcpy(copy, data, len);
        data = copy;
        if (t->in.len == 0) {
            proto_read_hint(&t->s, data, len, &run);
            proto_read_hint_next(&t->s, &run);
        }
    }
    const char *p = data;
    size_t left = len;
    while (left > 0 && !t->closed) {
        char *at;
        size_t room;
        enum conn_in_target to = conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room);
        if (to == CONN_IN_TO_NOWHERE) {
            t->closed = true;
            break;
        }
        size_t n = left < room ? left : room;
        if (piece && n > piece)
            n = piece;
        memcpy(at, p, n);
        p += n;
        left -= n;
        if (mode == HINT_READY && to == CONN_IN_TO_BUF) {
            const char *buf;
            size_t unread = conn_input_unread(&t->in, n, &buf);
            proto_read_hint(&t->s, buf, unread, &run);
            proto_read_hint_next(&t->s, &run);
        }
        tt_act(t, conn_input_received(&t->in, &t->s, to, n));
    }
    if (copy) {
        memset(copy, 'X', len);
        free(copy);
    }
}

/* The replies to script fed in reads of chunk bytes (0: one read). */
static char *hint_run(const char *script, size_t len, enum hint_mode mode, size_t chunk,
                      size_t piece, size_t *n)
{
    struct tt *t = tt_new();
    if (chunk == 0)
        chunk = len;
    for (size_t off = 0; off < len && !t->closed; off += chunk)
        hint_read(t, mode, script + off, len - off < chunk ? len - off : chunk, piece);
    char *out = tt_drain(t, n);
    tt_free(t);
    return out;
}

/* got (freed here) must be want; what (mode, read sizes) says which run. */
static void hint_expect(const char *want, size_t n_want, char *got, size_t n_got,
                        const char *what)
{
    if (n_got != n_want || memcmp(got, want, n_want) != 0) {
        fprintf(stderr, "%s\n  want [%.*s]\n  got  [%.*s]\n", what, (int)n_want, want,
                (int)n_got, got);
        fail();
    }
    free(got);
}

static void hint_same(const char *script, size_t len, size_t chunk, size_t piece)
{
    size_t n_want, n_got;
    char *want = hint_run(script, len, HINT_NONE, chunk, 0, &n_want);
    for (enum hint_mode m = HINT_READY; m <= HINT_URING; m++) {
        char *got = hint_run(script, len, m, chunk, m == HINT_URING ? piece : 0, &n_got);
        char what[64];
        snprintf(what, sizeof what, "mode %d chunk %zu piece %zu", (int)m, chunk, piece);
        hint_expect(want, n_want, got, n_got, what);
    }
    free(want);
}

/* Every kind of first line a hint meets: lookups and storage commands (its
 * key hashed), commands it does not know, a value holding a lookup line,
 * lengths that lie, more words than a hint keeps, meta commands, an empty
 * line, noreply, bare "\n" line ends. */
static const char mixed[] =
    "set a 1 0 3\r\nabc\r\n"
    "get a\r\n"
    "get a b a\r\n"
    "set b 0 0 9\r\nget a\r\nxy\r\n"
    "get b\n"
    "gat 0 a b\r\n"
    "gets zz\r\n"
    "set c 0 0 3\r\nabcdef\r\n"
    "get a b c d e f g h i j k l m n o p q r s t u v w x y z a\r\n"
    "set d 0 0 1 noreply\r\nd\r\n"
    "get  d\r\n"
    "get d \r\n"
    " get d\r\n"
    "\r\n"
    "incr c 1\r\n"
    "mg a v f\r\n"
    "ms e 2 T0\r\nee\r\n"
    "mn\r\n"
    "append a 0 0 2\r\nde\r\n"
    "delete b\r\n"
    "get a\r\r\n"
    "bogus line\r\n"
    "get a b\r\n"
    "version\r\n";

static void test_hint_every_split(void **state)
{
    (void)state;
    size_t len = sizeof mixed - 1;
    size_t n;
    char *whole = hint_run(mixed, len, HINT_NONE, 0, 0, &n);
    assert_non_null(strstr(whole, "VALUE b 0 9\r\nget a\r\nxy\r\nEND\r\n"));
    assert_non_null(strstr(whole, "VALUE a 1 5\r\nabcde\r\nEND\r\n"));
    free(whole);
    for (size_t chunk = 0; chunk <= len; chunk++)
        hint_same(mixed, len, chunk, 0);
    /* a receive copied in parts: the hint saw lines the first run sees
     * only part of */
    for (size_t piece = 1; piece <= 32; piece++)
        hint_same(mixed, len, 0, piece);
}

/* Keys of every length up to memcached's 250 and past it, alone and as the
 * first of a multiget, stored and looked up, cut at every byte. */
static void test_hint_long_keys(void **state)
{
    (void)state;
    char script[8192];
    size_t len = 0;
    for (size_t k = 200; k <= 252; k += 13) {
        char key[300];
        memset(key, 'k', k);
        key[k - 1] = (char)('0' + k % 10);
        len += (size_t)snprintf(script + len, sizeof script - len,
                                "set %.*s 0 0 2\r\nv%zu\r\nget %.*s\r\nget %.*s x\r\n", (int)k,
                                key, k % 10, (int)k, key, (int)k, key);
    }
    assert_true(len < sizeof script);
    size_t n;
    char *out = hint_run(script, len, HINT_NONE, 0, 0, &n);
    assert_non_null(strstr(out, "CLIENT_ERROR"));
    free(out);
    for (size_t chunk = 0; chunk <= 300; chunk++)
        hint_same(script, len, chunk, 0);
    for (size_t piece = 1; piece <= 300; piece += 7)
        hint_same(script, len, 0, piece);
}

/* A hint for a line no run ever takes (the connection found it and then
 * ran nothing) is not used for other bytes: a hint is only about the bytes
 * at the input's first unconsumed one. */
static void test_hint_then_other_bytes(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    EXPECT(t, "set ab 0 0 1\r\nx\r\nset a 0 0 1\r\ny\r\n", "STORED\r\nSTORED\r\n");
    struct store_prefetch_run run;
    const char first[] = "get ab\r\n";
    proto_read_hint(&t->s, first, sizeof first - 1, &run);
    /* the same bytes, run: the hint holds */
    EXPECT(t, "get ab\r\n", "VALUE ab 0 1\r\nx\r\nEND\r\n");
    /* once they are consumed it describes nothing (here its tokens would
     * name "a " the key) */
    EXPECT(t, "get a b\r\n", "VALUE a 0 1\r\ny\r\nEND\r\n");
    /* a hint over a partial line keeps nothing */
    proto_read_hint(&t->s, "get ab", 6, &run);
    assert_int_equal(run.n, 0);
    EXPECT(t, "get a\r\n", "VALUE a 0 1\r\ny\r\nEND\r\n");
    tt_free(t);
}

/* A value too large to store is swallowed across reads, its bytes lines
 * of requests that no hint may describe as the next one; noreply storage
 * before it; quit ends the pipeline (what follows is never run). */
static void test_hint_swallowed_value_and_quit(void **state)
{
    (void)state;
    size_t big = TT_ITEM_MAX + 1000;
    size_t cap = big + 1024, len = 0;
    char *script = malloc(cap);
    assert_non_null(script);
    len += (size_t)snprintf(script, cap, "set a 0 0 1 noreply\r\nA\r\nset b 0 0 %zu\r\n", big);
    for (size_t i = 0; i < big; i += 8)
        memcpy(script + len + i, "get a\r\n\n", big - i < 8 ? big - i : 8);
    len += big;
    const char tail[] = "\r\nget a b\r\nset b 0 0 1 noreply\r\nB\r\nget b\r\nquit\r\nget a\r\n";
    memcpy(script + len, tail, sizeof tail - 1);
    len += sizeof tail - 1;
    size_t n;
    char *out = hint_run(script, len, HINT_NONE, 0, 0, &n);
    const char want[] = "SERVER_ERROR object too large for cache\r\n"
                        "VALUE a 0 1\r\nA\r\nEND\r\nVALUE b 0 1\r\nB\r\nEND\r\n";
    if (n != sizeof want - 1 || memcmp(out, want, n) != 0) {
        fprintf(stderr, "got [%.*s]\n", (int)n, out);
        fail();
    }
    free(out);
    static const size_t chunks[] = {0, 1, 2, 3, 7, 8, 9, 100, 2047, 4096, 4097, 16383, 16384};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
        hint_same(script, len, chunks[i], 0);
    for (size_t piece = 1; piece <= 9; piece++)
        hint_same(script, len, 2048, piece);
    free(script);
}

/* A multiget's line may be any length: one longer than a hint's offsets
 * reach (64 KiB) gets none, one shorter is hinted, its keys far apart,
 * both past the read buffer's first size. */
static void test_hint_long_lines(void **state)
{
    (void)state;
    static const size_t gaps[] = {70000, 30000};
    size_t cap = 128 * 1024, len = 0;
    char *script = malloc(cap);
    assert_non_null(script);
    len += (size_t)snprintf(script, cap, "set a 0 0 1\r\nA\r\nset b 0 0 1\r\nB\r\n");
    for (size_t i = 0; i < 2; i++) {
        len += (size_t)snprintf(script + len, cap - len, "get %s", i ? "b" : "a");
        memset(script + len, ' ', gaps[i]);
        len += gaps[i];
        len += (size_t)snprintf(script + len, cap - len, "%s\r\n", i ? "a" : "b");
    }
    assert_true(len < cap);
    size_t n;
    char *out = hint_run(script, len, HINT_NONE, 0, 0, &n);
    const char want[] = "STORED\r\nSTORED\r\n"
                        "VALUE a 0 1\r\nA\r\nVALUE b 0 1\r\nB\r\nEND\r\n"
                        "VALUE b 0 1\r\nB\r\nVALUE a 0 1\r\nA\r\nEND\r\n";
    if (n != sizeof want - 1 || memcmp(out, want, n) != 0) {
        fprintf(stderr, "got [%.*s]\n", (int)n, out);
        fail();
    }
    free(out);
    static const size_t chunks[] = {0, 999, 2048, 16384, 65536};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
        hint_same(script, len, chunks[i], 0);
    free(script);
}

/* Replies drained so far, appended to *out. */
static void hint_take(struct tt *t, char **out, size_t *n)
{
    size_t k;
    char *got = tt_drain(t, &k);
    *out = realloc(*out, *n + k + 1);
    assert_non_null(*out);
    memcpy(*out + *n, got, k);
    *n += k;
    free(got);
}

/* The replies to script as a connection that owes more than it may gets
 * them: its runs pause (PROTO_PAUSE, a multiget's text_cont) with the
 * hinted line unconsumed; reads that come meanwhile, or while it is not
 * reading (owing over half its allowance), are kept unrun (conn_take's
 * conn_input_keep), and the resume runs them once the replies drained.
 * Hinted as io_uring's window hints (the received bytes, when nothing is
 * buffered, whatever becomes of them) or as the readiness path (only reads
 * it makes: none while busy). */
static char *hint_paused_run(const char *script, size_t len, enum hint_mode mode, size_t chunk,
                             size_t allow, size_t *n)
{
    struct tt *t = tt_new();
    proto_set_allowance(&t->s, allow);
    char *out = NULL;
    *n = 0;
    size_t reads = 0;
    for (size_t off = 0; off < len && !t->closed; off += chunk, reads++) {
        size_t k = len - off < chunk ? len - off : chunk;
        char *data = malloc(k);
        assert_non_null(data);
        memcpy(data, script + off, k);
        struct store_prefetch_run run;
        if (mode == HINT_URING && t->in.len == 0) {
            proto_read_hint(&t->s, data, k, &run);
            proto_read_hint_next(&t->s, &run);
        }
        bool reading = !conn_input_busy(&t->in) && proto_owed(&t->s) <= allow / 2;
        if (!reading) {
            assert_int_equal(conn_input_keep(&t->in, data, k), 0);
        } else {
            const char *p = data;
            size_t left = k;
            while (left > 0 && !t->closed) {
                char *at;
                size_t room;
                enum conn_in_target to = conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room);
                assert_int_not_equal(to, CONN_IN_TO_NOWHERE);
                size_t m = left < room ? left : room;
                memcpy(at, p, m);
                p += m;
                left -= m;
                if (mode == HINT_READY && to == CONN_IN_TO_BUF) {
                    const char *buf;
                    size_t unread = conn_input_unread(&t->in, m, &buf);
                    proto_read_hint(&t->s, buf, unread, &run);
                    proto_read_hint_next(&t->s, &run);
                }
                if (conn_input_received(&t->in, &t->s, to, m) & CONN_IN_CLOSE)
                    t->closed = true;
            }
        }
        memset(data, 'X', k);
        free(data);
        /* the client reads its replies every other read: one resume then */
        if (reads % 2) {
            hint_take(t, &out, n);
            if (!t->closed && conn_input_busy(&t->in) &&
                (conn_input_resume(&t->in, &t->s) & CONN_IN_CLOSE))
                t->closed = true;
        }
    }
    while (!t->closed && conn_input_busy(&t->in)) {
        hint_take(t, &out, n);
        if (conn_input_resume(&t->in, &t->s) & CONN_IN_CLOSE)
            t->closed = true;
    }
    hint_take(t, &out, n);
    tt_free(t);
    return out;
}

/* Owing more than it may: the hint of a line left unconsumed by a pause
 * (before it, or a multiget paused inside it) stays right for the bytes
 * the resume runs, with reads kept meanwhile appended after them. */
static void test_hint_paused_and_kept(void **state)
{
    (void)state;
    char script[4096];
    size_t len = 0;
    char v[200];
    memset(v, 'v', sizeof v);
    for (int i = 0; i < 6; i++)
        len += (size_t)snprintf(script + len, sizeof script - len,
                                "set k%d 0 0 %d\r\n%.*s\r\n", i, 40 + 30 * i, 40 + 30 * i, v);
    len += (size_t)snprintf(script + len, sizeof script - len,
                            "get k0\r\nget k5 k4 k3 k2 k1 k0 k5\r\nget k1\r\nmg k2 v\r\n"
                            "get k3 k3 k3 k3\r\nset k9 0 0 3\r\nget\r\nget k9\r\nget k4\r\n"
                            "gets k2 k9\r\ndelete k9\r\nget k9 k0\r\nget k5\n");
    assert_true(len < sizeof script);
    size_t n_want;
    char *want = hint_run(script, len, HINT_NONE, 0, 0, &n_want);
    assert_non_null(strstr(want, "VALUE k9 0 3\r\nget\r\nEND\r\n"));
    for (size_t allow = 1; allow <= 600; allow += 199) {
        for (size_t chunk = 1; chunk <= 64; chunk++) {
            for (enum hint_mode m = HINT_NONE; m <= HINT_URING; m++) {
                size_t n_got;
                char *got = hint_paused_run(script, len, m, chunk, allow, &n_got);
                char what[64];
                snprintf(what, sizeof what, "mode %d chunk %zu allow %zu", (int)m, chunk, allow);
                hint_expect(want, n_want, got, n_got, what);
            }
        }
    }
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hint_every_split),
        cmocka_unit_test(test_hint_long_keys),
        cmocka_unit_test(test_hint_then_other_bytes),
        cmocka_unit_test(test_hint_paused_and_kept),
        cmocka_unit_test(test_hint_swallowed_value_and_quit),
        cmocka_unit_test(test_hint_long_lines),
    };
    return cmocka_run_group_tests(tests, tt_group_setup, NULL);
}
