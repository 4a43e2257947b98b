/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection's input unit (net/conn_input) without a socket: what it
 * asks the connection to do after each read, -R yields that keep a read's
 * replies together, multigets and dumps paused by the reply allowance and
 * resumed byte-exact, end of input, and the read-buffer limit. */
#include "../proto/text/test_text_support.h"
#include "net/sockopt.h"

#include <sys/socket.h>
#include <unistd.h>

/* Send bytes as one read; returns the action bits of that read alone. */
static unsigned ci_read(struct tt *t, const char *data, size_t len)
{
    char *at;
    size_t room;
    enum conn_in_target to = conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room);
    assert_int_equal(to, CONN_IN_TO_BUF);
    assert_true(room >= len);
    memcpy(at, data, len);
    return conn_input_received(&t->in, &t->s, to, len);
}

static void ci_append(char **out, size_t *n, struct tt *t)
{
    size_t k;
    char *got = tt_drain(t, &k);
    *out = realloc(*out, *n + k + 1);
    assert_non_null(*out);
    memcpy(*out + *n, got, k + 1);
    *n += k;
    free(got);
}

/* Run what one read left, as a connection does: resume while the unit says
 * AGAIN, draining the queue (the client reads) before each resume. Returns
 * how many resumes it took; every pause left at most allow + one reply
 * pending. */
static int ci_run(struct tt *t, unsigned act, size_t allow, size_t one_reply, char **out,
                  size_t *n)
{
    int resumes = 0;
    while (act & CONN_IN_AGAIN) {
        assert_true(reply_pending(&t->s.reply) <= allow + one_reply);
        ci_append(out, n, t);
        act = conn_input_resume(&t->in, &t->s);
        resumes++;
    }
    ci_append(out, n, t);
    return resumes;
}

static void ci_set_many(struct tt *t, int nkeys, size_t vlen)
{
    char *val = malloc(vlen + 1);
    memset(val, 'v', vlen);
    val[vlen] = '\0';
    for (int i = 0; i < nkeys; i++) {
        char line[128];
        int h = snprintf(line, sizeof line, "set key%d %d 0 %zu\r\n", i, i, vlen);
        tt_feed(t, line, (size_t)h, 0);
        tt_feed(t, val, vlen, 0);
        tt_feed(t, "\r\n", 2, 0);
    }
    free(val);
    size_t k;
    free(tt_drain(t, &k));
}

static void test_yield_keeps_replies_together(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    t->opt.proto.reqs_per_event = 2;
    const char in[] = "version\r\nversion\r\nversion\r\nversion\r\nversion\r\nget a";
    unsigned act = ci_read(t, in, sizeof in - 1);
    /* -R 2: a yield, and the replies wait for the read's last request */
    assert_true(act & CONN_IN_YIELD);
    assert_true(act & CONN_IN_AGAIN);
    assert_false(act & CONN_IN_FLUSH);
    assert_false(act & CONN_IN_QUICKACK); /* buffered bytes are requests */
    assert_true(conn_input_busy(&t->in));
    act = conn_input_resume(&t->in, &t->s);
    assert_true(act & CONN_IN_YIELD);
    act = conn_input_resume(&t->in, &t->s);
    /* all five answered; the incomplete "get a" asks for an early ACK */
    assert_false(act & CONN_IN_AGAIN);
    assert_true(act & CONN_IN_FLUSH);
    assert_true(act & CONN_IN_QUICKACK);
    assert_false(conn_input_busy(&t->in));
    assert_int_equal(reply_pending(&t->s.reply), 5 * strlen("VERSION 1.6.45\r\n"));
    tt_free(t);
}

/* A multiget larger than the allowance pauses and resumes where it stopped;
 * the bytes are exactly those of an unpaused run. */
static void test_multiget_paused_is_byte_exact(void **state)
{
    (void)state;
    enum { NKEYS = 300 };
    const size_t vlen = 2000, allow = 16 * 1024;
    char line[NKEYS * 12 + 16];
    size_t h = (size_t)sprintf(line, "gets");
    for (int i = 0; i < NKEYS; i++)
        h += (size_t)sprintf(line + h, " key%d", i % 50 == 7 ? 9999 : i); /* some misses */
    h += (size_t)sprintf(line + h, "\r\nversion\r\n");

    char *want = NULL, *got = NULL;
    size_t nwant = 0, ngot = 0;
    struct tt *a = tt_new();
    ci_set_many(a, NKEYS, vlen);
    unsigned act = ci_read(a, line, h);
    assert_int_equal(ci_run(a, act, SIZE_MAX, 0, &want, &nwant), 0);

    struct tt *b = tt_new();
    ci_set_many(b, NKEYS, vlen);
    b->s.reply_allow = allow;
    act = ci_read(b, line, h);
    assert_true(act & CONN_IN_AGAIN);
    assert_true(act & CONN_IN_FLUSH);
    int resumes = ci_run(b, act, allow, vlen + 64, &got, &ngot);
    /* each pause owed the allowance plus at most one value */
    assert_true(resumes >= (int)(ngot / (allow + vlen + 64)));

    /* same store history, so the same CAS values */
    assert_int_equal(ngot, nwant);
    assert_memory_equal(got, want, nwant);
    assert_true(nwant > NKEYS * vlen / 2);
    assert_string_equal(want + nwant - 23, "\r\nEND\r\nVERSION 1.6.45\r\n");
    free(want);
    free(got);
    tt_free(a);
    tt_free(b);
}

/* A line with an over-long key is answered with the error alone, paused or
 * not (memcached discards what it composed). */
static void test_multiget_bad_key_not_paused(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    ci_set_many(t, 20, 3000);
    char line[4096];
    size_t h = (size_t)sprintf(line, "get");
    for (int i = 0; i < 20; i++)
        h += (size_t)sprintf(line + h, " key%d", i);
    line[h++] = ' ';
    memset(line + h, 'k', 251);
    h += 251;
    h += (size_t)sprintf(line + h, "\r\n");
    t->s.reply_allow = 4096;
    unsigned act = ci_read(t, line, h);
    char *out = NULL;
    size_t n = 0;
    ci_run(t, act, SIZE_MAX, 0, &out, &n);
    assert_string_equal(out, "CLIENT_ERROR bad command line format\r\n\r\n");
    free(out);
    tt_free(t);
}

/* A dump pauses in chunks and ends with END after every item. */
static void test_dump_paused(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    enum { NKEYS = 9000 };
    ci_set_many(t, NKEYS, 10);
    t->s.reply_allow = 8 * 1024;
    const char cmd[] = "lru_crawler mgdump all\r\n";
    unsigned act = ci_read(t, cmd, sizeof cmd - 1);
    assert_true(act & CONN_IN_AGAIN);
    char *out = NULL;
    size_t n = 0;
    assert_true(ci_run(t, act, 8 * 1024, 64 * 32, &out, &n) > 4);
    size_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += out[i] == '\n';
    assert_int_equal(lines, NKEYS + 2); /* OK, the items, EN */
    assert_string_equal(out + n - 4, "EN\r\n");
    free(out);
    tt_free(t);
}

/* End of input: every complete request is answered, over as many resumes as
 * it takes, then close; an incomplete last request is dropped. */
static void test_eof_answers_then_closes(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    t->opt.proto.reqs_per_event = 1;
    const char in[] = "version\r\nversion\r\nversion\r\nget";
    unsigned act = ci_read(t, in, sizeof in - 1);
    assert_true(act & CONN_IN_AGAIN);
    act = conn_input_eof(&t->in, &t->s);
    assert_true(conn_input_busy(&t->in));
    int rounds = 0;
    while (!(act & CONN_IN_CLOSE)) {
        assert_true(act & CONN_IN_AGAIN);
        act = conn_input_resume(&t->in, &t->s);
        assert_true(++rounds < 10);
    }
    size_t n;
    char *out = tt_drain(t, &n);
    assert_string_equal(out, "VERSION 1.6.45\r\nVERSION 1.6.45\r\nVERSION 1.6.45\r\n");
    free(out);
    /* with nothing left, EOF closes at once */
    struct tt *u = tt_new();
    act = conn_input_eof(&u->in, &u->s);
    assert_true(act & CONN_IN_CLOSE);
    tt_free(u);
    tt_free(t);
}

/* A line no buffer may hold: the error is queued and the caller closes.
 * Bounded by -o read_buf_mem_limit's share (grow_max) or by the room the
 * clients' bound leaves (grow_room), each allowing one growth here. */
static void read_buffer_limit(size_t grow_max, size_t grow_room)
{
    struct tt *t = tt_new();
    t->pool.grow_max = grow_max;
    char chunk[4096];
    memcpy(chunk, "get ", 4);
    memset(chunk + 4, 'k', sizeof chunk - 4);
    for (int i = 0; i < 3; i++)
        for (size_t k = 0; k < sizeof chunk; k += 100)
            chunk[k + 3] = ' ';
    enum conn_in_target to = CONN_IN_TO_BUF;
    for (int i = 0; i < 64 && to != CONN_IN_TO_NOWHERE; i++) {
        char *at;
        size_t room;
        to = conn_input_target(&t->in, &t->s, grow_room, &at, &room);
        if (to == CONN_IN_TO_NOWHERE)
            break;
        /* after the first read, the rest of the line: keys without "get " */
        size_t avail = i == 0 ? sizeof chunk : sizeof chunk - 4;
        size_t n = room < avail ? room : avail;
        memcpy(at, i == 0 ? chunk : chunk + 4, n);
        unsigned act = conn_input_received(&t->in, &t->s, to, n);
        assert_true(act & CONN_IN_QUICKACK);
    }
    assert_int_equal(to, CONN_IN_TO_NOWHERE);
    assert_int_equal(t->rbuf_held, 2 * RBUF_SIZE);
    size_t n;
    char *out = tt_drain(t, &n);
    assert_string_equal(out, "SERVER_ERROR out of memory reading request\r\n");
    free(out);
    tt_free(t);
}

static void test_read_buffer_limit(void **state)
{
    (void)state;
    read_buffer_limit(2 * RBUF_SIZE, SIZE_MAX);
}

static void test_read_buffer_within_the_clients_bound(void **state)
{
    (void)state;
    read_buffer_limit(0, RBUF_SIZE);
}

/* A large value not yet buffered goes straight to item memory. */
static void test_direct_read_target(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    const char hdr[] = "set big 0 0 20000\r\n";
    unsigned act = ci_read(t, hdr, sizeof hdr - 1);
    assert_true(act & CONN_IN_QUICKACK);
    char *at;
    size_t room;
    assert_int_equal(conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room), CONN_IN_TO_SINK);
    assert_int_equal(room, 20000);
    assert_int_equal(t->rbuf_held, 0); /* no buffer held while nothing is buffered */
    memset(at, 'z', room);
    act = conn_input_received(&t->in, &t->s, CONN_IN_TO_SINK, room);
    assert_false(act & CONN_IN_QUICKACK);
    act = ci_read(t, "\r\n", 2);
    size_t n;
    char *out = tt_drain(t, &n);
    assert_string_equal(out, "STORED\r\n");
    free(out);
    tt_free(t);
}

/* After a read that filled its room (more_queued), the rest of a value that
 * fits in the read buffer is read there with its "\r\n", in one call; a
 * value larger than the buffer still goes straight to item memory. */
static void test_more_queued_reads_the_rest_into_the_buffer(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    const char hdr[] = "set mid 0 0 6000\r\n";
    unsigned act = ci_read(t, hdr, sizeof hdr - 1);
    assert_true(act & CONN_IN_QUICKACK);
    t->in.more_queued = true;
    char *at;
    size_t room;
    assert_int_equal(conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room), CONN_IN_TO_BUF);
    assert_true(room >= 6002);
    memset(at, 'm', 6000);
    memcpy(at + 6000, "\r\n", 2);
    act = conn_input_received(&t->in, &t->s, CONN_IN_TO_BUF, 6002);
    size_t n;
    char *out = tt_drain(t, &n);
    assert_string_equal(out, "STORED\r\n");
    free(out);

    const char big[] = "set big 0 0 20000\r\n";
    t->in.more_queued = false;
    act = ci_read(t, big, sizeof big - 1);
    t->in.more_queued = true;
    assert_int_equal(conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room), CONN_IN_TO_SINK);
    assert_int_equal(room, 20000);
    (void)act;
    tt_free(t);
}

/* io_uring's stall: the first receive took the command and the value's
 * first bytes and filled its room (more_queued), so the rest was read into
 * the buffer; it brought the whole value but not its "\r\n" (sent apart).
 * The next read must go to the buffer: a sink left pointing into item memory
 * took the "\r\n" as value bytes and the set was never answered. */
static void test_value_whole_before_its_crlf(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    enum { VLEN = 16384, FIRST = 2048 };
    char *val = malloc(VLEN);
    assert_non_null(val);
    for (size_t i = 0; i < VLEN; i++)
        val[i] = (char)('a' + i % 26);
    char first[FIRST];
    int h = snprintf(first, sizeof first, "set whole 0 0 %d\r\n", VLEN);
    memcpy(first + h, val, FIRST - (size_t)h);
    unsigned act = ci_read(t, first, FIRST);
    assert_true(act & CONN_IN_QUICKACK);
    size_t rest = VLEN - (FIRST - (size_t)h);
    assert_int_equal(t->s.sink_len, rest);
    t->in.more_queued = true;
    act = ci_read(t, val + VLEN - rest, rest);
    assert_int_equal(t->s.sink_len, 0); /* whole: nothing may land in item memory */
    t->in.more_queued = false;
    char *at;
    size_t room;
    enum conn_in_target to = conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room);
    assert_int_equal(to, CONN_IN_TO_BUF);
    memcpy(at, "\r\n", 2);
    conn_input_received(&t->in, &t->s, to, 2);
    size_t n;
    char *out = tt_drain(t, &n);
    assert_string_equal(out, "STORED\r\n");
    free(out);
    ci_read(t, "get whole\r\n", 11);
    out = tt_drain(t, &n);
    char head[64];
    int k = snprintf(head, sizeof head, "VALUE whole 0 %d\r\n", VLEN);
    assert_int_equal(n, (size_t)k + VLEN + 7);
    assert_memory_equal(out, head, (size_t)k);
    assert_memory_equal(out + k, val, VLEN);
    assert_memory_equal(out + k + VLEN, "\r\nEND\r\n", 7);
    free(out);
    free(val);
    tt_free(t);
}

/* Bytes that arrive while the unit has work left (a multishot receive's on
 * io_uring, before its stop lands) wait in the read buffer, counted there,
 * and run after what was buffered, in order, at the resumes. */
static void test_kept_bytes_run_after_the_paused_work(void **state)
{
    (void)state;
    enum { NKEYS = 40 };
    const size_t vlen = 2000, allow = 8 * 1024;
    char line[NKEYS * 12 + 16];
    size_t h = (size_t)sprintf(line, "get");
    for (int i = 0; i < NKEYS; i++)
        h += (size_t)sprintf(line + h, " key%d", i);
    h += (size_t)sprintf(line + h, "\r\n");
    const char later[] = "get key1\r\nversion\r\n";

    char *want = NULL, *got = NULL;
    size_t nwant = 0, ngot = 0;
    struct tt *a = tt_new();
    ci_set_many(a, NKEYS, vlen);
    char both[sizeof line + sizeof later];
    memcpy(both, line, h);
    memcpy(both + h, later, sizeof later - 1);
    unsigned act = ci_read(a, both, h + sizeof later - 1);
    assert_int_equal(ci_run(a, act, SIZE_MAX, 0, &want, &nwant), 0);

    struct tt *b = tt_new();
    ci_set_many(b, NKEYS, vlen);
    b->s.reply_allow = allow;
    act = ci_read(b, line, h);
    assert_true(act & CONN_IN_AGAIN);
    size_t held = b->rbuf_held;
    assert_int_equal(conn_input_keep(&b->in, later, sizeof later - 1), 0);
    assert_true(conn_input_busy(&b->in));
    assert_true(b->rbuf_held >= held && b->rbuf_held > 0); /* in a counted buffer */
    assert_true(ci_run(b, act, allow, vlen + 64, &got, &ngot) > 0);
    assert_int_equal(ngot, nwant);
    assert_memory_equal(got, want, nwant);
    assert_string_equal(want + nwant - 16, "VERSION 1.6.45\r\n");
    assert_int_equal(b->in.len, 0);
    assert_int_equal(b->rbuf_held, 0); /* given back once run */

    /* with nothing buffered: a buffer is taken, and the resume runs them */
    struct tt *c = tt_new();
    assert_int_equal(conn_input_keep(&c->in, "version\r\n", 9), 0);
    assert_true(conn_input_busy(&c->in));
    assert_int_equal(c->rbuf_held, RBUF_SIZE);
    act = conn_input_resume(&c->in, &c->s);
    assert_false(act & CONN_IN_AGAIN);
    assert_true(act & CONN_IN_FLUSH);
    size_t n;
    char *out = tt_drain(c, &n);
    assert_string_equal(out, "VERSION 1.6.45\r\n");
    free(out);
    free(want);
    free(got);
    tt_free(a);
    tt_free(b);
    tt_free(c);
}

/* The connection's answer for a plain socket (conn.c's conn_queued). */
static int held_fd = -1;
static long held_queued(void *ctx, bool raw)
{
    (void)ctx;
    (void)raw;
    return sockopt_queued(held_fd);
}

/* A value whose rest the socket already holds is reserved in a segment, not
 * staged (sets_direct), with no early ACK; the read that fills it takes its
 * "\r\n" and the next request too, through conn_input_tail (one readv). */
static void test_held_value_is_read_with_what_follows(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    held_fd = sv[0];
    t->s.queued = held_queued;
    enum { VLEN = 20000 };
    static char rest[VLEN + 64];
    for (size_t i = 0; i < VLEN; i++)
        rest[i] = (char)('a' + i % 26);
    const char next[] = "\r\nget held\r\n";
    memcpy(rest + VLEN, next, sizeof next - 1);
    size_t nrest = VLEN + sizeof next - 1;
    assert_int_equal(write(sv[1], rest, nrest), (ssize_t)nrest);

    const char hdr[] = "set held 0 0 20000\r\n";
    unsigned act = ci_read(t, hdr, sizeof hdr - 1);
    assert_false(act & CONN_IN_QUICKACK); /* its bytes are queued: no ACK owed */
    assert_true(t->s.sink_held);
    assert_int_equal(t->stats.sets_direct, 1);
    assert_int_equal(store_upload_small_bytes(t->store), 0);
    char *at, *tail;
    size_t room;
    assert_int_equal(conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room), CONN_IN_TO_SINK);
    assert_int_equal(room, VLEN);
    size_t tail_room = conn_input_tail(&t->in, &t->s, &tail);
    assert_true(tail_room >= sizeof next - 1);
    struct iovec v[2] = {{at, room}, {tail, tail_room}};
    assert_int_equal(readv(sv[0], v, 2), (ssize_t)nrest);
    act = conn_input_received(&t->in, &t->s, CONN_IN_TO_SINK, nrest);
    assert_false(act & CONN_IN_QUICKACK);
    size_t n;
    char *out = tt_drain(t, &n);
    const char head[] = "STORED\r\nVALUE held 0 20000\r\n";
    assert_true(n == sizeof head - 1 + VLEN + 7);
    assert_memory_equal(out, head, sizeof head - 1);
    assert_memory_equal(out + sizeof head - 1, rest, VLEN);
    assert_memory_equal(out + sizeof head - 1 + VLEN, "\r\nEND\r\n", 7);
    free(out);

    /* the rest not queued: staged as before, and acknowledged early */
    act = ci_read(t, hdr, sizeof hdr - 1);
    assert_true(act & CONN_IN_QUICKACK);
    assert_false(t->s.sink_held);
    assert_int_equal(t->stats.sets_direct, 1);
    assert_int_equal(conn_input_tail(&t->in, &t->s, &tail), 0);
    close(sv[0]);
    close(sv[1]);
    tt_free(t);
}

/* A read whose requests are whole but queue no reply (noreply, quiet meta
 * commands, a quiet miss) asks for an early ACK: a client without
 * TCP_NODELAY holds its next request until its last write is acknowledged,
 * and no reply of ours will carry the ACK. A read that queues a reply asks
 * for none (the reply carries it), whatever was owed before it. */
static void test_read_without_reply_is_acknowledged(void **state)
{
    (void)state;
    struct tt *t = tt_new();
    static const struct {
        const char *in;
        bool ack;
    } reads[] = {
        {"set k 0 0 1 noreply\r\nx\r\n", true},
        {"get k\r\n", false},
        {"ms q 1 q\r\nx\r\nmd q q\r\n", true},
        {"mg nokey v q\r\n", true},
        {"mg k v q\r\n", false}, /* a hit is answered even when quiet */
        {"delete nokey noreply\r\nmn\r\n", false},
        {"set k 0 0 1 noreply\r\nx\r\nget k", true}, /* incomplete, as before */
    };
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        unsigned act = ci_read(t, reads[i].in, strlen(reads[i].in));
        assert_true(act & CONN_IN_FLUSH);
        if (reads[i].ack)
            assert_true(act & CONN_IN_QUICKACK);
        else
            assert_false(act & CONN_IN_QUICKACK);
        size_t n;
        free(tt_drain(t, &n)); /* the client reads */
    }
    /* a value read straight into item memory: acknowledged when its "\r\n"
     * ends the request, not while the "\r\n" is still to be read */
    const char hdr[] = "set big 0 0 20000 noreply\r\n";
    assert_false(ci_read(t, "\r\n", 2) & CONN_IN_QUICKACK); /* ends "get k": VALUE */
    size_t n;
    free(tt_drain(t, &n));
    assert_true(ci_read(t, hdr, sizeof hdr - 1) & CONN_IN_QUICKACK);
    char *at;
    size_t room;
    assert_int_equal(conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room), CONN_IN_TO_SINK);
    memset(at, 'z', room);
    assert_false(conn_input_received(&t->in, &t->s, CONN_IN_TO_SINK, room) & CONN_IN_QUICKACK);
    assert_true(ci_read(t, "\r\n", 2) & CONN_IN_QUICKACK);
    /* a value whole in the buffer, its "\r\n" still to come: incomplete */
    assert_true(ci_read(t, "set v 0 0 5\r\nhello", 18) & CONN_IN_QUICKACK);
    assert_true(ci_read(t, "\r", 1) & CONN_IN_QUICKACK);
    assert_false(ci_read(t, "\n", 1) & CONN_IN_QUICKACK); /* STORED */
    free(tt_drain(t, &n));
    /* replies still owed (not yet sent) and a read that adds none: acknowledged */
    assert_false(ci_read(t, "get k\r\n", 7) & CONN_IN_QUICKACK);
    assert_true(reply_pending(&t->s.reply) > 0);
    assert_true(ci_read(t, "set k 0 0 1 noreply\r\ny\r\n", 24) & CONN_IN_QUICKACK);
    tt_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yield_keeps_replies_together),
        cmocka_unit_test(test_multiget_paused_is_byte_exact),
        cmocka_unit_test(test_multiget_bad_key_not_paused),
        cmocka_unit_test(test_dump_paused),
        cmocka_unit_test(test_eof_answers_then_closes),
        cmocka_unit_test(test_read_buffer_limit),
        cmocka_unit_test(test_read_buffer_within_the_clients_bound),
        cmocka_unit_test(test_direct_read_target),
        cmocka_unit_test(test_more_queued_reads_the_rest_into_the_buffer),
        cmocka_unit_test(test_value_whole_before_its_crlf),
        cmocka_unit_test(test_kept_bytes_run_after_the_paused_work),
        cmocka_unit_test(test_held_value_is_read_with_what_follows),
        cmocka_unit_test(test_read_without_reply_is_acknowledged),
    };
    return cmocka_run_group_tests(tests, tt_group_setup, NULL);
}
