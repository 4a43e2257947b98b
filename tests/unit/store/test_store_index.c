/* SPDX-License-Identifier: BSD-3-Clause */
/* The index's overflow pool (index.c): chains take overflow buckets from
 * chunks mapped as they are needed, and chunks left free are unmapped from
 * the top, so the pool does not keep its high-water mark (the quarter of
 * the buckets that overflow just before a growth). */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>

#include "store/store_index.h"

/* No growth runs here (index_maintain is never called): nothing rehashes. */
static uint64_t no_rehash(void *arg, uint64_t slot)
{
    (void)arg;
    return slot;
}

static uint64_t mix(uint64_t x) /* splitmix64's finalizer: a key's hash */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t slot_of(uint64_t i)
{
    return slot_make(index_tag(mix(i)), 0, (uint32_t)i);
}

/* A slot's key hash, for growth: its offset is its item's number. */
static uint64_t rehash_slot(void *arg, uint64_t slot)
{
    (void)arg;
    return mix(slot_off(slot));
}

static void put(struct index *ix, uint64_t i)
{
    uint64_t *b = index_lock_hash(ix, mix(i));
    uint64_t *sl = index_free_slot(ix, b);
    assert_non_null(sl);
    *sl = slot_of(i);
    index_unlock(b);
}

/* Find item i's slot in its chain; take it out when `drop`. */
static bool find(struct index *ix, uint64_t i, bool drop)
{
    uint64_t *b = index_lock_hash(ix, mix(i));
    for (uint64_t *cur = b; cur; cur = index_next(ix, cur))
        for (int k = 1; k <= INDEX_SLOTS; k++)
            if (cur[k] == slot_of(i)) {
                if (drop)
                    index_clear_slot(ix, b, &cur[k]);
                index_unlock(b);
                return true;
            }
    index_unlock(b);
    return false;
}

#define N 200000u

/* 1,024 buckets of 200,000 items: chains of about 28 overflow buckets
 * each, 28,000 in all. Emptied, the pool gives their memory back; filled
 * again, every item is found. */
static void test_free_overflow_chunks_are_unmapped(void **state)
{
    (void)state;
    struct index ix;
    assert_int_equal(index_init(&ix, 12, no_rehash, NULL), 0);
    size_t empty = index_bytes(&ix);
    for (uint64_t i = 0; i < N; i++)
        put(&ix, i);
    size_t full = index_bytes(&ix);
    assert_true(full > empty + (size_t)20000 * 64);
    for (uint64_t i = 0; i < N; i++)
        assert_true(find(&ix, i, true));
    assert_int_equal(ix.items, 0);
    assert_int_equal(ix.overflow_used, 0);
    /* at most one free chunk kept mapped (a chunk is 1,024 buckets) */
    assert_true(index_bytes(&ix) <= empty + (size_t)1024 * 64 + 64);

    for (uint64_t i = 0; i < N; i++)
        put(&ix, i);
    assert_true(index_bytes(&ix) <= full);
    for (uint64_t i = 0; i < N; i += 7)
        assert_true(find(&ix, i, false));
    assert_false(find(&ix, N + 1, false));
    index_release(&ix);
}

#define THREADS 4
#define PER_THREAD 60000u

struct churn {
    struct index *ix;
    uint64_t base;
    unsigned missed;
};

/* Insert a range, growing the table as inserts do, find it, take it out,
 * twice: chains lengthen and shrink, chunks are mapped and unmapped, while
 * the other threads do the same and buckets move. */
static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    for (int round = 0; round < 2; round++) {
        for (uint64_t i = c->base; i < c->base + PER_THREAD; i++) {
            put(c->ix, i);
            index_maintain(c->ix);
        }
        for (uint64_t i = c->base; i < c->base + PER_THREAD; i++)
            c->missed += !find(c->ix, i, false);
        for (uint64_t i = c->base; i < c->base + PER_THREAD; i++) {
            c->missed += !find(c->ix, i, true);
            index_maintain(c->ix);
        }
    }
    return NULL;
}

/* Every key a thread put is found until it takes it out, whatever the
 * others map, unmap or move meanwhile (run under ASan and TSan too), and
 * once all are out the pool holds at most one chunk, where it used to keep
 * every chunk it had mapped. */
static void test_overflow_pool_under_growth_and_churn(void **state)
{
    (void)state;
    struct index ix;
    /* 2^3 buckets: every thread's inserts overflow and grow the table */
    assert_int_equal(index_init(&ix, 5, rehash_slot, NULL), 0);
    pthread_t th[THREADS];
    struct churn c[THREADS];
    for (int t = 0; t < THREADS; t++) {
        c[t] = (struct churn){.ix = &ix, .base = (uint64_t)t * PER_THREAD};
        assert_int_equal(pthread_create(&th[t], NULL, churn_thread, &c[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        assert_int_equal(c[t].missed, 0);
    }
    index_finish_growth(&ix);
    assert_int_equal(ix.items, 0);
    assert_int_equal(ix.overflow_used, 0);
    assert_true(ix.nchunks <= 1);
    index_release(&ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_overflow_chunks_are_unmapped),
        cmocka_unit_test(test_overflow_pool_under_growth_and_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
