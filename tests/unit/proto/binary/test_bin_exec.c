/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: every opcode through proto_process on a real store, with
 * the exact responses memcached 1.6 sends (checked against Debian's memcached
 * 1.6.18 with raw packets, see docs/protocol-binary.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "test_bin_harness.h"

static int setup(void **state)
{
    struct th *t = th_create();
    th_session(t);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    th_destroy(*state);
    return 0;
}

/* The next response must have this opcode and status; returns it. */
static struct th_resp expect(struct th *t, size_t *pos, uint8_t op, uint16_t status)
{
    struct th_resp r;
    if (!th_next(t, pos, &r))
        fail_msg("no response (opcode %02x expected)", op);
    assert_int_equal(r.magic, BIN_MAGIC_RES);
    assert_int_equal(r.opcode, op);
    assert_int_equal(r.status, status);
    assert_memory_equal(&r.opaque, "\xde\xad\xbe\xef", 4);
    /* ENOMEM's text says where memory ran out; the others are fixed. */
    if (status != BIN_STATUS_OK && status != BIN_STATUS_AUTH_CONTINUE &&
        status != BIN_STATUS_ENOMEM && r.keylen == 0) {
        const char *text = bin_status_text(status);
        assert_int_equal(r.nvalue, strlen(text));
        assert_memory_equal(r.value, text, r.nvalue);
        assert_true(r.cas == 0);
    }
    return r;
}

static void expect_end(struct th *t, size_t pos)
{
    assert_int_equal(pos, t->nout);
}

static void expect_item(const struct th_resp *r, uint32_t flags, const char *key,
                         const char *value)
{
    assert_int_equal(r->extlen, 4);
    assert_int_equal(bin_load32(r->ext), flags);
    size_t nkey = key ? strlen(key) : 0;
    assert_int_equal(r->keylen, nkey);
    if (nkey)
        assert_memory_equal(r->key, key, nkey);
    assert_int_equal(r->nvalue, strlen(value));
    assert_memory_equal(r->value, value, r->nvalue);
}

static void test_noop_version_quit(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_do(t, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    th_do(t, BIN_OP_VERSION, NULL, 0, NULL, NULL, 0, 0);
    struct th_resp r = expect(t, &pos, BIN_OP_NOOP, 0);
    assert_int_equal(r.bodylen, 0);
    r = expect(t, &pos, BIN_OP_VERSION, 0);
    assert_int_equal(r.nvalue, 6);
    assert_memory_equal(r.value, "1.6.45", 6);
    th_do(t, BIN_OP_QUIT, NULL, 0, NULL, NULL, 0, 0);
    expect(t, &pos, BIN_OP_QUIT, 0);
    expect_end(t, pos);
    assert_true(t->closed);
}

static void test_quitq(void **state)
{
    struct th *t = *state;
    th_do(t, BIN_OP_QUITQ, NULL, 0, NULL, NULL, 0, 0);
    assert_true(t->closed);
    assert_int_equal(t->nout, 0);
}

static void test_set_get(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_set(t, BIN_OP_SET, "k", "hello", 5, 0, 0);
    struct th_resp r = expect(t, &pos, BIN_OP_SET, 0);
    assert_int_equal(r.bodylen, 0);
    uint64_t cas = r.cas;
    assert_true(cas != 0);

    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GET, 0);
    expect_item(&r, 5, NULL, "hello");
    assert_true(r.cas == cas);
    th_do(t, BIN_OP_GETK, NULL, 0, "k", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GETK, 0);
    expect_item(&r, 5, "k", "hello");
    th_do(t, BIN_OP_GETQ, NULL, 0, "k", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GETQ, 0);
    expect_item(&r, 5, NULL, "hello");
    th_do(t, BIN_OP_GETKQ, NULL, 0, "k", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GETKQ, 0);
    expect_item(&r, 5, "k", "hello");

    /* misses */
    th_do(t, BIN_OP_GET, NULL, 0, "nokey", NULL, 0, 0);
    expect(t, &pos, BIN_OP_GET, BIN_STATUS_KEY_ENOENT);
    th_do(t, BIN_OP_GETK, NULL, 0, "nokey", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GETK, BIN_STATUS_KEY_ENOENT);
    assert_int_equal(r.keylen, 5);
    assert_int_equal(r.bodylen, 5);
    assert_memory_equal(r.key, "nokey", 5);
    th_do(t, BIN_OP_GETQ, NULL, 0, "nokey", NULL, 0, 0);
    th_do(t, BIN_OP_GETKQ, NULL, 0, "nokey", NULL, 0, 0);
    th_do(t, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    expect(t, &pos, BIN_OP_NOOP, 0);
    expect_end(t, pos);

    /* an empty value */
    th_set(t, BIN_OP_SET, "e", "", 7, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    th_do(t, BIN_OP_GET, NULL, 0, "e", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GET, 0);
    expect_item(&r, 7, NULL, "");

    assert_int_equal(t->stats.cmd_get, 9);
    assert_int_equal(t->stats.get_hits, 5);
    assert_int_equal(t->stats.get_misses, 4);
    assert_int_equal(t->stats.cmd_set, 2);
    expect_end(t, pos);
}

static void test_add_replace_cas(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_set(t, BIN_OP_ADD, "k", "one", 0, 0, 0);
    uint64_t cas = expect(t, &pos, BIN_OP_ADD, 0).cas;
    th_set(t, BIN_OP_ADD, "k", "two", 0, 0, 0);
    expect(t, &pos, BIN_OP_ADD, BIN_STATUS_KEY_EEXISTS);
    th_set(t, BIN_OP_ADDQ, "k", "two", 0, 0, 0); /* errors are sent even when quiet */
    expect(t, &pos, BIN_OP_ADDQ, BIN_STATUS_KEY_EEXISTS);
    th_set(t, BIN_OP_REPLACE, "zz", "two", 0, 0, 0);
    expect(t, &pos, BIN_OP_REPLACE, BIN_STATUS_KEY_ENOENT);
    th_set(t, BIN_OP_REPLACE, "k", "two", 0, 0, 0);
    uint64_t cas2 = expect(t, &pos, BIN_OP_REPLACE, 0).cas;
    assert_true(cas2 != cas);

    /* CAS: mismatch, missing key, match */
    th_set(t, BIN_OP_SET, "k", "three", 0, 0, cas);
    expect(t, &pos, BIN_OP_SET, BIN_STATUS_KEY_EEXISTS);
    th_set(t, BIN_OP_SET, "missing", "three", 0, 0, cas);
    expect(t, &pos, BIN_OP_SET, BIN_STATUS_KEY_ENOENT);
    th_set(t, BIN_OP_ADD, "k", "three", 0, 0, 999999); /* ADD with a CAS is a CAS */
    expect(t, &pos, BIN_OP_ADD, BIN_STATUS_KEY_EEXISTS);
    th_set(t, BIN_OP_SETQ, "k", "three", 0, 0, cas2);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    struct th_resp r = expect(t, &pos, BIN_OP_GET, 0);
    expect_item(&r, 0, NULL, "three");
    assert_int_equal(t->stats.cas_hits, 1);
    assert_int_equal(t->stats.cas_badval, 2);
    assert_int_equal(t->stats.cas_misses, 1);
    expect_end(t, pos);
}

static void test_append_prepend(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_do(t, BIN_OP_APPEND, NULL, 0, "k", "x", 1, 0);
    expect(t, &pos, BIN_OP_APPEND, BIN_STATUS_NOT_STORED);
    th_set(t, BIN_OP_SET, "k", "mid", 3, 0, 0);
    uint64_t cas = expect(t, &pos, BIN_OP_SET, 0).cas;
    th_do(t, BIN_OP_APPEND, NULL, 0, "k", "X", 1, cas + 1000);
    expect(t, &pos, BIN_OP_APPEND, BIN_STATUS_KEY_EEXISTS);
    th_do(t, BIN_OP_APPEND, NULL, 0, "k", "end", 3, cas);
    expect(t, &pos, BIN_OP_APPEND, 0);
    th_do(t, BIN_OP_PREPENDQ, NULL, 0, "k", "pre", 3, 0);
    th_do(t, BIN_OP_APPENDQ, NULL, 0, "k", "!", 1, 0);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    struct th_resp r = expect(t, &pos, BIN_OP_GET, 0);
    expect_item(&r, 3, NULL, "premidend!");
    expect_end(t, pos);
}

static void test_delete(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_set(t, BIN_OP_SET, "k", "v", 0, 0, 0);
    uint64_t cas = expect(t, &pos, BIN_OP_SET, 0).cas;
    th_do(t, BIN_OP_DELETE, NULL, 0, "k", NULL, 0, cas + 1);
    expect(t, &pos, BIN_OP_DELETE, BIN_STATUS_KEY_EEXISTS);
    th_do(t, BIN_OP_DELETE, NULL, 0, "k", NULL, 0, cas);
    struct th_resp r = expect(t, &pos, BIN_OP_DELETE, 0);
    assert_int_equal(r.bodylen, 0);
    th_do(t, BIN_OP_DELETE, NULL, 0, "k", NULL, 0, 0);
    expect(t, &pos, BIN_OP_DELETE, BIN_STATUS_KEY_ENOENT);
    th_do(t, BIN_OP_DELETEQ, NULL, 0, "k", NULL, 0, 0);
    expect(t, &pos, BIN_OP_DELETEQ, BIN_STATUS_KEY_ENOENT);
    th_set(t, BIN_OP_SET, "k", "v", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    th_do(t, BIN_OP_DELETEQ, NULL, 0, "k", NULL, 0, 0);
    expect_end(t, pos);
    assert_int_equal(t->stats.delete_hits, 2);
    assert_int_equal(t->stats.delete_misses, 2);
}

static void test_incr_decr(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_arith(t, BIN_OP_INCREMENT, "n", 1, 10, 0xffffffffu, 0);
    expect(t, &pos, BIN_OP_INCREMENT, BIN_STATUS_KEY_ENOENT);
    th_arith(t, BIN_OP_INCREMENT, "n", 1, 10, 0, 0); /* created with the initial value */
    struct th_resp r = expect(t, &pos, BIN_OP_INCREMENT, 0);
    assert_int_equal(r.bodylen, 8);
    assert_true(bin_load64(r.value) == 10);
    assert_true(r.cas != 0);
    th_arith(t, BIN_OP_INCREMENT, "n", 5, 10, 0, 0);
    r = expect(t, &pos, BIN_OP_INCREMENT, 0);
    assert_true(bin_load64(r.value) == 15);
    th_arith(t, BIN_OP_DECREMENT, "n", 6, 0, 0, 0);
    r = expect(t, &pos, BIN_OP_DECREMENT, 0);
    assert_true(bin_load64(r.value) == 9);
    /* the shorter number keeps its length, padded */
    th_do(t, BIN_OP_GET, NULL, 0, "n", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GET, 0);
    expect_item(&r, 0, NULL, "9 ");
    th_arith(t, BIN_OP_DECREMENT, "n", 100, 0, 0, 0);
    r = expect(t, &pos, BIN_OP_DECREMENT, 0);
    assert_true(bin_load64(r.value) == 0);
    th_arith(t, BIN_OP_INCREMENTQ, "n", 1, 0, 0, 0);
    th_arith(t, BIN_OP_DECREMENT, "n", 1, 0, 0, r.cas); /* stale CAS */
    expect(t, &pos, BIN_OP_DECREMENT, BIN_STATUS_KEY_EEXISTS);

    th_set(t, BIN_OP_SET, "w", "18446744073709551615", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    th_arith(t, BIN_OP_INCREMENT, "w", 2, 0, 0, 0);
    r = expect(t, &pos, BIN_OP_INCREMENT, 0);
    assert_true(bin_load64(r.value) == 1);

    th_set(t, BIN_OP_SET, "s", "abc", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    th_arith(t, BIN_OP_INCREMENT, "s", 1, 0, 0, 0);
    expect(t, &pos, BIN_OP_INCREMENT, BIN_STATUS_DELTA_BADVAL);
    th_arith(t, BIN_OP_DECREMENTQ, "nothere", 1, 0, 0xffffffffu, 0);
    expect(t, &pos, BIN_OP_DECREMENTQ, BIN_STATUS_KEY_ENOENT);
    expect_end(t, pos);
    assert_int_equal(t->stats.incr_misses, 1);
    assert_int_equal(t->stats.decr_misses, 1);
    assert_int_equal(t->stats.incr_hits, 3);
    assert_int_equal(t->stats.decr_hits, 2);
}

static void test_touch_gat(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    unsigned char exp[4];
    bin_store32(exp, 100);
    th_set(t, BIN_OP_SET, "k", "hello", 5, 0, 0);
    uint64_t cas = expect(t, &pos, BIN_OP_SET, 0).cas;
    th_do(t, BIN_OP_TOUCH, exp, 4, "k", NULL, 0, 0);
    struct th_resp r = expect(t, &pos, BIN_OP_TOUCH, 0);
    assert_int_equal(r.extlen, 4);
    assert_int_equal(r.bodylen, 4); /* flags, no value */
    assert_int_equal(bin_load32(r.ext), 5);
    th_do(t, BIN_OP_GAT, exp, 4, "k", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GAT, 0);
    expect_item(&r, 5, NULL, "hello");
    assert_true(r.cas == cas);
    th_do(t, BIN_OP_GATK, exp, 4, "k", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GATK, 0);
    expect_item(&r, 5, "k", "hello");
    th_do(t, BIN_OP_GATQ, exp, 4, "k", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GATQ, 0);
    expect_item(&r, 5, NULL, "hello");
    th_do(t, BIN_OP_GATKQ, exp, 4, "nope", NULL, 0, 0);
    th_do(t, BIN_OP_GATQ, exp, 4, "nope", NULL, 0, 0);
    th_do(t, BIN_OP_TOUCH, exp, 4, "nope", NULL, 0, 0);
    expect(t, &pos, BIN_OP_TOUCH, BIN_STATUS_KEY_ENOENT);
    th_do(t, BIN_OP_GATK, exp, 4, "nope", NULL, 0, 0);
    r = expect(t, &pos, BIN_OP_GATK, BIN_STATUS_KEY_ENOENT);
    assert_memory_equal(r.key, "nope", 4);
    expect_end(t, pos);
    assert_int_equal(t->stats.cmd_touch, 8);
    assert_int_equal(t->stats.touch_hits, 4);
    assert_int_equal(t->stats.touch_misses, 4);
    assert_int_equal(t->stats.cmd_get, 0);

    /* an exptime in the past (absolute, before start-up): the touch is a hit
     * (as in memcached) and the item is gone afterwards */
    bin_store32(exp, 1000000000u + 2592000u);
    th_do(t, BIN_OP_TOUCH, exp, 4, "k", NULL, 0, 0);
    expect(t, &pos, BIN_OP_TOUCH, 0);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    expect(t, &pos, BIN_OP_GET, BIN_STATUS_KEY_ENOENT);
}

static void test_flush(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_set(t, BIN_OP_SET, "k", "v", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    th_do(t, BIN_OP_FLUSH, NULL, 0, NULL, NULL, 0, 0);
    expect(t, &pos, BIN_OP_FLUSH, 0);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    expect(t, &pos, BIN_OP_GET, BIN_STATUS_KEY_ENOENT);
    unsigned char delay[4];
    bin_store32(delay, 1000);
    th_set(t, BIN_OP_SET, "k", "v", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    th_do(t, BIN_OP_FLUSHQ, delay, 4, NULL, NULL, 0, 0);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0); /* still there: the flush is later */
    expect(t, &pos, BIN_OP_GET, 0);
    expect_end(t, pos);
    assert_int_equal(t->stats.cmd_flush, 2);
}

static void test_flush_disabled(void **state)
{
    struct th *t = *state;
    t->settings.flush_enabled = false;
    th_session(t);
    size_t pos = 0;
    th_do(t, BIN_OP_FLUSH, NULL, 0, NULL, NULL, 0, 0);
    expect(t, &pos, BIN_OP_FLUSH, BIN_STATUS_AUTH_ERROR);
    th_do(t, BIN_OP_FLUSHQ, NULL, 0, NULL, NULL, 0, 0);
    expect(t, &pos, BIN_OP_FLUSHQ, BIN_STATUS_AUTH_ERROR);
    expect_end(t, pos);
    assert_false(t->closed);
    assert_int_equal(t->stats.cmd_flush, 0);
}

static void test_cas_disabled(void **state)
{
    struct th *t = *state;
    t->settings.cas_enabled = false;
    th_session(t);
    size_t pos = 0;
    th_set(t, BIN_OP_SET, "k", "v", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    /* -C: a CAS on a store is ignored, as memcached does */
    th_set(t, BIN_OP_SET, "k", "w", 0, 0, 77);
    expect(t, &pos, BIN_OP_SET, 0);
    th_do(t, BIN_OP_APPEND, NULL, 0, "k", "x", 1, 77);
    expect(t, &pos, BIN_OP_APPEND, 0);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    struct th_resp r = expect(t, &pos, BIN_OP_GET, 0);
    expect_item(&r, 0, NULL, "wx");
    assert_true(r.cas == 0);
    /* ... but items carry none, so a conditional delete or incr fails */
    th_do(t, BIN_OP_DELETE, NULL, 0, "k", NULL, 0, 77);
    expect(t, &pos, BIN_OP_DELETE, BIN_STATUS_KEY_EEXISTS);
    th_set(t, BIN_OP_SET, "n", "1", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    th_arith(t, BIN_OP_INCREMENT, "n", 1, 0, 0, 77);
    expect(t, &pos, BIN_OP_INCREMENT, BIN_STATUS_KEY_EEXISTS);
    expect_end(t, pos);
}

/* -M: a full cache answers ENOMEM with memcached's wording, swallows the
 * value, and a failed SET removes the old value. */
static void test_out_of_memory(void **state)
{
    struct th *t = *state;
    t->settings.evictions = false;
    th_session(t);
    size_t pos = 0;
    th_set(t, BIN_OP_SET, "victim", "old", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    size_t n = 100000;
    char *v = malloc(n + 1);
    memset(v, 'v', n);
    v[n] = '\0';
    unsigned char ext[8] = {0};
    bool full = false;
    for (int i = 0; i < 400 && !full; i++) {
        char key[32];
        snprintf(key, sizeof key, "fill%d", i);
        th_do(t, BIN_OP_SETQ, ext, 8, key, v, n, 0);
        struct th_resp r;
        size_t p2 = pos;
        if (th_next(t, &p2, &r)) {
            assert_int_equal(r.opcode, BIN_OP_SETQ);
            assert_int_equal(r.status, BIN_STATUS_ENOMEM);
            assert_int_equal(r.nvalue, strlen("Out of memory allocating item"));
            assert_memory_equal(r.value, "Out of memory allocating item", r.nvalue);
            pos = p2;
            full = true;
        }
    }
    assert_true(full);
    th_do(t, BIN_OP_SET, ext, 8, "victim", v, n, 0);
    struct th_resp r = expect(t, &pos, BIN_OP_SET, BIN_STATUS_ENOMEM);
    assert_memory_equal(r.value, "Out of memory allocating item", r.nvalue);
    th_do(t, BIN_OP_GET, NULL, 0, "victim", NULL, 0, 0);
    expect(t, &pos, BIN_OP_GET, BIN_STATUS_KEY_ENOENT);
    th_do(t, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    expect(t, &pos, BIN_OP_NOOP, 0);
    expect_end(t, pos);
    free(v);
}

/* A value leaves by reference to item memory, pinned until it is sent. */
static void test_value_by_reference(void **state)
{
    struct th *t = *state;
    /* Large values go out by reference, pinned; short ones are copied
     * (reply_ref's REPLY_COPY_MAX). */
    char big[601];
    memset(big, 'r', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    th_set(t, BIN_OP_SET, "k", big, 0, 0, 0);
    th_set(t, BIN_OP_SET, "s", "short value", 0, 0, 0);
    th_drain(t);
    unsigned char req[64];
    size_t n = th_req(req, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    size_t consumed = 0;
    assert_int_equal(proto_process(&t->s, (const char *)req, n, &consumed), PROTO_OK);
    assert_int_equal(consumed, n);
    struct reply_queue *q = &t->s.reply;
    assert_true(q->nseg > q->head);
    const struct reply_seg *last = &q->segs[q->nseg - 1];
    assert_non_null(last->pin);
    assert_null(last->block);
    assert_int_equal(last->len, 600);
    assert_memory_equal(last->data, big, 600);
    th_drain(t); /* releases the pin */

    n = th_req(req, BIN_OP_GET, NULL, 0, "s", NULL, 0, 0);
    assert_int_equal(proto_process(&t->s, (const char *)req, n, &consumed), PROTO_OK);
    for (size_t i = q->head; i < q->nseg; i++)
        assert_null(q->segs[i].pin);
    th_drain(t);
}

/* STAT: a fake server's rows reach the client as one packet each, with no
 * text in between; its refusals are KEY_ENOENT. */
static enum server_stats_rc fake_stats(void *ctx, const char *args, size_t len,
                                       struct server_stats_out *out)
{
    (void)ctx;
    assert_null(out->raw); /* binary has no text-only groups */
    if (len == 7 && memcmp(args, "nodelay", 7) == 0) {
        assert_int_equal(stats_emit_u64(&out->emit, "pid", 42), 0);
        assert_int_equal(stats_emit_str(&out->emit, "version", "1.6.45"), 0);
        assert_int_equal(stats_emit_str(&out->emit, "empty", ""), 0);
        assert_int_equal(stats_emitf(&out->emit, "inter", "%s %s", "127.0.0.1", "::1"), 0);
        return SERVER_STATS_END;
    }
    if (len == 5 && memcmp(args, "reset", 5) == 0)
        return SERVER_STATS_RESET;
    out->msg = "CLIENT_ERROR stats detail not allowed";
    return SERVER_STATS_REFUSED;
}

static void test_stat_rows(void **state)
{
    struct th *t = *state;
    struct server_ops ops = server_ops_none;
    ops.stats = fake_stats;
    t->s.ops = &ops;
    th_do(t, BIN_OP_STAT, NULL, 0, "nodelay", NULL, 0, 0);
    size_t pos = 0;
    struct th_resp p;
    static const char *const want[][2] = {
        {"pid", "42"}, {"version", "1.6.45"}, {"empty", ""}, {"inter", "127.0.0.1 ::1"}};
    for (size_t i = 0; i < 4; i++) {
        assert_true(th_next(t, &pos, &p));
        assert_int_equal(p.opcode, BIN_OP_STAT);
        assert_int_equal(p.status, 0);
        assert_int_equal(p.extlen, 0);
        assert_int_equal(p.keylen, strlen(want[i][0]));
        assert_memory_equal(p.key, want[i][0], p.keylen);
        assert_int_equal(p.nvalue, strlen(want[i][1]));
        assert_memory_equal(p.value, want[i][1], p.nvalue);
    }
    p = expect(t, &pos, BIN_OP_STAT, BIN_STATUS_OK); /* the empty packet ends the list */
    assert_int_equal(p.keylen + p.nvalue, 0);
    expect_end(t, pos);
    /* reset: only the end packet */
    th_do(t, BIN_OP_STAT, NULL, 0, "reset", NULL, 0, 0);
    p = expect(t, &pos, BIN_OP_STAT, BIN_STATUS_OK);
    assert_int_equal(p.keylen + p.nvalue, 0);
    expect_end(t, pos);
    /* refused: nothing of the group, one KEY_ENOENT */
    th_do(t, BIN_OP_STAT, NULL, 0, "detail dump", NULL, 0, 0);
    expect(t, &pos, BIN_OP_STAT, BIN_STATUS_KEY_ENOENT);
    expect_end(t, pos);
    assert_false(t->closed);
    t->s.ops = &server_ops_none;
}

/* Without a running server core there is no stats group to show. */
static void test_stat_unknown_group(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_do(t, BIN_OP_STAT, NULL, 0, "conns", NULL, 0, 0);
    expect(t, &pos, BIN_OP_STAT, BIN_STATUS_KEY_ENOENT);
    th_do(t, BIN_OP_STAT, NULL, 0, "detail bogus", NULL, 0, 0);
    expect(t, &pos, BIN_OP_STAT, BIN_STATUS_KEY_ENOENT);
    expect_end(t, pos);
    assert_false(t->closed);
}

static void test_too_large(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_set(t, BIN_OP_SET, "big", "old", 0, 0, 0);
    expect(t, &pos, BIN_OP_SET, 0);
    size_t n = (1u << 20) + 10;
    char *v = malloc(n + 1);
    memset(v, 'x', n);
    v[n] = '\0';
    /* in small reads, so the swallowed value arrives in pieces */
    unsigned char *buf = malloc(n + 64);
    unsigned char ext[8] = {0};
    size_t len = th_req(buf, BIN_OP_SET, ext, 8, "big", v, n, 0);
    th_send_step(t, buf, len, 4096);
    free(buf);
    free(v);
    expect(t, &pos, BIN_OP_SET, BIN_STATUS_E2BIG);
    /* the old value is gone, and the stream is still in step */
    th_do(t, BIN_OP_GET, NULL, 0, "big", NULL, 0, 0);
    expect(t, &pos, BIN_OP_GET, BIN_STATUS_KEY_ENOENT);
    expect_end(t, pos);
    assert_false(t->closed);
    assert_int_equal(t->stats.cmd_set, 1);
}

static void test_large_value_sink(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    size_t n = 500000;
    char *v = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        v[i] = (char)('a' + i % 26);
    v[n] = '\0';
    unsigned char *buf = malloc(n + 64);
    unsigned char ext[8] = {0, 0, 0, 9, 0, 0, 0, 0};
    size_t len = th_req(buf, BIN_OP_SET, ext, 8, "large", v, n, 0);
    th_send_step(t, buf, len, 16384);
    expect(t, &pos, BIN_OP_SET, 0);
    th_do(t, BIN_OP_GETK, NULL, 0, "large", NULL, 0, 0);
    struct th_resp r = expect(t, &pos, BIN_OP_GETK, 0);
    expect_item(&r, 9, "large", v);
    expect_end(t, pos);
    free(buf);
    free(v);
}

/* The same pipeline fed whole and one byte at a time gives the same bytes. */
static void test_split_everywhere(void **state)
{
    struct th *t = *state;
    unsigned char req[2048];
    size_t n = 0;
    unsigned char ext[8] = {0, 0, 0, 1, 0, 0, 0, 0};
    unsigned char arith[20] = {0};
    arith[7] = 1;
    n += th_req(req + n, BIN_OP_SET, ext, 8, "a", "value-a", 7, 0);
    n += th_req(req + n, BIN_OP_SETQ, ext, 8, "b", "value-b", 7, 0);
    n += th_req(req + n, BIN_OP_GETKQ, NULL, 0, "a", NULL, 0, 0);
    n += th_req(req + n, BIN_OP_GETKQ, NULL, 0, "zz", NULL, 0, 0);
    n += th_req(req + n, BIN_OP_GETK, NULL, 0, "b", NULL, 0, 0);
    n += th_req(req + n, BIN_OP_APPEND, NULL, 0, "a", "++", 2, 0);
    n += th_req(req + n, BIN_OP_INCREMENT, arith, 20, "ctr", NULL, 0, 0);
    n += th_req(req + n, BIN_OP_DELETE, NULL, 0, "b", NULL, 0, 0);
    n += th_req(req + n, BIN_OP_GET, NULL, 0, "a", NULL, 0, 0);
    n += th_req(req + n, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);

    th_send(t, req, n);
    size_t nwhole = t->nout;
    unsigned char *whole = malloc(nwhole);
    memcpy(whole, t->out, nwhole);
    /* Reset the data; CAS values differ run to run, so compare all but them. */
    for (size_t step = 1; step <= 7; step += 3) {
        th_do(t, BIN_OP_DELETE, NULL, 0, "a", NULL, 0, 0);
        th_do(t, BIN_OP_DELETE, NULL, 0, "ctr", NULL, 0, 0);
        th_clear(t);
        th_send_step(t, req, n, step);
        assert_int_equal(t->nout, nwhole);
        size_t pa = 0, pb = 0;
        struct th_resp ra;
        while (th_next(t, &pa, &ra)) {
            assert_int_equal(ra.opcode, whole[pb + 1]);
            assert_int_equal(ra.status, (whole[pb + 6] << 8) | whole[pb + 7]);
            assert_int_equal(ra.bodylen, bin_load32(whole + pb + 8));
            assert_memory_equal(ra.ext, whole + pb + 24, ra.bodylen);
            pb += 24 + ra.bodylen;
        }
        assert_int_equal(pa, nwhole);
    }
    free(whole);
}

static void test_yield(void **state)
{
    struct th *t = *state;
    t->settings.reqs_per_event = 2;
    th_session(t);
    unsigned char req[24 * 5];
    size_t n = 0;
    for (int i = 0; i < 5; i++)
        n += th_req(req + n, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    size_t consumed = 0;
    enum proto_status st = proto_process(&t->s, (const char *)req, n, &consumed);
    assert_int_equal(st, PROTO_YIELD);
    assert_int_equal(consumed, 48);
    th_send(t, req + consumed, n - consumed);
    size_t pos = 0;
    for (int i = 0; i < 5; i++)
        expect(t, &pos, BIN_OP_NOOP, 0);
    expect_end(t, pos);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_noop_version_quit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quitq, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_replace_cas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_prepend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_incr_decr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_touch_gat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cas_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_value_sink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_everywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yield, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_by_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stat_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stat_unknown_group, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
