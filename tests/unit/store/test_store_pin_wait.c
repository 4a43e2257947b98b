/* SPDX-License-Identifier: BSD-3-Clause */
/* A write into a cache whose every other segment is pinned (docs/store.md
 * "Pins and zero copy"): pins of a read in progress go within moments, so
 * the write waits for them and is stored; pins reply queues keep wait for
 * clients that may never read, so the write is refused at once
 * (STORE_NO_MEMORY, memcached's SERVER_ERROR out of memory storing object),
 * and stored once they are released. */
#include "test_store_helpers.h"
#include "store/store_core.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MB (1u << 20)
#define NSEG 4
#define VLEN (600u * 1024) /* one value to a segment */

struct reader {
    struct store *s;
    struct store_ctx *writer;
    unsigned group; /* the writer's open segment's */
    struct store_item it[NSEG];
    int pinned;   /* atomic: every value read and pinned */
    int storing;  /* atomic: the writer's store has begun */
    int returned; /* atomic: the writer's store has returned */
    int released_waiting; /* the pins went while the writer was still in its store */
};

/* Inside seg_open the writer's open segment of group g is sealed and not
 * yet replaced: seen so with the pool lock free, the writer is waiting
 * for pins (a writer that gives up never lets go of that lock before it
 * has failed). */
static bool writer_waits(struct store_ctx *w, unsigned g)
{
    return !w->seg.at->open[g];
}

/* The group of the writer's one open segment. */
static unsigned open_group(struct store_ctx *w)
{
    unsigned group = STORE_GROUPS;
    for (unsigned g = 0; g < STORE_GROUPS; g++)
        if (w->seg.at->open[g])
            group = g;
    assert_true(group < STORE_GROUPS);
    return group;
}

/* Pins every value on a context of its own, as a worker in the middle of
 * a multiget would, and lets go of them only once the writer, inside its
 * store, waits for them. */
static void *pin_all(void *arg)
{
    struct reader *r = arg;
    struct store_ctx *c = store_ctx_create(r->s);
    struct store_get_req g = {.want_value = true};
    for (int i = 0; i < NSEG; i++) {
        char key[16];
        snprintf(key, sizeof key, "p%d", i);
        if (store_get(c, key, strlen(key), &g, &r->it[i]) != STORE_OK)
            abort();
    }
    __atomic_store_n(&r->pinned, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&r->storing, __ATOMIC_ACQUIRE))
        sched_yield();
    for (;;) {
        if (__atomic_load_n(&r->returned, __ATOMIC_ACQUIRE))
            break;
        if (pthread_mutex_trylock(&r->s->pool.lock) == 0) {
            bool inside = !__atomic_load_n(&r->returned, __ATOMIC_ACQUIRE) &&
                          writer_waits(r->writer, r->group);
            pthread_mutex_unlock(&r->s->pool.lock);
            if (inside) {
                r->released_waiting = 1;
                break;
            }
        }
        sched_yield();
    }
    for (int i = 0; i < NSEG; i++)
        store_pin_release(r->it[i].pin);
    store_ctx_destroy(&c);
    return NULL;
}

static void fill(struct tstore *t, const char *v)
{
    struct store_set_req r = {.mode = STORE_MODE_SET};
    for (int i = 0; i < NSEG; i++) {
        char key[16];
        snprintf(key, sizeof key, "p%d", i);
        assert_int_equal(store_store(t->c, key, strlen(key), v, VLEN, &r, NULL), STORE_OK);
    }
    struct store_stats st;
    store_stats(t->s, &st);
    assert_int_equal(st.seg_used, NSEG);
    assert_int_equal(st.seg_total, NSEG);
}

/* Every segment pinned by another thread's reads in progress, the writer's
 * own open one included: the write evicts victims, waits for the pins and
 * is stored (it used to be refused as soon as the last victim was found
 * pinned). */
static void test_write_waits_for_reads_in_progress(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, NSEG * MB, MB, true, true);
    char *v = malloc(VLEN);
    memset(v, 'w', VLEN);
    fill(&t, v);
    struct reader r = {.s = t.s, .writer = t.c, .group = open_group(t.c)};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, pin_all, &r), 0);
    while (!__atomic_load_n(&r.pinned, __ATOMIC_ACQUIRE))
        sched_yield();
    struct store_set_req req = {.mode = STORE_MODE_SET};
    __atomic_store_n(&r.storing, 1, __ATOMIC_RELEASE);
    enum store_status st = store_store(t.c, "new", 3, v, VLEN, &req, NULL);
    __atomic_store_n(&r.returned, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    assert_int_equal(st, STORE_OK);
    assert_true(r.released_waiting);
    char *buf = malloc(VLEN + 1);
    struct store_item it;
    assert_int_equal(tget(&t, "new", buf, VLEN + 1, &it), STORE_OK);
    assert_int_equal(it.nvalue, VLEN);
    free(buf);
    free(v);
    tstore_close(&t);
}

/* Every segment pinned by reply queues (clients that do not read): no room
 * can be made, the write is refused, and stored once they are released. */
static void test_write_refused_while_reply_queues_pin_all(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, NSEG * MB, MB, true, true);
    char *v = malloc(VLEN);
    memset(v, 'k', VLEN);
    fill(&t, v);
    struct store_get_req g = {.want_value = true};
    struct store_item it[NSEG];
    for (int i = 0; i < NSEG; i++) {
        char key[16];
        snprintf(key, sizeof key, "p%d", i);
        assert_int_equal(store_get(t.c, key, strlen(key), &g, &it[i]), STORE_OK);
        assert_true(store_pin_keep(it[i].pin, true)); /* values too large to copy */
    }
    struct store_set_req req = {.mode = STORE_MODE_SET};
    assert_int_equal(store_store(t.c, "new", 3, v, VLEN, &req, NULL), STORE_NO_MEMORY);
    for (int i = 0; i < NSEG; i++) {
        assert_memory_equal(it[i].value, v, VLEN);
        store_pin_release_kept(it[i].pin);
    }
    assert_int_equal(store_store(t.c, "new", 3, v, VLEN, &req, NULL), STORE_OK);
    free(v);
    tstore_close(&t);
}

/* One store, timed: its status, and its milliseconds in *ms. */
static enum store_status timed_store(struct store_ctx *c, const char *key, const char *v,
                                     size_t n, struct store_set_req *req, double *ms)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    enum store_status st = store_store(c, key, strlen(key), v, n, req, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    return st;
}

/* An append holds a read pin on its old value's segment while it reserves
 * room for the new one. When that segment is the victim and the only other
 * one is kept by a reply queue, no room can be made: the append is refused
 * at once. It used to wait the pin wait's whole bound (500 ms, the worker
 * stalled) for the one pin only it could drop. */
static void test_append_does_not_wait_for_its_own_pin(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 2 * MB, MB, true, true);
    char *v = malloc(VLEN);
    memset(v, 'a', VLEN);
    struct store_set_req set = {.mode = STORE_MODE_SET};
    assert_int_equal(store_store(t.c, "p0", 2, v, VLEN, &set, NULL), STORE_OK);
    assert_int_equal(store_store(t.c, "p1", 2, v, VLEN, &set, NULL), STORE_OK);
    struct store_get_req g = {.want_value = true};
    struct store_item it;
    assert_int_equal(store_get(t.c, "p1", 2, &g, &it), STORE_OK);
    assert_true(store_pin_keep(it.pin, true)); /* a reply queue keeps p1's segment */
    struct store_set_req app = {.mode = STORE_MODE_APPEND};
    double ms;
    enum store_status st = timed_store(t.c, "p0", "x", 1, &app, &ms);
    printf("append: status %d after %.1f ms\n", (int)st, ms);
    assert_int_equal(st, STORE_NO_MEMORY);
    assert_true(ms < 250); /* the wait's bound is 500 ms; no wait is about 0 */
    store_pin_release_kept(it.pin);
    free(v);
    tstore_close(&t);
}

/* A write under read pressure evicts about what it needs, never the cache:
 * a full cache of SPREAD_SEGS segments, another thread's reads in progress
 * pinning one value in every segment, and a write of one segment's worth.
 * Each victim found pinned only drains; the write waits for those pins
 * once the victims draining would give it its room, instead of evicting
 * every segment first (it used to: evictions were the whole cache). */
#define SPREAD_SEGS 24
#define SPREAD_VLEN (100u * 1024)
#define SPREAD_PER_SEG 10 /* values to a 1 MiB segment */

struct spread {
    struct store *s;
    struct store_ctx *writer;
    unsigned group; /* the writer's open segment's */
    struct store_item it[SPREAD_SEGS * SPREAD_PER_SEG];
    int npinned;
    int pinned;   /* atomic: one value of every segment read and pinned */
    int storing;  /* atomic: the writer has begun */
    int returned; /* atomic: the writer is done */
    int released_waiting; /* the pins went while the writer waited in seg_open */
};

static void *pin_spread(void *arg)
{
    struct spread *r = arg;
    struct store_ctx *c = store_ctx_create(r->s);
    struct store_get_req g = {.want_value = true};
    for (int i = 0; i < SPREAD_SEGS * SPREAD_PER_SEG - 1; i++) {
        char key[16];
        snprintf(key, sizeof key, "s%d", i);
        struct store_item it;
        if (store_get(c, key, strlen(key), &g, &it) != STORE_OK)
            continue; /* evicted by the fill's last writes */
        bool seen = false;
        for (int j = 0; j < r->npinned && !seen; j++)
            seen = r->it[j].pin == it.pin;
        if (seen)
            store_pin_release(it.pin);
        else
            r->it[r->npinned++] = it;
    }
    __atomic_store_n(&r->pinned, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&r->storing, __ATOMIC_ACQUIRE))
        sched_yield();
    while (!__atomic_load_n(&r->returned, __ATOMIC_ACQUIRE)) {
        if (pthread_mutex_trylock(&r->s->pool.lock) == 0) {
            bool waits = !__atomic_load_n(&r->returned, __ATOMIC_ACQUIRE) &&
                         writer_waits(r->writer, r->group);
            pthread_mutex_unlock(&r->s->pool.lock);
            if (waits) {
                r->released_waiting = 1;
                break;
            }
        }
        sched_yield();
    }
    for (int j = 0; j < r->npinned; j++)
        store_pin_release(r->it[j].pin);
    store_ctx_destroy(&c);
    return NULL;
}

static void test_write_under_reads_evicts_what_it_needs(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, SPREAD_SEGS * MB, MB, true, true);
    char *v = malloc(SPREAD_VLEN);
    memset(v, 's', SPREAD_VLEN);
    struct store_set_req req = {.mode = STORE_MODE_SET};
    int n = SPREAD_SEGS * SPREAD_PER_SEG - 1; /* the last segment has room for one */
    for (int i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof key, "s%d", i);
        assert_int_equal(store_store(t.c, key, strlen(key), v, SPREAD_VLEN, &req, NULL), STORE_OK);
    }
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.seg_used, SPREAD_SEGS);
    assert_int_equal(st.seg_total, SPREAD_SEGS);
    /* Once every segment is in use writes owe eviction at their pace:
     * the last ones of the fill already evicted a few. */
    uint64_t items0 = st.curr_items, evicted0 = st.evictions;
    assert_true(evicted0 < SPREAD_PER_SEG);

    struct spread r = {.s = t.s, .writer = t.c, .group = open_group(t.c)};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, pin_spread, &r), 0);
    while (!__atomic_load_n(&r.pinned, __ATOMIC_ACQUIRE))
        sched_yield();
    assert_int_equal(r.npinned, SPREAD_SEGS);
    __atomic_store_n(&r.storing, 1, __ATOMIC_RELEASE);
    enum store_status res[SPREAD_PER_SEG];
    for (int i = 0; i < SPREAD_PER_SEG; i++) {
        char key[16];
        snprintf(key, sizeof key, "w%d", i);
        res[i] = store_store(t.c, key, strlen(key), v, SPREAD_VLEN, &req, NULL);
    }
    __atomic_store_n(&r.returned, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    for (int i = 0; i < SPREAD_PER_SEG; i++)
        assert_int_equal(res[i], STORE_OK);
    assert_true(r.released_waiting);
    store_stats(t.s, &st);
    print_message("the write evicted %llu; %llu items of %llu before\n",
                  (unsigned long long)(st.evictions - evicted0),
                  (unsigned long long)st.curr_items, (unsigned long long)items0);
    /* What the write needed (a segment) plus one draining victim more, and
     * a segment's worth of slack: three of twenty-four. */
    assert_true(st.evictions - evicted0 <= 3 * SPREAD_PER_SEG);
    assert_true(st.curr_items + 2 * SPREAD_PER_SEG >= items0);
    char *buf = malloc(SPREAD_VLEN + 1);
    struct store_item it;
    for (int i = 0; i < SPREAD_PER_SEG; i++) {
        char key[16];
        snprintf(key, sizeof key, "w%d", i);
        assert_int_equal(tget(&t, key, buf, SPREAD_VLEN + 1, &it), STORE_OK);
    }
    free(buf);
    free(v);
    tstore_close(&t);
}

/* On io_uring a reservation spans a turn while its value's receive is the
 * kernel's, and only the worker's next turn ends it. At -m 2 both segments
 * can hold such reservations of one worker (the open one and the one
 * sealed just before): a write on that worker then has no room to make,
 * and must say so at once. It waited the pin wait's whole bound, 500 ms
 * for each write, while the worker served nothing (every client stalled
 * for seconds); once the reservations end, the write is stored. */
static void test_write_does_not_wait_for_its_own_reservations(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 2 * MB, MB, true, true);
    char *v = malloc(VLEN);
    memset(v, 'a', VLEN);
    struct store_reservation held[2];
    assert_int_equal(store_reserve(t.c, "held0", 5, VLEN, &held[0]), STORE_OK);
    assert_int_equal(store_reserve(t.c, "held1", 5, VLEN, &held[1]), STORE_OK);
    assert_ptr_not_equal(held[0].seg, held[1].seg);
    struct store_set_req set = {.mode = STORE_MODE_SET};
    double ms;
    enum store_status st = timed_store(t.c, "w", v, VLEN, &set, &ms);
    printf("write: status %d after %.1f ms\n", (int)st, ms);
    assert_int_equal(st, STORE_NO_MEMORY);
    assert_true(ms < 250); /* the wait's bound is 500 ms; no wait is about 0 */
    store_abort(t.c, &held[0]);
    store_abort(t.c, &held[1]);
    assert_int_equal(store_store(t.c, "w", 1, v, VLEN, &set, NULL), STORE_OK);
    free(v);
    tstore_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_waits_for_reads_in_progress),
        cmocka_unit_test(test_write_refused_while_reply_queues_pin_all),
        cmocka_unit_test(test_write_under_reads_evicts_what_it_needs),
        cmocka_unit_test(test_append_does_not_wait_for_its_own_pin),
        cmocka_unit_test(test_write_does_not_wait_for_its_own_reservations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
