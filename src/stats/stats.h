/* Per-worker counters, declared once.
 *
 * Each worker owns one struct stats_thread and is its only writer, so an
 * increment is a relaxed load and store (no lock prefix, no shared cache
 * line); `stats` sums every worker's copy with relaxed loads. That keeps the
 * hot path as cheap as a plain increment and ThreadSanitizer-clean.
 *
 * STATS_THREAD lists them: memcached's names where memcached has the counter
 * (so `stats` prints them under those names), nodelay's own after.
 */
#ifndef NODELAY_STATS_H
#define NODELAY_STATS_H

#include <stdbool.h>
#include <stdint.h>

#define STATS_THREAD(X)                                                        \
    /* memcached's */                                                          \
    X(cmd_get)            /* keys requested by get/gets/gat/gats/mg/binary */  \
    X(cmd_set)            /* storage commands */                               \
    X(cmd_flush)                                                               \
    X(cmd_touch)                                                               \
    X(cmd_meta)                                                                \
    X(get_hits)                                                                \
    X(get_misses)                                                              \
    X(delete_misses)                                                           \
    X(delete_hits)                                                             \
    X(incr_misses)                                                             \
    X(incr_hits)                                                               \
    X(decr_misses)                                                             \
    X(decr_hits)                                                               \
    X(cas_misses)                                                              \
    X(cas_hits)                                                                \
    X(cas_badval)                                                              \
    X(touch_hits)                                                              \
    X(touch_misses)                                                            \
    X(store_too_large)                                                         \
    X(store_no_memory)                                                         \
    X(auth_cmds)                                                               \
    X(auth_errors)                                                             \
    X(idle_kicks)                                                              \
    X(bytes_read)                                                              \
    X(bytes_written)                                                           \
    X(conn_yields)        /* -R budget spent with requests still buffered */   \
    X(total_connections)                                                       \
    X(rejected_connections)                                                    \
    X(ssl_handshake_errors) /* TLS handshakes failed or timed out (-Z) */      \
    X(ssl_proto_errors)   /* TLS errors after the handshake */                 \
    X(ssl_new_sessions)   /* sessions cached (ssl_session_cache) */            \
    /* nodelay's own (stats nodelay) */                                        \
    X(read_calls)         /* read(2)/recv calls */                             \
    X(write_calls)        /* writev/sendmsg calls */                           \
    X(direct_reads)       /* reads straight into item memory */                \
    X(quickacks)          /* TCP_QUICKACK set after a partial request */       \
    X(slow_reader_kills)  /* connections cut off for an unbounded reply queue */ \
    X(nodelay_failures)   /* accepted sockets where TCP_NODELAY failed */

struct stats_thread {
#define STATS_FIELD(name) uint64_t name;
    STATS_THREAD(STATS_FIELD)
#undef STATS_FIELD
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
