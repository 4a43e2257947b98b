/* SPDX-License-Identifier: BSD-3-Clause */
/* The ghost list's entries (store_ghost.h): 16 bits each, 15 of fingerprint
 * and the queue the key left; never 0; main's leavers never overwrite
 * small's; the counts by queue; fingerprints independent of the entry a key
 * maps to, so a key not there matches about 1 time in 32,768. */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/store_ghost.h"

#define MB ((size_t)1 << 20)

/* hv as XXH3 gives it: every bit as likely set as not (splitmix64) */
static uint64_t next_hv(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The bits that choose an entry at the largest table (2^26 entries). */
#define INDEX_BITS ((((uint64_t)1 << 26) - 1) | ((uint64_t)0xfff << 52))
/* The fingerprint's bits. */
#define FP_BITS ((((uint64_t)1 << 15) - 1) << 26)

static void test_entry_format(void **state)
{
    (void)state;
    struct store_ghost g = {0};
    ghost_init(&g, 64 * MB);
    assert_non_null(g.tab);
    assert_int_equal(sizeof(*g.tab), 2);
    assert_int_equal(g.mask + 1, 64 * MB / 256); /* one entry per 256 B of -m */
    uint64_t x = 1;
    for (int i = 0; i < 1000; i++) {
        uint64_t hv = next_hv(&x);
        bool from_main = i & 1;
        ghost_add(&g, hv, from_main);
        uint16_t e = *ghost_entry(&g, hv);
        assert_int_equal(e, ghost_fp(hv) | from_main);
        assert_int_equal(ghost_fp(hv) & 1, 0);
        assert_int_equal(ghost_take(&g, hv), from_main ? GHOST_MAIN : GHOST_SMALL);
        assert_int_equal(*ghost_entry(&g, hv), 0);
        assert_int_equal(ghost_take(&g, hv), GHOST_NONE); /* taken once */
    }
    /* a key whose fingerprint bits are all 0 still leaves a non-0 entry,
     * found again from either queue */
    uint64_t hv = next_hv(&x) & ~FP_BITS;
    assert_int_not_equal(ghost_fp(hv), 0);
    for (int from_main = 0; from_main < 2; from_main++) {
        ghost_add(&g, hv, from_main);
        assert_int_not_equal(*ghost_entry(&g, hv), 0);
        assert_int_equal(ghost_take(&g, hv), from_main ? GHOST_MAIN : GHOST_SMALL);
    }
    assert_int_equal(g.n[0], 0);
    assert_int_equal(g.n[1], 0);
    ghost_release(&g);
    assert_null(g.tab);
}

/* Two keys of one entry, by fingerprint bits alone: the later one from
 * small replaces either, one from main replaces only main's. */
static void test_main_never_overwrites_small(void **state)
{
    (void)state;
    struct store_ghost g = {0};
    ghost_init(&g, 64 * MB);
    uint64_t x = 2;
    uint64_t a = next_hv(&x), b = a ^ ((uint64_t)1 << 30);
    assert_ptr_equal(ghost_entry(&g, a), ghost_entry(&g, b));
    assert_int_not_equal(ghost_fp(a), ghost_fp(b));

    ghost_add(&g, a, false);
    ghost_add(&g, b, true); /* main's leaver: small's entry stays */
    assert_int_equal(g.n[0], 1);
    assert_int_equal(g.n[1], 0);
    assert_int_equal(ghost_take(&g, b), GHOST_NONE);
    assert_int_equal(ghost_take(&g, a), GHOST_SMALL);

    ghost_add(&g, a, true);
    ghost_add(&g, b, true); /* main over main: replaced */
    assert_int_equal(g.n[1], 1);
    assert_int_equal(ghost_take(&g, a), GHOST_NONE);
    ghost_add(&g, a, false); /* small over main: replaced */
    assert_int_equal(g.n[0], 1);
    assert_int_equal(g.n[1], 0);
    assert_int_equal(ghost_take(&g, b), GHOST_NONE);
    assert_int_equal(ghost_take(&g, a), GHOST_SMALL);
    assert_int_equal(g.n[0], 0);
    ghost_release(&g);
}

/* The fingerprint does not change with the bits that choose the entry at
 * any table size, and the entry does not change with the fingerprint. */
static void test_fingerprint_independent_of_entry(void **state)
{
    (void)state;
    struct store_ghost g = {0};
    ghost_init(&g, 64 * MB);
    uint64_t x = 3;
    for (int i = 0; i < 10000; i++) {
        uint64_t hv = next_hv(&x), r = next_hv(&x);
        assert_int_equal(ghost_fp(hv), ghost_fp(hv ^ (r & INDEX_BITS)));
        assert_ptr_equal(ghost_entry(&g, hv), ghost_entry(&g, hv ^ (r & FP_BITS)));
    }
    ghost_release(&g);
}

/* Keys never added match a full table about 1 time in 32,768, and the
 * counts by queue add up to the entries in use. */
static void test_false_hits(void **state)
{
    (void)state;
    struct store_ghost g = {0};
    ghost_init(&g, 64 * MB);
    uint64_t x = 4, entries = g.mask + 1;
    for (uint64_t i = 0; i < 4 * entries; i++) {
        uint64_t hv = next_hv(&x);
        ghost_add(&g, hv, hv >> 63);
    }
    uint64_t used = 0;
    for (uint64_t i = 0; i < entries; i++)
        used += g.tab[i] != 0;
    assert_int_equal((uint64_t)(g.n[0] + g.n[1]), used);
    assert_true(used > entries * 97 / 100); /* 1 - e^-4 of them */
    /* 2^22 probes: about 128 false hits, one standard deviation 11 */
    unsigned hits = 0;
    for (int i = 0; i < 1 << 22; i++)
        hits += ghost_take(&g, next_hv(&x)) != GHOST_NONE;
    print_message("false hits: %u of %d probes, %.2f%% of entries in use\n", hits, 1 << 22,
                  100.0 * (double)used / (double)entries);
    assert_true(hits > 80 && hits < 180);
    assert_int_equal((uint64_t)(g.n[0] + g.n[1]), used - hits);
    ghost_release(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry_format),
        cmocka_unit_test(test_main_never_overwrites_small),
        cmocka_unit_test(test_fingerprint_independent_of_entry),
        cmocka_unit_test(test_false_hits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
