/* Composition of the `stats` family from a snapshot, with no threads or
 * sockets involved, so the exact output is unit-tested. server.c gathers the
 * snapshot (workers summed, store_stats, process data) and calls these. */
#ifndef NODELAY_STATS_OUTPUT_H
#define NODELAY_STATS_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

#include "stats/stats.h"
#include "store/store.h"

struct reply_queue;
struct settings;

struct stats_snapshot {
    long pid;
    uint32_t uptime;
    int64_t time;
    const char *version;        /* the protocol version clients gate on */
    const char *event_backend;  /* shown where memcached shows libevent's version */
    struct timeval rusage_user, rusage_system;
    uint64_t max_connections;
    uint64_t curr_connections;  /* clients + listeners, as memcached counts */
    uint64_t connection_structures;
    uint64_t reserved_fds;
    uint64_t read_buf_count, read_buf_bytes;
    uint64_t reply_bytes;       /* bytes queued for clients */
    uint64_t accepting_conns, listen_disabled_num;
    uint64_t threads;
    bool show_idle_kicks;       /* memcached prints idle_kicks only with idle_timeout */
    bool show_rejected;         /* ... and rejected_connections only with maxconns_fast */
    struct stats_thread t;      /* every worker's counters, summed */
    struct store_stats store;
};

/* Plain `stats` lines in memcached 1.6's order (no END). */
int stats_general_compose(const struct stats_snapshot *s, struct reply_queue *out);
/* `stats items` / `stats slabs` lines (no END): the store as one pseudo
 * slab class whose pages are segments (docs/server.md). */
int stats_items_compose(const struct stats_snapshot *s, struct reply_queue *out);
int stats_slabs_compose(const struct stats_snapshot *s, struct reply_queue *out);
/* `stats nodelay` lines (no END). */
int stats_nodelay_compose(const struct stats_snapshot *s, const char *nodelay_version,
                          struct reply_queue *out);

#endif
