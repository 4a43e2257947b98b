/* SPDX-License-Identifier: BSD-3-Clause */
/* Eviction order and second chance, pins across overwrite and eviction
 * (memcached's t/multiversioning case), -M, run-time memory limits, walk. */
#include "test_store_helpers.h"
#include "store/store_core.h"
#include "store/persist/persist.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>

#define MB (1u << 20)

static void put(struct tstore *t, int i, size_t vlen)
{
    char key[32];
    char *v = malloc(vlen + 1);
    memset(v, 'a' + i % 26, vlen);
    v[vlen] = 0;
    snprintf(key, sizeof key, "key:%010d", i);
    assert_int_equal(tset(t, key, v, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    free(v);
}

static bool has(struct tstore *t, int i)
{
    char key[32];
    snprintf(key, sizeof key, "key:%010d", i);
    struct store_item it;
    struct store_get_req r = {.no_update = true};
    return store_get(t->c, key, strlen(key), &r, &it) == STORE_OK;
}

static void touch_read(struct tstore *t, int i)
{
    char key[32];
    snprintf(key, sizeof key, "key:%010d", i);
    struct store_item it;
    assert_int_equal(store_get(t->c, key, strlen(key), NULL, &it), STORE_OK);
}

static void test_fifo_order(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    /* ~1 KiB items, 4 segments: write 6 MiB worth */
    int n = 6000;
    for (int i = 0; i < n; i++)
        put(&t, i, 1000);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_true(st.evictions > 0);
    assert_true(st.evicted_unfetched == st.evictions);
    assert_true(st.seg_used <= 4);
    /* oldest gone, newest kept, and what is kept is a suffix */
    assert_false(has(&t, 0));
    assert_true(has(&t, n - 1));
    int first = n;
    for (int i = 0; i < n; i++)
        if (has(&t, i)) {
            first = i;
            break;
        }
    for (int i = first; i < n; i++)
        assert_true(has(&t, i));
    assert_int_equal(st.curr_items, (uint64_t)(n - first));
    tstore_close(&t);
}

static void test_second_chance(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    /* key 0..99 read once after being written; the rest never */
    for (int i = 0; i < 100; i++)
        put(&t, i, 1000);
    for (int i = 0; i < 100; i++)
        touch_read(&t, i);
    for (int i = 100; i < 4500; i++)
        put(&t, i, 1000);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_true(st.evictions > 0);
    assert_true(st.items_reinserted >= 100);
    for (int i = 0; i < 100; i++)
        assert_true(has(&t, i)); /* kept: moved to the main queue */
    assert_false(has(&t, 100));  /* written at the same time, never read: gone */
    /* in the main queue they outlast any number of one-hit writes, which
     * leave from the small queue */
    for (int i = 4500; i < 12000; i++)
        put(&t, i, 1000);
    for (int i = 0; i < 100; i++)
        assert_true(has(&t, i));
    assert_false(has(&t, 4500));
    tstore_close(&t);
}

static void test_scan_resistance(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    /* a hot set of 500 items, one read per four scan writes, survives a
     * scan of 20000 one-hit keys through a cache of ~4000 */
    for (int i = 0; i < 500; i++)
        put(&t, i, 1000);
    for (int i = 0; i < 20000; i++) {
        put(&t, 100000 + i, 1000);
        if (i % 4 == 0)
            touch_read(&t, (i / 4) % 500);
    }
    int kept = 0;
    for (int i = 0; i < 500; i++)
        kept += has(&t, i);
    assert_int_equal(kept, 500);
    tstore_close(&t);
}

static void test_pin_survives(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    size_t n = 256 * 1024;
    char *a = malloc(n), *b = malloc(n);
    memset(a, 'A', n);
    memset(b, 'B', n);
    struct store_set_req r = {.mode = STORE_MODE_SET};
    assert_int_equal(store_store(t.c, "mv", 2, a, n, &r, NULL), STORE_OK);
    struct store_item it;
    struct store_get_req g = {.want_value = true};
    assert_int_equal(store_get(t.c, "mv", 2, &g, &it), STORE_OK);
    /* overwritten while held */
    assert_int_equal(store_store(t.c, "mv", 2, b, n, &r, NULL), STORE_OK);
    struct store_item it2;
    assert_int_equal(store_get(t.c, "mv", 2, &g, &it2), STORE_OK);
    assert_memory_equal(it2.value, b, n);
    store_pin_release(it2.pin);
    assert_memory_equal(it.value, a, n);
    /* and its segment evicted while held: 16 MiB through a 4 MiB cache */
    for (int i = 0; i < 64; i++) {
        char key[16];
        snprintf(key, sizeof key, "f%d", i);
        assert_int_equal(store_store(t.c, key, strlen(key), b, n, &r, NULL), STORE_OK);
    }
    struct store_stats st;
    store_stats(t.s, &st);
    assert_true(st.evictions > 0);
    assert_memory_equal(it.value, a, n);
    store_pin_release(it.pin);
    /* once released, that segment is reused */
    for (int i = 0; i < 64; i++) {
        char key[16];
        snprintf(key, sizeof key, "g%d", i);
        assert_int_equal(store_store(t.c, key, strlen(key), b, n, &r, NULL), STORE_OK);
    }
    free(a);
    free(b);
    tstore_close(&t);
}

/* Reply queues may keep pins on a quarter of the segments, counted per
 * segment: past that store_pin_keep says no (the queue copies instead), and
 * the kept pins never stop eviction from making room for new sets. */
static void test_pin_keep_bound(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true); /* 8 segments: 2 may be kept */
    size_t n = 600 * 1024;                   /* one value to a segment */
    char *v = malloc(n);
    memset(v, 'k', n);
    struct store_set_req r = {.mode = STORE_MODE_SET};
    struct store_get_req g = {.want_value = true};
    struct store_item it[4], again;
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof key, "p%d", i);
        assert_int_equal(store_store(t.c, key, strlen(key), v, n, &r, NULL), STORE_OK);
    }
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof key, "p%d", i);
        assert_int_equal(store_get(t.c, key, strlen(key), &g, &it[i]), STORE_OK);
    }
    assert_true(store_pin_keep(it[0].pin, false));
    assert_true(store_pin_keep(it[1].pin, false));
    assert_false(store_pin_keep(it[2].pin, false)); /* a third segment: refused */
    assert_true(store_pin_keep(it[2].pin, true));   /* unless it must */
    store_pin_release_kept(it[2].pin);
    /* a second pin on a kept segment costs no share */
    assert_int_equal(store_get(t.c, "p1", 2, &g, &again), STORE_OK);
    assert_true(store_pin_keep(again.pin, false));
    store_pin_release_kept(again.pin);
    /* 19 MiB through the 8 MiB cache with two segments kept: all stored */
    for (int i = 0; i < 32; i++) {
        char key[16];
        snprintf(key, sizeof key, "f%d", i);
        assert_int_equal(store_store(t.c, key, strlen(key), v, n, &r, NULL), STORE_OK);
    }
    assert_memory_equal(it[0].value, v, n);
    store_pin_release_kept(it[0].pin);
    assert_true(store_pin_keep(it[3].pin, false)); /* a share came back */
    store_pin_release_kept(it[3].pin);
    store_pin_release_kept(it[1].pin);
    free(v);
    tstore_close(&t);
}

static void test_no_evictions(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, false, true);
    int i = 0;
    char key[32], v[1001];
    memset(v, 'x', 1000);
    v[1000] = 0;
    enum store_status st = STORE_OK;
    for (; i < 10000; i++) {
        snprintf(key, sizeof key, "key:%010d", i);
        st = tset(&t, key, v, STORE_MODE_SET, 0, 0, NULL);
        if (st != STORE_OK)
            break;
    }
    assert_int_equal(st, STORE_NO_MEMORY);
    assert_true(i > 3000);
    assert_true(has(&t, 0));
    assert_true(has(&t, i - 1));
    struct store_stats s;
    store_stats(t.s, &s);
    assert_int_equal(s.evictions, 0);
    /* deleting a whole segment's worth makes room again */
    for (int j = 0; j < 2000; j++) {
        snprintf(key, sizeof key, "key:%010d", j);
        store_delete(t.c, key, strlen(key), NULL);
    }
    snprintf(key, sizeof key, "key:%010d", i);
    assert_int_equal(tset(&t, key, v, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    tstore_close(&t);
}

static void test_no_evictions_compacts(void **state)
{
    (void)state;
    /* -M with overwrites: every tenth key stays, the rest are rewritten
     * many times through a 4 MiB cache; no live item may be lost and no
     * write refused while dead bytes can be squeezed out. */
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, false, true);
    for (int round = 0; round < 12; round++)
        for (int i = 0; i < 2500; i++)
            if (round == 0 || i % 10)
                put(&t, i, 1000);
    for (int i = 0; i < 2500; i += 10)
        assert_true(has(&t, i));
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.evictions, 0);
    assert_int_equal(st.curr_items, 2500);
    assert_true(st.items_reinserted > 0); /* live items were moved to squeeze */
    tstore_close(&t);
}

static void test_mem_limit(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    for (int i = 0; i < 8000; i++)
        put(&t, i, 1000);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.limit_maxbytes, 8 * MB);
    assert_int_equal(st.seg_used, 8);
    assert_int_equal(store_set_mem_limit(t.s, 100), -1);
    assert_int_equal(store_set_mem_limit(t.s, 4 * MB), 0);
    for (int i = 8000; i < 12000; i++)
        put(&t, i, 1000);
    store_stats(t.s, &st);
    assert_int_equal(st.limit_maxbytes, 4 * MB);
    assert_true(st.seg_used <= 4);
    assert_true(st.curr_items < 4200);
    /* far beyond the start-up size: segment headers grow with it */
    assert_int_equal(store_set_mem_limit(t.s, (size_t)4096 * MB), 0);
    store_stats(t.s, &st);
    assert_int_equal(st.seg_total, 4096);
    assert_int_equal(store_set_mem_limit(t.s, 16 * MB), 0);
    for (int i = 12000; i < 26000; i++)
        put(&t, i, 1000);
    store_stats(t.s, &st);
    assert_true(st.curr_items > 12000);
    tstore_close(&t);
}

/* Keys rewritten below the limit: a sealed segment whose items were all
 * overwritten is taken before fresh memory is mapped (seg_take_dead), so
 * the store holds about what its live items need (20 of 100 KiB, 2 MiB),
 * not all of -m, and evicts nothing. A pinned one is not reused while the
 * pin is held. */
static void test_rewritten_keys_reuse_their_segments(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 64 * MB, MB, true, true);
    size_t n = 100 * 1024;
    char *v = malloc(n), *old = malloc(n);
    struct store_set_req r = {.mode = STORE_MODE_SET};
    struct store_get_req g = {.want_value = true};
    struct store_item held, it;
    char key[16];
    /* 50 rounds of 20 keys: 100 MiB written through 64 MiB */
    for (int round = 0; round < 50; round++) {
        memset(v, 'a' + round % 26, n);
        for (int i = 0; i < 20; i++) {
            snprintf(key, sizeof key, "r%d", i);
            assert_int_equal(store_store(t.c, key, strlen(key), v, n, &r, NULL), STORE_OK);
        }
        if (round == 0) {
            memcpy(old, v, n);
            assert_int_equal(store_get(t.c, "r0", 2, &g, &held), STORE_OK);
        }
    }
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 20);
    assert_int_equal(st.evictions, 0);
    assert_true(st.seg_expired >= 40);
    /* the live items' 3 segments, the open one, the pinned one, one dead */
    assert_true(st.seg_used <= 8);
    assert_memory_equal(held.value, old, n);
    store_pin_release(held.pin);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "r%d", i);
        assert_int_equal(store_get(t.c, key, strlen(key), &g, &it), STORE_OK);
        assert_memory_equal(it.value, v, n);
        store_pin_release(it.pin);
    }
    free(v);
    free(old);
    tstore_close(&t);
}

/* memcached's test hook T_MEMD_INITIAL_MALLOC (store_options
 * initial_malloced): its bytes count against -m from the start, at run
 * time too, and at least one segment is left (64bit.t: 2^32 + 32 under
 * -m 4098 leaves one). */
static void test_initial_malloced(void **state)
{
    (void)state;
    clock_setup();
    struct store_options o = {.mem_limit = (size_t)4098 * MB, .item_size_max = MB,
                              .evictions = false, .cas_enabled = true,
                              .initial_malloced = ((size_t)1 << 32) + 32};
    struct tstore t;
    tstore_open_opts(&t, &o);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.seg_total, 1);
    assert_int_equal(st.seg_used, 0);
    assert_int_equal(st.initial_malloced, ((uint64_t)1 << 32) + 32);
    assert_int_equal(st.limit_maxbytes, (uint64_t)4098 * MB);
    static char big[409601];
    memset(big, 'a', sizeof big - 1);
    struct store_set_req r = {.mode = STORE_MODE_SET};
    char key[16];
    enum store_status got[5];
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "big%d", i);
        got[i] = store_store(t.c, key, strlen(key), big, sizeof big - 1, &r, NULL);
    }
    /* two fit the one segment, the third needs a second: -M refuses it */
    assert_int_equal(got[0], STORE_OK);
    assert_int_equal(got[1], STORE_OK);
    assert_int_equal(got[2], STORE_NO_MEMORY);
    assert_int_equal(got[4], STORE_NO_MEMORY);
    /* cache_memlimit 4100: the hook's bytes still count, 3 segments now */
    assert_int_equal(store_set_mem_limit(t.s, (size_t)4100 * MB), 0);
    store_stats(t.s, &st);
    assert_int_equal(st.seg_total, 3);
    assert_int_equal(store_store(t.c, "big9", 4, big, sizeof big - 1, &r, NULL), STORE_OK);
    /* a limit below the hook's bytes still leaves one segment */
    assert_int_equal(store_set_mem_limit(t.s, 64 * MB), 0);
    store_stats(t.s, &st);
    assert_int_equal(st.seg_total, 1);
    tstore_close(&t);
}

struct walk_acc {
    unsigned char seen[1000];
    size_t n;
};

static void walk_fn(const struct store_item *it, void *arg)
{
    struct walk_acc *a = arg;
    char key[32];
    memcpy(key, it->key, it->nkey);
    key[it->nkey] = 0;
    int i = atoi(key + 4);
    assert_true(i >= 0 && i < 1000);
    assert_int_equal(it->nvalue, 10);
    assert_true(it->class_id >= 1);
    a->seen[i]++;
    a->n++;
}

static void test_walk(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    for (int i = 0; i < 1000; i++)
        put(&t, i, 10);
    char key[32];
    snprintf(key, sizeof key, "key:%010d", 7);
    store_delete(t.c, key, strlen(key), NULL);
    struct walk_acc acc;
    memset(&acc, 0, sizeof acc);
    uint64_t cursor = 0;
    int calls = 0;
    while (cursor != UINT64_MAX) {
        size_t n = store_walk(t.s, &cursor, 100, walk_fn, &acc);
        assert_true(n <= 100);
        calls++;
    }
    assert_true(calls >= 10);
    assert_int_equal(acc.n, 999);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(acc.seen[i], i == 7 ? 0 : 1);
    tstore_close(&t);
}

static uint64_t evictions_of(struct tstore *t)
{
    struct store_stats st;
    store_stats(t->s, &st);
    return st.evictions;
}

/* Once -m is used up, a write pays for itself: the victim's items leave as
 * the writer's segment fills, before the writer needs a segment, at the
 * writers' pace (docs/store-eviction.md "Eviction"): at least one item for each
 * item's worth written, paid every SEG_PAY_BYTES, and never more than
 * what was written. */
static void test_eviction_at_writers_pace(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    int i = 0;
    while (evictions_of(&t) == 0)
        put(&t, i++, 1000);
    /* start at a fresh segment, so what follows fits in it */
    struct seg *open = t.c->seg.at->open[0];
    while (t.c->seg.at->open[0] == open)
        put(&t, i++, 1000);
    open = t.c->seg.at->open[0];
    uint32_t before = open->write_off;
    put(&t, i++, 1000);
    uint32_t isz = open->write_off - before; /* one item, as the victim's are */
    uint64_t e0 = evictions_of(&t);
    const int k = 200;
    for (int j = 0; j < k; j++)
        put(&t, i++, 1000);
    assert_ptr_equal(t.c->seg.at->open[0], open); /* no segment was opened */
    uint64_t paid = (uint64_t)k * isz - SEG_PAY_BYTES; /* at most that much is still owed */
    uint64_t d = evictions_of(&t) - e0;
    assert_true(d >= paid / isz - 1);
    assert_true(d <= (uint64_t)k + 1);
    /* one write of SEG_PAY_BYTES or more pays at once */
    e0 = evictions_of(&t);
    put(&t, i++, 9000);
    assert_ptr_equal(t.c->seg.at->open[0], open);
    assert_true(evictions_of(&t) - e0 >= 9000 / isz);
    /* what is left is a suffix of what was written, as before */
    assert_true(has(&t, i - 1));
    assert_false(has(&t, 0));
    tstore_close(&t);
}

/* A victim whose items were nearly all read keeps them all: the cap on
 * kept bytes is 15/16 of a segment, not half (docs/store-eviction.md "Eviction"). */
static void test_victim_keeps_its_read_items(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    int i = 0;
    put(&t, i++, 1000);
    struct seg *first = t.c->seg.at->open[0];
    while (t.c->seg.at->open[0] == first)
        put(&t, i++, 1000);
    int last = i - 2; /* the last item in the first segment */
    int hot = last * 7 / 8; /* over half of it, under 15/16 */
    assert_true(hot > 500);
    for (int j = 0; j < hot; j++)
        touch_read(&t, j);
    /* write until the first segment's walk has passed its last item */
    for (int n = 0; n < 20000 && has(&t, last); n++)
        put(&t, i++, 1000);
    assert_false(has(&t, last));
    int kept = 0;
    for (int j = 0; j < hot; j++)
        kept += has(&t, j);
    assert_int_equal(kept, hot);
    tstore_close(&t);
}

/* The small queue's share follows the ghost (ARC's rule): keys written
 * again after they left small unread grow it; keys written again after they
 * left main unread shrink it. 16 segments, the share starts at one. */
static void test_small_share_follows_the_ghost(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 16 * MB, MB, true, true);
    /* a hot set read once, so it moves to main */
    for (int i = 0; i < 8000; i++)
        put(&t, i, 1000);
    for (int i = 0; i < 8000; i++)
        touch_read(&t, i);
    /* one-hit keys pass through small to the ghost, then come back */
    for (int lap = 0; lap < 2; lap++)
        for (int i = 0; i < 20000; i++)
            put(&t, 100000 + i, 1000);
    uint32_t grown = t.s->pool.small.n;
    assert_true(grown >= 4);
    /* now the keys that left main unread come back, read each time */
    for (int lap = 0; lap < 6; lap++)
        for (int i = 0; i < 8000; i++) {
            if (has(&t, i))
                touch_read(&t, i);
            else
                put(&t, i, 1000);
        }
    assert_true(t.s->pool.small.n < grown);
    tstore_close(&t);
}

/* A loop over more keys than the cache holds, each key read, and set when
 * it missed. The ghost remembers the whole overflow, so every miss comes
 * back from it; were each readmitted to main, main would churn as a FIFO
 * and miss every access, as LRU does (the store did so before). Keys back
 * from main's ghost are readmitted only as main's items are read again, a
 * fixed subset of them, so a part of the loop stays and hits. 64 segments
 * (about 62,000 items of 1000 B; a ghost of 262,144 entries), a loop of
 * 96,000 keys: hits over laps 4-7, which vary from lap to lap as the small
 * queue's share swings. */
static void test_loop_larger_than_the_cache_keeps_a_part(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 64 * MB, MB, true, true);
    int keys = 96000, laps = 8, hits = 0;
    for (int lap = 0; lap < laps; lap++)
        for (int i = 0; i < keys; i++) {
            if (has(&t, i)) {
                touch_read(&t, i);
                hits += lap >= laps / 2;
            } else {
                put(&t, i, 1000);
            }
        }
    assert_true(hits >= keys * (laps / 2) / 20); /* 5 %; the store before: none */
    tstore_close(&t);
}

/* The small queue's target stays between one segment and 9/10 of -m when
 * cache_memlimit lowers -m: a target left above the new bound would count
 * every segment as small's, and main would be evicted to nothing until the
 * next ghost hit. */
static void test_small_target_follows_a_lowered_limit(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 64 * MB, MB, true, true);
    seg_steer_small(&t.s->pool, true, UINT64_MAX); /* as far as it goes */
    int64_t seg = (int64_t)t.s->pool.seg_size;
    assert_int_equal(t.s->pool.small_target, 64 * seg / 10 * 9);
    assert_int_equal(store_set_mem_limit(t.s, 8 * MB), 0);
    int64_t hi = (int64_t)t.s->pool.seg_limit * seg / 10 * 9;
    assert_true(t.s->pool.small_target <= hi);
    assert_true(t.s->pool.small_target >= seg);
    seg_steer_small(&t.s->pool, false, UINT64_MAX);
    assert_int_equal(t.s->pool.small_target, seg);
    assert_int_equal(store_set_mem_limit(t.s, 64 * MB), 0);
    assert_int_equal(t.s->pool.small_target, seg); /* a raise moves nothing */
    tstore_close(&t);
}

/* -M: a write into a full store never drops a live item to pay its way. */
static void test_no_evictions_pays_nothing(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, false, true);
    char v[1001];
    memset(v, 'v', 1000);
    v[1000] = 0;
    int i = 0;
    for (; i < 10000; i++) {
        char key[32];
        snprintf(key, sizeof key, "key:%010d", i);
        if (tset(&t, key, v, STORE_MODE_SET, 0, 0, NULL) != STORE_OK)
            break;
    }
    assert_true(i > 100 && i < 10000); /* refused once full */
    assert_int_equal(evictions_of(&t), 0);
    for (int j = 0; j < i; j++)
        assert_true(has(&t, j));
    tstore_close(&t);
}

static char pm_path[64];

static bool value_is(struct tstore *t, int i, size_t vlen)
{
    char key[32];
    snprintf(key, sizeof key, "key:%010d", i);
    struct store_item it;
    struct store_get_req r = {.no_update = true, .want_value = true};
    if (store_get(t->c, key, strlen(key), &r, &it) != STORE_OK)
        return false;
    bool ok = it.nvalue == vlen;
    for (size_t k = 0; ok && k < vlen; k++)
        ok = it.value[k] == (char)('a' + i % 26);
    store_pin_release(it.pin);
    return ok;
}

/* The -M tests' writes and deletes of keys named prefix + i. */
static enum store_status set_named(struct tstore *t, const char *prefix, int i, const char *v)
{
    char key[32];
    snprintf(key, sizeof key, "%s%d", prefix, i);
    return tset(t, key, v, STORE_MODE_SET, 0, 0, NULL);
}

static void delete_named(struct tstore *t, const char *prefix, int i)
{
    char key[32];
    snprintf(key, sizeof key, "%s%d", prefix, i);
    assert_int_equal(store_delete(t->c, key, strlen(key), NULL), STORE_OK);
}

/* -M, a fifth of every segment dead: freeing one takes about five
 * compactions, each adding room to the main open segment, so new writes
 * into the room deletes made are stored until it is nearly all used (a cap
 * of four compactions a need refused about one in a hundred, the first
 * among them). */
static void test_no_evictions_reclaims_spread_dead_bytes(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 16 * MB, MB, false, true);
    static char v[10001];
    memset(v, 'v', sizeof v - 1);
    int n = 0;
    while (set_named(&t, "k", n, v) == STORE_OK)
        n++;
    int freed = 0;
    for (int i = 0; i < n; i += 5, freed++)
        delete_named(&t, "k", i);
    int stored = 0;
    while (stored < freed && set_named(&t, "n", stored, v) == STORE_OK)
        stored++;
    assert_true(stored >= freed * 8 / 10);
    tstore_close(&t);
}

/* -M under -e: an item is never moved over its own bytes, so a compaction
 * leaves a gap smaller than the item after it as padding, which counts as
 * dead and is never reclaimed. Writes into a store full of such segments
 * must each end, stored or refused for memory: a need compacted segments
 * in turn forever, under the pool lock (SEG_COMPACT_PER_NEED). */
static void test_no_evictions_with_padding_ends(void **state)
{
    (void)state;
    unlink(pm_path);
    clock_setup();
    struct store_options o = {.mem_limit = 4 * MB, .item_size_max = 64 * 1024,
                              .evictions = false, .cas_enabled = true, .memory_file = pm_path};
    struct tstore t;
    tstore_open_opts(&t, &o);
    static char v[8000];
    memset(v, 'v', sizeof v - 1);
    int n = 0;
    /* pairs of a 2,000-byte item and an 8,000-byte one until -M refuses */
    while (set_named(&t, "s", n, v + sizeof v - 2001) == STORE_OK &&
           set_named(&t, "b", n, v) == STORE_OK)
        n++;
    assert_true(n > 100);
    /* every small one deleted: a 2,000-byte gap before each large one */
    for (int i = 0; i < n; i++)
        delete_named(&t, "s", i);
    alarm(60); /* a write that never ends fails the test, not the run */
    int stored = 0, refused = 0;
    for (int i = 0; i < 400; i++) {
        enum store_status st = set_named(&t, "n", i, v);
        assert_true(st == STORE_OK || st == STORE_NO_MEMORY);
        stored += st == STORE_OK;
        refused += st == STORE_NO_MEMORY;
    }
    alarm(0);
    /* the padding is never reclaimed: refused, as memcached's -M when full */
    assert_int_equal(stored + refused, 400);
    assert_true(refused > 0);
    tstore_close(&t);
    unlink(pm_path);
}

/* -e: a kill while a victim is half walked (items evicted, carried and
 * kept in place behind the cursor, the rest untouched) brings back exactly
 * what was live: nothing evicted returns, nothing live is lost (docs/restarts.md
 * "Proof obligations", P3 and P4). */
static void test_half_walked_victim_after_a_crash(void **state)
{
    (void)state;
    unlink(pm_path);
    clock_setup();
    struct store_options o = {.mem_limit = 4 * MB, .item_size_max = 64 * 1024,
                              .evictions = true, .cas_enabled = true, .memory_file = pm_path};
    struct tstore t;
    tstore_open_opts(&t, &o);
    enum { N = 12000 };
    int n = 0;
    /* every third key is read once, so victims keep some: carried to the
     * main open segment or, once it is full, kept in place */
    while (n < N) {
        put(&t, n, 1000);
        if (n % 3 == 0)
            touch_read(&t, n);
        n++;
        bool far = evictions_of(&t) > 2000; /* takes the pool lock itself */
        pthread_mutex_lock(&t.s->pool.lock);
        bool mid = far && t.s->pool.walk.v && t.s->pool.walk.off > t.s->pool.seg_size / 3 &&
                   t.s->pool.walk.kept_from != UINT32_MAX;
        pthread_mutex_unlock(&t.s->pool.lock);
        if (mid)
            break;
    }
    assert_true(n < N); /* stopped mid-walk, with items kept in place */
    static bool live[N];
    int nlive = 0;
    for (int i = 0; i < n; i++)
        nlive += live[i] = value_is(&t, i, 1000);
    assert_true(nlive > 0 && nlive < n);
    tstore_close(&t);
    /* as a kill leaves it: the run state not marked clean */
    int fd = open(pm_path, O_RDWR);
    assert_true(fd >= 0);
    struct pm_hdr h;
    assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    h.state = PM_RUNNING;
    assert_int_equal(pwrite(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    close(fd);
    tstore_open_opts(&t, &o);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.restore_mode, STORE_RESTORE_CRASH);
    assert_int_equal(st.curr_items, (uint64_t)nlive);
    for (int i = 0; i < n; i++)
        assert_int_equal(value_is(&t, i, 1000), live[i]);
    tstore_close(&t);
    unlink(pm_path);
}

/* More writers than half the segments -m allows (-m 8 with -t 16) would
 * hold every segment open, and eviction could free none: they share four
 * open sets (the 1st and 5th worker the same one, under its lock) and
 * every store from sixteen threads at once succeeds, with evictions. A
 * store made for fewer writers gives each worker its own set. */
#define SHARE_WRITERS 16
#define SHARE_SETS 2000

struct share_writer {
    struct store_ctx *c;
    int id, failed;
};

static void *share_write(void *arg)
{
    struct share_writer *w = arg;
    char key[32], val[2000];
    memset(val, 'a' + w->id, sizeof val);
    for (int i = 0; i < SHARE_SETS; i++) {
        int n = snprintf(key, sizeof key, "w%d:%d", w->id, i);
        struct store_set_req r = {.mode = STORE_MODE_SET, .exptime = i % 3 ? clock_now() + (rel_time_t)(i % 3) * 600 : 0};
        if (store_store(w->c, key, (size_t)n, val, sizeof val, &r, NULL) != STORE_OK)
            w->failed++;
    }
    return NULL;
}

/* Every writer's share_write at once, none of whose stores may fail. */
static void share_run(struct share_writer *w)
{
    pthread_t th[SHARE_WRITERS];
    for (int i = 0; i < SHARE_WRITERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, share_write, &w[i]), 0);
    for (int i = 0; i < SHARE_WRITERS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < SHARE_WRITERS; i++)
        assert_int_equal(w[i].failed, 0);
}

/* A store of mem bytes made for SHARE_WRITERS writers. */
static struct store *share_store(size_t mem)
{
    clock_setup();
    struct store_options o = {.mem_limit = mem, .item_size_max = 1u << 20, .evictions = true,
                              .cas_enabled = true, .writers = SHARE_WRITERS};
    struct store *s;
    assert_int_equal(store_create(&s, &o), 0);
    return s;
}

/* One item of n zero bytes, expiring in `ttl` seconds (0: never). */
static void share_put(struct store_ctx *c, const char *key, rel_time_t ttl, size_t n)
{
    static const char val[2000];
    struct store_set_req r = {.mode = STORE_MODE_SET, .exptime = ttl ? clock_now() + ttl : 0};
    assert_int_equal(store_store(c, key, strlen(key), val, n, &r, NULL), STORE_OK);
}

static void test_writers_share_open_segments(void **state)
{
    (void)state;
    clock_setup();
    struct store_options o = {.mem_limit = 8u << 20, .item_size_max = 1u << 20, .evictions = true,
                              .cas_enabled = true, .writers = 4};
    struct store *s;
    assert_int_equal(store_create(&s, &o), 0);
    struct store_ctx *a = store_ctx_create(s), *b = store_ctx_create(s);
    assert_ptr_equal(a->seg.at, &a->seg.own);
    assert_false(a->seg.at->shared);
    assert_ptr_not_equal(a->seg.at, b->seg.at);
    store_ctx_destroy(&a);
    store_ctx_destroy(&b);
    store_destroy(&s);

    s = share_store(8u << 20);
    struct share_writer w[SHARE_WRITERS];
    for (int i = 0; i < SHARE_WRITERS; i++)
        w[i] = (struct share_writer){.c = store_ctx_create(s), .id = i};
    assert_true(w[0].c->seg.at->shared);
    assert_ptr_equal(w[0].c->seg.at, w[4].c->seg.at);
    assert_ptr_not_equal(w[0].c->seg.at, w[1].c->seg.at);
    share_run(w);
    struct store_stats st;
    store_stats(s, &st);
    assert_true(st.evictions > 0);
    /* each writer's last value reads back whole, or was evicted */
    char key[32];
    for (int i = 0; i < SHARE_WRITERS; i++) {
        int n = snprintf(key, sizeof key, "w%d:%d", i, SHARE_SETS - 1);
        struct store_get_req g = {.want_value = true};
        struct store_item it;
        if (store_get(w[i].c, key, (size_t)n, &g, &it) != STORE_OK)
            continue;
        assert_int_equal(it.nvalue, 2000);
        for (unsigned k = 0; k < it.nvalue; k++)
            assert_int_equal(it.value[k], 'a' + i);
        store_pin_release(it.pin);
    }
    for (int i = 0; i < SHARE_WRITERS; i++)
        store_ctx_destroy(&w[i].c);
    store_destroy(&s);
}

/* cache_memlimit lowering -m 64 to 8 under sixteen writers: their open
 * segments (one or more each) would hold every segment the new limit
 * allows, and a limit that then needs them to share sets would be one the
 * store never made. Each writer follows the change (its next write, or its
 * worker's next turn: store_ctx_follow_limit): it seals its open segments
 * and takes a shared set, and every store from sixteen threads succeeds.
 * Raised again, each takes its own set back; raised further, with the
 * same sets, none is sealed. */
static void test_lowered_limit_makes_writers_share(void **state)
{
    (void)state;
    struct store *s = share_store(64u << 20);
    struct share_writer w[SHARE_WRITERS];
    for (int i = 0; i < SHARE_WRITERS; i++) {
        w[i] = (struct share_writer){.c = store_ctx_create(s), .id = i};
        assert_ptr_equal(w[i].c->seg.at, &w[i].c->seg.own);
        for (int g = 0; g < 3; g++) { /* an open segment in three TTL groups */
            char key[32];
            snprintf(key, sizeof key, "pre%d:%d", i, g);
            share_put(w[i].c, key, (rel_time_t)g * 600, 2000);
        }
    }
    assert_true(__atomic_load_n(&s->pool.open_segs, __ATOMIC_RELAXED) >= SHARE_WRITERS);
    assert_int_equal(store_set_mem_limit(s, 8u << 20), 0);
    for (int i = 0; i < SHARE_WRITERS; i++) /* every worker's next turn */
        store_ctx_follow_limit(w[i].c);
    assert_int_equal(__atomic_load_n(&s->pool.open_segs, __ATOMIC_RELAXED), 0);
    assert_true(w[0].c->seg.at->shared);
    assert_ptr_equal(w[0].c->seg.at, w[4].c->seg.at);
    share_run(w);
    struct store_stats st;
    store_stats(s, &st);
    assert_true(st.evictions > 0);

    assert_int_equal(store_set_mem_limit(s, 64u << 20), 0);
    share_run(w);
    for (int i = 0; i < SHARE_WRITERS; i++) /* followed at its first write */
        assert_ptr_equal(w[i].c->seg.at, &w[i].c->seg.own);
    /* A limit that only rises, with the same sets, seals nothing: a
     * sealed segment's unwritten end would be memory no item uses. */
    uint32_t open = __atomic_load_n(&s->pool.open_segs, __ATOMIC_RELAXED);
    assert_true(open > 0);
    assert_int_equal(store_set_mem_limit(s, 128u << 20), 0);
    for (int i = 0; i < SHARE_WRITERS; i++)
        store_ctx_follow_limit(w[i].c);
    assert_int_equal(__atomic_load_n(&s->pool.open_segs, __ATOMIC_RELAXED), open);
    for (int i = 0; i < SHARE_WRITERS; i++)
        store_ctx_destroy(&w[i].c);
    store_destroy(&s);
}

/* A limit raised from -m 8 to 64 under sixteen writers ends the sharing.
 * A sharer that checked for a change just before it and then waited for
 * its set's lock opens a segment there after another sharer sealed it;
 * when it follows the change it must seal that one too, though the
 * housekeeper's ctx, which never writes, still counts as the set's user. */
static void test_raised_limit_leaves_no_shared_segment_open(void **state)
{
    (void)state;
    struct store *s = share_store(8u << 20);
    struct store_ctx *c[SHARE_WRITERS];
    for (int i = 0; i < SHARE_WRITERS; i++) {
        c[i] = store_ctx_create(s);
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        share_put(c[i], key, 0, 100);
    }
    struct seg_open_set *first = &s->shared_sets[0]; /* the housekeeper's, and c[3]'s */
    assert_ptr_equal(c[3]->seg.at, first);
    assert_ptr_equal(c[7]->seg.at, first);
    assert_int_equal(store_set_mem_limit(s, 64u << 20), 0);
    store_ctx_follow_limit(c[3]); /* seals the set it leaves */
    assert_null(first->open[0]);
    /* c[7]'s reservation that passed its check before the change */
    seg_open_set_lock(first);
    assert_non_null(seg_open(&c[7]->seg, 0));
    seg_open_set_unlock(first);
    for (int i = 0; i < SHARE_WRITERS; i++)
        store_ctx_follow_limit(c[i]);
    assert_int_equal(__atomic_load_n(&s->pool.open_segs, __ATOMIC_RELAXED), 0);
    for (int i = 0; i < SHARE_WRITERS; i++)
        store_ctx_destroy(&c[i]);
    store_destroy(&s);
}

/* A hit costs an item, whatever its size: unread items far smaller than
 * the mean stay longer than large ones written at the same time
 * (seg_small_stays). -m 8 written over three times with 8000-byte items
 * and, every 16th from the 9th, a 64-byte one, none read: the small items of the first
 * third are all still there, the large ones of it all gone. Evicting by
 * age alone kept none of either. */
static void test_small_unread_items_outlast_large_ones(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    int n = 3 * 8 * 1024 * 1024 / 8000, small = 0, small_kept = 0, large_kept = 0;
    for (int i = 0; i < n; i++)
        put(&t, i, i % 16 == 8 ? 64 : 8000);
    for (int i = 0; i < n / 3; i++) {
        bool here = has(&t, i);
        if (i % 16 == 8) {
            small++;
            small_kept += here;
        } else {
            large_kept += here;
        }
    }
    printf("first third: %d of %d small items kept, %d large\n", small_kept, small, large_kept);
    assert_int_equal(small_kept, small);
    assert_int_equal(large_kept, 0);
    tstore_close(&t);
}

int main(void)
{
    snprintf(pm_path, sizeof pm_path, "/dev/shm/nodelay-unit-evict-%d", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_order),   cmocka_unit_test(test_second_chance),
        cmocka_unit_test(test_scan_resistance), cmocka_unit_test(test_pin_survives),
        cmocka_unit_test(test_pin_keep_bound),
        cmocka_unit_test(test_no_evictions), cmocka_unit_test(test_no_evictions_compacts),
        cmocka_unit_test(test_mem_limit),
        cmocka_unit_test(test_rewritten_keys_reuse_their_segments),
        cmocka_unit_test(test_initial_malloced),
        cmocka_unit_test(test_walk),
        cmocka_unit_test(test_eviction_at_writers_pace),
        cmocka_unit_test(test_victim_keeps_its_read_items),
        cmocka_unit_test(test_small_share_follows_the_ghost),
        cmocka_unit_test(test_loop_larger_than_the_cache_keeps_a_part),
        cmocka_unit_test(test_small_unread_items_outlast_large_ones),
        cmocka_unit_test(test_lowered_limit_makes_writers_share),
        cmocka_unit_test(test_raised_limit_leaves_no_shared_segment_open),
        cmocka_unit_test(test_small_target_follows_a_lowered_limit),
        cmocka_unit_test(test_no_evictions_pays_nothing),
        cmocka_unit_test(test_half_walked_victim_after_a_crash),
        cmocka_unit_test(test_no_evictions_with_padding_ends),
        cmocka_unit_test(test_no_evictions_reclaims_spread_dead_bytes),
        cmocka_unit_test(test_writers_share_open_segments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
