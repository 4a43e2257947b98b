/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-worker counters.
 *
 * Each worker owns one struct stats_thread and is its only writer, so an
 * increment is a relaxed load and store (no lock prefix, no shared cache
 * line); `stats` sums every worker's copy with relaxed loads. That keeps the
 * hot path as cheap as a plain increment and ThreadSanitizer-clean.
 *
 * The fields are the WORKER rows of the counters table (stats_table.h), so
 * a counter is declared once: its row there gives the struct field, the
 * sum, its place in `stats` and its help text.
 */
#ifndef NODELAY_STATS_H
#define NODELAY_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "stats/stats_table.h"

#define STATS_THREAD_FIELD_WORKER(field) uint64_t field;
#define STATS_THREAD_FIELD_STORE(field)
#define STATS_THREAD_FIELD_SNAP(field)
#define STATS_THREAD_FIELD_CONST(field)
#define STATS_THREAD_FIELD(name, src, field, ...) STATS_THREAD_FIELD_##src(field)

/* One size class's counters (STATS_CLASS_COUNTERS). */
#define STATS_CLASS_FIELD(field) uint64_t field;
struct stats_class_counts {
    STATS_CLASS_COUNTERS(STATS_CLASS_FIELD)
};
#undef STATS_CLASS_FIELD

struct stats_thread {
    STATS_GENERAL(STATS_THREAD_FIELD)
    STATS_NODELAY(STATS_THREAD_FIELD)
    /* by memcached size class (0: none, never printed) */
    struct stats_class_counts cls[STATS_CLASSES];
};

/* Single-writer increment: the owning worker only. */
#define STAT_ADD(st, field, n)                                                 \
    __atomic_store_n(&(st)->field,                                             \
                     __atomic_load_n(&(st)->field, __ATOMIC_RELAXED) + (n),    \
                     __ATOMIC_RELAXED)
#define STAT_INC(st, field) STAT_ADD(st, field, 1)

/* A per-class counter of the item's class (store_item.class_id). The
 * worker's own array, like every counter here: a hit touches no shared
 * line. */
#define STAT_CLS_INC(st, class_id, field)                                      \
    do {                                                                       \
        unsigned stat_cls_ = (class_id);                                       \
        if (stat_cls_ < STATS_CLASSES)                                         \
            STAT_INC(&(st)->cls[stat_cls_], field);                            \
    } while (0)

/* A get hit in class cls, whose segment stood at lru (enum store_lru:
 * hot, warm, cold, temp): stats slabs' get_hits and stats items' hits_to_*. */
static inline void stats_count_get_hit(struct stats_thread *st, unsigned cls, unsigned lru)
{
    if (cls >= STATS_CLASSES)
        return;
    struct stats_class_counts *c = &st->cls[cls];
    STAT_INC(c, get_hits);
    switch (lru) {
    case 0: STAT_INC(c, hits_to_hot); break;
    case 1: STAT_INC(c, hits_to_warm); break;
    case 2: STAT_INC(c, hits_to_cold); break;
    default: STAT_INC(c, hits_to_temp); break;
    }
}

/* An incr/decr that found its key (hit) or not; cls is the item's class.
 * One place for all three protocols. */
static inline void stats_count_arith(struct stats_thread *st, bool incr, bool hit, unsigned cls)
{
    if (incr && hit) {
        STAT_INC(st, incr_hits);
        STAT_CLS_INC(st, cls, incr_hits);
    } else if (hit) {
        STAT_INC(st, decr_hits);
        STAT_CLS_INC(st, cls, decr_hits);
    } else if (incr) {
        STAT_INC(st, incr_misses);
    } else {
        STAT_INC(st, decr_misses);
    }
}

/* A key fetched by get/gets (cmd_get, get_hits|misses) or by a touching
 * fetch, gat/gats and the binary GAT family (cmd_touch, touch_hits|misses),
 * as memcached counts them; a hit also in its class (cls, lru: the item's
 * store_item.class_id and .lru). */
static inline void stats_count_fetch(struct stats_thread *st, bool touch, bool hit, unsigned cls,
                                     unsigned lru)
{
    if (touch) {
        STAT_INC(st, cmd_touch);
        if (hit) {
            STAT_INC(st, touch_hits);
            STAT_CLS_INC(st, cls, touch_hits);
        } else {
            STAT_INC(st, touch_misses);
        }
    } else {
        STAT_INC(st, cmd_get);
        if (hit) {
            STAT_INC(st, get_hits);
            stats_count_get_hit(st, cls, lru);
        } else {
            STAT_INC(st, get_misses);
        }
    }
}

/* Read one counter from another thread. */
#define STAT_GET(st, field) __atomic_load_n(&(st)->field, __ATOMIC_RELAXED)

#endif
