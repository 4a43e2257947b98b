/* SPDX-License-Identifier: BSD-3-Clause */
/* The idle flush (src/store/store_cold.c) on a temporary flash file, RAM
 * far from full: nothing moves while ext_item_age is at its default or the
 * items are younger than it; items idle that long and at least
 * ext_item_size go to flash (their RAM is their slot: a lookup without a
 * probe misses) and read back exactly, with their flags and CAS; an item
 * read again meanwhile, and one under ext_item_size, stay in RAM; a pass
 * stopped by full write buffers resumes where it stopped. No eviction.
 * Every flash slot it makes takes its RAM slot's place, in whichever of
 * its key's buckets that was. A short ext_max_sleep quickens the idle
 * flush alone, not the housekeeper's whole pass. */
#define _GNU_SOURCE
#include "test_store_helpers.h"
#include "test_flash_file.h"
#include "store/store_cold.h"
#include "store/store_core.h"
#include "store/store_flash.h"
#include "store/store_lookup.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MB (1u << 20)
#define VLEN 1000
#define SMALL 100

/* 16 MiB of RAM (what the tests write stays far under it), 32 MiB of
 * flash in 64 KiB segments; values of 512 bytes and up may go, once idle
 * `age` seconds. */
static void open_cold_paced(struct tstore *t, uint32_t age, uint32_t max_sleep, bool background)
{
    clock_setup();
    unlink(flash_path);
    struct store_options o = {
        .mem_limit = 16 * MB,
        .item_size_max = 32 * 1024,
        .evictions = true,
        .cas_enabled = true,
        .flash =
            {
                .nfiles = 1,
                .paths = {flash_path},
                .sizes = {32 * MB},
                .page_size = 256 * 1024,
                .wbuf_size = 64 * 1024,
                .threads = 1,
                .item_size = 512,
                .item_age = age,
                .compact_under = 1,
                .max_frag = 0.8,
                .max_sleep = max_sleep,
            },
        .background = background,
    };
    tstore_open_opts(t, &o);
    assert_non_null(t->s->flash);
}

static void open_cold(struct tstore *t, uint32_t age)
{
    open_cold_paced(t, age, 1000000, false);
}

static void value_of(int i, int len, char *v)
{
    for (int j = 0; j < len; j++)
        v[j] = (char)('a' + (i * 11 + j) % 26);
    v[len] = 0;
}

static void key_of(int i, char *k)
{
    snprintf(k, 32, "cold:%06d", i);
}

/* Keys 0..n-1 with VLEN-byte values, then keys n..n+nsmall-1 with SMALL. */
static void put_all(struct tstore *t, int n, int nsmall, uint64_t *cas)
{
    for (int i = 0; i < n + nsmall; i++) {
        char k[32], v[VLEN + 1];
        key_of(i, k);
        value_of(i, i < n ? VLEN : SMALL, v);
        assert_int_equal(tset(t, k, v, STORE_MODE_SET, (uint32_t)i, 0, &cas[i]), STORE_OK);
    }
}

/* In RAM: a lookup with no probe finds it (a flash item is a miss then). */
static bool in_ram(struct tstore *t, int i)
{
    char k[32];
    key_of(i, k);
    struct store_get_req r = {.want_value = true, .no_update = true};
    struct store_item it;
    enum store_status st = store_get(t->c, k, strlen(k), &r, &it);
    if (st == STORE_OK)
        store_pin_release(it.pin);
    return st == STORE_OK;
}

/* Whether key i's slot (its RAM item, or with flash a flash slot of its
 * tag) is in the chain of its first bucket. */
static bool in_first_bucket(struct tstore *t, int i, bool flash)
{
    char k[32];
    key_of(i, k);
    struct store_key key = store_key_of(k, strlen(k));
    struct index *ix = &t->s->index;
    uint64_t *b = index_lock_hash(ix, key.hv);
    bool found = false;
    for (uint64_t *cur = b; cur && !found; cur = index_next(ix, cur)) {
        for (int j = 0; j < INDEX_SLOTS && !found; j++) {
            uint64_t sl = slot_load(index_slot(cur, j));
            if (!sl || slot_tag(sl) != key.tag || slot_is_flash(sl) != flash)
                continue;
            if (flash) {
                found = true;
                continue;
            }
            const char *p = seg_item(&t->s->pool, sl);
            struct item_hdr h;
            item_decode(p, &h);
            found = h.nkey == key.nkey && memcmp(p + h.hlen, k, key.nkey) == 0;
        }
    }
    index_unlock(b);
    return found;
}

static void on_wake(void *arg)
{
    (*(int *)arg)++;
}

/* Key i through a probe (waiting for its read, bounded), then exactly its
 * value, flags and CAS. */
/* Read item i back (from flash: the probe, the wait for its read, the
 * get): true with its value, flags and cas, false on a miss. */
static bool read_or_miss(struct tstore *t, struct store_flash_wait *w, int *woke, int i, int len,
                         uint64_t cas)
{
    char k[32], v[VLEN + 1], got[VLEN + 16];
    key_of(i, k);
    value_of(i, len, v);
    struct store_key key = store_key_of(k, strlen(k));
    store_flash_attach(t->c, w);
    int before = *woke;
    if (store_flash_probe(t->c, w, &key) == STORE_PROBE_WAIT) {
        for (int n = 0; n < 1000 && *woke == before; n++) {
            struct pollfd p = {.fd = store_flash_fd(t->c), .events = POLLIN};
            poll(&p, 1, 10);
            store_flash_drain(t->c);
        }
        assert_int_equal(*woke, before + 1);
    }
    struct store_item it;
    enum store_status st = tget(t, k, got, sizeof got, &it);
    if (st == STORE_OK) {
        assert_string_equal(got, v);
        assert_int_equal(it.flags, (uint32_t)i);
        assert_int_equal(it.cas, cas);
    } else {
        assert_int_equal(st, STORE_MISS);
    }
    store_flash_wait_reset(w);
    store_flash_attach(t->c, NULL);
    return st == STORE_OK;
}

static void read_back(struct tstore *t, struct store_flash_wait *w, int *woke, int i, int len,
                      uint64_t cas)
{
    assert_true(read_or_miss(t, w, woke, i, len, cas));
}

static uint64_t written(struct tstore *t)
{
    return __atomic_load_n(&t->s->flash->c.objects_written, __ATOMIC_RELAXED);
}

/* Passes until one ends without full buffers (the writer thread empties
 * them meanwhile), bounded; the items moved. */
static uint64_t passes(struct tstore *t)
{
    uint64_t moved = 0;
    for (int n = 0; n < 1000; n++) {
        bool full;
        moved += store_cold_pass(t->s, UINT64_MAX, &full);
        if (!full)
            return moved;
        usleep(10000);
    }
    fail_msg("the idle flush never got past full buffers");
    return moved;
}

#define N 400
#define NSMALL 50

/* ext_item_age at its default (UINT32_MAX): no idle flush at all, as
 * memcached's; with 0 every item large enough goes at the first pass,
 * the small ones stay, and all read back exactly. */
static void test_default_age_never_idle_zero_age_all(void **state)
{
    (void)state;
    static uint64_t cas[N + NSMALL];
    struct tstore t;
    open_cold(&t, UINT32_MAX);
    put_all(&t, N, NSMALL, cas);
    assert_int_equal(passes(&t), 0);
    assert_int_equal(written(&t), 0);
    for (int i = 0; i < N + NSMALL; i++)
        assert_true(in_ram(&t, i));
    tstore_close(&t);

    open_cold(&t, 0);
    put_all(&t, N, NSMALL, cas);
    /* some items are in their second bucket (an insert takes the emptier) */
    static bool first[N];
    int second = 0;
    for (int i = 0; i < N; i++)
        second += !(first[i] = in_first_bucket(&t, i, false));
    assert_true(second > 0);
    assert_int_equal(passes(&t), N);
    assert_int_equal(written(&t), N);
    /* every flash slot took its RAM slot's place: in the second bucket
     * too, where a lookup finds it (read back below) */
    for (int i = 0; i < N; i++)
        assert_true(in_first_bucket(&t, i, true) == first[i]);
    /* a second pass finds nothing more: flash slots are not moved again */
    assert_int_equal(passes(&t), 0);
    int woke = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    assert_non_null(w);
    for (int i = 0; i < N + NSMALL; i++) {
        assert_true(in_ram(&t, i) == (i >= N));
        read_back(&t, w, &woke, i, i < N ? VLEN : SMALL, cas[i]);
    }
    store_flash_wait_destroy(w);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.evictions, 0);
    tstore_close(&t);
}

/* Keys a and b of one tag, b's first bucket a's second (the index as it
 * is now), of one flash tag too (same_ftag: their further tag bits match,
 * index_flash_tag) or not: found among the first NPAIR keys, false if
 * none. */
#define NPAIR 200000
static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static bool tag_pair(struct tstore *t, int *a, int *b, bool same_ftag)
{
    const struct index *ix = &t->s->index;
    uint64_t shape = __atomic_load_n(&t->s->index.shape, __ATOMIC_ACQUIRE);
    static uint64_t firsts[NPAIR]; /* first bucket and tag, then the key */
    for (int i = 0; i < NPAIR; i++) {
        char k[32];
        key_of(i, k);
        struct store_key key = store_key_of(k, strlen(k));
        firsts[i] = (index_shape_bucket(shape, key.hv) << 11 | key.tag) << 20 | (uint64_t)i;
    }
    qsort(firsts, NPAIR, sizeof firsts[0], cmp_u64);
    for (int j = 0; j < NPAIR; j++) {
        char k[32];
        key_of(j, k);
        struct store_key key = store_key_of(k, strlen(k));
        uint64_t b1 = index_shape_bucket(shape, key.hv);
        uint64_t b2 = index_shape_bucket(shape, index_hash2(key.hv));
        if (b1 == b2)
            continue;
        uint64_t want = (b2 << 11 | key.tag) << 20;
        size_t lo = 0, hi = NPAIR;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (firsts[mid] < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < NPAIR && firsts[lo] >> 20 == want >> 20; lo++) {
            int o = (int)(firsts[lo] & 0xfffff);
            key_of(o, k);
            struct store_key ko = store_key_of(k, strlen(k));
            if ((index_flash_tag(ix, ko.hv) == index_flash_tag(ix, key.hv)) != same_ftag)
                continue;
            *a = j;
            *b = o;
            return true;
        }
    }
    return false;
}

/* Flash slots in p's buckets under the tag of hash hv, or (full) its
 * whole flash tag. */
static int tag_flash_slots(struct tstore *t, const struct index_pair *p, uint64_t hv, bool full)
{
    const struct index *ix = &t->s->index;
    uint64_t want = full ? index_flash_tag(ix, hv) : (uint64_t)index_tag(hv) << 53;
    uint64_t mask = full ? SLOT_TAG_BITS | ix->flash_xmask : SLOT_TAG_BITS;
    int n = 0;
    for (int c = 0; c < 2 && p->b[c]; c++)
        for (uint64_t *cur = p->b[c]; cur; cur = index_next(&t->s->index, cur))
            for (int j = 0; j < INDEX_SLOTS; j++) {
                uint64_t sl = slot_load(index_slot(cur, j));
                n += sl && slot_is_flash(sl) && (sl & mask) == want;
            }
    return n;
}

/* Key n set with its value (flags n); its key, and its CAS in *cas. */
static struct store_key set_one(struct tstore *t, int n, uint64_t *cas)
{
    char k[32], v[VLEN + 1];
    key_of(n, k);
    value_of(n, VLEN, v);
    assert_int_equal(tset(t, k, v, STORE_MODE_SET, (uint32_t)n, 0, cas), STORE_OK);
    return store_key_of(k, strlen(k));
}

/* Keys a and b of one flash tag, b's first bucket a's second: the second
 * bucket flips the first's bits by the tag (index_hash2), so b's second
 * is a's first and the two share their pair. Both on flash, the later
 * one's slot is the flash tag's one flash candidate there
 * (flash_tier_drop_tag): it reads back, and the earlier one's read is a
 * miss, never the other's value. */
static void test_one_tag_one_flash_candidate_in_a_pair(void **state)
{
    (void)state;
    struct tstore t;
    open_cold(&t, 0);
    assert_true(t.s->index.flash_xmask != 0); /* 64 KiB segments: 4 bits */
    int a = -1, b = -1;
    assert_true(tag_pair(&t, &a, &b, true));
    uint64_t cas_a, cas_b;
    struct store_key kb = set_one(&t, b, &cas_b);
    struct store_key ka = set_one(&t, a, &cas_a);
    struct index_pair pa, pb;
    index_lock_key(&t.s->index, ka.hv, &pa);
    index_unlock_pair(&pa);
    index_lock_key(&t.s->index, kb.hv, &pb);
    index_unlock_pair(&pb);
    assert_ptr_equal(pa.b[1], pb.b[0]);
    assert_ptr_equal(pa.b[0], pb.b[1]);
    assert_int_equal(passes(&t), 2);
    index_lock_key(&t.s->index, ka.hv, &pa);
    assert_int_equal(tag_flash_slots(&t, &pa, ka.hv, true), 1);
    index_unlock_pair(&pa);
    int woke = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    assert_non_null(w);
    bool got_a = read_or_miss(&t, w, &woke, a, VLEN, cas_a);
    bool got_b = read_or_miss(&t, w, &woke, b, VLEN, cas_b);
    assert_true(got_a != got_b);
    store_flash_wait_destroy(w);
    tstore_close(&t);
}

/* Keys a and b of one tag and pair as above, but whose further tag bits
 * differ (index_flash_tag): both on flash, neither drops the other, and
 * each reads back its own. Once b's copy is gone (deleted), a probe of b
 * finds a's slot under its tag but not its flash tag: no read at all. */
static void test_further_tag_bits_keep_both_in_a_pair(void **state)
{
    (void)state;
    struct tstore t;
    open_cold(&t, 0);
    int a = -1, b = -1;
    assert_true(tag_pair(&t, &a, &b, false));
    uint64_t cas_a, cas_b;
    struct store_key kb = set_one(&t, b, &cas_b);
    struct store_key ka = set_one(&t, a, &cas_a);
    assert_int_equal(ka.tag, kb.tag);
    assert_true(index_flash_tag(&t.s->index, ka.hv) != index_flash_tag(&t.s->index, kb.hv));
    assert_int_equal(passes(&t), 2);
    struct index_pair pa;
    index_lock_key(&t.s->index, ka.hv, &pa);
    assert_int_equal(tag_flash_slots(&t, &pa, ka.hv, false), 2);
    assert_int_equal(tag_flash_slots(&t, &pa, ka.hv, true), 1);
    index_unlock_pair(&pa);
    assert_int_equal(__atomic_load_n(&t.s->flash->c.tag_dropped, __ATOMIC_RELAXED), 0);
    int woke = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    assert_non_null(w);
    assert_true(read_or_miss(&t, w, &woke, a, VLEN, cas_a));
    assert_true(read_or_miss(&t, w, &woke, b, VLEN, cas_b));
    /* read once, both stay on flash; b's copy goes */
    char k[32];
    key_of(b, k);
    struct store_delete_req del = {0};
    store_delete(t.c, k, strlen(k), &del);
    index_lock_key(&t.s->index, ka.hv, &pa);
    assert_int_equal(tag_flash_slots(&t, &pa, ka.hv, false), 1);
    assert_int_equal(tag_flash_slots(&t, &pa, kb.hv, true), 0);
    index_unlock_pair(&pa);
    struct flash_dev_counters d0, d1;
    flash_dev_counters(&t.s->flash->dev, &d0);
    store_flash_attach(t.c, w);
    assert_int_equal(store_flash_probe(t.c, w, &kb), STORE_PROBE_READY);
    assert_int_equal(store_flash_pending(w), 0);
    store_flash_wait_reset(w);
    store_flash_attach(t.c, NULL);
    flash_dev_counters(&t.s->flash->dev, &d1);
    assert_int_equal(d1.ring_reads + d1.pool_reads, d0.ring_reads + d0.pool_reads);
    /* a is still there */
    assert_true(read_or_miss(&t, w, &woke, a, VLEN, cas_a));
    store_flash_wait_destroy(w);
    tstore_close(&t);
}

#ifdef NODELAY_DEBUG
/* ext_item_age 2: nothing goes while the items are younger; 3 s later the
 * idle ones go, and the one read twice meanwhile (its access time bumped,
 * as memcached's second fetch makes an item ACTIVE) stays in RAM; read
 * back once, the others stay on flash. */
static void test_idle_past_age_goes_read_stays(void **state)
{
    (void)state;
    static uint64_t cas[N + NSMALL];
    struct tstore t;
    open_cold(&t, 2);
    put_all(&t, N, NSMALL, cas);
    clock_debug_advance(1);
    assert_int_equal(passes(&t), 0);
    clock_debug_advance(2);
    char k[32], got[VLEN + 16];
    key_of(7, k);
    assert_int_equal(tget(&t, k, got, sizeof got, NULL), STORE_OK); /* fetched */
    assert_int_equal(tget(&t, k, got, sizeof got, NULL), STORE_OK); /* its time bumped */
    assert_int_equal(passes(&t), N - 1);
    assert_true(in_ram(&t, 7));
    assert_false(in_ram(&t, 8));
    int woke = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    for (int i = 0; i < N; i++)
        read_back(&t, w, &woke, i, VLEN, cas[i]);
    store_flash_wait_destroy(w);
    /* read once from flash, they stay there (memcached recaches only an
     * item read before since it went: store_flash.c); 7, idle in RAM
     * since, goes now */
    clock_debug_advance(3);
    assert_int_equal(passes(&t), 1);
    tstore_close(&t);
}
#endif

#ifdef NODELAY_DEBUG
/* A copy of a flash item lent to a request (a touch) goes back to flash
 * when the request is done: a flash slot made, as the idle flush makes
 * one, so the other flash slots under its tag in its key's two buckets
 * go (one candidate a tag in a pair), though the lookup that finds the
 * copy in its first bucket locks that one alone. Key a idle on flash;
 * touched (lent) and read again (its time bumped, so it stays in RAM);
 * meanwhile b, of a's tag and pair, goes to flash in a's second bucket;
 * a going back leaves one flash slot under the tag in the pair. */
static void test_lent_copy_back_one_candidate_in_a_pair(void **state)
{
    (void)state;
    const uint32_t age = 100;
    struct tstore t;
    open_cold(&t, age);
    int a = -1, b = -1;
    assert_true(tag_pair(&t, &a, &b, true));
    char k[32], v[VLEN + 1], got[VLEN + 16];
    key_of(a, k);
    value_of(a, VLEN, v);
    struct store_key ka = store_key_of(k, strlen(k));
    assert_int_equal(tset(&t, k, v, STORE_MODE_SET, (uint32_t)a, 0, NULL), STORE_OK);
    clock_debug_advance(age / 2);
    key_of(b, k);
    value_of(b, VLEN, v);
    assert_int_equal(tset(&t, k, v, STORE_MODE_SET, (uint32_t)b, 0, NULL), STORE_OK);
    assert_true(in_first_bucket(&t, a, false));
    assert_true(in_first_bucket(&t, b, false)); /* a's second */
    clock_debug_advance(age / 2 + 1);
    assert_int_equal(passes(&t), 1); /* a, idle; b not yet */
    assert_true(in_ram(&t, b));
    int woke = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    assert_non_null(w);
    key_of(a, k);
    store_flash_attach(t.c, w);
    if (store_flash_probe(t.c, w, &ka) == STORE_PROBE_WAIT) { /* else in a write buffer */
        for (int n = 0; n < 1000 && !woke; n++) {
            struct pollfd p = {.fd = store_flash_fd(t.c), .events = POLLIN};
            poll(&p, 1, 10);
            store_flash_drain(t.c);
        }
        assert_int_equal(woke, 1);
    }
    struct store_get_req touch = {.touch = true, .exptime = 0};
    struct store_item it;
    assert_int_equal(store_get(t.c, k, strlen(k), &touch, &it), STORE_OK); /* lent */
    assert_int_equal(tget(&t, k, got, sizeof got, NULL), STORE_OK);       /* its time bumped */
    assert_true(in_first_bucket(&t, a, false));
    clock_debug_advance(age / 2);
    assert_int_equal(passes(&t), 1); /* b, idle now; the lent copy not */
    store_flash_wait_reset(w); /* a's copy goes back */
    store_flash_attach(t.c, NULL);
    assert_false(in_ram(&t, a));
    struct index_pair pa;
    index_lock_key(&t.s->index, ka.hv, &pa);
    int n = tag_flash_slots(&t, &pa, ka.hv, true);
    index_unlock_pair(&pa);
    assert_int_equal(n, 1);
    store_flash_wait_destroy(w);
    tstore_close(&t);
}
#endif

static uint64_t hk_count(uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* ext_max_sleep at 1 ms paces the idle flush alone: over two seconds the
 * housekeeper's whole pass (the heartbeat, segment reclaim, expiry crawl)
 * still runs about once a second, the idle flush alone many times between.
 * Counts, not speeds: a slow machine runs fewer short passes, never more
 * whole ones. */
static void test_max_sleep_paces_the_idle_flush_only(void **state)
{
    (void)state;
    struct tstore t;
    open_cold_paced(&t, 0, 1000, true);
    assert_true(t.s->hk.running);
    uint64_t whole0 = hk_count(&t.s->hk.whole_passes);
    uint64_t idle0 = hk_count(&t.s->hk.idle_passes);
    usleep(2100000);
    uint64_t whole = hk_count(&t.s->hk.whole_passes) - whole0;
    uint64_t idle = hk_count(&t.s->hk.idle_passes) - idle0;
    tstore_close(&t);
    assert_in_range(whole, 1, 3);
    assert_true(idle >= 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_default_age_never_idle_zero_age_all, flash_file_setup, flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_one_tag_one_flash_candidate_in_a_pair, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_further_tag_bits_keep_both_in_a_pair, flash_file_setup,
                                        flash_file_teardown),
#ifdef NODELAY_DEBUG
        cmocka_unit_test_setup_teardown(test_lent_copy_back_one_candidate_in_a_pair,
                                        flash_file_setup, flash_file_teardown),
#endif
        cmocka_unit_test_setup_teardown(test_max_sleep_paces_the_idle_flush_only, flash_file_setup,
                                        flash_file_teardown),
#ifdef NODELAY_DEBUG
        cmocka_unit_test_setup_teardown(test_idle_past_age_goes_read_stays, flash_file_setup, flash_file_teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
