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
#define STATS_THREAD_FIELD(name, src, field, fmt, kind, when, help) STATS_THREAD_FIELD_##src(field)

struct stats_thread {
    STATS_GENERAL(STATS_THREAD_FIELD)
    STATS_NODELAY(STATS_THREAD_FIELD)
};

/* Single-writer increment: the owning worker only. */
#define STAT_ADD(st, field, n)                                                 \
    __atomic_store_n(&(st)->field,                                             \
                     __atomic_load_n(&(st)->field, __ATOMIC_RELAXED) + (n),    \
                     __ATOMIC_RELAXED)
#define STAT_INC(st, field) STAT_ADD(st, field, 1)

/* A key fetched by get/gets (cmd_get, get_hits|misses) or by a touching
 * fetch, gat/gats and the binary GAT family (cmd_touch, touch_hits|misses),
 * as memcached counts them. */
static inline void stats_count_fetch(struct stats_thread *st, bool touch, bool hit)
{
    if (touch) {
        STAT_INC(st, cmd_touch);
        if (hit)
            STAT_INC(st, touch_hits);
        else
            STAT_INC(st, touch_misses);
    } else {
        STAT_INC(st, cmd_get);
        if (hit)
            STAT_INC(st, get_hits);
        else
            STAT_INC(st, get_misses);
    }
}

/* Read one counter from another thread. */
#define STAT_GET(st, field) __atomic_load_n(&(st)->field, __ATOMIC_RELAXED)

#endif
