/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: header decoding and memcached's per-opcode length rules,
 * without a session or a socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/binary/binary.h"

static struct bin_header hdr(uint8_t op, uint16_t keylen, uint8_t extlen, uint32_t bodylen)
{
    struct bin_header h = {.magic = BIN_MAGIC_REQ, .opcode = op, .keylen = keylen,
                           .extlen = extlen, .bodylen = bodylen};
    return h;
}

static void test_decode(void **state)
{
    (void)state;
    const unsigned char raw[24] = {0x80, 0x01, 0x01, 0x02, 0x08, 0x00, 0x12, 0x34,
                                   0xff, 0xff, 0xff, 0xff, 0xde, 0xad, 0xbe, 0xef,
                                   0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    struct bin_header h;
    bin_header_decode(raw, &h);
    assert_int_equal(h.magic, 0x80);
    assert_int_equal(h.opcode, BIN_OP_SET);
    assert_int_equal(h.keylen, 0x0102);
    assert_int_equal(h.extlen, 8);
    assert_int_equal(h.vbucket, 0x1234);
    assert_int_equal(h.bodylen, 0xffffffffu);
    assert_memory_equal(&h.opaque, raw + 12, 4);
    assert_true(h.cas == 0x0102030405060708ull);
}

static void test_encode(void **state)
{
    (void)state;
    struct bin_resp r = {.opcode = BIN_OP_GETK, .status = BIN_STATUS_KEY_ENOENT, .cas = 9};
    memcpy(&r.opaque, "\x01\x02\x03\x04", 4);
    unsigned char out[24];
    bin_header_encode(out, &r, 3, 4, 0x10203);
    const unsigned char want[24] = {0x81, 0x0c, 0x00, 0x03, 0x04, 0x00, 0x00, 0x01,
                                    0x00, 0x01, 0x02, 0x03, 0x01, 0x02, 0x03, 0x04,
                                    0, 0, 0, 0, 0, 0, 0, 9};
    assert_memory_equal(out, want, 24);
}

static void test_inconsistent(void **state)
{
    (void)state;
    struct bin_header h = hdr(BIN_OP_GET, 3, 0, 2);
    assert_true(bin_lengths_inconsistent(&h));
    h = hdr(BIN_OP_SET, 0xffff, 0xff, 0xffff);
    assert_true(bin_lengths_inconsistent(&h));
    h = hdr(BIN_OP_SET, 0xffff, 0xff, 0xffff + 0xff);
    assert_false(bin_lengths_inconsistent(&h));
    h = hdr(BIN_OP_SET, 0, 0, 0);
    assert_false(bin_lengths_inconsistent(&h));
    h = hdr(BIN_OP_SET, 0xffff, 0xff, 0xffffffffu);
    assert_false(bin_lengths_inconsistent(&h));
    h = hdr(BIN_OP_SET, 1, 8, 8);
    assert_true(bin_lengths_inconsistent(&h));
}

static void test_quiet_map(void **state)
{
    (void)state;
    static const uint8_t pairs[][2] = {
        {BIN_OP_GETQ, BIN_OP_GET},           {BIN_OP_GETKQ, BIN_OP_GETK},
        {BIN_OP_SETQ, BIN_OP_SET},           {BIN_OP_ADDQ, BIN_OP_ADD},
        {BIN_OP_REPLACEQ, BIN_OP_REPLACE},   {BIN_OP_DELETEQ, BIN_OP_DELETE},
        {BIN_OP_INCREMENTQ, BIN_OP_INCREMENT}, {BIN_OP_DECREMENTQ, BIN_OP_DECREMENT},
        {BIN_OP_QUITQ, BIN_OP_QUIT},         {BIN_OP_FLUSHQ, BIN_OP_FLUSH},
        {BIN_OP_APPENDQ, BIN_OP_APPEND},     {BIN_OP_PREPENDQ, BIN_OP_PREPEND},
        {BIN_OP_GATQ, BIN_OP_GAT},           {BIN_OP_GATKQ, BIN_OP_GATK},
    };
    bool quiet;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        assert_int_equal(bin_opcode_base(pairs[i][0], &quiet), pairs[i][1]);
        assert_true(quiet);
        assert_int_equal(bin_opcode_base(pairs[i][1], &quiet), pairs[i][1]);
        assert_false(quiet);
    }
    assert_int_equal(bin_opcode_base(BIN_OP_TOUCH, &quiet), BIN_OP_TOUCH);
    assert_false(quiet);
}

static void expect(uint8_t op, uint16_t key, uint8_t ext, uint32_t body, enum bin_kind want)
{
    struct bin_header h = hdr(op, key, ext, body);
    enum bin_kind got = bin_classify(&h);
    if (got != want)
        fail_msg("opcode %02x key %u ext %u body %u: kind %d, want %d", op, key, ext,
                 body, got, want);
}

static void test_no_body_opcodes(void **state)
{
    (void)state;
    const uint8_t ops[] = {BIN_OP_NOOP, BIN_OP_VERSION, BIN_OP_QUIT, BIN_OP_QUITQ,
                           BIN_OP_SASL_LIST_MECHS};
    const enum bin_kind kinds[] = {BIN_KIND_NOOP, BIN_KIND_VERSION, BIN_KIND_QUIT,
                                   BIN_KIND_QUIT, BIN_KIND_SASL_LIST};
    for (size_t i = 0; i < sizeof ops; i++) {
        expect(ops[i], 0, 0, 0, kinds[i]);
        expect(ops[i], 0, 0, 1, BIN_KIND_INVALID);
        expect(ops[i], 0, 4, 4, BIN_KIND_INVALID);
        expect(ops[i], 1, 0, 1, BIN_KIND_INVALID);
        expect(ops[i], 0, 0, 0xffffffffu, BIN_KIND_INVALID);
    }
}

static void test_get_delete(void **state)
{
    (void)state;
    const uint8_t gets[] = {BIN_OP_GET, BIN_OP_GETQ, BIN_OP_GETK, BIN_OP_GETKQ};
    for (size_t i = 0; i < sizeof gets; i++) {
        expect(gets[i], 1, 0, 1, BIN_KIND_GET);
        expect(gets[i], 250, 0, 250, BIN_KIND_GET);
        expect(gets[i], 0, 0, 0, BIN_KIND_INVALID);     /* no key */
        expect(gets[i], 3, 0, 4, BIN_KIND_INVALID);     /* body beyond key */
        expect(gets[i], 3, 4, 7, BIN_KIND_INVALID);     /* extras */
        expect(gets[i], 3, 0, 0xffffffffu, BIN_KIND_INVALID);
    }
    expect(BIN_OP_DELETE, 1, 0, 1, BIN_KIND_DELETE);
    expect(BIN_OP_DELETEQ, 5, 0, 5, BIN_KIND_DELETE);
    expect(BIN_OP_DELETE, 0, 0, 0, BIN_KIND_INVALID);
    expect(BIN_OP_DELETE, 1, 0, 2, BIN_KIND_INVALID);
    expect(BIN_OP_DELETE, 1, 4, 5, BIN_KIND_INVALID);
}

static void test_update(void **state)
{
    (void)state;
    const uint8_t ops[] = {BIN_OP_SET, BIN_OP_SETQ, BIN_OP_ADD, BIN_OP_ADDQ, BIN_OP_REPLACE,
                           BIN_OP_REPLACEQ};
    for (size_t i = 0; i < sizeof ops; i++) {
        expect(ops[i], 1, 8, 9, BIN_KIND_UPDATE);         /* empty value */
        expect(ops[i], 1, 8, 0xffffffffu, BIN_KIND_UPDATE); /* huge value: E2BIG later */
        expect(ops[i], 0, 8, 8, BIN_KIND_INVALID);        /* no key */
        expect(ops[i], 1, 0, 1, BIN_KIND_INVALID);        /* no extras */
        expect(ops[i], 1, 4, 5, BIN_KIND_INVALID);
        expect(ops[i], 1, 20, 21, BIN_KIND_INVALID);
        expect(ops[i], 1, 0xff, 0x100, BIN_KIND_INVALID);
    }
    const uint8_t app[] = {BIN_OP_APPEND, BIN_OP_APPENDQ, BIN_OP_PREPEND, BIN_OP_PREPENDQ};
    for (size_t i = 0; i < sizeof app; i++) {
        expect(app[i], 1, 0, 1, BIN_KIND_APPEND);
        expect(app[i], 1, 0, 100, BIN_KIND_APPEND);
        expect(app[i], 0, 0, 5, BIN_KIND_INVALID);
        expect(app[i], 1, 8, 10, BIN_KIND_INVALID);
    }
}

static void test_value_len(void **state)
{
    (void)state;
    struct bin_header h = hdr(BIN_OP_SET, 250, 8, 0xffffffffu);
    assert_false(bin_lengths_inconsistent(&h));
    assert_true(bin_value_len(&h) == 0xffffffffu - 258);
    h = hdr(BIN_OP_APPEND, 3, 0, 3);
    assert_true(bin_value_len(&h) == 0);
}

static void test_arith_touch_flush_stat(void **state)
{
    (void)state;
    const uint8_t ar[] = {BIN_OP_INCREMENT, BIN_OP_INCREMENTQ, BIN_OP_DECREMENT,
                          BIN_OP_DECREMENTQ};
    for (size_t i = 0; i < sizeof ar; i++) {
        expect(ar[i], 1, 20, 21, BIN_KIND_ARITH);
        expect(ar[i], 1, 20, 22, BIN_KIND_INVALID);
        expect(ar[i], 0, 20, 20, BIN_KIND_INVALID);
        expect(ar[i], 1, 8, 9, BIN_KIND_INVALID);
        expect(ar[i], 1, 0, 1, BIN_KIND_INVALID);
    }
    const uint8_t tc[] = {BIN_OP_TOUCH, BIN_OP_GAT, BIN_OP_GATQ, BIN_OP_GATK, BIN_OP_GATKQ};
    for (size_t i = 0; i < sizeof tc; i++) {
        expect(tc[i], 1, 4, 5, BIN_KIND_TOUCH);
        expect(tc[i], 0, 4, 4, BIN_KIND_INVALID);
        expect(tc[i], 1, 0, 1, BIN_KIND_INVALID);
        expect(tc[i], 1, 8, 9, BIN_KIND_INVALID);
    }
    expect(BIN_OP_FLUSH, 0, 0, 0, BIN_KIND_FLUSH);
    expect(BIN_OP_FLUSHQ, 0, 4, 4, BIN_KIND_FLUSH);
    expect(BIN_OP_FLUSH, 0, 2, 2, BIN_KIND_INVALID);
    expect(BIN_OP_FLUSH, 0, 4, 5, BIN_KIND_INVALID);
    expect(BIN_OP_FLUSH, 1, 4, 5, BIN_KIND_INVALID);
    expect(BIN_OP_STAT, 0, 0, 0, BIN_KIND_STAT);
    expect(BIN_OP_STAT, 5, 0, 5, BIN_KIND_STAT);
    expect(BIN_OP_STAT, 0, 4, 4, BIN_KIND_INVALID);
    expect(BIN_OP_SASL_AUTH, 5, 0, 5, BIN_KIND_SASL_AUTH);
    expect(BIN_OP_SASL_STEP, 5, 0, 100, BIN_KIND_SASL_AUTH);
    expect(BIN_OP_SASL_AUTH, 0, 0, 5, BIN_KIND_INVALID);
    expect(BIN_OP_SASL_AUTH, 5, 4, 9, BIN_KIND_INVALID);
}

static void test_unknown(void **state)
{
    (void)state;
    expect(BIN_OP_VERBOSITY, 0, 4, 4, BIN_KIND_UNKNOWN);
    for (unsigned op = 0x30; op <= 0x3c; op++)
        expect((uint8_t)op, 0, 0, 0, BIN_KIND_UNKNOWN);
    expect(0x25, 0, 0, 0, BIN_KIND_UNKNOWN);
    expect(0xff, 0xffff, 0xff, 0xffffffffu, BIN_KIND_UNKNOWN);
}

static void expect_group(const char *key, const char *want)
{
    const char *got = bin_stat_group(key, strlen(key));
    if (want == NULL ? got != NULL : got == NULL || strcmp(got, want) != 0)
        fail_msg("STAT key '%s': group '%s', want '%s'", key, got ? got : "(none)",
                 want ? want : "(none)");
}

/* memcached's binary STAT: prefixes for reset/settings/detail, exact names
 * for the rest (checked against memcached 1.6.18). */
static void test_stat_groups(void **state)
{
    (void)state;
    expect_group("", "");
    expect_group("reset", "reset");
    expect_group("resetXYZ", "reset");
    expect_group("settings", "settings");
    expect_group("settingsXX", "settings");
    expect_group("detail on", "detail on");
    expect_group("detail off", "detail off");
    expect_group("detail dump", "detail dump");
    expect_group("detail", NULL);
    expect_group("detail x", NULL);
    expect_group("items", "items");
    expect_group("items ", NULL);
    expect_group("slabs", "slabs");
    expect_group("slabsx", NULL);
    expect_group("sizes", "sizes");
    expect_group("conns", NULL);
    expect_group("cachedump 1 1", NULL);
    expect_group("foo", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_inconsistent),
        cmocka_unit_test(test_quiet_map),
        cmocka_unit_test(test_no_body_opcodes),
        cmocka_unit_test(test_get_delete),
        cmocka_unit_test(test_update),
        cmocka_unit_test(test_value_len),
        cmocka_unit_test(test_arith_touch_flush_stat),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_stat_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
