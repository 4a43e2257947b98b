/* SPDX-License-Identifier: BSD-3-Clause */
/* store_lookup's contract (store_lookup.h): the bucket is locked on return
 * whatever the answer; a find fills the item and, with STORE_LOOK_PIN, pins
 * its segment; an expired item is unlinked and counted; a segment being
 * compacted is waited out, never pinned. */
#include "test_store_helpers.h"

#include "store/store_core.h"
#include "store/store_lookup.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define MB (1u << 20)

static uint32_t refcount(struct seg *seg)
{
    return __atomic_load_n(&seg->refcount, __ATOMIC_ACQUIRE);
}

/* A store holding key = value (flags 7), and the segment the value is in. */
static struct seg *open_with(struct tstore *t, const char *key, const char *value)
{
    tstore_open(t, 8 * MB, MB, true, true);
    assert_int_equal(tset(t, key, value, STORE_MODE_SET, 7, REL_TIME_NEVER, NULL), STORE_OK);
    struct store_key k = store_key_of(key, strlen(key));
    struct store_found f;
    assert_true(store_lookup(t->c, &k, STORE_LOOK_FIND, &f));
    store_found_unlock(&f);
    return f.seg;
}

static void test_find_and_miss(void **state)
{
    (void)state;
    struct tstore t;
    struct seg *seg = open_with(&t, "here", "value");
    struct store_key k = store_key_of("here", 4);
    struct store_found f;
    assert_true(store_lookup(t.c, &k, STORE_LOOK_FIND, &f));
    assert_int_equal(f.h.nkey, 4);
    assert_memory_equal(f.p + f.h.hlen, "here", 4);
    assert_memory_equal(f.p + f.h.hlen + f.h.nkey, "value", 5);
    assert_int_equal(item_get_u32(f.p, f.h.flags_off), 7);
    assert_ptr_equal(f.seg, seg_of(&t.s->pool, slot_seg(slot_load(f.slot))));
    assert_ptr_equal(f.seg, seg);
    /* the bucket is held: another lookup of it could not take it now */
    assert_true(__atomic_load_n(f.keys.b[0], __ATOMIC_RELAXED) & INDEX_LOCK);
    store_found_unlock(&f);

    struct store_key m = store_key_of("absent", 6);
    assert_false(store_lookup(t.c, &m, STORE_LOOK_PIN, &f));
    /* locked on a miss too */
    assert_true(__atomic_load_n(f.keys.b[0], __ATOMIC_RELAXED) & INDEX_LOCK);
    store_found_unlock(&f);
    tstore_close(&t);
}

static void test_pin_is_taken_and_given_back(void **state)
{
    (void)state;
    struct tstore t;
    struct seg *seg = open_with(&t, "k", "v");
    uint32_t before = refcount(seg);
    struct store_key k = store_key_of("k", 1);
    struct store_found f;

    assert_true(store_lookup(t.c, &k, STORE_LOOK_PIN, &f));
    assert_ptr_equal(f.seg, seg);
    assert_int_equal(refcount(seg), before + 1);
    store_found_unlock(&f);
    seg_unpin(f.seg);
    assert_int_equal(refcount(seg), before);
    tstore_close(&t);
}

static void test_expired_item_is_unlinked_and_counted(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    /* a negative expiry: expired as soon as it is stored */
    assert_int_equal(tset(&t, "old", "v", STORE_MODE_SET, 0, clock_exptime(-1), NULL), STORE_OK);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 1);
    struct store_key k = store_key_of("old", 3);
    struct store_found f;
    assert_false(store_lookup(t.c, &k, STORE_LOOK_PIN, &f));
    store_found_unlock(&f);
    store_stats(t.s, &st);
    assert_int_equal(st.get_expired, 1);
    assert_int_equal(st.curr_items, 0); /* unlinked, not just hidden */
    assert_false(store_lookup(t.c, &k, STORE_LOOK_FIND, &f));
    store_found_unlock(&f);
    store_stats(t.s, &st);
    assert_int_equal(st.get_expired, 1); /* gone: not counted again */
    tstore_close(&t);
}

struct unfreeze {
    struct seg *seg;
    uint8_t state;
};

#define FREEZE_MS 60

static void *unfreeze_later(void *arg)
{
    struct unfreeze *u = arg;
    struct timespec ts = {0, FREEZE_MS * 1000000L};
    nanosleep(&ts, NULL);
    __atomic_store_n(&u->seg->state, u->state, __ATOMIC_SEQ_CST);
    return NULL;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* While eviction compacts a segment its items move: a pinned lookup must
 * not pin it but wait until the compaction is over, then find the item
 * again (here it did not move) and pin it. An unpinned lookup does not
 * wait: it reads under the bucket lock, which a compaction also takes. */
static void test_pin_waits_out_a_compaction(void **state)
{
    (void)state;
    struct tstore t;
    struct seg *seg = open_with(&t, "k", "v");
    uint32_t before = refcount(seg);
    struct store_key k = store_key_of("k", 1);
    struct store_found f;

    struct unfreeze u = {seg, __atomic_load_n(&seg->state, __ATOMIC_ACQUIRE)};
    __atomic_store_n(&seg->state, (uint8_t)SEG_COMPACTING, __ATOMIC_SEQ_CST);
    /* nothing will end this compaction: a lookup that waited would hang */
    assert_true(store_lookup(t.c, &k, STORE_LOOK_FIND, &f));
    store_found_unlock(&f);
    assert_int_equal(__atomic_load_n(&seg->state, __ATOMIC_ACQUIRE), SEG_COMPACTING);
    assert_int_equal(refcount(seg), before);

    pthread_t th;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(pthread_create(&th, NULL, unfreeze_later, &u), 0);
    assert_true(store_lookup(t.c, &k, STORE_LOOK_PIN, &f));
    double waited = ms_since(&t0);
    store_found_unlock(&f);
    pthread_join(th, NULL);
    assert_true(waited >= FREEZE_MS * 0.9);
    assert_ptr_equal(f.seg, seg);
    assert_int_equal(refcount(seg), before + 1); /* the failed tries left no pin behind */
    seg_unpin(f.seg);
    tstore_close(&t);
}

struct copied {
    int calls;
    char value[16];
    uint32_t nvalue, flags;
    uint32_t refs; /* the segment's pin count during the call */
    struct seg *seg;
};

static void copy_out(void *arg, const struct store_item *it)
{
    struct copied *c = arg;
    c->calls++;
    c->nvalue = it->nvalue;
    c->flags = it->flags;
    memcpy(c->value, it->value, it->nvalue < sizeof c->value ? it->nvalue : sizeof c->value);
    c->refs = refcount(c->seg);
}

/* store_get_req.copy: a value up to copy_max is handed over under the
 * bucket lock with no pin taken (not even while a compaction runs, which
 * a pin would wait out); a longer one is pinned as without it. */
static void test_get_copies_short_values_unpinned(void **state)
{
    (void)state;
    struct tstore t;
    struct seg *seg = open_with(&t, "short", "value");
    assert_int_equal(tset(&t, "long", "a value longer than eight", STORE_MODE_SET, 3,
                          REL_TIME_NEVER, NULL), STORE_OK);
    uint32_t before = refcount(seg);
    struct copied c = {.seg = seg};
    struct store_get_req req = {.want_value = true, .copy = copy_out, .copy_arg = &c,
                                .copy_max = 8};
    struct store_item it;

    assert_int_equal(store_get(t.c, "short", 5, &req, &it), STORE_OK);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.nvalue, 5);
    assert_memory_equal(c.value, "value", 5);
    assert_int_equal(c.flags, 7);
    assert_int_equal(c.refs, before);
    assert_null(it.pin);
    assert_null(it.value);
    assert_int_equal(it.nvalue, 5);
    assert_int_equal(refcount(seg), before);

    assert_int_equal(store_get(t.c, "long", 4, &req, &it), STORE_OK);
    assert_int_equal(c.calls, 1); /* not called */
    assert_non_null(it.pin);
    assert_memory_equal(it.value, "a value longer than eight", 25);
    struct seg *lseg = (struct seg *)it.pin;
    uint32_t pinned = refcount(lseg);
    store_pin_release(it.pin);
    assert_int_equal(refcount(lseg), pinned - 1);

    uint8_t st = __atomic_load_n(&seg->state, __ATOMIC_ACQUIRE);
    __atomic_store_n(&seg->state, (uint8_t)SEG_COMPACTING, __ATOMIC_SEQ_CST);
    assert_int_equal(store_get(t.c, "short", 5, &req, &it), STORE_OK); /* no wait */
    assert_int_equal(c.calls, 2);
    assert_int_equal(refcount(seg), before);
    __atomic_store_n(&seg->state, st, __ATOMIC_SEQ_CST);

    assert_int_equal(store_get(t.c, "absent", 6, &req, &it), STORE_MISS);
    assert_int_equal(c.calls, 2);
    tstore_close(&t);
}

static void wait_ahead_done(struct index *ix, const void *want)
{
    for (int ms = 0; ms < 5000 && hugemem_ahead_done(&ix->next) != want; ms++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_ptr_equal(hugemem_ahead_done(&ix->next), want);
}

/* Once the table grows past 1 MiB of buckets it goes on huge pages, off
 * the request path (the first touch of a huge page may compact memory):
 * the pages it wrote are collapsed into a huge one, then each next huge
 * page is faulted in before the splits reach it, and counted in
 * hash_bytes once it is. Keys stay found across the splits. */
static void test_next_table_made_ahead(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 64 * MB, MB, true, true);
    struct index *ix = &t.s->index;
    /* 2^14 buckets (1 MiB) at memcached's default level */
    uint64_t buckets = (uint64_t)1 << index_bucket_bits(ix);
    assert_int_equal(buckets, 1u << 14);
    const char *b = (const char *)ix->cur->b;
    char key[32];
    uint64_t n = 0;
    for (; index_shape_buckets(ix->shape) == buckets; n++) {
        assert_ptr_equal(hugemem_ahead_done(&ix->next), NULL);
        snprintf(key, sizeof key, "k%llu", (unsigned long long)n);
        assert_int_equal(tset(&t, key, "v", STORE_MODE_SET, 0, REL_TIME_NEVER, NULL), STORE_OK);
    }
    /* the first split: the first huge page, written on small pages */
    wait_ahead_done(ix, b + HUGEMEM_PAGE);
    for (; index_shape_buckets(ix->shape) * 64 + INDEX_AHEAD_LEAD <= HUGEMEM_PAGE; n++) {
        snprintf(key, sizeof key, "k%llu", (unsigned long long)n);
        assert_int_equal(tset(&t, key, "v", STORE_MODE_SET, 0, REL_TIME_NEVER, NULL), STORE_OK);
    }
    /* the split that brought the table within the lead of the page's end
     * has asked for the next page, which its thread may have made already;
     * none beyond it was asked for */
    const char *done = hugemem_ahead_done(&ix->next);
    assert_true(done == b + HUGEMEM_PAGE || done == b + 2 * HUGEMEM_PAGE);
    snprintf(key, sizeof key, "k%llu", (unsigned long long)n++);
    assert_int_equal(tset(&t, key, "v", STORE_MODE_SET, 0, REL_TIME_NEVER, NULL), STORE_OK);
    /* within INDEX_AHEAD_LEAD of its end: the next one */
    wait_ahead_done(ix, b + 2 * HUGEMEM_PAGE);
    assert_true(index_bytes(ix) >= 2 * HUGEMEM_PAGE);
    /* the table holds six items a bucket, never half that */
    assert_true(n > index_shape_buckets(ix->shape) * (INDEX_GROW_LOAD - 1));
    char buf[8];
    for (uint64_t i = 0; i < n; i += 97) {
        snprintf(key, sizeof key, "k%llu", (unsigned long long)i);
        assert_int_equal(tget(&t, key, buf, sizeof buf, NULL), STORE_OK);
        assert_string_equal(buf, "v");
    }
    tstore_close(&t);
}

/* index_match: the slots whose tag is the one asked, in order, whatever
 * else the words hold: the lock bit, a link (tag 0) in the last slot. */
static void test_index_match(void **state)
{
    (void)state;
    _Alignas(64) uint64_t b[INDEX_WORDS];
    for (uint32_t tag = 1; tag < 2048; tag += 97) {
        uint32_t other = tag == 2047 ? 1 : tag + 1;
        b[0] = slot_make(tag, 3, 5) | INDEX_LOCK;      /* locked */
        b[1] = 0;                                      /* empty */
        b[2] = slot_make(other, SLOT_MAX_SEGS - 1, SLOT_MAX_OFF - 1) | SLOT_FREQ;
        b[3] = slot_make(tag, SLOT_MAX_SEGS - 1, SLOT_MAX_OFF - 1) | SLOT_FREQ;
        b[4] = slot_make(other ^ 1024, 0, 0);
        b[5] = slot_make(tag, 0, 0);
        b[6] = slot_make(tag ^ 1, 1, 1);
        b[7] = slot_make(tag, 1, 1);
        unsigned m = index_match(b, tag), want = 0;
        for (int i = 0; i < INDEX_SLOTS; i++)
            if (slot_load(index_slot(b, i)) && slot_tag(b[i]) == tag)
                want |= 3u << (2 * i);
        assert_int_equal(m, want);
        int seen[INDEX_SLOTS], n = 0;
        for (; m; m &= m - 1, m &= m - 1)
            seen[n++] = __builtin_ctz(m) >> 1;
        assert_int_equal(n, 4);
        assert_int_equal(seen[0], 0);
        assert_int_equal(seen[1], 3);
        assert_int_equal(seen[2], 5);
        assert_int_equal(seen[3], 7);
        /* a link in the last slot, and the lock alone: no entry */
        memset(b, 0, sizeof b);
        b[0] = INDEX_LOCK;
        b[7] = slot_link(0xFFFFFFFFu);
        assert_int_equal(slot_load(index_slot(b, 7)), 0);
        assert_int_equal(slot_load(index_slot(b, 0)), 0);
        assert_int_equal(index_match(b, tag), 0);
    }
}

/* item_decode's table against the layout rules, for every layout and
 * value lengths of each varint width: offsets in order, each field as wide
 * as its bit says, the header as long as item_hdr_len. */
/* Key k's header length and CAS as stored (bucket unlocked again). */
static uint32_t stored_hlen(struct tstore *t, const char *key, uint64_t *cas)
{
    struct store_key k = store_key_of(key, strlen(key));
    struct store_found f;
    assert_true(store_lookup(t->c, &k, STORE_LOOK_FIND, &f));
    *cas = item_get_cas(f.p, &f.h, f.seg->cas_base);
    store_found_unlock(&f);
    return f.h.hlen;
}

/* A CAS within 65,535 of its segment's base takes 2 bytes: a 1-byte key
 * and value then cost 7 bytes of header (layout, nkey, nvalue, 2 bytes of
 * access time, CAS delta), not 9. Further from the base it takes 4 (with the same
 * value), and a commit whose CAS outgrew the 2 bytes its reservation made
 * room for is moved, never truncated. */
static void test_cas_takes_the_narrowest_delta(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    uint64_t cas, stored;
    assert_int_equal(tset(&t, "a", "1", STORE_MODE_SET, 0, REL_TIME_NEVER, &cas), STORE_OK);
    assert_int_equal(stored_hlen(&t, "a", &stored), 7);
    assert_true(stored == cas);

    __atomic_add_fetch(&t.s->cas_next, 70000, __ATOMIC_RELAXED); /* others' writes */
    assert_int_equal(tset(&t, "b", "1", STORE_MODE_SET, 0, REL_TIME_NEVER, &cas), STORE_OK);
    assert_int_equal(stored_hlen(&t, "b", &stored), 9);
    assert_true(stored == cas);
    tstore_close(&t);

    tstore_open(&t, 8 * MB, MB, true, true);
    struct store_reservation res;
    assert_int_equal(store_reserve(t.c, "c", 1, 1, &res), STORE_OK);
    res.value[0] = 'x';
    __atomic_add_fetch(&t.s->cas_next, 70000, __ATOMIC_RELAXED);
    struct store_set_req r = {.mode = STORE_MODE_SET};
    assert_int_equal(store_commit(t.c, &res, &r, &cas, NULL), STORE_OK);
    assert_int_equal(stored_hlen(&t, "c", &stored), 9);
    assert_true(stored == cas);
    char buf[8];
    assert_int_equal(tget(&t, "c", buf, sizeof buf, NULL), STORE_OK);
    assert_string_equal(buf, "x");
    tstore_close(&t);
}

/* Layouts combine field by field; the CAS field takes the wider width. */
static void test_layout_merge_takes_the_wider_cas(void **state)
{
    (void)state;
    assert_int_equal(item_layout_merge(ITEM_L_CAS32, ITEM_L_CAS16), ITEM_L_CAS32);
    assert_int_equal(item_layout_merge(ITEM_L_CAS16, ITEM_L_CAS32), ITEM_L_CAS32);
    assert_int_equal(item_layout_merge(ITEM_L_CAS16, ITEM_L_CAS64), ITEM_L_CAS64);
    assert_int_equal(item_layout_merge(ITEM_L_CAS64 | ITEM_L_FLAGS, ITEM_L_CAS16 | ITEM_L_EXP),
                     ITEM_L_CAS64 | ITEM_L_FLAGS | ITEM_L_EXP);
    assert_int_equal(item_layout_merge(ITEM_L_FLAGS | ITEM_L_CAS16, ITEM_L_EXP),
                     ITEM_L_FLAGS | ITEM_L_EXP | ITEM_L_CAS16);
    assert_int_equal(item_cas_layout(100, 100 + 65535), ITEM_L_CAS64);
    assert_int_equal(item_cas_layout(100 + 65535, 100), ITEM_L_CAS16);
    assert_int_equal(item_cas_layout(100 + 65536, 100), ITEM_L_CAS32);
    assert_int_equal(item_cas_layout(100ull + UINT32_MAX + 1, 100), ITEM_L_CAS64);
}

static void test_item_decode_layouts(void **state)
{
    (void)state;
    static const uint32_t lens[] = {0, 1, 127, 128, 16383, 16384, (1u << 21) - 1, 1u << 21,
                                    (1u << 28) + 5};
    _Alignas(8) char p[64];
    for (unsigned x = 0; x < 64; x++) {
        unsigned l = x & 31;
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            /* no field at all: the full time, so the layout byte is not 0 */
            uint8_t layout = (uint8_t)(l | (x & 32 || !l ? ITEM_L_AT32 : 0));
            uint32_t hlen = item_init(p, (uint8_t)(l | (x & 32 ? ITEM_L_AT32 : 0)), "kk", 2, lens[k]);
            /* the state bits change nothing */
            p[0] = (char)(p[0] | ITEM_L_COMMIT);
            struct item_hdr h;
            item_decode(p, &h);
            assert_int_equal(h.layout, layout);
            assert_int_equal(h.nkey, 2);
            assert_int_equal(h.nvalue, lens[k]);
            assert_int_equal(h.hlen, hlen);
            assert_int_equal(h.hlen, item_hdr_len(layout, lens[k]));
            uint32_t at = h.atime_off + (layout & ITEM_L_AT32 ? 4 : 2);
            assert_int_equal(h.flags_off, (l & ITEM_L_FLAGS) ? at : 0);
            at += (l & ITEM_L_FLAGS) ? 4 : 0;
            assert_int_equal(h.exp_off, (l & ITEM_L_EXP) ? at : 0);
            at += (l & ITEM_L_EXP) ? 4 : 0;
            /* the two CAS bits: none, a 4-byte delta, 8 bytes, a 2-byte delta */
            static const uint32_t cas_width[4] = {0, 4, 8, 2};
            assert_int_equal(h.cas_off, (l & (ITEM_L_CAS32 | ITEM_L_CAS64)) ? at : 0);
            at += cas_width[(l >> 2) & 3];
            assert_int_equal(h.sum_off, (l & ITEM_L_SUM) ? at : 0);
            at += (l & ITEM_L_SUM) ? 4 : 0;
            assert_int_equal(h.hlen, at);
            assert_memory_equal(p + h.hlen, "kk", 2);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_and_miss),
        cmocka_unit_test(test_index_match),
        cmocka_unit_test(test_item_decode_layouts),
        cmocka_unit_test(test_cas_takes_the_narrowest_delta),
        cmocka_unit_test(test_layout_merge_takes_the_wider_cas),
        cmocka_unit_test(test_pin_is_taken_and_given_back),
        cmocka_unit_test(test_expired_item_is_unlinked_and_counted),
        cmocka_unit_test(test_pin_waits_out_a_compaction),
        cmocka_unit_test(test_get_copies_short_values_unpinned),
        cmocka_unit_test(test_next_table_made_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
