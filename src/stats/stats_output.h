/* SPDX-License-Identifier: BSD-3-Clause */
/* The `stats` family, from a snapshot, with no threads or sockets involved,
 * so the exact output is unit-tested. server.c gathers the snapshot (workers
 * summed, store_stats, process data) and hands the rows to an emitter
 * (stats_emit.h): text lines, binary packets, or an exporter's own. */
#ifndef NODELAY_STATS_OUTPUT_H
#define NODELAY_STATS_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "stats/stats.h"
#include "stats/stats_emit.h"
#include "stats/stats_table_extstore.h"
#include "store/store.h"
#include "store/store_compat.h"

/* The columns of stats_table.h. */
enum stats_src { STATS_SRC_WORKER, STATS_SRC_STORE, STATS_SRC_SNAP, STATS_SRC_CONST };
enum stats_fmt { STATS_FMT_U64, STATS_FMT_I64, STATS_FMT_STR, STATS_FMT_TIMEVAL, STATS_FMT_F2 };
enum stats_kind { STATS_KIND_COUNTER, STATS_KIND_CLOCK, STATS_KIND_GAUGE, STATS_KIND_INFO };
enum stats_when {
    STATS_WHEN_ALWAYS,
    STATS_WHEN_MAXCONNS_FAST,  /* -o maxconns_fast (memcached's default) */
    STATS_WHEN_IDLE_TIMEOUT,   /* -o idle_timeout > 0 */
    STATS_WHEN_SLAB_REASSIGN,  /* -o slab_reassign (default; no_modern clears it) */
    STATS_WHEN_LRU_CRAWLER,    /* -o lru_crawler, and `lru_crawler enable` */
    STATS_WHEN_LRU_MAINTAINER, /* -o lru_maintainer */
    STATS_WHEN_SSL,            /* -Z */
    STATS_WHEN_SSL_SESSION_CACHE, /* -Z and -o ssl_session_cache */
    STATS_WHEN_TEMP_LRU,       /* -o temporary_ttl (memcached's temp_lru) */
    STATS_WHEN_EXTSTORE,       /* -o ext_path (the flash tier) */
};

struct stats_row {
    const char *name;
    const char *metric; /* memcached_exporter's /metrics name, or NULL */
    const char *help;
    enum stats_src src;
    enum stats_fmt fmt;
    enum stats_kind kind;
    enum stats_when when;
    size_t offset;  /* into struct stats_snapshot, unless CONST */
    uint64_t value; /* CONST */
};

struct stats_rows {
    const struct stats_row *row;
    size_t n;
};

/* Plain `stats` and `stats nodelay`, for anyone who walks them. */
extern const struct stats_rows stats_general_rows;
extern const struct stats_rows stats_nodelay_rows;

/* Everything a row can read (SNAP rows name these fields). */
struct stats_snapshot {
    int64_t pid;
    uint64_t uptime;
    int64_t time;
    const char *version;         /* the protocol version clients gate on */
    const char *libevent;        /* the event backend, where memcached shows libevent's */
    const char *nodelay_version;
    const char *restore_mode;    /* store_restore_mode_name of store.restore_mode */
    struct timeval rusage_user, rusage_system;
    uint64_t max_connections;
    uint64_t curr_connections;   /* memcached's: connections + listeners, minus one */
    uint64_t total_connections;  /* ... listeners included */
    uint64_t connection_structures;
    uint64_t response_obj_count;
    uint64_t reply_bytes;        /* memory reply queues hold */
    uint64_t read_buf_count, read_buf_bytes;
    uint64_t reserved_fds;
    uint64_t accepting_conns, listen_disabled_num;
    uint64_t threads;
    uint64_t log_worker_dropped, log_worker_written; /* the watch streams' (watch/) */
    uint64_t log_watcher_skipped, log_watcher_sent, log_watchers;
    uint64_t cert_age;           /* -Z: seconds since the certificates were loaded */
    double extstore_memory_pressure; /* store_flash_memory_pressure */
    unsigned shown;              /* bit (1u << enum stats_when) per setting that is on */
    struct stats_thread t;       /* every worker's counters, summed */
    struct store_stats store;
    struct store_class_stats cls[STORE_CLASSES]; /* 1..nclasses (store_class_stats) */
    unsigned nclasses;
};

bool stats_row_shown(const struct stats_row *r, const struct stats_snapshot *s);
/* The row's value as memcached prints it; buf holds at least
 * STATS_VALUE_MAX bytes. Returns the text (buf, or a string the snapshot
 * points at) and its length in *len. */
#define STATS_VALUE_MAX 32
const char *stats_row_text(const struct stats_row *r, const struct stats_snapshot *s, char *buf,
                           size_t *len);
/* The row's value as a number (TIMEVAL in seconds; 0 for INFO rows). */
double stats_row_number(const struct stats_row *r, const struct stats_snapshot *s);
/* Emit every row shown under this snapshot, in order. Returns 0 or -1. */
int stats_rows_emit(const struct stats_rows *rows, const struct stats_snapshot *s,
                    const struct stats_emit *e);

/* `stats reset`: every COUNTER row of both tables, minus what it was at the
 * reset (base), so counters are never written behind their writers. */
void stats_snapshot_since(struct stats_snapshot *s, const struct stats_snapshot *base);

/* `stats items` / `stats slabs` rows (STATS_ITEMS / STATS_SLABS in
 * stats_table.h): one block per memcached size class holding a live item,
 * pages being segments (docs/store.md "Size classes"). */
int stats_items_compose(const struct stats_snapshot *s, const struct stats_emit *e);

/* `stats extstore`'s rows (STATS_EXTSTORE_PAGE) of n flash pages, page by
 * page, "<page>:<name> <value>". */
int stats_extstore_compose(const struct store_flash_page *pg, size_t n, const struct stats_emit *e);

/* The same pages summed for /metrics (stats_table_extstore.h). */
struct stats_extstore_sum {
#define STATS_EXTSTORE_SUM_BY(field, metric, help) uint64_t field[STATS_EXTSTORE_BUCKET_MAX + 1];
    STATS_EXTSTORE_BY_BUCKET(STATS_EXTSTORE_SUM_BY)
#undef STATS_EXTSTORE_SUM_BY
#define STATS_EXTSTORE_SUM_TOTAL(field, metric, help) uint64_t field;
    STATS_EXTSTORE_TOTALS(STATS_EXTSTORE_SUM_TOTAL)
#undef STATS_EXTSTORE_SUM_TOTAL
    /* fill[k]: written pages whose live bytes are above k and at most
     * k+1 tenths of their size (an empty one in fill[0]) */
    uint64_t fill[STATS_EXTSTORE_FILL_STEPS];
    uint64_t written;
    double fill_sum; /* of the pages' fractions */
};
void stats_extstore_sum(const struct store_flash_page *pg, size_t n, struct stats_extstore_sum *out);
int stats_slabs_compose(const struct stats_snapshot *s, const struct stats_emit *e);

/* One `stats items` or `stats slabs` row of one class, as an exporter
 * takes it. */
struct stats_cls_sample {
    unsigned cls;       /* the memcached size class */
    const char *name;   /* the row's name (items:<cls>:<name>, <cls>:<name>) */
    const char *metric; /* its /metrics name and fixed labels, or NULL */
    const char *help;
    uint64_t value;
    bool constant;      /* a CONST row: memcached machinery nodelay has not */
};
/* Returns 0, or -1 to stop. */
typedef int (*stats_cls_fn)(void *ctx, const struct stats_cls_sample *smp);
/* The rows stats_items_compose prints, in its order. Returns 0 or -1 (fn). */
int stats_items_walk(const struct stats_snapshot *s, stats_cls_fn fn, void *ctx);
/* The class rows stats_slabs_compose prints, in its order (not its totals). */
int stats_slabs_walk(const struct stats_snapshot *s, stats_cls_fn fn, void *ctx);
/* `stats slabs` total_malloced: the bytes of segments in use, plus those
 * the T_MEMD_INITIAL_MALLOC test hook counts as taken (store.h). */
uint64_t stats_slabs_malloced(const struct stats_snapshot *s);

#endif
