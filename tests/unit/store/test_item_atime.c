/* SPDX-License-Identifier: BSD-3-Clause */
/* An item's access time in 2 bytes relative to its segment's clock
 * (store_item.h ITEM_AT_*), and in full where that clock cannot hold it:
 * through the item API and through the store, as `mg ... l` reads it. */
#include "test_store_helpers.h"
#include "store/store_item.h"

#include <stdio.h>

#define MB (1u << 20)

static void test_short_form_rounds_down_and_saturates(void **state)
{
    (void)state;
    rel_time_t base = 1000;
    /* seconds for the first 4096 s: exact */
    for (uint32_t d = 0; d < ITEM_AT_SECS; d++)
        assert_int_equal(item_at_held(base + d, base), base + d);
    /* then 64-second steps, never later than the time itself */
    assert_int_equal(item_at_held(base + 4096, base), base + 4096);
    assert_int_equal(item_at_held(base + 4100, base), base + 4096);
    assert_int_equal(item_at_held(base + 4159, base), base + 4096);
    assert_int_equal(item_at_held(base + 4160, base), base + 4160);
    /* saturating at 0xfff steps (72 hours) */
    assert_int_equal(item_at_held(base + 10000000, base), base + ITEM_AT_SPAN);
    /* monotone: a later time never reads back earlier */
    rel_time_t last = base;
    for (uint32_t d = 0; d < ITEM_AT_SPAN + 1000; d += 7) {
        rel_time_t h = item_at_held(base + d, base);
        assert_true(h >= last && h <= base + d);
        last = h;
    }
    /* a move rounds, but never across a flush in force it is after */
    assert_true(item_at_moves(base + 4100, base, 0));
    assert_true(item_at_moves(base + 4100, base, base + 4000));
    assert_false(item_at_moves(base + 4100, base, base + 4096));
    assert_false(item_at_moves(base + 4100, base, base + 4099));
    assert_true(item_at_moves(base + 4100, base, base + 4100));
    assert_false(item_at_moves(base - 1, base, 0));
    assert_false(item_at_moves(base + ITEM_AT_SPAN, base, 0));
    /* fits: exact seconds only, or the full form */
    assert_true(item_at_fits(0, base + 4095, base));
    assert_false(item_at_fits(0, base + 4096, base));
    assert_false(item_at_fits(0, base - 1, base));
    assert_true(item_at_fits(ITEM_L_AT32, base - 1, base));
}

static void test_status_bits_beside_the_time(void **state)
{
    (void)state;
    _Alignas(8) char p[64];
    const uint32_t bits[] = {0, ITEM_S_FETCHED, ITEM_S_STALE | ITEM_S_TOKEN, ITEM_S_MASK};
    for (int wide = 0; wide < 2; wide++) {
        uint8_t layout = (uint8_t)(ITEM_L_CAS16 | (wide ? ITEM_L_AT32 : 0));
        item_init(p, layout, "k", 1, 3);
        struct item_hdr h;
        item_decode(p, &h);
        assert_int_equal(h.hlen, wide ? 9 : 7);
        for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
            item_put_st(p, &h, 500, bits[i] | 900);
            assert_int_equal(item_get_st(p, &h, 500), bits[i] | 900);
            assert_int_equal(item_get_status(p, &h), bits[i]);
            /* the same bytes with another clock: only the short form moves */
            assert_int_equal(item_get_st(p, &h, 400) & ~ITEM_S_MASK, wide ? 900 : 800);
        }
        /* what item_st_held predicts is what is read back */
        uint32_t st = ITEM_S_FETCHED | (500 + 5000);
        item_put_st(p, &h, 500, st);
        assert_int_equal(item_get_st(p, &h, 500), item_st_held(h.layout, st, 500));
        assert_int_equal(item_get_st(p, &h, 500), wide ? st : (ITEM_S_FETCHED | (500 + 4992)));
    }
    /* an item with no other field keeps the full time: its layout byte is
     * never 0, which the segment walks read as padding */
    assert_int_equal(item_init(p, 0, "k", 1, 3), 1 + 1 + 1 + 4);
    assert_int_equal((uint8_t)p[0], ITEM_L_AT32);
}

#ifdef NODELAY_DEBUG
static rel_time_t last_access(struct tstore *t, const char *k)
{
    struct store_item it;
    struct store_get_req r = {.want_value = true, .no_update = true};
    assert_int_equal(store_get(t->c, k, strlen(k), &r, &it), STORE_OK);
    store_pin_release(it.pin);
    return it.last_access;
}

/* Through the store: a hit's bump is rounded once the segment is older
 * than 4096 s, a write into that segment still keeps its second, and the
 * reported time never goes back. */
static void test_store_times_in_an_old_segment(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    char buf[64];
    rel_time_t t0 = clock_now();
    assert_int_equal(tset(&t, "a", "va", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(last_access(&t, "a"), t0);
    clock_debug_advance(100);
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_OK); /* marks fetched */
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_OK); /* bumps */
    assert_int_equal(last_access(&t, "a"), t0 + 100);

    clock_debug_advance(4900); /* 5000 s after the segment opened */
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_OK);
    assert_int_equal(last_access(&t, "a"), t0 + 4992); /* 78 steps of 64 s */
    /* a write there keeps its second (the full time) */
    assert_int_equal(tset(&t, "b", "vb", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(last_access(&t, "b"), t0 + 5000);
    clock_debug_advance(30);
    assert_int_equal(tget(&t, "b", buf, sizeof buf, NULL), STORE_OK);
    assert_int_equal(tget(&t, "b", buf, sizeof buf, NULL), STORE_OK);
    assert_int_equal(last_access(&t, "b"), t0 + 5030);
    /* a bump inside the same step leaves the held time as it was */
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_OK);
    assert_int_equal(last_access(&t, "a"), t0 + 4992);
    /* an immediate flush hides both; one stored after it stays */
    store_flush(t.s, clock_now());
    clock_debug_advance(1);
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_MISS);
    assert_int_equal(tset(&t, "c", "vc", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(tget(&t, "c", buf, sizeof buf, NULL), STORE_OK);
    assert_int_equal(last_access(&t, "c"), t0 + 5031);
    clock_debug_pause(false);
    tstore_close(&t);
}
#else
/* The release build has no debug clock: a skip rather than a pass with
 * nothing run. */
static void test_store_times_in_an_old_segment(void **state)
{
    (void)state;
    print_message(
        "the store's clock test needs the debug clock: built by CONFIG=debug, asan or tsan\n");
    skip();
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_form_rounds_down_and_saturates),
        cmocka_unit_test(test_status_bits_beside_the_time),
        cmocka_unit_test(test_store_times_in_an_old_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
