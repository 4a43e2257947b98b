/* SPDX-License-Identifier: BSD-3-Clause */
/* The index (index.c): its overflow pool, whose chunks are mapped as
 * chains need them and unmapped from the top once free, so the pool does
 * not keep its high-water mark; and its growth a bucket at a time (linear
 * hashing) while other threads look keys up. */
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

#define GROW_ITEMS 90000u
#define READERS 2

struct reader {
    struct index *ix;
    const uint64_t *published; /* keys 0..*published-1 are in */
    const bool *stop;
    uint64_t looks;
    unsigned missed;
};

static void *reader_thread(void *arg)
{
    struct reader *r = arg;
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (uintptr_t)r;
    while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
        uint64_t n = __atomic_load_n(r->published, __ATOMIC_ACQUIRE);
        if (!n)
            continue;
        x = mix(x);
        r->missed += !find(r->ix, x % n, false);
        r->looks++;
    }
    return NULL;
}

/* The table grows a bucket at a time (linear hashing): while one thread
 * grows it from 2^3 buckets to 90,000 items (under 1 MiB of buckets, so
 * on small pages), readers looking up every key
 * already in never miss one, and from 20,000 items on the buckets hold
 * more than INDEX_GROW_LOAD - 1 items each on average, where a table that
 * doubles falls to half its load at each doubling. */
static void test_grows_a_bucket_at_a_time_under_lookups(void **state)
{
    (void)state;
    struct index ix;
    assert_int_equal(index_init(&ix, 5, rehash_slot, NULL), 0);
    uint64_t published = 0;
    bool stop = false;
    pthread_t th[READERS];
    struct reader r[READERS];
    for (int t = 0; t < READERS; t++) {
        r[t] = (struct reader){.ix = &ix, .published = &published, .stop = &stop};
        assert_int_equal(pthread_create(&th[t], NULL, reader_thread, &r[t]), 0);
    }
    unsigned thin = 0;
    for (uint64_t i = 0; i < GROW_ITEMS; i++) {
        put(&ix, i);
        index_maintain(&ix);
        __atomic_store_n(&published, i + 1, __ATOMIC_RELEASE);
        if (i >= 20000 && i % 1000 == 0) {
            /* the table's bytes, without the overflow chunks */
            size_t table = index_bytes(&ix) - (size_t)ix.nchunks * (1024 * 64 + 16);
            thin += table > (i + 1) * 64 / (INDEX_GROW_LOAD - 1) + 4096;
        }
    }
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    for (int t = 0; t < READERS; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        assert_int_equal(r[t].missed, 0);
        assert_true(r[t].looks > 0);
    }
    assert_int_equal(thin, 0);
    for (uint64_t i = 0; i < GROW_ITEMS; i++)
        assert_true(find(&ix, i, false));
    index_release(&ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_overflow_chunks_are_unmapped),
        cmocka_unit_test(test_overflow_pool_under_growth_and_churn),
        cmocka_unit_test(test_grows_a_bucket_at_a_time_under_lookups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
