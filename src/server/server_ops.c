/* SPDX-License-Identifier: BSD-3-Clause */
/* The running server's answers (server/server_ops.h): the server_ops of
 * shutdown, verbosity, cache_memlimit and the `stats` family, composed
 * from every worker's counters and the store's through the counters table
 * (stats/), and the same for the metrics endpoint. */
#include "server/server_ops.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "event/event.h"
#include "base/log.h"
#include "net/conn.h"
#include "server/server.h"
#include "net/tls.h"
#include "net/worker.h"
#include "proto/server_ops.h"
#include "reply/reply.h"
#include "settings/settings.h"
#include "stats/registry.h"
#include "stats/stats_detail.h"
#include "stats/stats_output.h"
#include "store/store.h"
#include "store/store_compat.h"
#include "base/version.h"
#include "watch/watch.h"

#define SERVER_MEMLIMIT_MIN_MB 8
#define SERVER_MAX_VERBOSITY 2
#define SERVER_CACHEDUMP_MAX_BYTES (2 * 1024 * 1024) /* memcached's bound */

static void server_shutdown(void *ctx, bool graceful)
{
    (void)ctx;
    /* main.c waits for these signals and stops in order (memcached too
     * raises SIGINT, or SIGUSR1 for a graceful stop). */
    kill(getpid(), graceful ? SIGUSR1 : SIGINT);
}

static void server_set_verbosity(void *ctx, unsigned level)
{
    struct server *srv = ctx;
    if (level > SERVER_MAX_VERBOSITY)
        level = SERVER_MAX_VERBOSITY;
    log_set_verbosity((int)level);
    watch_set_stderr((int)level >= LOG_LEVEL_DEBUG); /* -vvv: lookups to stderr */
    SETTINGS_SET(srv->set, verbosity, (int)level);
}

static int server_set_memlimit(void *ctx, size_t megabytes)
{
    struct server *srv = ctx;
    if (megabytes < SERVER_MEMLIMIT_MIN_MB)
        return -1;
    size_t bytes = megabytes * 1024 * 1024;
    if (store_set_mem_limit(srv->pool.store, bytes) < 0)
        return -1;
    worker_pool_wake(&srv->pool);
    SETTINGS_SET(srv->set, maxbytes, bytes);
    return 0;
}

/* refresh_certs: TLS lives in net/, which protocols must not include. */
static int server_refresh_certs(void *ctx, char *msg, size_t n)
{
    (void)ctx;
    return tls_refresh_certs(msg, n);
}

static void server_stats_detail(void *ctx, const char *key, size_t nkey, char op, bool hit)
{
    (void)ctx;
    stats_detail_record(key, nkey, op, hit);
}

#define SERVER_SUM_WORKER(f) sum->f += STAT_GET(&w->stats, f);
#define SERVER_SUM_STORE(f)
#define SERVER_SUM_SNAP(f)
#define SERVER_SUM_CONST(f)
#define SERVER_SUM(name, src, field, ...) SERVER_SUM_##src(field)

static void server_sum_workers(struct worker_pool *p, struct stats_thread *sum,
                               uint64_t *reply_bytes, uint64_t *rbuf_bytes)
{
    memset(sum, 0, sizeof *sum);
    *reply_bytes = *rbuf_bytes = 0;
    for (int i = 0; i < p->nworkers; i++) {
        struct worker *w = &p->workers[i];
        STATS_GENERAL(SERVER_SUM)
        STATS_NODELAY(SERVER_SUM)
        for (unsigned k = 0; k < STATS_CLASSES; k++) {
#define SERVER_SUM_CLS(f) sum->cls[k].f += STAT_GET(&w->stats.cls[k], f);
            STATS_CLASS_COUNTERS(SERVER_SUM_CLS)
#undef SERVER_SUM_CLS
        }
        *reply_bytes += __atomic_load_n(&w->reply_bytes, __ATOMIC_RELAXED);
        *rbuf_bytes += __atomic_load_n(&w->rbuf_bytes, __ATOMIC_RELAXED);
    }
}

/* Listeners as memcached counts them among its connections: one per TCP or
 * unix socket, and one per worker thread per UDP socket (memcached gives
 * each thread its own conn on a dup of it). */
static uint64_t server_listener_conns(const struct worker_pool *p, uint64_t *udp)
{
    uint64_t n = 0;
    *udp = 0;
    for (size_t i = 0; i < p->listeners.n; i++) {
        if (p->listeners.l[i].udp) {
            n += (uint64_t)p->nworkers;
            (*udp)++;
        } else {
            n++;
        }
    }
    return n;
}

/* Everything the rows read, before `stats reset`'s baseline. */
static void server_snapshot_raw(struct worker_pool *p, const struct settings *set,
                                struct stats_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->pid = (int64_t)getpid();
    s->uptime = clock_now();
    s->time = (int64_t)clock_unix_now();
    s->version = NODELAY_PROTOCOL_VERSION;
    s->libevent = event_backend();
    s->nodelay_version = NODELAY_VERSION;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        s->rusage_user = ru.ru_utime;
        s->rusage_system = ru.ru_stime;
    }
    uint64_t udp;
    uint64_t nl = server_listener_conns(p, &udp);
    uint64_t clients = (uint64_t)__atomic_load_n(&p->curr_conns, __ATOMIC_RELAXED);
    s->max_connections = (uint64_t)set->maxconns;
    /* memcached prints its conn count minus one (stats_state.curr_conns - 1) */
    s->curr_connections = clients + nl > 0 ? clients + nl - 1 : 0;
    s->connection_structures =
        registry_structures(&p->registry) + udp * (uint64_t)(p->nworkers > 0 ? p->nworkers - 1 : 0);
    s->response_obj_count = clients;
    /* stdio, each worker's loop and wake pipe, the listeners */
    s->reserved_fds = 3 + 3 * (uint64_t)p->nworkers + p->listeners.n;
    s->accepting_conns = (uint64_t)__atomic_load_n(&p->accepting, __ATOMIC_RELAXED);
    s->listen_disabled_num = __atomic_load_n(&p->listen_disabled, __ATOMIC_RELAXED);
    s->threads = (uint64_t)p->nworkers;
    struct watch_counters wc;
    watch_counters_get(&wc);
    s->log_worker_dropped = wc.log_worker_dropped;
    s->log_worker_written = wc.log_worker_written;
    s->log_watcher_skipped = wc.log_watcher_skipped;
    s->log_watcher_sent = wc.log_watcher_sent;
    s->log_watchers = wc.log_watchers;
    s->shown = (set->maxconns_fast ? 1u << STATS_WHEN_MAXCONNS_FAST : 0) |
               (set->idle_timeout > 0 ? 1u << STATS_WHEN_IDLE_TIMEOUT : 0) |
               (set->slab_reassign ? 1u << STATS_WHEN_SLAB_REASSIGN : 0) |
               (SETTINGS_GET(set, lru_crawler) ? 1u << STATS_WHEN_LRU_CRAWLER : 0) |
               (set->lru_maintainer_thread ? 1u << STATS_WHEN_LRU_MAINTAINER : 0) |
               (tls_enabled() ? 1u << STATS_WHEN_SSL : 0) |
               (tls_enabled() && set->ssl_session_cache ? 1u << STATS_WHEN_SSL_SESSION_CACHE : 0) |
               (SETTINGS_GET(set, temp_lru) ? 1u << STATS_WHEN_TEMP_LRU : 0) |
               (set->ext_path ? 1u << STATS_WHEN_EXTSTORE : 0);
    s->cert_age = tls_enabled() ? tls_cert_age() : 0;
    uint64_t rbuf = 0;
    server_sum_workers(p, &s->t, &s->reply_bytes, &rbuf);
    s->read_buf_bytes = rbuf;
    s->read_buf_count = rbuf / CONN_RBUF_SIZE;
    s->total_connections = s->t.total_connections + nl; /* memcached counts listeners too */
    store_stats(p->store, &s->store);
    s->nclasses = store_class_stats(p->store, s->cls);
    s->extstore_memory_pressure =
        store_flash_memory_pressure(p->store, s->cls, s->nclasses, &s->store);
    s->restore_mode = store_restore_mode_name(s->store.restore_mode);
}

static void server_snapshot(struct server *srv, struct stats_snapshot *s)
{
    server_snapshot_raw(&srv->pool, srv->set, s);
    pthread_mutex_lock(&srv->reset_lock);
    if (srv->was_reset)
        stats_snapshot_since(s, &srv->base);
    pthread_mutex_unlock(&srv->reset_lock);
}

void server_stats_snapshot(struct server *srv, struct stats_snapshot *out)
{
    server_snapshot(srv, out);
}

static void server_stats_reset(struct server *srv)
{
    struct stats_snapshot now;
    server_snapshot_raw(&srv->pool, srv->set, &now);
    pthread_mutex_lock(&srv->reset_lock);
    srv->base = now;
    srv->was_reset = true;
    pthread_mutex_unlock(&srv->reset_lock);
    stats_detail_clear();
}

struct server_dump {
    struct reply_queue *out;
    size_t bytes;
    size_t limit;
    size_t count;
    int rc;
};

static void server_dump_item(const struct store_item *it, void *arg)
{
    struct server_dump *d = arg;
    if (d->bytes >= SERVER_CACHEDUMP_MAX_BYTES || (d->limit && d->count >= d->limit))
        return;
    long long exp = it->exptime == REL_TIME_NEVER ? 0 : (long long)clock_epoch() + it->exptime;
    size_t before = reply_pending(d->out);
    d->rc |= reply_printf(d->out, "ITEM %.*s [%u b; %lld s]\r\n", (int)it->nkey, it->key,
                          it->nvalue, exp);
    d->bytes += reply_pending(d->out) - before;
    d->count++;
}

static enum server_stats_rc server_refuse(struct server_stats_out *out, const char *msg)
{
    out->msg = msg;
    return SERVER_STATS_REFUSED;
}

/* stats cachedump <class> <limit>: our single pseudo class is 1. ITEM
 * lines, not STAT rows, so text only. */
static enum server_stats_rc server_cachedump(struct worker_pool *p, const struct settings *set,
                                             const char *arg1, const char *arg2,
                                             struct server_stats_out *out)
{
    if (!out->raw)
        return SERVER_STATS_UNKNOWN;
    if (!set->dump_enabled)
        return server_refuse(out, "CLIENT_ERROR stats cachedump not allowed");
    if (!arg1 || !arg2)
        return server_refuse(out, "CLIENT_ERROR bad command line");
    char *end;
    long cls = strtol(arg1, &end, 10);
    if (*end || end == arg1)
        return server_refuse(out, "CLIENT_ERROR bad command line format");
    long limit = strtol(arg2, &end, 10);
    if (*end || end == arg2 || limit < 0)
        return server_refuse(out, "CLIENT_ERROR bad command line format");
    struct server_dump d = {.out = out->raw, .limit = (size_t)limit};
    if (cls == 1) {
        uint64_t cursor = 0;
        while (cursor != UINT64_MAX && d.bytes < SERVER_CACHEDUMP_MAX_BYTES &&
               !(d.limit && d.count >= d.limit))
            if (store_walk(p->store, &cursor, 1024, server_dump_item, &d) == 0 &&
                cursor != UINT64_MAX)
                break;
    }
    return d.rc ? SERVER_STATS_NOMEM : SERVER_STATS_END;
}

/* `stats sizes` with -o track_sizes: 1.6.45's count of live items per
 * 32-byte step of memcached item size (rounded up). Counted by a walk when
 * asked, so neither a write nor a read pays for it. */
struct server_sizes {
    const struct store *store;
    uint32_t *n;
    size_t nb;
};

static void server_size_item(const struct store_item *it, void *arg)
{
    struct server_sizes *a = arg;
    size_t b = (store_item_mc_size(a->store, it) + 31) / 32;
    if (b < a->nb)
        a->n[b]++;
}

static int server_sizes(struct worker_pool *p, const struct settings *set,
                        const struct stats_emit *e)
{
    if (!set->track_sizes)
        return stats_emit_str(e, "sizes_status", "disabled");
    struct server_sizes a = {p->store, NULL, set->item_size_max / 32 + 2};
    a.n = calloc(a.nb, sizeof *a.n);
    if (!a.n)
        return -1;
    uint64_t cursor = 0;
    while (cursor != UINT64_MAX)
        if (store_walk(p->store, &cursor, 1024, server_size_item, &a) == 0)
            break;
    int rc = 0;
    for (size_t b = 0; b < a.nb && rc == 0; b++)
        if (a.n[b]) {
            char name[24];
            snprintf(name, sizeof name, "%zu", b * 32);
            rc = stats_emit_u64(e, name, a.n[b]);
        }
    free(a.n);
    return rc;
}

static enum server_stats_rc server_detail(const struct settings *set, const char *arg,
                                          struct server_stats_out *out)
{
    if (!set->dump_enabled)
        return server_refuse(out, "CLIENT_ERROR stats detail not allowed");
    if (arg && strcmp(arg, "on") == 0) {
        SETTINGS_SET(set, detail_enabled, true);
        return SERVER_STATS_OK;
    }
    if (arg && strcmp(arg, "off") == 0) {
        SETTINGS_SET(set, detail_enabled, false);
        return SERVER_STATS_OK;
    }
    if (!arg || strcmp(arg, "dump") != 0)
        return server_refuse(out, "CLIENT_ERROR usage: stats detail on|off|dump");
    /* PREFIX lines ending with END: as they are in text, as one value
     * named "detailed" in binary (memcached's framing of both). */
    size_t len;
    char *text = stats_detail_text(&len);
    if (!text)
        return SERVER_STATS_NOMEM;
    int rc = out->raw ? reply_copy(out->raw, text, len)
                      : out->emit.fn(out->emit.ctx, "detailed", 8, text, len);
    free(text);
    return rc ? SERVER_STATS_NOMEM : SERVER_STATS_DONE;
}

int server_extstore_pages(struct server *srv, struct store_flash_page **out, size_t *n)
{
    *out = NULL;
    *n = store_flash_pages(srv->pool.store, NULL, 0);
    if (!*n)
        return 0;
    /* segments are made at start only: the count does not change */
    *out = calloc(*n, sizeof **out);
    if (!*out)
        return -1;
    store_flash_pages(srv->pool.store, *out, *n);
    return 0;
}

/* `stats extstore`: memcached's rows per page; none without a flash tier
 * (1.6.45 without ext_path answers END alone). */
static int server_extstore(struct server *srv, const struct stats_emit *e)
{
    struct store_flash_page *pg;
    size_t n;
    if (server_extstore_pages(srv, &pg, &n) != 0)
        return -1;
    int rc = stats_extstore_compose(pg, n, e);
    free(pg);
    return rc;
}

/* `stats settings` rows come from the settings table's own walk. */
static int server_settings_row(void *arg, const char *name, const char *value)
{
    return stats_emit_str(arg, name, value);
}

static enum server_stats_rc server_stats(void *ctx, const char *args, size_t len,
                                         struct server_stats_out *out)
{
    struct server *srv = ctx;
    struct worker_pool *p = &srv->pool;
    /* Up to three space-separated words: subcommand and two arguments. */
    char buf[256];
    if (len >= sizeof buf)
        len = sizeof buf - 1;
    memcpy(buf, args, len);
    buf[len] = '\0';
    char *save = NULL;
    char *sub = strtok_r(buf, " ", &save);
    char *a1 = sub ? strtok_r(NULL, " ", &save) : NULL;
    char *a2 = a1 ? strtok_r(NULL, " ", &save) : NULL;

    const struct stats_emit *e = &out->emit;
    struct stats_snapshot snap;
    int rc;
    if (!sub) {
        server_snapshot(srv, &snap);
        rc = stats_rows_emit(&stats_general_rows, &snap, e);
    } else if (strcmp(sub, "settings") == 0) {
        rc = settings_stats_emit(srv->set, server_settings_row, (void *)e);
    } else if (strcmp(sub, "items") == 0) {
        server_snapshot(srv, &snap);
        rc = stats_items_compose(&snap, e);
    } else if (strcmp(sub, "slabs") == 0) {
        server_snapshot(srv, &snap);
        rc = stats_slabs_compose(&snap, e);
    } else if (strcmp(sub, "sizes") == 0) {
        rc = server_sizes(p, srv->set, e);
    } else if (strcmp(sub, "conns") == 0) {
        rc = registry_compose(&p->registry, clock_now(), e);
    } else if (strcmp(sub, "nodelay") == 0) {
        server_snapshot(srv, &snap);
        rc = stats_rows_emit(&stats_nodelay_rows, &snap, e);
    } else if (strcmp(sub, "extstore") == 0) {
        rc = server_extstore(srv, e);
    } else if (strcmp(sub, "reset") == 0) {
        server_stats_reset(srv);
        return SERVER_STATS_RESET;
    } else if (strcmp(sub, "detail") == 0) {
        return server_detail(srv->set, a1, out);
    } else if (strcmp(sub, "cachedump") == 0) {
        return server_cachedump(p, srv->set, a1, a2, out);
    } else {
        return SERVER_STATS_UNKNOWN;
    }
    return rc ? SERVER_STATS_NOMEM : SERVER_STATS_END;
}

int server_settings_metrics(struct server *srv,
                            int (*emit)(void *arg, const char *metric, const char *help,
                                        const char *value),
                            void *arg)
{
    return settings_metrics_emit(srv->set, emit, arg);
}

void server_ops_init(struct server *srv)
{
    srv->ops = (struct server_ops){
        .ctx = srv,
        .shutdown = server_shutdown,
        .set_verbosity = server_set_verbosity,
        .set_memlimit = server_set_memlimit,
        .stats = server_stats,
        .stats_detail = server_stats_detail,
        .refresh_certs = server_refresh_certs,
    };
    stats_detail_set_delimiter(srv->set->prefix_delimiter);
}
