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

#define MB (1u << 20)
#define NSEG 4
#define VLEN (600u * 1024) /* one value to a segment */

struct reader {
    struct store *s;
    struct store_item it[NSEG];
    int pinned;   /* atomic: every value read and pinned */
    int storing;  /* atomic: the writer's store has begun */
    int returned; /* atomic: the writer's store has returned */
    int released_waiting; /* the pins went while the writer was still in its store */
};

static bool all_draining(struct reader *r)
{
    for (int i = 0; i < NSEG; i++) {
        struct seg *g = (struct seg *)r->it[i].pin;
        if (__atomic_load_n(&g->state, __ATOMIC_ACQUIRE) != SEG_DRAINING)
            return false;
    }
    return true;
}

/* Pins every value on a context of its own, as a worker in the middle of
 * a multiget would, and lets go of them only once the writer, inside its
 * store, has had every segment evicted and has let go of the pool lock: a
 * writer that gives up instead never lets go of that lock before it has
 * failed. */
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
        if (all_draining(r) && pthread_mutex_trylock(&r->s->pool.lock) == 0) {
            bool inside = !__atomic_load_n(&r->returned, __ATOMIC_ACQUIRE);
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
 * own open one included: the write evicts them all, waits for the pins and
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
    struct reader r = {.s = t.s};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_waits_for_reads_in_progress),
        cmocka_unit_test(test_write_refused_while_reply_queues_pin_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
