/* SPDX-License-Identifier: BSD-3-Clause */
/* Many threads on one store at once: writers (set, append-free overwrites,
 * incr on counters), readers holding pins across other operations,
 * deleters and touchers, all through a cache small enough to evict all the
 * time. Every value names its key and version and is checked on every read,
 * while pinned and again before release. Run under TSan and ASan. */
#include "test_store_helpers.h"

#include "store/store_core.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MB (1u << 20)
#define NKEYS 20000
#define NPINS 2

/* cmocka's asserts longjmp to the test's thread: worker threads abort. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                           \
        }                                                                      \
    } while (0)

static struct store *g_store;
static int g_stop; /* read and written with __atomic */
static uint64_t g_reads_ok, g_reads_miss;

static uint32_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)*s;
}

/* value: "K<key> V<version> L<len> " then filler (key+version) up to len */
static size_t make_value(char *buf, size_t cap, unsigned key, unsigned ver, size_t len)
{
    int n = snprintf(buf, cap, "K%u V%u L%zu ", key, ver, len);
    if ((size_t)n > len)
        len = (size_t)n;
    for (size_t i = (size_t)n; i < len; i++)
        buf[i] = (char)('a' + (key + ver + i) % 26);
    return len;
}

static bool check_value(const char *v, size_t n, unsigned key)
{
    char head[64];
    size_t h = n < sizeof head - 1 ? n : sizeof head - 1;
    memcpy(head, v, h);
    head[h] = 0;
    unsigned k, ver;
    size_t len;
    int used = 0;
    if (sscanf(head, "K%u V%u L%zu %n", &k, &ver, &len, &used) != 3 || used == 0)
        return false;
    if (k != key || len != n)
        return false;
    for (size_t i = (size_t)used; i < n; i++)
        if (v[i] != (char)('a' + (key + ver + i) % 26))
            return false;
    return true;
}

static void key_name(char *buf, size_t cap, unsigned k)
{
    snprintf(buf, cap, "stress:%u", k);
}

static void *writer(void *arg)
{
    uint64_t seed = (uintptr_t)arg * 7919 + 1;
    struct store_ctx *c = store_ctx_create(g_store);
    char *buf = malloc(70000);
    char key[32];
    unsigned ver = 0;
    while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
        unsigned k = rnd(&seed) % NKEYS;
        key_name(key, sizeof key, k);
        size_t len = 20 + rnd(&seed) % ((rnd(&seed) % 16 == 0) ? 65000 : 2000);
        len = make_value(buf, 70000, k, ver++, len);
        struct store_set_req r = {.mode = STORE_MODE_SET, .flags = k,
                                  .exptime = (rnd(&seed) % 4 == 0) ? clock_now() + 1 : 0};
        if (rnd(&seed) % 2) {
            enum store_status st = store_store(c, key, strlen(key), buf, len, &r, NULL);
            if (st != STORE_OK) /* which failure, for the next reader of a rare one */
                fprintf(stderr, "store_store of %zu bytes: status %d\n", len, (int)st);
            CHECK((st) == STORE_OK);
        } else {
            struct store_reservation res;
            enum store_status rs = store_reserve(c, key, strlen(key), len, &res);
            if (rs != STORE_OK)
                fprintf(stderr, "store_reserve of %zu bytes: status %d\n", len, (int)rs);
            CHECK((rs) == STORE_OK);
            memcpy(res.value, buf, len);
            enum store_status st = store_commit(c, &res, &r, NULL, NULL);
            CHECK((st) == STORE_OK);
        }
    }
    free(buf);
    store_ctx_destroy(&c);
    return NULL;
}

struct held {
    struct store_item it;
    unsigned key;
};

static void *reader(void *arg)
{
    uint64_t seed = (uintptr_t)arg * 104729 + 3;
    struct store_ctx *c = store_ctx_create(g_store);
    struct held pins[NPINS];
    memset(pins, 0, sizeof pins);
    char key[32];
    uint64_t ok = 0, miss = 0;
    unsigned slot = 0;
    while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
        unsigned k = rnd(&seed) % NKEYS;
        key_name(key, sizeof key, k);
        struct store_get_req r = {.want_value = true};
        if (rnd(&seed) % 8 == 0) {
            r.touch = true;
            r.exptime = clock_now() + 2;
        }
        struct store_item it;
        enum store_status st = store_get(c, key, strlen(key), &r, &it);
        if (st == STORE_OK) {
            ok++;
            CHECK(it.flags == k);
            CHECK(check_value(it.value, it.nvalue, k));
            /* hold it a while: writes, deletes and evictions go on meanwhile */
            struct held *h = &pins[slot++ % NPINS];
            if (h->it.pin) {
                CHECK(check_value(h->it.value, h->it.nvalue, h->key));
                store_pin_release(h->it.pin);
            }
            h->it = it;
            h->key = k;
        } else {
            CHECK((st) == STORE_MISS);
            miss++;
        }
    }
    for (int i = 0; i < NPINS; i++)
        if (pins[i].it.pin) {
            CHECK(check_value(pins[i].it.value, pins[i].it.nvalue, pins[i].key));
            store_pin_release(pins[i].it.pin);
        }
    __atomic_fetch_add(&g_reads_ok, ok, __ATOMIC_RELAXED);
    __atomic_fetch_add(&g_reads_miss, miss, __ATOMIC_RELAXED);
    store_ctx_destroy(&c);
    return NULL;
}

static void *deleter(void *arg)
{
    uint64_t seed = (uintptr_t)arg * 31337 + 5;
    struct store_ctx *c = store_ctx_create(g_store);
    char key[32];
    while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
        unsigned k = rnd(&seed) % NKEYS;
        key_name(key, sizeof key, k);
        enum store_status st;
        switch (rnd(&seed) % 4) {
        case 0:
            st = store_delete(c, key, strlen(key), NULL);
            CHECK(st == STORE_OK || st == STORE_MISS);
            break;
        case 1: {
            struct store_delete_req d = {.invalidate = true};
            st = store_delete(c, key, strlen(key), &d);
            CHECK(st == STORE_OK || st == STORE_MISS);
            break;
        }
        case 2: {
            /* counters live under their own keys */
            char ck[32];
            snprintf(ck, sizeof ck, "ctr:%u", k % 16);
            struct store_arith_req a = {.incr = true, .delta = 1, .create = true};
            struct store_arith_res res;
            st = store_arith(c, ck, strlen(ck), &a, &res);
            CHECK(st == STORE_OK);
            break;
        }
        default:
            st = store_touch(c, key, strlen(key), clock_now() + 5);
            CHECK(st == STORE_OK || st == STORE_MISS);
        }
    }
    store_ctx_destroy(&c);
    return NULL;
}

static void *flusher(void *arg)
{
    (void)arg;
    /* housekeeping and stats while all that happens */
    while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
        struct store_stats st;
        store_stats(g_store, &st);
        store_housekeep(g_store);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void count_fn(const struct store_item *it, void *arg)
{
    (void)arg;
    /* it->key is not NUL-terminated (it sits in segment memory, maybe at a
     * mapping's end): scan a terminated copy. */
    char key[STORE_KEY_MAX + 1];
    memcpy(key, it->key, it->nkey);
    key[it->nkey] = '\0';
    unsigned k;
    if (sscanf(key, "stress:%u", &k) == 1)
        CHECK(check_value(it->value, it->nvalue, k));
}

static void test_stress(void **state)
{
    (void)state;
    clock_setup();
    /* A tiny initial index (8 slots) so it grows many times under load. */
    struct store_options o = {.mem_limit = 16 * MB, .item_size_max = MB, .evictions = true,
                              .cas_enabled = true, .hashpower = 3};
    assert_int_equal(store_create(&g_store, &o), 0);
    pthread_t th[7];
    void *(*fn[7])(void *) = {writer, writer, reader, reader, reader, deleter, flusher};
    for (int i = 0; i < 7; i++)
        pthread_create(&th[i], NULL, fn[i], (void *)(uintptr_t)(i + 1));
    /* Run for STORE_STRESS_SECONDS (default 3), longer if evictions have
     * not started yet (sanitizer builds are slow), at most 15 s. */
    const char *secs = getenv("STORE_STRESS_SECONDS");
    int want = (secs ? atoi(secs) : 3) * 10;
    for (int tick = 0; tick < 150; tick++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        struct store_stats now;
        store_stats(g_store, &now);
        if (tick >= want && now.evictions > 0)
            break;
    }
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 7; i++)
        pthread_join(th[i], NULL);
    struct store_stats st;
    store_stats(g_store, &st);
    printf("stress: %llu hits, %llu misses, %llu evictions, %llu reinserted, %llu items\n",
           (unsigned long long)g_reads_ok, (unsigned long long)g_reads_miss,
           (unsigned long long)st.evictions, (unsigned long long)st.items_reinserted,
           (unsigned long long)st.curr_items);
    assert_true(g_reads_ok > 0);
    assert_true(st.evictions > 0);
    assert_true(st.seg_used <= st.seg_total);
    /* every linked item is found by a walk of the index; expired ones are
     * still counted until reclaimed, so the walk sees at most curr_items */
    uint64_t cursor = 0, walked = 0;
    while (cursor != UINT64_MAX)
        walked += store_walk(g_store, &cursor, 1000, count_fn, NULL);
    assert_true(walked > 0 && walked <= st.curr_items);
    printf("stress: index grew to 2^%llu slots\n", (unsigned long long)st.hash_power_level);
    assert_true(st.hash_power_level > 10);
    store_destroy(&g_store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stress)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
