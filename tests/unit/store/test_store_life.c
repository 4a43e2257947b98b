/* SPDX-License-Identifier: BSD-3-Clause */
/* Expiry, touch and flush_all against a controllable clock (debug builds:
 * clock_debug_pause / clock_debug_advance), and housekeeping. */
#include "test_store_helpers.h"

#include "store/store_core.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MB (1u << 20)

#ifdef NODELAY_DEBUG

static void test_expiry_boundary(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    char buf[16];
    rel_time_t now = clock_now();
    tset(&t, "k", "v", STORE_MODE_SET, 0, clock_exptime(2), NULL);
    tset(&t, "n", "v", STORE_MODE_SET, 0, clock_exptime(-1), NULL); /* negative: expired */
    assert_int_equal(tget(&t, "n", buf, sizeof buf, NULL), STORE_MISS);
    clock_debug_advance(1);
    assert_int_equal(clock_now(), now + 1);
    assert_int_equal(tget(&t, "k", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_advance(1); /* exptime == now: expired */
    assert_int_equal(tget(&t, "k", buf, sizeof buf, NULL), STORE_MISS);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.get_expired, 2);
    assert_int_equal(st.curr_items, 0);
    /* absolute unix times beyond 30 days */
    tset(&t, "a", "v", STORE_MODE_SET, 0, clock_exptime(clock_unix_now() + 3), NULL);
    clock_debug_advance(2);
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_advance(1);
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_MISS);
    clock_debug_pause(false);
    tstore_close(&t);
}

static void test_touch(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    char buf[16];
    struct store_item it;
    assert_int_equal(store_touch(t.c, "k", 1, clock_exptime(5)), STORE_MISS);
    /* an item stored without expiry gains one (its header grows) */
    uint64_t cas;
    tset(&t, "k", "v", STORE_MODE_SET, 3, 0, &cas);
    assert_int_equal(store_touch(t.c, "k", 1, clock_exptime(2)), STORE_OK);
    assert_int_equal(tget(&t, "k", buf, sizeof buf, &it), STORE_OK);
    assert_int_equal(it.cas, cas); /* touch keeps the CAS */
    assert_int_equal(it.flags, 3);
    assert_string_equal(buf, "v");
    clock_debug_advance(2);
    assert_int_equal(tget(&t, "k", buf, sizeof buf, NULL), STORE_MISS);
    /* gat: touch through get, back to never */
    tset(&t, "g", "v", STORE_MODE_SET, 0, clock_exptime(1), NULL);
    struct store_get_req gat = {.touch = true, .exptime = REL_TIME_NEVER, .want_value = true};
    assert_int_equal(store_get(t.c, "g", 1, &gat, &it), STORE_OK);
    store_pin_release(it.pin);
    clock_debug_advance(100);
    assert_int_equal(tget(&t, "g", buf, sizeof buf, &it), STORE_OK);
    assert_int_equal(it.exptime, REL_TIME_NEVER);
    clock_debug_pause(false);
    tstore_close(&t);
}

static void test_flush_immediate(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    char buf[16];
    tset(&t, "old", "1", STORE_MODE_SET, 0, 0, NULL);
    clock_debug_advance(2);
    tset(&t, "a", "1", STORE_MODE_SET, 0, 0, NULL);
    tset(&t, "b", "1", STORE_MODE_SET, 0, 0, NULL);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 3);
    store_flush(t.s, clock_now());
    /* memcached 1.6.45: the flush second's items go at once, uncounted;
     * an older one stays until read (get_flushed) or reclaimed */
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 1);
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_MISS);
    /* stored after the flush in the same second: visible (oldest_cas rule) */
    tset(&t, "c", "1", STORE_MODE_SET, 0, 0, NULL);
    assert_int_equal(tget(&t, "c", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_advance(5);
    assert_int_equal(tget(&t, "c", buf, sizeof buf, NULL), STORE_OK);
    assert_int_equal(tget(&t, "b", buf, sizeof buf, NULL), STORE_MISS);
    assert_int_equal(tget(&t, "old", buf, sizeof buf, NULL), STORE_MISS);
    store_stats(t.s, &st);
    assert_int_equal(st.get_flushed, 1);
    assert_int_equal(st.reclaimed, 0);
    clock_debug_pause(false);
    tstore_close(&t);
}

/* A miss says why: what watch prints as item_get's status. */
static void test_miss_reason(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    struct store_item it;
    assert_int_equal(store_get(t.c, "none", 4, NULL, &it), STORE_MISS);
    assert_int_equal(it.miss, STORE_MISS_ABSENT);
    tset(&t, "f", "1", STORE_MODE_SET, 0, 0, NULL);
    clock_debug_advance(2);
    store_flush(t.s, clock_now());
    /* stored after the flush, so only expired (one both expired and flushed
     * reads as flushed, memcached's order) */
    tset(&t, "e", "1", STORE_MODE_SET, 0, clock_exptime(1), NULL);
    clock_debug_advance(2);
    assert_int_equal(store_get(t.c, "e", 1, NULL, &it), STORE_MISS);
    assert_int_equal(it.miss, STORE_MISS_EXPIRED);
    assert_int_equal(store_get(t.c, "f", 1, NULL, &it), STORE_MISS);
    assert_int_equal(it.miss, STORE_MISS_FLUSHED);
    /* the first lookup unlinked them: the next finds nothing */
    assert_int_equal(store_get(t.c, "e", 1, NULL, &it), STORE_MISS);
    assert_int_equal(it.miss, STORE_MISS_ABSENT);
    assert_int_equal(store_get(t.c, "f", 1, NULL, &it), STORE_MISS);
    assert_int_equal(it.miss, STORE_MISS_ABSENT);
    clock_debug_pause(false);
    tstore_close(&t);
}

static void test_flush_delayed(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    char buf[16];
    tset(&t, "a", "1", STORE_MODE_SET, 0, 0, NULL);
    store_flush(t.s, clock_exptime(2)); /* flush_all 2 */
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_advance(1);
    /* memcached: oldest_live = now + 2 - 1 - 1 has come */
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_MISS);
    clock_debug_advance(1);
    tset(&t, "b", "1", STORE_MODE_SET, 0, 0, NULL);
    assert_int_equal(tget(&t, "b", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_pause(false);
    tstore_close(&t);
}

static void test_flush_nocas(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, false);
    clock_debug_pause(true);
    char buf[16];
    tset(&t, "a", "1", STORE_MODE_SET, 0, 0, NULL);
    store_flush(t.s, clock_now());
    assert_int_equal(tget(&t, "a", buf, sizeof buf, NULL), STORE_MISS);
    /* -C: no oldest_cas, but the flush unlinked the second's items at once
     * and oldest_live is the second before, so a store after the flush in
     * the same second stays (memcached 1.6.45; 1.6.18 lost it) */
    tset(&t, "b", "1", STORE_MODE_SET, 0, 0, NULL);
    assert_int_equal(tget(&t, "b", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_advance(1);
    assert_int_equal(tget(&t, "b", buf, sizeof buf, NULL), STORE_OK);
    /* flush_all 2 under -C: the same oldest_live as with CAS (when - 1) */
    store_flush(t.s, clock_exptime(2));
    tset(&t, "c", "1", STORE_MODE_SET, 0, 0, NULL);
    clock_debug_advance(1);
    tset(&t, "d", "1", STORE_MODE_SET, 0, 0, NULL);
    clock_debug_advance(1);
    tset(&t, "e", "1", STORE_MODE_SET, 0, 0, NULL);
    clock_debug_advance(1);
    assert_int_equal(tget(&t, "b", buf, sizeof buf, NULL), STORE_MISS);
    assert_int_equal(tget(&t, "c", buf, sizeof buf, NULL), STORE_MISS);
    assert_int_equal(tget(&t, "d", buf, sizeof buf, NULL), STORE_MISS);
    assert_int_equal(tget(&t, "e", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_pause(false);
    tstore_close(&t);
}

static void test_housekeeping(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 64 * MB, MB, true, true); /* room for a segment per TTL group */
    clock_debug_pause(true);
    char key[32], val[1000];
    memset(val, 'x', sizeof val - 1);
    val[sizeof val - 1] = 0;
    /* 3 MiB of items with a 10 s TTL, 100 KiB that never expire */
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "ttl:%d", i);
        tset(&t, key, val, STORE_MODE_SET, 0, clock_exptime(10), NULL);
    }
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "keep:%d", i);
        tset(&t, key, val, STORE_MODE_SET, 0, 0, NULL);
    }
    store_ctx_destroy(&t.c); /* seal the open segments */
    t.c = store_ctx_create(t.s);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 3100);
    clock_debug_advance(11);
    store_housekeep(t.s);
    store_stats(t.s, &st);
    /* the TTL group's segments went whole, without a read */
    assert_int_equal(st.curr_items, 100);
    assert_true(st.seg_expired >= 2);
    assert_int_equal(st.reclaimed, 3000);
    assert_int_equal(st.expired_unfetched, 3000);
    assert_int_equal(st.evictions, 0);
    char buf[1024];
    assert_int_equal(tget(&t, "keep:5", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_pause(false);
    tstore_close(&t);
}

static void test_crawl_open_segment(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    char key[32];
    /* a few expiring items that stay in the worker's open segment */
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "rc%d", i);
        tset(&t, key, "value", STORE_MODE_SET, 0, clock_exptime(2), NULL);
    }
    tset(&t, "keep", "value", STORE_MODE_SET, 0, 0, NULL);
    struct store_stats st;
    store_housekeep(t.s);
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 201);
    clock_debug_advance(3);
    store_housekeep(t.s);
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 1);
    assert_int_equal(st.reclaimed, 200);
    assert_int_equal(st.get_expired, 0);
    /* flushed items go the same way */
    tset(&t, "f", "value", STORE_MODE_SET, 0, 0, NULL);
    store_flush(t.s, clock_now());
    store_housekeep(t.s);
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 0);
    clock_debug_pause(false);
    tstore_close(&t);
}


/* issue_14.t: an open segment whose items all expired is recycled by the
 * next write into it, not appended to until full and followed by a fresh
 * segment; its items count as reclaimed, as memcached's allocation reuses
 * expired chunks. */
static void test_spent_open_segment_is_reused(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    static char val[66561];
    memset(val, 'B', sizeof val - 1);
    char key[32];
    struct store_stats st;
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "key%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, clock_exptime(2), NULL), STORE_OK);
    }
    store_stats(t.s, &st);
    assert_int_equal(st.seg_used, 1);
    clock_debug_advance(4);
    for (int i = 10; i < 20; i++) {
        snprintf(key, sizeof key, "key%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, clock_exptime(2), NULL), STORE_OK);
    }
    store_stats(t.s, &st);
    assert_int_equal(st.seg_used, 1); /* was 2: the 16th item opened a new one */
    assert_int_equal(st.curr_items, 10);
    assert_int_equal(st.reclaimed, 10);
    assert_int_equal(st.expired_unfetched, 10);
    assert_int_equal(st.get_expired, 0);
    assert_int_equal(st.evictions, 0);
    char buf[66600];
    assert_int_equal(tget(&t, "key15", buf, sizeof buf, NULL), STORE_OK);
    assert_string_equal(buf, val);
    assert_int_equal(tget(&t, "key5", buf, sizeof buf, NULL), STORE_MISS);

    /* deleted items free their segment the same way (no expiry at all) */
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "never%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
        assert_int_equal(store_delete(t.c, key, strlen(key), NULL), STORE_OK);
    }
    store_stats(t.s, &st);
    uint64_t used = st.seg_used;
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "never%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    store_stats(t.s, &st);
    assert_int_equal(st.seg_used, used);
    assert_int_equal(st.reclaimed, 10); /* nothing was linked to reclaim */
    /* a segment with a live item is never recycled */
    clock_debug_advance(100);
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "never%d", i);
        assert_int_equal(tget(&t, key, buf, sizeof buf, NULL), STORE_OK);
    }
    clock_debug_pause(false);
    tstore_close(&t);
}

/* A spent open segment a reader still pins is not recycled under it: the
 * pinned bytes stay as they were while the writer goes on; once nothing
 * pins the writer's open segment, it is. */
static void test_spent_open_segment_pinned(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    static char val[66561];
    memset(val, 'P', sizeof val - 1);
    char key[32];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "p%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, clock_exptime(2), NULL), STORE_OK);
    }
    struct store_get_req r = {.want_value = true};
    struct store_item it;
    assert_int_equal(store_get(t.c, "p3", 2, &r, &it), STORE_OK);
    clock_debug_advance(3);
    memset(val, 'Q', sizeof val - 1);
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "q%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, clock_exptime(2), NULL), STORE_OK);
    }
    assert_int_equal(it.nvalue, 66560);
    for (uint32_t i = 0; i < it.nvalue; i++)
        assert_int_equal(it.value[i], 'P');
    store_pin_release(it.pin);
    /* The last five q items sit in the open segment, which twelve more
     * would overflow: spent, it takes them all. */
    struct store_stats st;
    store_stats(t.s, &st);
    uint64_t used = st.seg_used, reclaimed = st.reclaimed;
    clock_debug_advance(3);
    memset(val, 'R', sizeof val - 1);
    for (int i = 0; i < 12; i++) {
        snprintf(key, sizeof key, "r%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, clock_exptime(2), NULL), STORE_OK);
    }
    store_stats(t.s, &st);
    assert_int_equal(st.seg_used, used);
    assert_int_equal(st.reclaimed, reclaimed + 5);
    char buf[66600];
    assert_int_equal(tget(&t, "r11", buf, sizeof buf, NULL), STORE_OK);
    assert_string_equal(buf, val);
    clock_debug_pause(false);
    tstore_close(&t);
}

/* Recycling under readers: a writer fills its open segment with items that
 * expire at every step of the clock (so each step leaves it spent, and the
 * next write recycles it), while readers pin values and check every byte
 * until they let go. A value pinned while its segment is spent must stay as
 * it was: a pinned segment is appended to, recycled only with no pin left
 * (and no item linked: none can be pinned then). */
#define RC_KEYS 400
#define RC_VALUE 2000
static int rc_stop; /* __atomic */

static void rc_fill(char *v, unsigned k, unsigned ver)
{
    for (unsigned i = 0; i < RC_VALUE; i++)
        v[i] = (char)('a' + (k * 7 + ver * 3 + i) % 26);
    int n = snprintf(v, 24, "%u:%u:", k, ver);
    v[n] = '.'; /* not the NUL snprintf wrote */
}

static void *rc_reader(void *arg)
{
    struct store_ctx *c = store_ctx_create(arg);
    uint64_t seed = (uintptr_t)c | 1;
    char key[32], want[RC_VALUE];
    while (!__atomic_load_n(&rc_stop, __ATOMIC_RELAXED)) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        unsigned k = (unsigned)(seed % RC_KEYS);
        snprintf(key, sizeof key, "rc:%u", k);
        struct store_get_req r = {.want_value = true};
        struct store_item it;
        if (store_get(c, key, strlen(key), &r, &it) != STORE_OK)
            continue;
        unsigned gk, ver;
        if (it.nvalue != RC_VALUE || sscanf(it.value, "%u:%u:", &gk, &ver) != 2 || gk != k)
            abort();
        rc_fill(want, k, ver);
        for (int pass = 0; pass < 3; pass++) { /* hold it while the writer goes on */
            if (memcmp(it.value, want, RC_VALUE) != 0)
                abort();
            sched_yield();
        }
        store_pin_release(it.pin);
    }
    store_ctx_destroy(&c);
    return NULL;
}

static void test_spent_open_segment_recycled_under_readers(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    clock_debug_pause(true);
    __atomic_store_n(&rc_stop, 0, __ATOMIC_RELAXED);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, rc_reader, t.s), 0);
    char key[32], v[RC_VALUE + 1];
    v[RC_VALUE] = 0;
    for (unsigned ver = 1; ver <= 300; ver++) {
        for (unsigned k = 0; k < RC_KEYS; k += 4) { /* 200 KB a step: over an eighth */
            unsigned kk = k + ver % 4;
            snprintf(key, sizeof key, "rc:%u", kk);
            rc_fill(v, kk, ver);
            assert_int_equal(tset(&t, key, v, STORE_MODE_SET, 0, clock_exptime(1), NULL),
                             STORE_OK);
        }
        clock_debug_advance(1);
    }
    __atomic_store_n(&rc_stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.evictions, 0);
    assert_true(st.reclaimed > 0);
    /* (how many segments were recycled depends on the readers' pins: a
     * pinned one is appended to instead; test_spent_open_segment_is_reused
     * counts them without readers) */
    clock_debug_pause(false);
    tstore_close(&t);
}

/* Another thread deletes the last item of a worker's open segment, and the
 * worker's next write recycles it, seeing none live: every count the
 * delete lowers must be lowered before the recycle can see none live, or
 * the reset that zeroes them lands between and the delete's last
 * decrements take the new item's counts below it (cls_items 0 with one
 * item in it, live_bytes wrapped). The deleter is held at the moment the
 * segment is seen none live (seg_debug_none_live) until the worker has
 * recycled and written. */
static struct seg *dg_seg;
static int dg_held, dg_written; /* __atomic */

static void dg_hold(struct seg *seg)
{
    if (seg != dg_seg)
        return;
    __atomic_store_n(&dg_held, 1, __ATOMIC_RELEASE);
    for (long n = 0; !__atomic_load_n(&dg_written, __ATOMIC_ACQUIRE) && n < 2000000; n++)
        sched_yield(); /* bounded: the worker may be waiting for the rest */
}

static void *dg_deleter(void *arg)
{
    struct store_ctx *c = store_ctx_create(arg);
    if (store_delete(c, "dg", 2, NULL) != STORE_OK)
        abort();
    store_ctx_destroy(&c);
    return NULL;
}

static void test_spent_open_segment_emptied_by_another_thread(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    static char val[200000]; /* over an eighth of the segment */
    memset(val, 'D', sizeof val - 1);
    assert_int_equal(tset(&t, "dg", val, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    dg_seg = NULL;
    for (unsigned g = 0; g < STORE_GROUPS && !dg_seg; g++)
        dg_seg = t.c->seg.at->open[g];
    assert_non_null(dg_seg);
    struct store_stats st;
    store_stats(t.s, &st);
    uint64_t used = st.seg_used;
    __atomic_store_n(&dg_held, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&dg_written, 0, __ATOMIC_RELAXED);
    seg_debug_none_live = dg_hold;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, dg_deleter, t.s), 0);
    for (long n = 0; !__atomic_load_n(&dg_held, __ATOMIC_ACQUIRE); n++) {
        assert_true(n < 100000000);
        sched_yield();
    }
    assert_int_equal(tset(&t, "dg-new", "v", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    __atomic_store_n(&dg_written, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    seg_debug_none_live = NULL;
    struct seg *seg = dg_seg;
    assert_true(seg->write_off < 1024); /* recycled: written from its start */
    int32_t items = 0;
    for (unsigned k = 0; k < STORE_CLASSES; k++)
        items += __atomic_load_n(&seg->cls_items[k], __ATOMIC_RELAXED);
    assert_int_equal(items, 1);
    assert_int_equal(__atomic_load_n(&seg->live_items, __ATOMIC_RELAXED), 1);
    assert_true(__atomic_load_n(&seg->live_bytes, __ATOMIC_RELAXED) <= seg->write_off);
    store_stats(t.s, &st);
    assert_int_equal(st.seg_used, used);
    assert_int_equal(st.curr_items, 1);
    tstore_close(&t);
}

/* memcached without its segmented LRU (-o no_modern: issue_183.t) allocates
 * a storage command's item first, and that allocation reclaims the expired
 * or flushed item it finds at the LRU tail: a set of a flushed key counts
 * reclaimed, not get_flushed. With the segmented LRU (the default) the set
 * finds it and counts get_flushed, as before. */
static void test_flat_lru_store_reclaims_its_key(void **state)
{
    (void)state;
    clock_setup();
    struct store_options o = {.mem_limit = 8 * MB, .item_size_max = MB, .evictions = true,
                              .cas_enabled = true, .lru_flat = true};
    struct tstore t;
    tstore_open_opts(&t, &o);
    clock_debug_pause(true);
    char buf[16];
    struct store_stats st;
    tset(&t, "key", "1", STORE_MODE_SET, 0, 0, NULL);
    clock_debug_advance(2);
    store_flush(t.s, clock_now());
    assert_int_equal(tset(&t, "key", "1", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    store_stats(t.s, &st);
    assert_int_equal(st.reclaimed, 1);
    assert_int_equal(st.expired_unfetched, 1);
    assert_int_equal(st.get_flushed, 0);
    assert_int_equal(st.curr_items, 1);
    /* expired, and fetched before: reclaimed, not unfetched; add stores */
    tset(&t, "e", "1", STORE_MODE_SET, 0, clock_exptime(1), NULL);
    assert_int_equal(tget(&t, "e", buf, sizeof buf, NULL), STORE_OK);
    clock_debug_advance(2);
    assert_int_equal(tset(&t, "e", "2", STORE_MODE_ADD, 0, 0, NULL), STORE_OK);
    store_stats(t.s, &st);
    assert_int_equal(st.reclaimed, 2);
    assert_int_equal(st.expired_unfetched, 1);
    assert_int_equal(st.get_expired, 0);
    /* append allocates first too: reclaimed, then nothing to append to */
    tset(&t, "a", "1", STORE_MODE_SET, 0, clock_exptime(1), NULL);
    clock_debug_advance(2);
    assert_int_equal(tset(&t, "a", "2", STORE_MODE_APPEND, 0, 0, NULL), STORE_NOT_STORED);
    store_stats(t.s, &st);
    assert_int_equal(st.reclaimed, 3);
    /* a read is no allocation: get_expired, as memcached's do_item_get */
    tset(&t, "r", "1", STORE_MODE_SET, 0, clock_exptime(1), NULL);
    clock_debug_advance(2);
    assert_int_equal(tget(&t, "r", buf, sizeof buf, NULL), STORE_MISS);
    store_stats(t.s, &st);
    assert_int_equal(st.get_expired, 1);
    assert_int_equal(st.reclaimed, 3);
    /* `lru mode segmented`: a set counts get_flushed again */
    store_set_lru_segmented(t.s, true);
    tset(&t, "key", "1", STORE_MODE_SET, 0, 0, NULL);
    clock_debug_advance(2);
    store_flush(t.s, clock_now());
    tset(&t, "key", "1", STORE_MODE_SET, 0, 0, NULL);
    store_stats(t.s, &st);
    assert_int_equal(st.get_flushed, 1);
    assert_int_equal(st.reclaimed, 3);
    clock_debug_pause(false);
    tstore_close(&t);
}

static void test_background_thread(void **state)
{
    (void)state;
    clock_setup();
    struct store_options o = {.mem_limit = 8 * MB, .item_size_max = MB, .evictions = true,
                              .cas_enabled = true, .background = true};
    struct store *s;
    assert_int_equal(store_create(&s, &o), 0);
    struct store_ctx *c = store_ctx_create(s);
    struct store_set_req r = {.mode = STORE_MODE_SET, .exptime = clock_exptime(1)};
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        store_store(c, key, strlen(key), "v", 1, &r, NULL);
    }
    store_ctx_destroy(&c);
    clock_debug_advance(5);
    struct store_stats st;
    for (int i = 0; i < 40; i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        store_stats(s, &st);
        if (st.curr_items == 0)
            break;
    }
    assert_int_equal(st.curr_items, 0);
    store_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expiry_boundary), cmocka_unit_test(test_touch),
        cmocka_unit_test(test_flush_immediate), cmocka_unit_test(test_flush_delayed),
        cmocka_unit_test(test_miss_reason),
        cmocka_unit_test(test_flush_nocas),     cmocka_unit_test(test_housekeeping),
        cmocka_unit_test(test_crawl_open_segment), cmocka_unit_test(test_background_thread),
        cmocka_unit_test(test_spent_open_segment_is_reused),
        cmocka_unit_test(test_spent_open_segment_pinned),
        cmocka_unit_test(test_spent_open_segment_recycled_under_readers),
        cmocka_unit_test(test_spent_open_segment_emptied_by_another_thread),
        cmocka_unit_test(test_flat_lru_store_reclaims_its_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

/* The release build has no debug clock: say so as a skip rather than pass
 * with nothing run. */
static void test_needs_debug_clock(void **state)
{
    (void)state;
    print_message("the expiry, touch and flush tests need the debug clock: built by CONFIG=debug, asan or tsan\n");
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_needs_debug_clock)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
