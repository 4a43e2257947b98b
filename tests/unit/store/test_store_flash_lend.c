/* SPDX-License-Identifier: BSD-3-Clause */
/* Flash items lent to a request as RAM copies (touches, marks, writes
 * whose CAS differs) and given back when it is done (pend_give_back,
 * pend_touched_back), while another thread writes the same keys, eviction
 * moves RAM items to flash and the compactor rewrites segments: no read
 * ever sees a value older than a write acknowledged before it began, and
 * at the end every key reads as its last write or misses. Run under TSan
 * too: the give-back takes a second bucket lock and the tier's lock. */
#define _GNU_SOURCE
#include "test_store_flash_helpers.h"
#include "store/store_lookup.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define KEYS 12000
#define ROUNDS 4000

/* The last version of each key a write returned for (0: the fill's). */
static unsigned done_ver[KEYS];
static unsigned next_ver[KEYS];
static bool stop;

/* Key i's value at version ver: VLEN bytes that say both. */
static void value_at(int i, unsigned ver, char *v)
{
    if (!ver) {
        value_of(i, v);
        return;
    }
    int n = snprintf(v, VLEN + 1, "v%u:%d:", ver, i);
    memset(v + n, 'x', (size_t)(VLEN - n));
    v[VLEN] = 0;
}

/* The version a value says; -1 when it is no value of key i's. */
static long version_of(int i, const char *v, size_t n)
{
    char want[VLEN + 1];
    if (n != VLEN)
        return -1;
    value_of(i, want);
    if (memcmp(v, want, VLEN) == 0)
        return 0;
    unsigned ver;
    int key, used = 0;
    if (sscanf(v, "v%u:%d:%n", &ver, &key, &used) != 2 || key != i || !used)
        return -1;
    value_at(i, ver, want);
    return memcmp(v, want, VLEN) == 0 ? (long)ver : -1;
}

struct writer {
    struct store *s;
    unsigned seed;
};

/* Another session: new versions of random keys, each a new item. */
static void *writer_main(void *arg)
{
    struct writer *wr = arg;
    struct store_ctx *c = store_ctx_create(wr->s);
    char k[32], v[VLEN + 1];
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        int i = (int)(rand_r(&wr->seed) % KEYS);
        key_of(i, k);
        unsigned ver = __atomic_add_fetch(&next_ver[i], 1, __ATOMIC_ACQ_REL);
        value_at(i, ver, v);
        struct store_set_req r = {.mode = STORE_MODE_SET, .flags = (uint32_t)i};
        if (store_store(c, k, strlen(k), v, VLEN, &r, NULL) == STORE_OK) {
            /* versions of one key may finish out of order: the highest */
            unsigned was = __atomic_load_n(&done_ver[i], __ATOMIC_ACQUIRE);
            while (was < ver && !__atomic_compare_exchange_n(&done_ver[i], &was, ver, false,
                                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                ;
        }
        usleep(50);
    }
    store_ctx_destroy(&c);
    return NULL;
}

/* The compactor, as its thread runs it when idle, but without a pause. */
static void *compact_main(void *arg)
{
    struct store *s = arg;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        flash_tier_maintain(s->flash);
        usleep(1000);
    }
    return NULL;
}

/* Key i's value now, its version (or -2 on a miss); asserts it is one
 * of the key's. */
static long read_version(struct tstore *t, int i)
{
    char k[32], got[VLEN + 16];
    key_of(i, k);
    struct store_item it;
    if (tget(t, k, got, sizeof got, &it) != STORE_OK)
        return -2;
    long v = version_of(i, got, it.nvalue);
    assert_true(v >= 0);
    assert_int_equal(it.flags, (uint32_t)i);
    return v;
}

static void test_lent_copies_under_writes_and_compaction(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 16 * MB, 4);
    fill(&t, KEYS, NULL);
    int woke = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    assert_non_null(w);
    pthread_t wt, ct;
    struct writer wr = {.s = t.s, .seed = 7};
    assert_int_equal(pthread_create(&wt, NULL, writer_main, &wr), 0);
    assert_int_equal(pthread_create(&ct, NULL, compact_main, t.s), 0);
    unsigned seed = 11;
    char k[32];
    long reads = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int i = (int)(rand_r(&seed) % KEYS);
        key_of(i, k);
        unsigned floor = __atomic_load_n(&done_ver[i], __ATOMIC_ACQUIRE);
        probe(&t, w, &woke, i);
        switch (r % 4) {
        case 0: { /* touch: lent, then written to flash anew */
            struct store_get_req g = {.touch = true, .exptime = 0};
            struct store_item it;
            if (store_get(t.c, k, strlen(k), &g, &it) == STORE_OK)
                store_pin_release(it.pin);
            break;
        }
        case 1: { /* md I: marked, a new CAS */
            struct store_delete_req d = {.invalidate = true};
            store_delete(t.c, k, strlen(k), &d);
            break;
        }
        case 2: { /* a cas that differs: lent, then given back as it was */
            struct store_set_req s = {.mode = STORE_MODE_CAS, .cas_compare = 1, .flags = 1};
            store_store(t.c, k, strlen(k), "x", 1, &s, NULL);
            break;
        }
        default:
            break;
        }
        /* the same request reads it: never older than what was done */
        long v = read_version(&t, i);
        if (v >= 0) {
            reads++;
            assert_true((unsigned long)v >= floor);
        }
        store_flash_wait_reset(w);
    }
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    pthread_join(wt, NULL);
    pthread_join(ct, NULL);
    /* every key: its last write, or a miss */
    int hits = 0;
    for (int i = 0; i < KEYS; i++) {
        probe(&t, w, &woke, i);
        long v = read_version(&t, i);
        store_flash_wait_reset(w);
        if (v < 0)
            continue;
        hits++;
        assert_int_equal((unsigned long)v, done_ver[i]);
    }
    assert_true(woke > ROUNDS / 2); /* most were read from flash */
    assert_true(reads > ROUNDS / 2);
    assert_true(hits > KEYS / 2);
    store_flash_attach(t.c, NULL);
    store_flash_wait_destroy(w);
    tstore_close(&t);
}

/* The record of the segment key i's flash slot names, or -1. */
static int32_t seg_of_key(struct tstore *t, int i)
{
    char k[32];
    key_of(i, k);
    struct store_key key = store_key_of(k, strlen(k));
    struct index_pair p;
    index_lock_key(&t->s->index, key.hv, &p);
    uint64_t fs = 0;
    for (int c = 0; c < 2 && p.b[c]; c++)
        for (uint64_t *cur = p.b[c]; cur; cur = index_next(&t->s->index, cur))
            for (int j = 0; j < INDEX_SLOTS; j++) {
                uint64_t sl = slot_load(index_slot(cur, j));
                if (sl && slot_is_flash(sl) && slot_tag(sl) == key.tag)
                    fs = sl;
            }
    index_unlock_pair(&p);
    struct flash_tier *ft = t->s->flash;
    pthread_mutex_lock(&ft->lock);
    uint32_t v = flash_slot_vid(fs);
    int32_t n = fs && v < ft->nvids && ft->vmap[v] ? (int32_t)ft->vmap[v] - 1 : -1;
    pthread_mutex_unlock(&ft->lock);
    return n;
}

/* A lent copy that changed nothing (a cas that differs) gives its flash
 * slot back only while its segment stays: not into the one compaction is
 * emptying, which may have passed the item by as dead (it was lent) and
 * frees the segment when done, the slot with it. It stays in RAM. */
static void test_no_give_back_into_the_compaction_victim(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 32 * MB, 1);
    fill(&t, KEYS, NULL);
    int woke = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    assert_non_null(w);
    struct flash_tier *ft = t.s->flash;
    int i = 0;
    int32_t n = -1;
    while (i < KEYS && (n = seg_of_key(&t, i)) < 0)
        i++;
    assert_true(n >= 0);
    char k[32], got[VLEN + 16];
    key_of(i, k);
    probe(&t, w, &woke, i);
    /* the compactor's turn at n begins (its lock held, no other pass) */
    pthread_mutex_lock(&ft->compact_lock);
    pthread_mutex_lock(&ft->lock);
    ft->gc_victim = n;
    pthread_mutex_unlock(&ft->lock);
    struct store_set_req s = {.mode = STORE_MODE_CAS, .cas_compare = 1};
    assert_int_equal(store_store(t.c, k, strlen(k), "x", 1, &s, NULL), STORE_EXISTS);
    store_flash_wait_reset(w);
    pthread_mutex_lock(&ft->lock);
    ft->gc_victim = -1;
    pthread_mutex_unlock(&ft->lock);
    pthread_mutex_unlock(&ft->compact_lock);
    /* in RAM: found with no read of flash, its value whole */
    store_flash_attach(t.c, NULL);
    assert_int_equal(read_version(&t, i), 0);
    assert_true(tget(&t, k, got, sizeof got, NULL) == STORE_OK);
    store_flash_wait_destroy(w);
    tstore_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_give_back_into_the_compaction_victim,
                                        flash_file_setup, flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_lent_copies_under_writes_and_compaction,
                                        flash_file_setup, flash_file_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
