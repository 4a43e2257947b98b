/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier in the store (src/store/store_flash.c, flash/flash_tier.c)
 * on a temporary file with small segments: items that eviction takes go to
 * flash instead; a probe of such a key submits a read (WAIT), draining the
 * worker's queue wakes the wait set, and the lookup then returns the exact
 * value, flags and CAS; a write meanwhile wins; a dropped segment, a
 * rewritten one and a failed read are misses, never another value;
 * compaction keeps the live items of a fragmented segment. */
#define _GNU_SOURCE
#include "test_store_flash_helpers.h"
#include "store/store_lookup.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The run-time values `extstore` would set (base/flash_tuning.h), read by
 * the tier's threads as the test changes them: under a lock. */
static struct flash_tuning tuning;
static pthread_mutex_t tuning_lock = PTHREAD_MUTEX_INITIALIZER;
static void read_tuning(const void *src, struct flash_tuning *out)
{
    (void)src;
    pthread_mutex_lock(&tuning_lock);
    *out = tuning;
    pthread_mutex_unlock(&tuning_lock);
}

/* Key i read back: a miss (false) or exactly its value and flags (true). */
static bool check(struct tstore *t, int i, uint64_t want_cas)
{
    char k[32], v[VLEN + 1], got[VLEN + 16];
    key_of(i, k);
    value_of(i, v);
    struct store_item it;
    if (tget(t, k, got, sizeof got, &it) != STORE_OK)
        return false;
    assert_string_equal(got, v);
    assert_int_equal(it.flags, (uint32_t)i);
    if (want_cas)
        assert_int_equal(it.cas, want_cas);
    return true;
}

#define N 12000

/* How most tests here start: `flash` bytes of flash, keys 0..n-1 put in
 * (each one's CAS in cas[], when given), and a wait set, not attached yet,
 * whose wakes count in *woke. */
static struct store_flash_wait *open_filled(struct tstore *t, uint64_t flash,
                                            uint32_t compact_under, int n, uint64_t *cas, int *woke)
{
    open_flash(t, flash, compact_under);
    fill(t, n, cas);
    struct store_flash_wait *w = store_flash_wait_create(on_wake, woke);
    assert_non_null(w);
    return w;
}

/* And how they end: w detached and gone, then the store. */
static void close_waited(struct tstore *t, struct store_flash_wait *w)
{
    store_flash_attach(t->c, NULL);
    store_flash_wait_destroy(w);
    tstore_close(t);
}

/* A device with more segments of ext_wbuf_size than slots can name gets
 * larger segments, never a refusal, for every shape memcached takes (under
 * 65,536 pages); a device that fits keeps ext_wbuf_size. */
static void test_segment_size_fits_the_slots(void **state)
{
    (void)state;
    const uint64_t mib = 1u << 20, page = 64 * mib;
    uint32_t wbuf = 4 * mib;
    /* 64 GiB: 16,384 segments of 4 MiB */
    assert_int_equal(flash_tier_seg_size(page, wbuf, 1024), wbuf);
    /* exactly SLOT_FLASH_IDS segments of 4 MiB still fit */
    uint64_t pages = SLOT_FLASH_IDS / (page / wbuf);
    assert_int_equal(flash_tier_seg_size(page, wbuf, pages), wbuf);
    /* one page more: the least multiple that divides the page and fits */
    uint32_t seg = flash_tier_seg_size(page, wbuf, pages + 1);
    assert_int_equal(seg, 8 * mib);
    /* memcached's largest, 65,535 pages of 64 MiB (4 TiB): a segment a page
     * at most, and always under the slots' limit */
    for (uint32_t w = 2 * (uint32_t)mib; w <= page; w *= 2) {
        seg = flash_tier_seg_size(page, w, 65535);
        assert_true(seg >= w && page % seg == 0 && seg % w == 0);
        assert_true(65535 * (page / seg) <= SLOT_FLASH_IDS);
    }
    /* 36 MiB pages of 4 MiB writes, 60,000 pages: 540,000 segments do not
     * fit; 8 MiB does not divide the page, 12 MiB (3 a page) does */
    assert_true(60000ull * 9 > SLOT_FLASH_IDS);
    seg = flash_tier_seg_size(36 * mib, wbuf, 60000);
    assert_int_equal(seg, 12 * mib);
    /* shapes refused as before: a page not a multiple of the buffer */
    assert_int_equal(flash_tier_seg_size(page, 3 * (uint32_t)mib, 10), 0);
    assert_int_equal(flash_tier_seg_size(wbuf / 2, wbuf, 10), 0);
}

static void test_fill_past_ram_reads_back(void **state)
{
    (void)state;
    struct tstore t;
    static uint64_t cas[N];
    int woke = 0, waited = 0, misses = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, cas, &woke);
    struct store_stats st;
    store_stats(t.s, &st);
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    /* 12 MB of values past 4 MiB of RAM: most went to flash, none evicted */
    assert_true(c.objects_written > N / 2);
    assert_int_equal(st.evictions, 0);

    /* Without a probe a flash item is a miss, and it stays linked. */
    assert_false(check(&t, 0, 0));

    struct flash_dev_counters d0, d1;
    flash_dev_counters(&t.s->flash->dev, &d0);
    store_flash_attach(t.c, w);
    for (int i = 0; i < N; i++) {
        waited += probe(&t, w, &woke, i);
        /* a miss only where another key's flash entry took its flash
         * tag's place (docs/store-index.md "Index": about 1 in 2^15 per
         * key sharing its bucket) */
        misses += !check(&t, i, cas[i]);
        if (i % 64 == 63)
            settle(&t); /* recaches push others out to flash: pace them too */
        store_flash_wait_reset(w);
    }
    assert_true(waited > N / 4);
    assert_true(misses <= N / 500);
    /* Every item here, each segment's largest too, is about 1 KiB: one
     * read a wait, of the one or two blocks the item is in. */
    flash_dev_counters(&t.s->flash->dev, &d1);
    uint64_t reads = d1.ring_reads + d1.pool_reads - d0.ring_reads - d0.pool_reads;
    assert_int_equal(reads, (uint64_t)waited);
    assert_true(d1.bytes_read - d0.bytes_read <= reads * 2 * FLASH_DEV_ALIGN);
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.get_extstore + (uint64_t)misses >= (uint64_t)waited);
    assert_int_equal(c.badcrc_from_extstore, 0);
    assert_int_equal(c.read_errors, 0);
    close_waited(&t, w);
}

/* A key written again after its item went to flash: the write drops the
 * flash copy, so the old value never comes back; and a read in flight when
 * the write lands loses to it. */
static void test_write_meanwhile_wins(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, NULL, &woke);
    /* key 1: overwritten before any read */
    assert_int_equal(tset(&t, "key:00000001", "new", STORE_MODE_SET, 9, 0, NULL), STORE_OK);
    probe(&t, w, &woke, 1);
    char got[VLEN + 16];
    assert_int_equal(tget(&t, "key:00000001", got, sizeof got, NULL), STORE_OK);
    assert_string_equal(got, "new");
    /* key 2: probed (the read goes out), then overwritten, then drained */
    struct store_key k2 = store_key_of("key:00000002", 12);
    enum store_probe pr = store_flash_probe(t.c, w, &k2);
    assert_int_equal(tset(&t, "key:00000002", "newer", STORE_MODE_SET, 9, 0, NULL), STORE_OK);
    uint64_t end = drain_end();
    while (pr == STORE_PROBE_WAIT && store_flash_pending(w) && drain_turn(&t, end))
        ;
    assert_int_equal(tget(&t, "key:00000002", got, sizeof got, NULL), STORE_OK);
    assert_string_equal(got, "newer");
    /* key 3: deleted while on flash, with no probe first (a miss): its
     * flash copy goes with it, so no later read brings it back */
    store_flash_wait_reset(w);
    struct store_key k3 = store_key_of("key:00000003", 12);
    assert_int_equal(store_delete(t.c, "key:00000003", 12, NULL), STORE_MISS);
    assert_int_equal(store_flash_probe(t.c, w, &k3), STORE_PROBE_READY);
    assert_int_equal(tget(&t, "key:00000003", got, sizeof got, NULL), STORE_MISS);
    store_flash_wait_reset(w);
    close_waited(&t, w);
}

/* A flash much smaller than what leaves RAM: its oldest segments are
 * dropped and rewritten; every key reads back exactly or is a miss. */
static void test_dropped_segments_miss(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0, hits = 0, misses = 0;
    struct store_flash_wait *w = open_filled(&t, 2 * MB, 1, N, NULL, &woke);
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.page_evictions > 0);
    for (int i = 0; i < N; i++) {
        probe(&t, w, &woke, i);
        if (check(&t, i, 0))
            hits++;
        else
            misses++;
        store_flash_wait_reset(w);
    }
    assert_true(misses > 0);
    assert_true(hits > 0);
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.slots_dropped > 0); /* stale slots cleared as they were met */
    close_waited(&t, w);
}

/* The file cut to nothing under the store: reads fail, each a miss and a
 * counted error; nothing stalls. */
static void test_read_error_is_miss(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0, waited = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, NULL, &woke);
    assert_int_equal(truncate(flash_path, 0), 0);
    for (int i = 0; i < 2000; i++) {
        bool wt = probe(&t, w, &woke, i);
        bool hit = check(&t, i, 0);
        if (wt)
            assert_false(hit);
        waited += wt;
        store_flash_wait_reset(w);
    }
    assert_true(waited > 0);
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.read_errors >= (uint64_t)waited);
    close_waited(&t, w);
}

/* Drain the worker's queue until w has no read outstanding. */
static void drain_all(struct tstore *t, struct store_flash_wait *w)
{
    uint64_t end = drain_end();
    while (store_flash_pending(w) && drain_turn(t, end))
        ;
    assert_int_equal(store_flash_pending(w), 0);
}

/* One request of many flash keys (a multiget) whose items together do not
 * fit in RAM: every read completes before the request runs again, and then
 * every key is a hit (store_flash.h: READY means the lookups see the item),
 * although recaching them all would push the first ones out again. */
static void test_many_keys_read_together_all_hit(void **state)
{
    (void)state;
    struct tstore t;
    static uint64_t cas[N];
    enum { K = 6000 }; /* 6 MB of values, RAM 4 MiB */
    int woke = 0, waiting = 0, hits = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, cas, &woke);
    store_flash_attach(t.c, w);
    char k[32];
    for (int i = 0; i < K; i++) {
        key_of(i, k);
        struct store_key key = store_key_of(k, strlen(k));
        waiting += store_flash_probe(t.c, w, &key) == STORE_PROBE_WAIT;
    }
    assert_true(waiting > K / 2);
    drain_all(&t, w);
    assert_int_equal(woke, 1);
    for (int i = 0; i < K; i++) {
        hits += check(&t, i, cas[i]);
        if (i % 64 == 63)
            settle(&t); /* recaches push others out to flash: pace them */
    }
    store_flash_wait_reset(w);
    /* a miss only where another key's flash entry took its flash tag's place */
    assert_true(hits >= K - K / 500);
    close_waited(&t, w);
}

/* A write or a delete between the read's completion and the request's
 * run again wins over the bytes read. */
static void test_write_after_read_wins(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, NULL, &woke);
    store_flash_attach(t.c, w);
    struct store_key k1 = store_key_of("key:00000001", 12);
    struct store_key k2 = store_key_of("key:00000002", 12);
    assert_int_equal(store_flash_probe(t.c, w, &k1), STORE_PROBE_WAIT);
    assert_int_equal(store_flash_probe(t.c, w, &k2), STORE_PROBE_WAIT);
    drain_all(&t, w);
    /* another session's write and delete, before this one runs again */
    store_flash_attach(t.c, NULL);
    assert_int_equal(tset(&t, "key:00000001", "new", STORE_MODE_SET, 9, 0, NULL), STORE_OK);
    store_delete(t.c, "key:00000002", 12, NULL);
    store_flash_attach(t.c, w);
    char got[VLEN + 16];
    assert_int_equal(tget(&t, "key:00000001", got, sizeof got, NULL), STORE_OK);
    assert_string_equal(got, "new");
    assert_int_equal(tget(&t, "key:00000002", got, sizeof got, NULL), STORE_MISS);
    store_flash_wait_reset(w);
    close_waited(&t, w);
}

/* A get of k's value, pinned (no copy), as a text get makes it. */
static void get_value(struct tstore *t, const char *k, struct store_item *it,
                      enum store_status want)
{
    struct store_get_req r = {.want_value = true};
    assert_int_equal(store_get(t->c, k, strlen(k), &r, it), want);
}

/* A read that memcached's recache rule leaves on flash (rate 0 here) is
 * served from the read's buffer: nothing is written to RAM (no item
 * stored, the key still on flash, a lookup with no probe a miss), the
 * pinned value outlives the wait set's reset until its pin goes, and the
 * key looked up twice in one request counts one read. */
static void test_read_not_recached_stays_on_flash(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, NULL, &woke);
    char k[32], v[VLEN + 1];
    key_of(0, k);
    value_of(0, v);
    struct store_stats before, after;
    store_stats(t.s, &before);
    struct flash_tier_counters c0, c1;
    flash_tier_counters_read(t.s->flash, &c0);
    assert_true(probe(&t, w, &woke, 0));
    struct store_item it, again;
    get_value(&t, k, &it, STORE_OK);
    get_value(&t, k, &again, STORE_OK);
    assert_non_null(it.pin);
    assert_ptr_equal(again.value, it.value); /* the same buffer */
    store_pin_release(again.pin);
    store_flash_wait_reset(w);
    store_flash_attach(t.c, NULL);
    assert_int_equal(it.nvalue, VLEN);
    assert_memory_equal(it.value, v, VLEN);
    assert_int_equal(it.flags, 0);
    store_pin_release(it.pin);
    flash_tier_counters_read(t.s->flash, &c1);
    assert_int_equal(c1.get_extstore - c0.get_extstore, 1);
    assert_int_equal(c1.recache_from_extstore, c0.recache_from_extstore);
    store_stats(t.s, &after);
    assert_int_equal(after.total_items, before.total_items);
    char got[VLEN + 16];
    assert_int_equal(tget(&t, k, got, sizeof got, NULL), STORE_MISS);
    /* and read again from flash with a probe */
    assert_true(probe(&t, w, &woke, 0));
    assert_true(check(&t, 0, 0));
    store_flash_wait_reset(w);
    close_waited(&t, w);
}

/* A touch is lent a RAM copy of a flash item, which goes back to flash
 * when the request is done (pend_give_back): the flash slot takes the
 * copy's slot under the key's bucket lock, and where that is a bucket's
 * first slot, the word that holds the lock, the lock stays held until
 * unlocked (a debug build's index_unlock traps on a lock not held). Keys
 * until one's slot is a first slot; each is on flash again after. */
static void test_lent_copy_back_in_first_slot(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, NULL, &woke);
    struct index *ix = &t.s->index;
    int first = 0, back = 0;
    for (int i = 0; i < N && first < 4; i++) {
        if (!probe(&t, w, &woke, i))
            continue; /* in RAM */
        char k[32], got[VLEN + 16];
        key_of(i, k);
        struct store_get_req r = {.touch = true, .exptime = 0};
        struct store_item it;
        assert_int_equal(store_get(t.c, k, strlen(k), &r, &it), STORE_OK);
        store_flash_wait_reset(w);
        store_flash_attach(t.c, NULL);
        /* back on flash: a lookup with no probe misses */
        if (tget(&t, k, got, sizeof got, NULL) != STORE_MISS)
            continue;
        back++;
        struct store_key key = store_key_of(k, strlen(k));
        struct index_pair p;
        index_lock_key(ix, key.hv, &p);
        for (int c = 0; c < 2 && p.b[c]; c++) {
            uint64_t sl = slot_load(index_slot(p.b[c], 0));
            first += sl && slot_is_flash(sl) && slot_tag(sl) == key.tag;
        }
        index_unlock_pair(&p);
    }
    assert_true(back > 0);
    assert_true(first > 0);
    store_flash_wait_reset(w);
    close_waited(&t, w);
}

/* A key served from its read's buffer and deleted by another session
 * before the request looks it up again (get k k): the second lookup is a
 * miss, as memcached's, while the first's pinned value stays readable. */
static void test_delete_between_reads_from_buffer(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, NULL, &woke);
    char k[32], v[VLEN + 1];
    key_of(1, k);
    value_of(1, v);
    assert_true(probe(&t, w, &woke, 1));
    struct store_item it, again;
    get_value(&t, k, &it, STORE_OK);
    store_flash_attach(t.c, NULL);
    store_delete(t.c, k, strlen(k), NULL);
    store_flash_attach(t.c, w);
    get_value(&t, k, &again, STORE_MISS);
    assert_null(again.pin);
    assert_memory_equal(it.value, v, VLEN);
    store_pin_release(it.pin);
    store_flash_wait_reset(w);
    close_waited(&t, w);
}

#ifdef NODELAY_DEBUG
/* An item read back keeps its last access time, as memcached's (`mg k
 * l`): the read is not an access of its own. */
static void test_read_back_keeps_access_time(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0;
    /* key 0 is on flash now */
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, NULL, &woke);
    clock_debug_advance(100);
    assert_true(probe(&t, w, &woke, 0));
    char k[32], got[VLEN + 16];
    key_of(0, k);
    struct store_item it;
    assert_int_equal(tget(&t, k, got, sizeof got, &it), STORE_OK);
    assert_true(clock_now() - it.last_access >= 100);
    store_flash_wait_reset(w);
    close_waited(&t, w);
}
#endif

/* Values longer than the first read (16 KiB from the item's start): a
 * second read fetches the rest; read back byte for byte. */
static void test_large_values_take_a_second_read(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 32 * MB, 1);
    enum { LN = 600, LLEN = 20000 };
    static char v[LLEN + 1], got[LLEN + 16];
    char k[32];
    for (int i = 0; i < LN; i++) {
        memset(v, 'A' + i % 26, LLEN);
        v[i % LLEN] = '#';
        v[LLEN] = 0;
        key_of(i, k);
        assert_int_equal(tset(&t, k, v, STORE_MODE_SET, 7, 0, NULL), STORE_OK);
        if (i % 4 == 3)
            settle(&t);
    }
    settle(&t);
    int woke = 0, waited = 0, hits = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    struct flash_dev_counters d0, d1;
    flash_dev_counters(&t.s->flash->dev, &d0);
    for (int i = 0; i < LN; i++) {
        waited += probe(&t, w, &woke, i);
        key_of(i, k);
        memset(v, 'A' + i % 26, LLEN);
        v[i % LLEN] = '#';
        if (tget(&t, k, got, sizeof got, NULL) == STORE_OK) {
            assert_memory_equal(got, v, LLEN);
            hits++;
        }
        store_flash_wait_reset(w);
        if (i % 4 == 3)
            settle(&t);
    }
    assert_true(waited > LN / 4);
    assert_true(hits >= LN - 2);
    /* most items' ends are past the first read's last block */
    flash_dev_counters(&t.s->flash->dev, &d1);
    assert_true(d1.ring_reads + d1.pool_reads - d0.ring_reads - d0.pool_reads >
                (uint64_t)waited * 3 / 2);
    close_waited(&t, w);
}

/* Keys 0..n-1 set to len bytes of one letter each (by key), with these
 * flags, the tier's writers let finish every `every` sets and at the end. */
static void fill_letters(struct tstore *t, int n, size_t len, uint32_t flags, int every)
{
    char *v = malloc(len + 1);
    assert_non_null(v);
    char k[32];
    for (int i = 0; i < n; i++) {
        memset(v, 'a' + i % 26, len);
        v[len] = 0;
        key_of(i, k);
        assert_int_equal(tset(t, k, v, STORE_MODE_SET, flags, 0, NULL), STORE_OK);
        if (i % every == every - 1)
            settle(t);
    }
    settle(t);
    free(v);
}

enum { BN = 400, BLEN = 16000 };

/* Keys 0..BN-1 read back as written: how many do (the others miss). */
static int big_hits(struct tstore *t)
{
    static char v[BLEN + 1], got[BLEN + 16];
    char k[32];
    int woke = 0, hits = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    for (int i = 0; i < BN; i++) {
        probe(t, w, &woke, i);
        key_of(i, k);
        memset(v, 'a' + i % 26, BLEN);
        if (tget(t, k, got, sizeof got, NULL) == STORE_OK) {
            assert_memory_equal(got, v, BLEN);
            hits++;
        }
        store_flash_wait_reset(w);
    }
    store_flash_attach(t->c, NULL);
    store_flash_wait_destroy(w);
    return hits;
}

/* An index growth cannot rehash a flash slot (its key is not in RAM): its
 * place moves it as a rehash would while the table grows to
 * 2^INDEX_PLACE_BITS times the buckets it had when the tier opened,
 * so every key reads back; past that a growth drops the flash slots it
 * splits, counted, and those keys are misses while the others read back. */
static void test_index_growth_keeps_flash_slots(void **state)
{
    (void)state;
    struct tstore t;
    /* only 16,000-byte values go to flash, so the index starts small */
    open_flash_ex(&t, 32 * MB, 1, 16000, 10);
    struct index *ix = &t.s->index;
    uint64_t reach = (uint64_t)1 << (ix->place_base + INDEX_PLACE_BITS);
    fill_letters(&t, BN, BLEN, 1, 4);
    char k[32];
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.objects_written > BN / 4);
    uint64_t buckets = index_shape_buckets(ix->shape);
    /* small items grow the table through every level its flash slots'
     * places reach; under tags of their own, since writing a key drops
     * the flash candidates under its tag in its buckets (flash_tier.h) */
    static bool big_tag[2048];
    for (int i = 0; i < BN; i++) {
        key_of(i, k);
        big_tag[store_key_of(k, strlen(k)).tag] = true;
    }
    int n = 0;
    for (; index_shape_buckets(ix->shape) < reach * 3 / 4; n++) {
        snprintf(k, sizeof k, "small:%d", n);
        if (!big_tag[store_key_of(k, strlen(k)).tag])
            assert_int_equal(tset(&t, k, "s", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    assert_true(index_shape_buckets(ix->shape) >= buckets * 8);
    flash_tier_counters_read(t.s->flash, &c);
    assert_int_equal(c.index_dropped, 0);
    int got = big_hits(&t);
    if (got != BN) { /* say which counter lost them */
        flash_tier_counters_read(t.s->flash, &c);
        print_message("hits %d: tag_dropped %llu skipped_full %llu slots_dropped %llu "
                      "index_dropped %llu read_errors %llu\n",
                      got, (unsigned long long)c.tag_dropped, (unsigned long long)c.skipped_full,
                      (unsigned long long)c.slots_dropped, (unsigned long long)c.index_dropped,
                      (unsigned long long)c.read_errors);
    }
    assert_int_equal(got, BN);
    /* past 2^INDEX_PLACE_BITS times, a split drops them */
    for (; index_shape_buckets(ix->shape) < reach * 2 && n < 400000; n++) {
        snprintf(k, sizeof k, "small:%d", n);
        assert_int_equal(tset(&t, k, "s", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.index_dropped > 0);
    int hits = big_hits(&t);
    assert_true(hits > 0 && hits < BN);
    tstore_close(&t);
}

/* The table a flash tier opens with (store_create): a fraction of what
 * its flash and -m could hold of their smallest flash items, whose
 * growth through every level its flash slots' places reach (16 times the
 * buckets) holds twice that at the split load. */
static void test_table_opens_small_for_flash(void **state)
{
    (void)state;
    struct tstore t;
    open_flash_ex(&t, 64 * MB, 1, 512, 10); /* hashpower 10: no floor above the flash's */
    struct index *ix = &t.s->index;
    uint64_t per = item_hdr_len(0, 512) + 1 + 512;
    uint64_t want = (64 * MB + 4 * MB) / per;
    uint64_t buckets = index_shape_buckets(ix->shape);
    assert_int_equal(ix->place_base, index_shape_level(ix->shape));
    assert_true(buckets * INDEX_SPLIT_TENTHS / 10 < want / 4 + 8);
    assert_true(buckets * INDEX_SPLIT_TENTHS / 10 > want / 8);
    uint64_t reach = (uint64_t)1 << (ix->place_base + INDEX_PLACE_BITS);
    assert_true(reach * INDEX_SPLIT_TENTHS / 10 >= 2 * want);
    tstore_close(&t);
}

/* Flash items alone grow the table they opened small (above): past its
 * split load the table splits, their slots go with their places, none
 * is dropped by growth, and each key reads back its own value or, where
 * another key's write dropped its copy under a shared flash tag
 * (counted), misses. */
enum { GN = 48000, GLEN = 600 };
static void test_flash_items_grow_the_table(void **state)
{
    (void)state;
    struct tstore t;
    open_flash_ex(&t, 64 * MB, 1, 512, 10);
    struct index *ix = &t.s->index;
    uint64_t opened = index_shape_buckets(ix->shape);
    fill_letters(&t, GN, GLEN, 0, 64);
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.objects_written > GN * 3 / 4); /* the rest fill RAM */
    assert_true(index_shape_buckets(ix->shape) > opened * 5 / 4);
    assert_true(index_shape_level(ix->shape) < ix->place_base + INDEX_PLACE_BITS);
    assert_int_equal(c.index_dropped, 0);
    int woke = 0, misses = 0, n = 0;
    static char v[GLEN + 1], got[GLEN + 16];
    char k[32];
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    for (int i = 0; i < GN; i += 16, n++) {
        probe(&t, w, &woke, i);
        key_of(i, k);
        memset(v, 'a' + i % 26, GLEN);
        v[GLEN] = 0;
        if (tget(&t, k, got, sizeof got, NULL) == STORE_OK)
            assert_string_equal(got, v);
        else
            misses++;
        store_flash_wait_reset(w);
        if (n % 64 == 63)
            settle(&t);
    }
    flash_tier_counters_read(t.s->flash, &c);
    assert_true((uint64_t)misses <= c.tag_dropped + c.skipped_full);
    assert_true(misses <= n / 200);
    close_waited(&t, w);
}

/* `extstore item_size` at run time: raised past every value, nothing more
 * goes to flash (evicted instead); lowered back, items go again. */
static void test_run_time_item_size(void **state)
{
    (void)state;
    struct tstore t;
    tuning = (struct flash_tuning){.item_size = 4096,
                                   .item_age = UINT32_MAX,
                                   .compact_under = 1, /* as opened: settings hold it */
                                   .max_frag = 0.8,
                                   .max_sleep = 1000000};
    open_tuning = (struct flash_tuning_src){read_tuning, NULL};
    open_flash(&t, 32 * MB, 1);
    open_tuning = (struct flash_tuning_src){0};
    fill(&t, N, NULL);
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(c.objects_written, 0);
    assert_true(st.evictions > 0);
    pthread_mutex_lock(&tuning_lock);
    tuning.item_size = 512;
    pthread_mutex_unlock(&tuning_lock);
    for (int i = N; i < N + 4000; i++) {
        put(&t, i, NULL);
        if (i % 64 == 63)
            settle(&t);
    }
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.objects_written > 0);
    tstore_close(&t);
}

/* Writes the kernel refuses (past RLIMIT_FSIZE: EFBIG, as a full or
 * failing disk would): those segments' items are misses, counted; the
 * rest read back exactly. */
static void test_write_error_is_miss(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 32 * MB, 1);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1 * MB; /* the first 16 segments only */
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    fill(&t, N, NULL);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, was);
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.write_errors > 0);
    int woke = 0, hits = 0, misses = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    for (int i = 0; i < N; i++) {
        probe(&t, w, &woke, i);
        if (check(&t, i, 0))
            hits++;
        else
            misses++;
        store_flash_wait_reset(w);
        if (i % 64 == 63)
            settle(&t);
    }
    assert_true(hits > 0);
    assert_true(misses > N / 4);
    close_waited(&t, w);
}

/* Most items of the flash segments overwritten: compaction rewrites the
 * live rest of a fragmented segment and frees it; they still read back. */
static void test_compaction_keeps_live(void **state)
{
    (void)state;
    struct tstore t;
    /* 4 MiB of flash, 16 pages: compaction runs while fewer than all are free */
    int woke = 0;
    struct store_flash_wait *w = open_filled(&t, 4 * MB, 16, 6000, NULL, &woke);
    /* overwrite 9 of 10 keys with short values (those stay in RAM) */
    char k[32];
    for (int i = 0; i < 6000; i++) {
        if (!(i % 10))
            continue;
        key_of(i, k);
        assert_int_equal(tset(&t, k, "x", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    /* The tier's compactor thread may run the passes first: what it did
     * is counted the same, whichever thread did it. */
    for (int n = 0; n < 64; n++)
        flash_tier_maintain(t.s->flash);
    settle(&t);
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    assert_true(c.compact_rescues > 0);
    int hits = 0;
    for (int i = 0; i < 6000; i += 10) {
        probe(&t, w, &woke, i);
        hits += check(&t, i, 0);
        store_flash_wait_reset(w);
    }
    assert_true(hits >= 600 * 9 / 10);
    close_waited(&t, w);
}

/* Keys 0..5999 on 4 MiB of flash, 9 of 10 then overwritten in RAM: the
 * flash segments are mostly dead, so compaction rewrites them. */
static void open_fragmented(struct tstore *t, uint64_t *cas)
{
    open_flash(t, 4 * MB, 16);
    fill(t, 6000, cas);
    char k[32];
    for (int i = 0; i < 6000; i++) {
        if (!(i % 10))
            continue;
        key_of(i, k);
        assert_int_equal(tset(t, k, "x", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
}

/* Compaction while reads of its items are out: a read that began before
 * its item was moved and its segment freed finds the copy, whether the
 * move came before its bytes were judged (judged_first false) or between
 * that and the request's lookup (true): a hit with the item's value and
 * CAS, never a miss, counted or not. */
static void compaction_during_reads(bool judged_first)
{
    struct tstore t;
    static uint64_t cas[6000];
    /* ext_max_frag 0 until the reads are out: the compactor thread's
     * passes leave the fragmented segments to the ones below */
    tuning = (struct flash_tuning){.item_size = 512,
                                   .item_age = UINT32_MAX,
                                   .compact_under = 16,
                                   .max_sleep = 1000000};
    open_tuning = (struct flash_tuning_src){read_tuning, NULL};
    open_fragmented(&t, cas);
    open_tuning = (struct flash_tuning_src){0};
    int woke = 0, waiting = 0, probed[600];
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    store_flash_attach(t.c, w);
    char k[32];
    for (int i = 0; i < 6000; i += 10) {
        key_of(i, k);
        struct store_key key = store_key_of(k, strlen(k));
        probed[i / 10] = store_flash_probe(t.c, w, &key) == STORE_PROBE_WAIT;
        waiting += probed[i / 10];
    }
    assert_true(waiting > 200);
    if (judged_first)
        drain_all(&t, w);
    else
        usleep(200000); /* the reads done on the read threads, not judged */
    struct flash_tier_counters c0, c1;
    flash_tier_counters_read(t.s->flash, &c0);
    pthread_mutex_lock(&tuning_lock);
    tuning.max_frag = 0.8;
    pthread_mutex_unlock(&tuning_lock);
    /* the passes (this thread's or the compactor thread's, counted alike) */
    for (int n = 0; n < 64; n++)
        flash_tier_maintain(t.s->flash);
    flash_tier_counters_read(t.s->flash, &c1);
    assert_true(c1.compact_rescues - c0.compact_rescues > (uint64_t)waiting / 2);
    if (!judged_first)
        drain_all(&t, w);
    int hits = 0;
    for (int i = 0; i < 6000; i += 10)
        if (probed[i / 10])
            hits += check(&t, i, cas[i]);
    flash_tier_counters_read(t.s->flash, &c1);
    store_flash_wait_reset(w);
    store_flash_attach(t.c, NULL);
    store_flash_wait_destroy(w);
    assert_int_equal(hits, waiting);
    assert_int_equal(c1.miss_from_extstore, c0.miss_from_extstore);
    tstore_close(&t);
}

static void test_compaction_after_read_judged(void **state)
{
    (void)state;
    compaction_during_reads(true);
}

static void test_compaction_before_read_judged(void **state)
{
    (void)state;
    compaction_during_reads(false);
}

/* Resident pages of [p, p + len). */
static size_t resident(const char *p, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    const char *from = (const char *)((uintptr_t)p & ~(uintptr_t)(pg - 1));
    size_t n = (size_t)((p + len - from + pg - 1) / pg), in = 0;
    unsigned char *v = malloc(n);
    assert_non_null(v);
    assert_int_equal(mincore((void *)from, (size_t)(p + len - from), v), 0);
    for (size_t i = 0; i < n; i++)
        in += v[i] & 1;
    free(v);
    return in;
}

/* Once the writer thread is idle, its spare write buffers hold no pages
 * (RAM per flash item at rest is the index's and the open writers'); a
 * spare taken again is written to as before and read back exactly. */
static void test_idle_spare_buffers_released(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 32 * MB, 1);
    static uint64_t cas[9000];
    fill(&t, 8000, cas);
    struct flash_tier *ft = t.s->flash;
    size_t in = 0;
    uint32_t spares = 0;
    for (int n = 0; n < 200; n++) { /* a second idle, and some */
        usleep(20000);
        pthread_mutex_lock(&ft->lock);
        spares = ft->nspare;
        in = 0;
        for (uint32_t i = 0; i < ft->nspare; i++)
            in += resident(ft->spare[i], ft->opt.seg_size);
        bool cold = ft->ncold == ft->nspare;
        pthread_mutex_unlock(&ft->lock);
        if (cold && spares)
            break;
    }
    assert_true(spares > 0);
    assert_int_equal(in, 0);
    /* the next keys push older ones to flash through the released buffers */
    for (int i = 8000; i < 9000; i++) {
        put(&t, i, &cas[i]);
        if (i % 64 == 63)
            settle(&t);
    }
    settle(&t);
    int woke = 0, hits = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    for (int i = 0; i < 9000; i++) {
        probe(&t, w, &woke, i);
        hits += check(&t, i, cas[i]);
        store_flash_wait_reset(w);
        if (i % 64 == 63)
            settle(&t); /* recaches push others out to flash: pace them */
    }
    store_flash_attach(t.c, NULL);
    store_flash_wait_destroy(w);
    assert_true(hits >= 9000 - 9000 / 500);
    tstore_close(&t);
}

/* A session that goes while its reads are out: they complete into nothing
 * (get_aborted_extstore), and a worker context that goes with reads out
 * waits for them rather than leave the pool a freed queue. */
static void test_session_gone_mid_read(void **state)
{
    (void)state;
    struct tstore t;
    int woke = 0, waiting = 0;
    struct store_flash_wait *w = open_filled(&t, 32 * MB, 1, N, NULL, &woke);
    char k[32];
    for (int i = 0; i < 64; i++) {
        key_of(i, k);
        struct store_key key = store_key_of(k, strlen(k));
        waiting += store_flash_probe(t.c, w, &key) == STORE_PROBE_WAIT;
    }
    assert_true(waiting > 0);
    store_flash_attach(t.c, NULL);
    store_flash_wait_destroy(w);
    uint64_t end = drain_end();
    while (t.c->flash_inflight && drain_turn(&t, end))
        ;
    assert_int_equal(woke, 0);
    struct flash_tier_counters c;
    flash_tier_counters_read(t.s->flash, &c);
    assert_int_equal(c.get_aborted_extstore, (uint64_t)waiting);
    /* and again, this time the context goes first */
    w = store_flash_wait_create(on_wake, &woke);
    for (int i = 64; i < 128; i++) {
        key_of(i, k);
        struct store_key key = store_key_of(k, strlen(k));
        store_flash_probe(t.c, w, &key);
    }
    close_waited(&t, w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segment_size_fits_the_slots),
        cmocka_unit_test_setup_teardown(test_fill_past_ram_reads_back, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_write_meanwhile_wins, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_many_keys_read_together_all_hit, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_write_after_read_wins, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_read_not_recached_stays_on_flash, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_delete_between_reads_from_buffer, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_lent_copy_back_in_first_slot, flash_file_setup,
                                        flash_file_teardown),
#ifdef NODELAY_DEBUG
        cmocka_unit_test_setup_teardown(test_read_back_keeps_access_time, flash_file_setup,
                                        flash_file_teardown),
#endif
        cmocka_unit_test_setup_teardown(test_dropped_segments_miss, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_read_error_is_miss, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_compaction_keeps_live, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_compaction_after_read_judged, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_compaction_before_read_judged, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_idle_spare_buffers_released, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_session_gone_mid_read, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_write_error_is_miss, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_large_values_take_a_second_read, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_index_growth_keeps_flash_slots, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_table_opens_small_for_flash, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_flash_items_grow_the_table, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_run_time_item_size, flash_file_setup,
                                        flash_file_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
