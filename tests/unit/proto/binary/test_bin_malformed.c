/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: malformed headers through proto_process. Every length
 * field at 0, at its maximum and inconsistent with the others; the reply and
 * whether the connection closes must be memcached's, and no hostile length
 * may make the protocol wait for the bytes it announces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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

/* Send a bare header (no body bytes) and return the single response's status,
 * or -1 when nothing was answered. */
static int send_header(struct th *t, uint8_t magic, uint8_t op, uint16_t keylen,
                       uint8_t extlen, uint32_t bodylen)
{
    unsigned char h[24];
    th_raw(h, magic, op, keylen, extlen, bodylen);
    th_clear(t);
    th_send(t, h, sizeof h);
    size_t pos = 0;
    struct th_resp r;
    if (!th_next(t, &pos, &r))
        return -1;
    assert_int_equal(r.opcode, op);
    assert_int_equal(pos, t->nout);
    return r.status;
}

static void reopen(struct th *t)
{
    th_session(t);
}

static void test_bad_magic(void **state)
{
    struct th *t = *state;
    unsigned char buf[48];
    th_req(buf, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    th_raw(buf + 24, 0x81, BIN_OP_NOOP, 0, 0, 0); /* a response magic */
    th_send(t, buf, 48);
    size_t pos = 0;
    struct th_resp r;
    assert_true(th_next(t, &pos, &r)); /* the first NOOP is answered */
    assert_int_equal(pos, t->nout);    /* then nothing */
    assert_true(t->closed);
}

static void test_inconsistent_lengths(void **state)
{
    struct th *t = *state;
    static const struct { uint16_t key; uint8_t ext; uint32_t body; } cases[] = {
        {1, 0, 0}, {0, 1, 0}, {3, 0, 2}, {0xffff, 0, 0xfffe}, {0, 0xff, 0xfe},
        {0xffff, 0xff, 0xffff}, {0xffff, 0xff, 0x100fd}, {250, 8, 257},
    };
    const uint8_t ops[] = {BIN_OP_GET, BIN_OP_SET, BIN_OP_NOOP, BIN_OP_STAT, 0x7f};
    for (size_t o = 0; o < sizeof ops; o++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            reopen(t);
            int st = send_header(t, BIN_MAGIC_REQ, ops[o], cases[i].key, cases[i].ext,
                                 cases[i].body);
            assert_int_equal(st, BIN_STATUS_UNKNOWN_COMMAND);
            assert_true(t->closed);
        }
    }
}

static void test_key_too_long(void **state)
{
    struct th *t = *state;
    /* answered and closed on the header alone: the key is never awaited */
    const uint8_t ops[] = {BIN_OP_GET, BIN_OP_SET, BIN_OP_DELETE, BIN_OP_STAT, 0x7f};
    for (size_t o = 0; o < sizeof ops; o++) {
        reopen(t);
        assert_int_equal(send_header(t, BIN_MAGIC_REQ, ops[o], 251, 0, 0xffffffffu),
                         BIN_STATUS_EINVAL);
        assert_true(t->closed);
        reopen(t);
        assert_int_equal(send_header(t, BIN_MAGIC_REQ, ops[o], 0xffff, 0xff, 0xffffffffu),
                         BIN_STATUS_EINVAL);
        assert_true(t->closed);
    }
    /* 250 is fine */
    reopen(t);
    char key[251];
    memset(key, 'k', 250);
    key[250] = '\0';
    th_set(t, BIN_OP_SET, key, "v", 0, 0, 0);
    size_t pos = 0;
    struct th_resp r;
    assert_true(th_next(t, &pos, &r));
    assert_int_equal(r.status, 0);
    assert_false(t->closed);
}

/* Lengths consistent with each other but wrong for the opcode: EINVAL, close. */
static void test_wrong_shape(void **state)
{
    struct th *t = *state;
    static const struct { uint8_t op; uint16_t key; uint8_t ext; uint32_t body; } cases[] = {
        {BIN_OP_GET, 0, 0, 0},        {BIN_OP_GET, 1, 0, 2},
        {BIN_OP_GETK, 1, 4, 5},       {BIN_OP_SET, 0, 8, 8},
        {BIN_OP_SET, 1, 0, 1},        {BIN_OP_SETQ, 1, 4, 5},
        {BIN_OP_ADD, 1, 20, 21},      {BIN_OP_DELETE, 0, 0, 0},
        {BIN_OP_DELETE, 1, 0, 5},     {BIN_OP_INCREMENT, 1, 20, 22},
        {BIN_OP_DECREMENT, 1, 8, 9},  {BIN_OP_INCREMENT, 0, 20, 20},
        {BIN_OP_APPEND, 0, 0, 3},     {BIN_OP_PREPEND, 1, 8, 9},
        {BIN_OP_TOUCH, 1, 0, 1},      {BIN_OP_GAT, 0, 4, 4},
        {BIN_OP_GATK, 1, 8, 9},       {BIN_OP_FLUSH, 0, 2, 2},
        {BIN_OP_FLUSH, 0, 4, 8},      {BIN_OP_FLUSH, 1, 4, 5},
        {BIN_OP_NOOP, 0, 0, 1},       {BIN_OP_VERSION, 0, 4, 4},
        {BIN_OP_QUIT, 1, 0, 1},       {BIN_OP_STAT, 0, 4, 4},
        {BIN_OP_SASL_LIST_MECHS, 0, 0, 0xffffffffu},
        {BIN_OP_SASL_AUTH, 0, 0, 5},  {BIN_OP_SASL_STEP, 5, 4, 9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reopen(t);
        unsigned char buf[300] = {0};
        th_raw(buf, BIN_MAGIC_REQ, cases[i].op, cases[i].key, cases[i].ext, cases[i].body);
        /* the header, extras and key only (what must be buffered to decide) */
        th_send(t, buf, 24 + (size_t)cases[i].ext + cases[i].key);
        size_t pos = 0;
        struct th_resp r;
        if (!th_next(t, &pos, &r))
            fail_msg("case %zu: no reply", i);
        if (r.status != BIN_STATUS_EINVAL || !t->closed)
            fail_msg("case %zu: status %x closed %d", i, r.status, t->closed);
    }
}

static void test_huge_value_not_buffered(void **state)
{
    struct th *t = *state;
    /* a SET announcing 4 GiB: E2BIG at once, then the value is swallowed as it
     * comes, never buffered */
    unsigned char buf[24 + 8 + 1];
    th_raw(buf, BIN_MAGIC_REQ, BIN_OP_SET, 1, 8, 0xffffffffu);
    memset(buf + 24, 0, 8);
    buf[32] = 'k';
    th_send(t, buf, sizeof buf);
    size_t pos = 0;
    struct th_resp r;
    assert_true(th_next(t, &pos, &r));
    assert_int_equal(r.status, BIN_STATUS_E2BIG);
    assert_false(t->closed);
    assert_int_equal(t->nin, 0);
    /* the bytes that follow belong to the value, not to new requests */
    unsigned char junk[4096];
    memset(junk, 0x80, sizeof junk);
    th_send(t, junk, sizeof junk);
    assert_int_equal(t->nin, 0);
    assert_int_equal(pos, t->nout);
}

static void test_unknown_opcodes(void **state)
{
    struct th *t = *state;
    unsigned char buf[256];
    size_t n = 0;
    unsigned char ext[4] = {0, 0, 0, 1};
    n += th_req(buf + n, BIN_OP_VERBOSITY, ext, 4, NULL, NULL, 0, 0);
    n += th_req(buf + n, 0x30, NULL, 0, "key", "value", 5, 0);
    n += th_req(buf + n, 0xff, NULL, 0, NULL, "xyz", 3, 0);
    n += th_req(buf + n, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    th_send_step(t, buf, n, 5);
    size_t pos = 0;
    struct th_resp r;
    const uint8_t want[] = {BIN_OP_VERBOSITY, 0x30, 0xff};
    for (size_t i = 0; i < sizeof want; i++) {
        assert_true(th_next(t, &pos, &r));
        assert_int_equal(r.opcode, want[i]);
        assert_int_equal(r.status, BIN_STATUS_UNKNOWN_COMMAND);
        assert_int_equal(r.nvalue, 15);
        assert_memory_equal(r.value, "Unknown command", 15);
    }
    assert_true(th_next(t, &pos, &r));
    assert_int_equal(r.opcode, BIN_OP_NOOP);
    assert_int_equal(r.status, 0);
    assert_false(t->closed);
}

static void test_sasl_without_s(void **state)
{
    struct th *t = *state;
    unsigned char buf[256];
    size_t n = 0;
    n += th_req(buf + n, BIN_OP_SASL_LIST_MECHS, NULL, 0, NULL, NULL, 0, 0);
    n += th_req(buf + n, BIN_OP_SASL_AUTH, NULL, 0, "PLAIN", "\0u\0p", 4, 0);
    n += th_req(buf + n, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    th_send(t, buf, n);
    size_t pos = 0;
    struct th_resp r;
    assert_true(th_next(t, &pos, &r));
    assert_int_equal(r.status, BIN_STATUS_UNKNOWN_COMMAND);
    assert_true(th_next(t, &pos, &r));
    assert_int_equal(r.status, BIN_STATUS_UNKNOWN_COMMAND);
    assert_true(th_next(t, &pos, &r));
    assert_int_equal(r.opcode, BIN_OP_NOOP);
    assert_false(t->closed);
}

/* A request arriving a byte at a time: nothing is consumed until its header,
 * extras and key are all there. */
static void test_partial_headers(void **state)
{
    struct th *t = *state;
    unsigned char buf[24];
    th_raw(buf, BIN_MAGIC_REQ, BIN_OP_GET, 3, 0, 3);
    for (size_t i = 0; i < 24; i++) {
        size_t consumed = 99;
        enum proto_status st = proto_process(&t->s, (const char *)buf, i, &consumed);
        assert_int_equal(st, PROTO_OK);
        assert_int_equal(consumed, 0);
    }
    /* header complete, key not yet there: wait */
    size_t consumed = 99;
    assert_int_equal(proto_process(&t->s, (const char *)buf, 24, &consumed), PROTO_OK);
    assert_int_equal(consumed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bad_magic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inconsistent_lengths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_too_long, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_huge_value_not_buffered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_opcodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sasl_without_s, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_headers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
