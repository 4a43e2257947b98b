/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for the store's unit tests. */
#ifndef TEST_STORE_HELPERS_H
#define TEST_STORE_HELPERS_H

#include <pthread.h>
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/clock.h"
#include "store/store.h"
#include "store/store_core.h"

struct tstore {
    struct store *s;
    struct store_ctx *c;
};

/* A store with options o and one worker context (the clock set up by the caller). */
static inline void tstore_open_opts(struct tstore *t, const struct store_options *o)
{
    assert_int_equal(store_create(&t->s, o), 0);
    t->c = store_ctx_create(t->s);
    assert_non_null(t->c);
}

static inline void tstore_open(struct tstore *t, size_t mem, size_t item_max, bool evict, bool cas)
{
    clock_setup();
    struct store_options o = {
        .mem_limit = mem,
        .item_size_max = item_max,
        .evictions = evict,
        .cas_enabled = cas,
    };
    tstore_open_opts(t, &o);
}

static inline void tstore_close(struct tstore *t)
{
    /* every reservation a test made was committed or aborted (under the
     * pool lock: the housekeeper may be mapping a segment meanwhile) */
    pthread_mutex_lock(&t->s->pool.lock);
    uint32_t reserving = 0;
    for (uint32_t id = 0; id < t->s->pool.seg_limit; id++)
        if (seg_of(&t->s->pool, id)->data)
            reserving += __atomic_load_n(&seg_of(&t->s->pool, id)->reserving, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&t->s->pool.lock);
    assert_int_equal(reserving, 0);
    store_ctx_destroy(&t->c);
    store_destroy(&t->s);
}

static inline enum store_status tset(struct tstore *t, const char *k, const char *v,
                                     enum store_mode mode, uint32_t flags, rel_time_t exp,
                                     uint64_t *cas)
{
    struct store_set_req r = {.mode = mode, .flags = flags, .exptime = exp};
    return store_store(t->c, k, strlen(k), v, strlen(v), &r, cas);
}

/* Get a key's value as a string into buf ("" on a miss); returns the status. */
static inline enum store_status tget(struct tstore *t, const char *k, char *buf, size_t cap,
                                     struct store_item *out)
{
    struct store_get_req r = {.want_value = true};
    struct store_item it;
    if (!out)
        out = &it;
    enum store_status st = store_get(t->c, k, strlen(k), &r, out);
    buf[0] = 0;
    if (st == STORE_OK) {
        assert_true(out->nvalue < cap);
        memcpy(buf, out->value, out->nvalue);
        buf[out->nvalue] = 0;
        store_pin_release(out->pin);
        out->pin = NULL;
    }
    return st;
}

#endif
