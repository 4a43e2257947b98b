/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier's record in the -e file (src/store/flash/flash_keep.c),
 * in memory: a segment's life (open, bits, on disk, free) as a restart
 * reads it after each store, a graceful stop's checksum, other shapes,
 * damaged entries and header, and a range cut short. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/flash/flash_keep.h"

#define NSEGS 12u
#define SEG (2u << 20)
#define SHAPE 0x5eedull

static char *range(size_t *len)
{
    *len = flash_keep_len(NSEGS, SEG);
    char *m = aligned_alloc(4096, *len);
    assert_non_null(m);
    memset(m, 0, *len);
    return m;
}

static enum fk_attach attach(struct flash_keep *k, char *m, size_t len, bool clean)
{
    const char *why = NULL;
    enum fk_attach a = flash_keep_attach(k, m, len, NSEGS, SEG, SHAPE, clean, &why);
    assert_true((a == FK_DISCARDED) == (why != NULL));
    return a;
}

/* A record laid out afresh in a new range, of instance inst. */
static char *fresh(struct flash_keep *k, size_t *len, uint64_t inst)
{
    char *m = range(len);
    assert_int_equal(attach(k, m, *len, false), FK_NEW);
    k->hdr->instance = inst;
    return m;
}

static void test_segment_life(void **state)
{
    (void)state;
    size_t len;
    struct flash_keep k;
    char *m = fresh(&k, &len, 77);
    struct fk_seg e;
    for (uint32_t n = 0; n < NSEGS; n++)
        assert_false(flash_keep_get(&k, n, &e));
    /* a writer's buffer: never read by a restart, whatever its bits say */
    flash_keep_open(&k, 3, 5, 1000, 1);
    assert_int_equal(k.hdr->seq_next, 6);
    flash_keep_set(&k, 3, 64);
    flash_keep_set(&k, 3, 64 * 70 + 13);
    assert_false(flash_keep_get(&k, 3, &e));
    assert_true(flash_keep_test(&k, 3, 64));
    assert_true(flash_keep_test(&k, 3, 64 * 70));
    assert_false(flash_keep_test(&k, 3, 128));
    assert_false(flash_keep_test(&k, 2, 64));
    /* on the device: the entry whole */
    flash_keep_disk(&k, 3, 9000, 2, 0);
    assert_true(flash_keep_get(&k, 3, &e));
    assert_int_equal(e.seq, 5);
    assert_int_equal(e.cas_base, 1000);
    assert_int_equal(e.nbytes, 9000);
    assert_int_equal(e.nitems, 2);
    assert_int_equal(e.bucket, 1);
    /* a delete clears one bit, not its neighbours' */
    flash_keep_clear(&k, 3, 64 * 70 + 13);
    assert_false(flash_keep_test(&k, 3, 64 * 70));
    assert_true(flash_keep_test(&k, 3, 64));
    /* the last unit of a segment has its bit */
    flash_keep_set(&k, 3, SEG - 1);
    assert_true(flash_keep_test(&k, 3, SEG - 64));
    /* a restore takes the bits: copied, cleared */
    uint64_t bits[SEG / 64 / 64];
    assert_int_equal(k.words, SEG / 64 / 64);
    flash_keep_take_bits(&k, 3, bits);
    assert_true(flash_keep_bit(bits, k.words, 64));
    assert_true(flash_keep_bit(bits, k.words, SEG - 1));
    assert_false(flash_keep_bit(bits, k.words, 0));
    assert_false(flash_keep_bit(bits, k.words, SEG + 64)); /* past the end */
    assert_true(flash_keep_any_in(bits, k.words));
    assert_false(flash_keep_test(&k, 3, 64));
    flash_keep_set(&k, 3, 64);
    /* freed: no entry and no bits (a later damaged state finds none) */
    flash_keep_free(&k, 3);
    assert_false(flash_keep_get(&k, 3, &e));
    assert_false(flash_keep_test(&k, 3, 64));
    /* reopened with a new sequence: the old bits are gone first */
    flash_keep_set(&k, 3, 640);
    flash_keep_open(&k, 3, 9, 2000, 0);
    assert_false(flash_keep_test(&k, 3, 640));
    assert_int_equal(k.hdr->seq_next, 10);
    free(m);
}

static void test_graceful_stop_checksum(void **state)
{
    (void)state;
    size_t len;
    struct flash_keep k;
    char *m = fresh(&k, &len, 77);
    flash_keep_open(&k, 0, 1, 1, 0);
    flash_keep_set(&k, 0, 4096);
    flash_keep_disk(&k, 0, 8192, 1, 0);
    flash_keep_close_clean(&k);
    char *copy = malloc(len);
    memcpy(copy, m, len);
    /* clean, and read as clean */
    assert_int_equal(attach(&k, m, len, true), FK_KEPT);
    assert_int_equal(k.hdr->state, FK_RUNNING);
    struct fk_seg e;
    assert_true(flash_keep_get(&k, 0, &e));
    assert_true(flash_keep_test(&k, 0, 4096));
    /* not closed again (a kill during the restore): after a graceful stop
     * of the RAM part that is damage */
    assert_int_equal(attach(&k, m, len, true), FK_DISCARDED);
    assert_false(flash_keep_get(&k, 0, &e));
    /* one bit anywhere in the table or bitmaps fails the checksum */
    size_t table = FLASH_KEEP_HDR;
    size_t bits = (size_t)((char *)k.bits - m) + (size_t)k.words * 8 * NSEGS - 1;
    size_t at[] = {table + 3, bits};
    for (size_t i = 0; i < 2; i++) {
        memcpy(m, copy, len);
        m[at[i]] ^= 1;
        assert_int_equal(attach(&k, m, len, true), FK_DISCARDED);
        /* laid out afresh: nothing restorable, the same shape */
        assert_false(flash_keep_get(&k, 0, &e));
        assert_false(flash_keep_test(&k, 0, 4096));
        k.hdr->instance = 77;
        assert_int_equal(attach(&k, m, len, false), FK_KEPT);
    }
    /* after a crash the checksum is not asked for */
    memcpy(m, copy, len);
    ((struct fk_hdr *)m)->state = FK_RUNNING;
    assert_int_equal(attach(&k, m, len, false), FK_KEPT);
    free(copy);
    free(m);
}

static void test_other_shape_or_damage(void **state)
{
    (void)state;
    size_t len;
    struct flash_keep k;
    const char *why;
    char *m = fresh(&k, &len, 5);
    flash_keep_open(&k, 1, 1, 1, 0);
    flash_keep_disk(&k, 1, 4096, 0, 0);
    char *copy = malloc(len);
    memcpy(copy, m, len);
    /* another device shape, segment size or count */
    assert_int_equal(flash_keep_attach(&k, m, len, NSEGS, SEG, SHAPE + 1, false, &why),
                     FK_DISCARDED);
    memcpy(m, copy, len);
    assert_int_equal(flash_keep_attach(&k, m, len, NSEGS - 1, SEG, SHAPE, false, &why),
                     FK_DISCARDED);
    memcpy(m, copy, len);
    assert_int_equal(flash_keep_attach(&k, m, len, NSEGS, SEG / 2, SHAPE, false, &why),
                     FK_DISCARDED);
    /* a header byte damaged */
    for (size_t i = 0; i < offsetof(struct fk_hdr, hdr_sum) + 8; i++) {
        memcpy(m, copy, len);
        m[i] ^= 0x10;
        assert_int_equal(attach(&k, m, len, false), FK_DISCARDED);
    }
    /* no instance: never a match for a segment on the device */
    memcpy(m, copy, len);
    ((struct fk_hdr *)m)->instance = 0;
    assert_int_equal(attach(&k, m, len, false), FK_DISCARDED);
    /* a range cut short */
    memcpy(m, copy, len);
    assert_int_equal(attach(&k, m, len - 4096, false), FK_DISCARDED);
    /* each bit of a written entry: refused, never another DISK entry */
    memcpy(m, copy, len);
    assert_int_equal(attach(&k, m, len, false), FK_KEPT);
    struct fk_seg e;
    char *ent = (char *)&k.segs[1];
    for (size_t bit = 0; bit < sizeof(struct fk_seg) * 8; bit++) {
        size_t byte = bit / 8;
        if (byte >= offsetof(struct fk_seg, pad))
            continue;
        ent[byte] ^= (char)(1 << bit % 8);
        assert_false(flash_keep_get(&k, 1, &e));
        ent[byte] ^= (char)(1 << bit % 8);
        assert_true(flash_keep_get(&k, 1, &e));
    }
    /* one bit of a free entry's state never makes it DISK */
    for (int bit = 0; bit < 32; bit++) {
        k.segs[2].state = FK_FREE ^ (1u << bit);
        assert_false(flash_keep_get(&k, 2, &e));
        k.segs[2].state = FK_FILLING ^ (1u << bit);
        assert_false(flash_keep_get(&k, 2, &e));
    }
    /* a sequence at or past seq_next: damage */
    k.hdr->seq_next = 1;
    assert_false(flash_keep_get(&k, 1, &e));
    free(copy);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segment_life),
        cmocka_unit_test(test_graceful_stop_checksum),
        cmocka_unit_test(test_other_shape_or_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
