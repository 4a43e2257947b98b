/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash segment format (src/store/flash/flash_layout.c), in memory, no
 * disk: a round trip of every field, every header byte and every item byte
 * damaged (the walk goes past a damaged value), torn writes (a zero tail; half of a newer segment over an older
 * one), another store's segment, and lengths that lie. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <cmocka.h>

#include "store/flash/flash_layout.h"

#define SEG (64u * 1024)
#define INSTANCE 0x1234abcd5678ef01ull
#define NITEMS 40

static char value_of[NITEMS][3000];
/* changes every value: an older segment at the same place holds other bytes */
static int value_salt;

static struct flash_item_in item_in(int i)
{
    static char keys[NITEMS][32];
    snprintf(keys[i], sizeof keys[i], "key:%d", i);
    /* values under and over 128 bytes (one- and two-byte varints), some
     * empty */
    uint32_t n = (uint32_t)((i * 397) % 2900) * (i % 7 != 3);
    for (uint32_t j = 0; j < n; j++)
        value_of[i][j] = (char)('a' + (i + j + value_salt) % 26);
    return (struct flash_item_in){
        .key = keys[i],
        .nkey = (uint32_t)strlen(keys[i]),
        .value = value_of[i],
        .nvalue = n,
        .flags = i % 3 ? (uint32_t)i * 1000003u : 0,
        .exptime = i % 4 ? 1000u + (uint32_t)i : REL_TIME_NEVER,
        .atime = 77u + (uint32_t)i,
        .cas = i % 5 == 0 ? 0 : (i % 5 == 1 ? 1ull << 40 : 500u + (uint64_t)i),
    };
}

/* A segment of n items; offs[] (may be NULL): where each went. */
static void build(char *buf, uint64_t seq, uint64_t instance, int n, uint32_t *offs)
{
    struct flash_writer w;
    assert_int_equal(flash_writer_init(&w, buf, SEG, seq, instance, 500), FLASH_OK);
    for (int i = 0; i < n; i++) {
        struct flash_item_in in = item_in(i);
        assert_int_equal(flash_writer_add(&w, &in, offs ? &offs[i] : NULL), FLASH_OK);
    }
    flash_writer_finish(&w);
}

/* A segment of every item (seq 9), malloc'd; offs[NITEMS] is its end. */
static char *build_all(uint32_t *offs)
{
    char *buf = malloc(SEG);
    build(buf, 9, INSTANCE, NITEMS, offs);
    struct flash_seg_hdr h;
    assert_int_equal(flash_seg_parse_hdr(buf, SEG, INSTANCE, &h), FLASH_OK);
    offs[NITEMS] = FLASH_HDR_LEN + h.nbytes;
    return buf;
}

/* n of an item whose key is "key:n" */
static int key_number(const struct flash_item *f)
{
    char num[8] = {0};
    assert_true(f->h.nkey > 4 && f->h.nkey < 4 + sizeof num && memcmp(f->key, "key:", 4) == 0);
    memcpy(num, f->key + 4, f->h.nkey - 4);
    return atoi(num);
}

/* Items the last walk skipped as damaged (their sum failed). */
static uint32_t walk_damaged;

/* Walks buf; returns the items read good before the walk ended, *err the
 * walk's end (0 or an error). Every item returned must be one written
 * there (item_in of its key's number), in the order written; the items
 * skipped as damaged are walk_damaged. */
static int walk(const char *buf, size_t len, uint64_t instance, int *err)
{
    walk_damaged = 0;
    struct flash_seg_hdr h;
    int rc = flash_seg_parse_hdr(buf, len, instance, &h);
    if (rc != FLASH_OK) {
        *err = rc;
        return 0;
    }
    struct flash_iter it;
    flash_iter_init(&it, buf, &h);
    struct flash_item f;
    int n = 0, last = -1;
    while ((rc = flash_iter_next(&it, &f)) == 1) {
        int i = key_number(&f);
        assert_true(i > last && i < NITEMS);
        last = i;
        struct flash_item_in in = item_in(i);
        assert_int_equal(f.h.nkey, in.nkey);
        assert_memory_equal(f.key, in.key, in.nkey);
        assert_int_equal(f.h.nvalue, in.nvalue);
        if (in.nvalue)
            assert_memory_equal(f.value, in.value, in.nvalue);
        assert_int_equal(f.flags, in.flags);
        assert_int_equal(f.exptime, in.exptime);
        assert_int_equal(f.atime, in.atime);
        assert_true(f.cas == in.cas);
        assert_true(f.off + f.len <= FLASH_HDR_LEN + h.nbytes);
        n++;
    }
    walk_damaged = it.damaged;
    *err = rc;
    return n;
}

static void test_round_trip(void **state)
{
    (void)state;
    char *buf = malloc(SEG);
    uint32_t offs[NITEMS];
    build(buf, 7, INSTANCE, NITEMS, offs);
    int err;
    assert_int_equal(walk(buf, SEG, INSTANCE, &err), NITEMS);
    assert_int_equal(err, 0);
    struct flash_seg_hdr h;
    assert_int_equal(flash_seg_parse_hdr(buf, SEG, INSTANCE, &h), FLASH_OK);
    assert_true(h.seq == 7 && h.instance == INSTANCE && h.cas_base == 500);
    assert_int_equal(h.nitems, NITEMS);
    assert_int_equal(h.max_exptime, REL_TIME_NEVER); /* item 0 never expires */

    /* One item alone, as a lookup reads it: its offset, the segment's seed. */
    uint64_t seed = flash_seg_seed(7, INSTANCE);
    struct flash_item f;
    assert_int_equal(flash_item_parse(buf + offs[13], SEG - offs[13], seed, 500, &f), FLASH_OK);
    assert_memory_equal(f.key, "key:13", 6);
    /* the wrong seed (another segment's) is a checksum mismatch */
    assert_int_equal(flash_item_parse(buf + offs[13], SEG - offs[13], flash_seg_seed(8, INSTANCE),
                                      500, &f),
                     FLASH_E_ITEMSUM);
    /* fewer bytes than the item: refused, not read past */
    assert_int_equal(flash_item_parse(buf + offs[13], f.len - 1, seed, 500, &f), FLASH_E_ITEM);

    /* Latest expiry when every item expires. */
    struct flash_writer w;
    flash_writer_init(&w, buf, SEG, 1, INSTANCE, 0);
    for (int i = 1; i < 4; i++) {
        struct flash_item_in in = item_in(i);
        assert_int_equal(flash_writer_add(&w, &in, NULL), FLASH_OK);
    }
    flash_writer_finish(&w);
    assert_int_equal(flash_seg_parse_hdr(buf, SEG, 0, &h), FLASH_OK);
    assert_int_equal(h.max_exptime, 1003);
    free(buf);
}

static void test_from_ram_item(void **state)
{
    (void)state;
    /* A RAM item (CAS as a delta from its own segment's base) keeps its
     * CAS, flags and expiry in a flash segment with another base. */
    char ram[256];
    uint8_t layout = item_layout_for(9, 4242, true, 100070, 100000);
    item_init(ram, layout, "ramkey", 6, 5);
    struct item_hdr h;
    item_decode(ram, &h);
    memcpy(ram + h.hlen + 6, "hello", 5);
    item_put_u32(ram, h.flags_off, 9);
    item_put_u32(ram, h.exp_off, 4242);
    item_put_st(ram, &h, 20, 31);
    item_put_cas(ram, &h, 100070, 100000);
    char *buf = malloc(SEG);
    struct flash_writer w;
    flash_writer_init(&w, buf, SEG, 3, INSTANCE, 5);
    uint32_t off;
    assert_int_equal(flash_writer_add_ram(&w, ram, 100000, 20, &off), FLASH_OK);
    flash_writer_finish(&w);
    struct flash_item f;
    assert_int_equal(
        flash_item_parse(buf + off, SEG - off, flash_seg_seed(3, INSTANCE), 5, &f), FLASH_OK);
    assert_memory_equal(f.key, "ramkey", 6);
    assert_memory_equal(f.value, "hello", 5);
    assert_true(f.cas == 100070 && f.flags == 9 && f.exptime == 4242 && f.atime == 31);
    free(buf);
}

/* Every header byte damaged (each bit of it in turn) is refused. */
static void test_header_damage(void **state)
{
    (void)state;
    char *buf = malloc(SEG);
    build(buf, 9, INSTANCE, NITEMS, NULL);
    for (uint32_t i = 0; i < FLASH_HDR_LEN; i++)
        for (int b = 0; b < 8; b++) {
            buf[i] ^= (char)(1 << b);
            struct flash_seg_hdr h;
            int rc = flash_seg_parse_hdr(buf, SEG, INSTANCE, &h);
            if (i < 8)
                assert_int_equal(rc, FLASH_E_MAGIC);
            else
                assert_int_equal(rc, FLASH_E_HDRSUM);
            buf[i] ^= (char)(1 << b);
        }
    int err;
    assert_int_equal(walk(buf, SEG, INSTANCE, &err), NITEMS);
    free(buf);
}

/* Every item byte damaged: the walk returns every other item, or, where
 * the damage is in the header's lengths, the items before the damaged
 * one; never the damaged one (walk checks each item returned against what
 * was written). A damaged byte in the zero tail changes nothing. */
static void test_item_damage(void **state)
{
    (void)state;
    uint32_t offs[NITEMS + 1];
    char *buf = build_all(offs);
    int item = 0;
    uint32_t bytes = 0, past = 0;
    for (uint32_t i = FLASH_HDR_LEN; i < offs[NITEMS]; i++) {
        while (i >= offs[item + 1])
            item++;
        uint8_t x = (uint8_t)(1u << (i % 8));
        buf[i] ^= (char)x;
        int err;
        int n = walk(buf, SEG, INSTANCE, &err);
        assert_true(n >= item);
        if (err == 0) {
            /* skipped, counted, and the walk went on to the end */
            assert_int_equal(n + (int)walk_damaged, NITEMS);
            past += n == NITEMS - 1;
        } else {
            assert_true(err == FLASH_E_ITEM || err == FLASH_E_ITEMSUM || err == FLASH_E_COUNT);
        }
        bytes++;
        buf[i] ^= (char)x;
    }
    /* the value bytes are most of an item: the walk goes past those */
    assert_true(past > bytes * 9 / 10);
    buf[SEG - 1] ^= 1;
    int err;
    assert_int_equal(walk(buf, SEG, INSTANCE, &err), NITEMS);
    assert_int_equal(err, 0);
    free(buf);
}

/* A torn write: the device kept the header and the first part of the items
 * and the rest reads as zeroes, or as the older segment that was there. */
static void test_torn_write(void **state)
{
    (void)state;
    char *old = malloc(SEG), *cur = malloc(SEG), *mix = malloc(SEG);
    uint32_t offs[NITEMS];
    value_salt = 1;
    build(old, 4, INSTANCE, NITEMS, NULL);
    value_salt = 0;
    build(cur, 5, INSTANCE, NITEMS, offs);
    uint32_t half = SEG / 2;
    int before = 0; /* items wholly in the first half */
    while (before < NITEMS - 1 && offs[before + 1] <= half)
        before++;
    int err;

    memcpy(mix, cur, half);
    memset(mix + half, 0, SEG - half);
    assert_int_equal(walk(mix, SEG, INSTANCE, &err), before);
    assert_true(err < 0);

    /* an older segment's bytes after the tear */
    memcpy(mix + half, old + half, SEG - half);
    assert_int_equal(walk(mix, SEG, INSTANCE, &err), before);
    assert_true(err < 0 || (int)walk_damaged == NITEMS - before);

    /* the same items in the older segment, torn between two items: only
     * the seed tells the older bytes apart */
    char *same = malloc(SEG);
    build(same, 4, INSTANCE, NITEMS, NULL);
    memcpy(mix, cur, offs[20]);
    memcpy(mix + offs[20], same + offs[20], SEG - offs[20]);
    assert_int_equal(walk(mix, SEG, INSTANCE, &err), 20);
    assert_int_equal(err, 0);
    assert_int_equal(walk_damaged, NITEMS - 20);
    free(same);

    /* the old header over new items: none of them is served */
    memcpy(mix, old, FLASH_HDR_LEN);
    memcpy(mix + FLASH_HDR_LEN, cur + FLASH_HDR_LEN, SEG - FLASH_HDR_LEN);
    assert_int_equal(walk(mix, SEG, INSTANCE, &err), 0);
    assert_int_equal(walk_damaged, NITEMS);

    /* never written */
    memset(mix, 0, SEG);
    assert_int_equal(walk(mix, SEG, INSTANCE, &err), 0);
    assert_int_equal(err, FLASH_E_MAGIC);
    free(old);
    free(cur);
    free(mix);
}

static void test_wrong_instance(void **state)
{
    (void)state;
    char *buf = malloc(SEG);
    build(buf, 9, INSTANCE, NITEMS, NULL);
    int err;
    assert_int_equal(walk(buf, SEG, INSTANCE + 1, &err), 0);
    assert_int_equal(err, FLASH_E_INSTANCE);
    /* 0 accepts any store's (a tool reading a file it did not write) */
    assert_int_equal(walk(buf, SEG, 0, &err), NITEMS);
    /* another store's items fail their sums too, whatever header they sit under */
    char *other = malloc(SEG);
    build(other, 9, INSTANCE + 1, NITEMS, NULL);
    memcpy(other, buf, FLASH_HDR_LEN);
    assert_int_equal(walk(other, SEG, INSTANCE, &err), 0);
    assert_int_equal(walk_damaged, NITEMS);
    free(other);
    free(buf);
}

/* Rewrite the header's sum after patching it, as a damaged-but-summed
 * header from a buggy writer would be. */
static void reseal(char *buf)
{
    uint32_t sum = (uint32_t)XXH3_64bits(buf, 60);
    memcpy(buf + 60, &sum, 4);
}

static void test_lengths_lie(void **state)
{
    (void)state;
    char *buf = malloc(SEG);
    build(buf, 9, INSTANCE, NITEMS, NULL);
    struct flash_seg_hdr h;
    int err;
    /* fewer bytes than the header says */
    assert_int_equal(flash_seg_parse_hdr(buf, 63, INSTANCE, &h), FLASH_E_SHORT);
    assert_int_equal(flash_seg_parse_hdr(buf, FLASH_HDR_LEN + 100, INSTANCE, &h), FLASH_E_SHORT);

    char *p = malloc(SEG);
    uint32_t v32;
    uint16_t v16;
    /* nbytes past any segment */
    memcpy(p, buf, SEG);
    v32 = 0xffffff00u;
    memcpy(p + 40, &v32, 4);
    reseal(p);
    assert_int_equal(flash_seg_parse_hdr(p, SEG, INSTANCE, &h), FLASH_E_LENGTH);
    /* more items than bytes could hold */
    memcpy(p, buf, SEG);
    v32 = 0xffffffffu;
    memcpy(p + 12, &v32, 4);
    reseal(p);
    assert_int_equal(flash_seg_parse_hdr(p, SEG, INSTANCE, &h), FLASH_E_LENGTH);
    /* one item more than written: the walk ends short */
    memcpy(p, buf, SEG);
    v32 = NITEMS + 1;
    memcpy(p + 12, &v32, 4);
    reseal(p);
    assert_int_equal(walk(p, SEG, INSTANCE, &err), NITEMS);
    assert_int_equal(err, FLASH_E_COUNT);
    /* one fewer: the items end after where it says */
    v32 = NITEMS - 1;
    memcpy(p + 12, &v32, 4);
    reseal(p);
    assert_int_equal(walk(p, SEG, INSTANCE, &err), NITEMS - 1);
    assert_int_equal(err, FLASH_E_COUNT);
    /* another version, another header length */
    memcpy(p, buf, SEG);
    v16 = 2;
    memcpy(p + 8, &v16, 2);
    reseal(p);
    assert_int_equal(flash_seg_parse_hdr(p, SEG, INSTANCE, &h), FLASH_E_VERSION);
    memcpy(p, buf, SEG);
    v16 = 128;
    memcpy(p + 10, &v16, 2);
    reseal(p);
    assert_int_equal(flash_seg_parse_hdr(p, SEG, INSTANCE, &h), FLASH_E_LENGTH);
    free(p);
    free(buf);
}

static void test_writer_limits(void **state)
{
    (void)state;
    char *buf = malloc(SEG);
    struct flash_writer w;
    assert_int_equal(flash_writer_init(&w, buf, FLASH_SEG_MIN - 1, 1, 1, 0), FLASH_E_LENGTH);
    assert_int_equal(flash_writer_init(&w, buf, SEG, 1, 1, 0), FLASH_OK);
    struct flash_item_in in = item_in(1);
    in.nkey = 0;
    assert_int_equal(flash_writer_add(&w, &in, NULL), FLASH_E_ITEM);
    in.nkey = 256;
    assert_int_equal(flash_writer_add(&w, &in, NULL), FLASH_E_ITEM);
    /* fill to the end: the last add is refused and changes nothing */
    in = item_in(23);
    int n = 0;
    while (flash_writer_add(&w, &in, NULL) == FLASH_OK)
        n++;
    uint32_t used = w.used;
    assert_int_equal(flash_writer_add(&w, &in, NULL), FLASH_E_FULL);
    assert_int_equal(w.used, used);
    flash_writer_finish(&w);
    struct flash_seg_hdr h;
    assert_int_equal(flash_seg_parse_hdr(buf, SEG, 1, &h), FLASH_OK);
    assert_int_equal(h.nitems, n);
    assert_true(h.nbytes + FLASH_HDR_LEN <= SEG);
    free(buf);
}

/* A segment walked a part at a time, as a dump reads one (each part an
 * exact-size copy: a read past it is ASan's): flash_item_span says where
 * the item that runs past a part begins and how long it is, so the next
 * part starts there, and every item is found once, in order. */
static void test_item_span_parts(void **state)
{
    (void)state;
    char *buf = malloc(SEG);
    uint32_t offs[NITEMS];
    build(buf, 9, INSTANCE, NITEMS, offs);
    struct flash_seg_hdr h;
    assert_int_equal(flash_seg_parse_hdr(buf, SEG, INSTANCE, &h), FLASH_OK);
    uint64_t seed = flash_seg_seed(9, INSTANCE);
    uint32_t end = FLASH_HDR_LEN + h.nbytes;
    static const uint32_t parts[] = {700, 3001, 4096, 65536};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
        uint32_t off = FLASH_HDR_LEN, want = parts[k];
        int n = 0;
        while (off < end) {
            uint32_t len = end - off < want ? end - off : want;
            char *part = malloc(len);
            memcpy(part, buf + off, len);
            uint32_t at = 0;
            for (;;) {
                uint32_t ilen = 0;
                int rc = flash_item_span(part + at, len - at, &ilen);
                if (rc == FLASH_E_SHORT || (rc == FLASH_OK && ilen > len - at)) {
                    /* runs past the part: the next one starts with it */
                    assert_true(off + at + (rc == FLASH_OK ? ilen : 0) <= end);
                    want = rc == FLASH_OK && ilen > parts[k] ? ilen : parts[k];
                    break;
                }
                assert_int_equal(rc, FLASH_OK);
                struct flash_item f;
                assert_int_equal(flash_item_parse(part + at, ilen, seed, 500, &f), FLASH_OK);
                assert_int_equal(f.len, ilen);
                assert_int_equal(off + at, offs[n]);
                struct flash_item_in in = item_in(n);
                assert_memory_equal(f.key, in.key, in.nkey);
                n++;
                at += ilen;
                if (at == len)
                    break;
            }
            assert_true(at > 0 || want > parts[k]); /* progress, or a longer part */
            off += at;
            free(part);
        }
        assert_int_equal(n, NITEMS);
    }
    /* A header cut short is SHORT (read more), a bad one ITEM. */
    uint32_t len;
    assert_int_equal(flash_item_span(buf + offs[3], 2, &len), FLASH_E_SHORT);
    /* item 3's value is empty: a one-byte varint; item 5's takes two */
    assert_int_equal(flash_item_span(buf + offs[3], 3, &len), FLASH_OK);
    assert_int_equal(len, offs[4] - offs[3]);
    assert_int_equal(flash_item_span(buf + offs[5], 3, &len), FLASH_E_SHORT);
    assert_int_equal(flash_item_span(buf + offs[5], 4, &len), FLASH_OK);
    buf[offs[5]] = 0;
    assert_int_equal(flash_item_span(buf + offs[5], SEG - offs[5], &len), FLASH_E_ITEM);
    free(buf);
}

/* A damaged item whose header's span is crafted: the walk skips by it
 * only within the segment's bytes, never backwards, and ends there. Walked
 * in an exact-size copy of the segment, so that a read past its end is
 * ASan's. Item k's value varint (two bytes) is rewritten: its sum then
 * fails, and its span reaches the end exactly (the items after it are
 * not counted: the count says more), one byte past it (refused: the walk
 * stops at k), or every item's value is damaged (all skipped). */
static void test_damaged_item_spans(void **state)
{
    (void)state;
    uint32_t offs[NITEMS + 1];
    char *buf = build_all(offs);
    uint32_t end = offs[NITEMS];
    /* the last item with a two-byte varint whose rest of the segment a
     * two-byte varint can still name */
    int k = -1;
    for (int i = NITEMS - 2; i > 0 && k < 0; i--) {
        struct flash_item_in in = item_in(i);
        if (in.nvalue >= 128 && end - offs[i] < 16384)
            k = i;
    }
    assert_true(k > 0);
    struct item_hdr ih;
    item_decode(buf + offs[k], &ih);
    assert_int_equal(ih.atime_off, 4); /* the varint: bytes 2 and 3 */
    uint32_t fixed = ih.hlen + ih.nkey;
    const uint32_t spans[] = {end - offs[k], end - offs[k] + 1, fixed + 128};
    for (int c = 0; c < 3; c++) {
        char *seg = malloc(end);
        memcpy(seg, buf, end);
        uint32_t v = spans[c] - fixed;
        seg[offs[k] + 2] = (char)((v & 0x7f) | 0x80);
        seg[offs[k] + 3] = (char)(v >> 7);
        int err;
        int n = walk(seg, end, INSTANCE, &err);
        assert_int_equal(n, k); /* the items before k, never k */
        if (c == 0) {
            /* to the end, the count short */
            assert_int_equal(err, FLASH_E_COUNT);
            assert_int_equal(walk_damaged, 1);
        } else if (c == 1) {
            /* past the end: its length cannot be trusted, the walk stops */
            assert_int_equal(err, FLASH_E_ITEM);
            assert_int_equal(walk_damaged, 0);
        } else {
            /* short of its own bytes: what follows fails in turn */
            assert_true(err < 0);
            assert_true(walk_damaged >= 1);
        }
        free(seg);
    }
    /* every value damaged: nothing served, each counted, the walk whole */
    char *seg = malloc(end);
    memcpy(seg, buf, end);
    for (int i = 0; i < NITEMS; i++)
        seg[offs[i + 1] - 1] ^= 0x10;
    int err;
    assert_int_equal(walk(seg, end, INSTANCE, &err), 0);
    assert_int_equal(err, 0);
    assert_int_equal(walk_damaged, NITEMS);
    free(seg);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_from_ram_item),
        cmocka_unit_test(test_header_damage), cmocka_unit_test(test_item_damage),
        cmocka_unit_test(test_torn_write),   cmocka_unit_test(test_wrong_instance),
        cmocka_unit_test(test_lengths_lie),  cmocka_unit_test(test_writer_limits),
        cmocka_unit_test(test_item_span_parts), cmocka_unit_test(test_damaged_item_spans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
