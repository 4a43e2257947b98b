/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's per-class counters that follow the store's real events
 * (docs/store.md "Size classes"): `lru_crawler crawl` (crawler_reclaimed,
 * crawler_items_checked), the housekeeper without the LRU maintainer,
 * a class's pages once its items are gone, and moves_to_cold, moves_to_warm,
 * moves_within_lru. Expiry needs the debug clock (CONFIG=debug, asan). */
#include "test_store_helpers.h"

#include "store/store_core.h"

#include <stdio.h>
#include <stdlib.h>

#define MB (1u << 20)

#ifdef NODELAY_DEBUG

/* A store like tstore_open's, with -o no_lru_maintainer or not. */
static void open_store(struct tstore *t, size_t mem, bool no_maintainer)
{
    clock_setup();
    struct store_options o = {
        .mem_limit = mem,
        .item_size_max = MB,
        .evictions = true,
        .cas_enabled = true,
        .no_lru_maintainer = no_maintainer,
    };
    tstore_open_opts(t, &o);
}

static void put(struct tstore *t, const char *prefix, int i, size_t vlen, rel_time_t exp)
{
    char key[32];
    char *v = malloc(vlen + 1);
    memset(v, 'v', vlen);
    v[vlen] = 0;
    snprintf(key, sizeof key, "%s%d", prefix, i);
    assert_int_equal(tset(t, key, v, STORE_MODE_SET, 0, exp, NULL), STORE_OK);
    free(v);
}

static void read_key(struct tstore *t, const char *prefix, int i)
{
    char key[32];
    snprintf(key, sizeof key, "%s%d", prefix, i);
    struct store_item it;
    assert_int_equal(store_get(t->c, key, strlen(key), NULL, &it), STORE_OK);
}

static struct store_class_stats cls_of(struct tstore *t, unsigned k)
{
    struct store_class_stats out[STORE_CLASSES];
    store_class_stats(t->s, out);
    return out[k];
}

/* lru-crawler.t: items of class 1 expire; without the LRU maintainer
 * nothing reaps them until `lru_crawler crawl 1`, which counts them in
 * crawler_reclaimed, not reclaimed, and examines every class-1 item. */
static void test_crawl_counts_as_memcached_crawler(void **state)
{
    (void)state;
    struct tstore t;
    open_store(&t, 8 * MB, true);
    clock_debug_pause(true);
    for (int i = 0; i < 30; i++)
        put(&t, "i", i, 2, 0);
    for (int i = 0; i < 30; i++)
        put(&t, "s", i, 2, clock_exptime(1));
    for (int i = 0; i < 10; i++)
        put(&t, "m", i, 512, clock_exptime(1)); /* another class, not crawled */
    clock_debug_advance(3);
    store_housekeep(t.s);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 70);
    assert_int_equal(st.reclaimed, 0);

    assert_true(store_crawl_classes(t.c, (uint64_t)1 << 1));
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 40);
    assert_int_equal(st.crawler_reclaimed, 30);
    assert_int_equal(st.crawler_items_checked, 60);
    assert_int_equal(st.expired_unfetched, 30);
    assert_int_equal(st.reclaimed, 0);
    assert_int_equal(st.lru_crawler_starts, 1);
    assert_int_equal(st.lru_crawler_running, 0);
    struct store_class_stats c1 = cls_of(&t, 1);
    assert_int_equal(c1.number, 30);
    assert_int_equal(c1.crawler_reclaimed, 30);
    assert_int_equal(c1.crawler_items_checked, 60);
    assert_int_equal(c1.expired_unfetched, 30);
    assert_int_equal(c1.reclaimed, 0);

    /* flushed items are reclaimed but are not "expired unfetched" (the
     * expired class-m ones are flushed too: memcached's crawler asks
     * item_is_flushed first, as life_of_item does) */
    store_flush(t.s, clock_now());
    assert_true(store_crawl_classes(t.c, ~(uint64_t)0));
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 0);
    assert_int_equal(st.crawler_reclaimed, 70);
    assert_int_equal(st.crawler_items_checked, 60 + 40);
    assert_int_equal(st.expired_unfetched, 30);
    clock_debug_pause(false);
    tstore_close(&t);
}

/* With the maintainer (the default), the housekeeper reaps them itself,
 * as memcached's maintainer does, counted in reclaimed. */
static void test_housekeeper_reaps_only_with_maintainer(void **state)
{
    (void)state;
    struct tstore t;
    open_store(&t, 8 * MB, false);
    clock_debug_pause(true);
    for (int i = 0; i < 10; i++)
        put(&t, "s", i, 2, clock_exptime(1));
    clock_debug_advance(3);
    store_housekeep(t.s);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 0);
    assert_int_equal(st.reclaimed, 10);
    assert_int_equal(st.crawler_reclaimed, 0);
    clock_debug_pause(false);
    tstore_close(&t);
}

/* memcached keeps an emptied class's pages, and its stats slabs block with
 * used_chunks 0: a class keeps its pages while a segment in use holds its
 * items' bytes, live or dead; they go when the segment is reclaimed. */
static void test_emptied_class_keeps_its_pages_until_reclaimed(void **state)
{
    (void)state;
    struct tstore t;
    open_store(&t, 8 * MB, true);
    clock_debug_pause(true);
    for (int i = 0; i < 30; i++)
        put(&t, "s", i, 2, clock_exptime(1));
    assert_int_equal(cls_of(&t, 1).pages, 1);
    clock_debug_advance(3);
    assert_true(store_crawl_classes(t.c, (uint64_t)1 << 1));
    struct store_class_stats c1 = cls_of(&t, 1);
    assert_int_equal(c1.number, 0);
    assert_int_equal(c1.pages, 1); /* the worker's open segment holds them, dead */
    /* sealed and all dead: reclaimed whole, and the class has no page left */
    store_ctx_destroy(&t.c);
    t.c = store_ctx_create(t.s);
    store_housekeep(t.s);
    c1 = cls_of(&t, 1);
    assert_int_equal(c1.pages, 0);
    assert_int_equal(c1.number, 0);
    /* a class that never held an item has none */
    assert_int_equal(cls_of(&t, 5).pages, 0);
    clock_debug_pause(false);
    tstore_close(&t);
}

/* Deleted and overwritten items leave their bytes in their segment too. */
static void test_deleted_class_keeps_its_page(void **state)
{
    (void)state;
    struct tstore t;
    open_store(&t, 8 * MB, false);
    put(&t, "d", 0, 2, 0);
    assert_int_equal(store_delete(t.c, "d0", 2, NULL), STORE_OK);
    struct store_class_stats c1 = cls_of(&t, 1);
    assert_int_equal(c1.number, 0);
    assert_int_equal(c1.pages, 1);
    tstore_close(&t);
}

/* A worker's segment sealed onto the probation queue moves its live items
 * from HOT to COLD; eviction then keeps the ones read there (into WARM) and,
 * from main, the ones read since (within WARM). */
static void test_moves_follow_the_queues(void **state)
{
    (void)state;
    struct tstore t;
    open_store(&t, 4 * MB, false);
    /* about 1000 1 KiB items a segment */
    for (int i = 0; i < 100; i++)
        put(&t, "k", i, 1000, 0);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.moves_to_cold, 0);
    for (int i = 0; i < 100; i++)
        read_key(&t, "k", i);
    for (int i = 100; i < 1500; i++)
        put(&t, "k", i, 1000, 0); /* the first segment is sealed */
    store_stats(t.s, &st);
    assert_true(st.moves_to_cold >= 900 && st.moves_to_cold <= 1100);
    unsigned k = store_class_for(t.c, strlen("k100"), 1000, 0);
    struct store_class_stats c = cls_of(&t, k);
    assert_int_equal(c.moves_to_cold, st.moves_to_cold);
    assert_int_equal(c.number_lru[STORE_LRU_COLD] + c.number_lru[STORE_LRU_HOT], c.number);
    assert_int_equal(st.moves_to_warm, 0);
    for (int i = 1500; i < 4500; i++)
        put(&t, "k", i, 1000, 0); /* evicts: the 100 read ones are kept */
    store_stats(t.s, &st);
    assert_true(st.evictions > 0);
    assert_int_equal(st.moves_to_warm, 100);
    c = cls_of(&t, k);
    assert_int_equal(c.moves_to_warm, 100);
    assert_int_equal(c.number_lru[STORE_LRU_WARM], 100);
    /* items read in main are carried within it when their segment's turn
     * comes: read everything, every round, until main is walked */
    assert_int_equal(st.moves_within_lru, 0);
    int next = 4500;
    for (int round = 0; round < 40 && st.moves_within_lru == 0; round++) {
        for (int i = 0; i < next; i++) {
            char key[32];
            snprintf(key, sizeof key, "k%d", i);
            struct store_item it;
            store_get(t.c, key, strlen(key), NULL, &it);
        }
        for (int i = 0; i < 500; i++)
            put(&t, "k", next++, 1000, 0);
        store_stats(t.s, &st);
    }
    assert_true(st.moves_within_lru > 0);
    c = cls_of(&t, k);
    assert_int_equal(c.moves_within_lru, st.moves_within_lru);
    assert_int_equal(c.moves_to_warm, st.moves_to_warm);
    tstore_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crawl_counts_as_memcached_crawler),
        cmocka_unit_test(test_housekeeper_reaps_only_with_maintainer),
        cmocka_unit_test(test_emptied_class_keeps_its_pages_until_reclaimed),
        cmocka_unit_test(test_deleted_class_keeps_its_page),
        cmocka_unit_test(test_moves_follow_the_queues),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

/* The release build has no debug clock: say so as a skip rather than pass
 * with nothing run. */
static void test_needs_debug_clock(void **state)
{
    (void)state;
    print_message("the size-class tests need the debug clock: built by CONFIG=debug, asan or tsan\n");
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_needs_debug_clock)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
