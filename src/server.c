/* What protocols may ask of the running server (server.h): shutdown,
 * verbosity, cache_memlimit and the `stats` family, composed from every
 * worker's counters and the store's. */
#include "server.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "event/event.h"
#include "log.h"
#include "net/conn.h"
#include "net/core.h"
#include "reply/reply.h"
#include "net/worker.h"
#include "settings.h"
#include "stats/stats_detail.h"
#include "stats/stats_output.h"
#include "store/store.h"
#include "version.h"

#define SERVER_MEMLIMIT_MIN_MB 8
#define SERVER_MAX_VERBOSITY 2
#define SERVER_CACHEDUMP_MAX_BYTES (2 * 1024 * 1024) /* memcached's bound */

static struct core *server_core;

/* `stats reset`: counters are per-worker single-writer, so instead of
 * zeroing them under the writers' feet we remember what they were and
 * report the difference. */
static pthread_mutex_t server_reset_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stats_thread server_base_thread;
static struct store_stats server_base_store;
static uint64_t server_base_listen_disabled;
static bool server_was_reset;

void server_attach(struct core *c)
{
    server_core = c;
    if (c)
        stats_detail_set_delimiter(c->settings->prefix_delimiter);
}

void server_shutdown(bool graceful)
{
    /* main.c waits for these signals and stops in order (memcached too
     * raises SIGINT, or SIGUSR1 for a graceful stop). */
    kill(getpid(), graceful ? SIGUSR1 : SIGINT);
}

void server_set_verbosity(unsigned level)
{
    if (level > SERVER_MAX_VERBOSITY)
        level = SERVER_MAX_VERBOSITY;
    log_set_verbosity((int)level);
    if (server_core)
        SETTINGS_SET(server_core->settings, verbosity, (int)level);
}

int server_set_memlimit(size_t megabytes)
{
    if (megabytes < SERVER_MEMLIMIT_MIN_MB)
        return -1;
    if (!server_core)
        return -1;
    size_t bytes = megabytes * 1024 * 1024;
    if (store_set_mem_limit(server_core->store, bytes) < 0)
        return -1;
    SETTINGS_SET(server_core->settings, maxbytes, bytes);
    return 0;
}

void server_stats_detail(const char *key, size_t nkey, char op, bool hit)
{
    stats_detail_record(key, nkey, op, hit);
}

static void server_sum_workers(struct core *c, struct stats_thread *sum, uint64_t *reply_bytes,
                               uint64_t *rbuf_bytes)
{
    memset(sum, 0, sizeof *sum);
    *reply_bytes = *rbuf_bytes = 0;
    for (int i = 0; i < c->nworkers; i++) {
        struct worker *w = &c->workers[i];
#define SERVER_SUM(name) sum->name += STAT_GET(&w->stats, name);
        STATS_THREAD(SERVER_SUM)
#undef SERVER_SUM
        *reply_bytes += __atomic_load_n(&w->reply_bytes, __ATOMIC_RELAXED);
        *rbuf_bytes += __atomic_load_n(&w->rbuf_bytes, __ATOMIC_RELAXED);
    }
}

/* Store counters that `stats reset` zeroes; the rest are gauges. */
#define SERVER_STORE_COUNTERS(X)                                               \
    X(total_items) X(evictions) X(evicted_unfetched) X(evicted_active)        \
    X(expired_unfetched) X(reclaimed) X(get_expired) X(get_flushed)           \
    X(seg_evicted) X(seg_expired) X(items_reinserted)

static void server_snapshot(struct core *c, struct stats_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->pid = (long)getpid();
    s->uptime = clock_now();
    s->time = (int64_t)clock_unix_now();
    s->version = NODELAY_PROTOCOL_VERSION;
    s->event_backend = event_backend();
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        s->rusage_user = ru.ru_utime;
        s->rusage_system = ru.ru_stime;
    }
    const struct settings *set = c->settings;
    uint64_t nl = c->listeners.n;
    s->max_connections = (uint64_t)set->maxconns;
    s->curr_connections = (uint64_t)__atomic_load_n(&c->curr_conns, __ATOMIC_RELAXED) + nl;
    s->connection_structures = s->curr_connections;
    s->reserved_fds = 3 + 3 * (uint64_t)c->nworkers + nl; /* stdio, loop + wake pipe, listeners */
    s->accepting_conns = (uint64_t)__atomic_load_n(&c->accepting, __ATOMIC_RELAXED);
    s->threads = (uint64_t)c->nworkers;
    s->show_idle_kicks = set->idle_timeout > 0;
    s->show_rejected = set->maxconns_fast;
    uint64_t rbuf = 0;
    server_sum_workers(c, &s->t, &s->reply_bytes, &rbuf);
    s->read_buf_bytes = rbuf;
    s->read_buf_count = rbuf / CONN_RBUF_SIZE;
    store_stats(c->store, &s->store);
    uint64_t listen_disabled = __atomic_load_n(&c->listen_disabled, __ATOMIC_RELAXED);

    pthread_mutex_lock(&server_reset_lock);
    if (server_was_reset) {
#define SERVER_SUB_T(name) s->t.name -= server_base_thread.name;
        STATS_THREAD(SERVER_SUB_T)
#undef SERVER_SUB_T
#define SERVER_SUB_S(name) s->store.name -= server_base_store.name;
        SERVER_STORE_COUNTERS(SERVER_SUB_S)
#undef SERVER_SUB_S
        listen_disabled -= server_base_listen_disabled;
    } else {
        s->t.total_connections += nl; /* memcached counts its listeners too */
    }
    pthread_mutex_unlock(&server_reset_lock);
    s->listen_disabled_num = listen_disabled;
}

static void server_stats_reset(struct core *c)
{
    struct stats_thread t;
    uint64_t reply_bytes, rbuf;
    server_sum_workers(c, &t, &reply_bytes, &rbuf);
    struct store_stats st;
    store_stats(c->store, &st);
    pthread_mutex_lock(&server_reset_lock);
    server_base_thread = t;
    server_base_store = st;
    server_base_listen_disabled = __atomic_load_n(&c->listen_disabled, __ATOMIC_RELAXED);
    server_was_reset = true;
    pthread_mutex_unlock(&server_reset_lock);
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

/* stats cachedump <class> <limit>: our single pseudo class is 1. */
static int server_cachedump(struct core *c, const char *arg1, const char *arg2,
                            struct reply_queue *out)
{
    if (!c->settings->dump_enabled)
        return reply_str(out, "CLIENT_ERROR stats cachedump not allowed\r\n");
    if (!arg1 || !arg2)
        return reply_str(out, "CLIENT_ERROR bad command line\r\n");
    char *end;
    long cls = strtol(arg1, &end, 10);
    if (*end || end == arg1)
        return reply_str(out, "CLIENT_ERROR bad command line format\r\n");
    long limit = strtol(arg2, &end, 10);
    if (*end || end == arg2 || limit < 0)
        return reply_str(out, "CLIENT_ERROR bad command line format\r\n");
    struct server_dump d = {.out = out, .limit = (size_t)limit};
    if (cls == 1) {
        uint64_t cursor = 0;
        while (cursor != UINT64_MAX && d.bytes < SERVER_CACHEDUMP_MAX_BYTES &&
               !(d.limit && d.count >= d.limit))
            if (store_walk(c->store, &cursor, 1024, server_dump_item, &d) == 0 &&
                cursor != UINT64_MAX)
                break;
    }
    d.rc |= reply_str(out, "END\r\n");
    return d.rc ? -1 : 0;
}

static int server_detail(struct core *c, const char *arg, struct reply_queue *out)
{
    if (!c->settings->dump_enabled)
        return reply_str(out, "CLIENT_ERROR stats detail not allowed\r\n");
    if (arg && strcmp(arg, "on") == 0) {
        SETTINGS_SET(c->settings, detail_enabled, true);
        return reply_str(out, "OK\r\n");
    }
    if (arg && strcmp(arg, "off") == 0) {
        SETTINGS_SET(c->settings, detail_enabled, false);
        return reply_str(out, "OK\r\n");
    }
    if (arg && strcmp(arg, "dump") == 0)
        return stats_detail_dump(out);
    return reply_str(out, "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
}

int server_stats(const char *args, size_t len, struct reply_queue *out)
{
    struct core *c = server_core;
    if (!c)
        return -1;
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

    struct stats_snapshot snap;
    int rc;
    if (!sub) {
        server_snapshot(c, &snap);
        rc = stats_general_compose(&snap, out);
    } else if (strcmp(sub, "settings") == 0) {
        rc = stats_settings_compose(c->settings, out);
    } else if (strcmp(sub, "items") == 0) {
        server_snapshot(c, &snap);
        rc = stats_items_compose(&snap, out);
    } else if (strcmp(sub, "slabs") == 0) {
        server_snapshot(c, &snap);
        rc = stats_slabs_compose(&snap, out);
    } else if (strcmp(sub, "sizes") == 0) {
        rc = reply_str(out, "STAT sizes_status disabled\r\n");
    } else if (strcmp(sub, "conns") == 0) {
        rc = registry_compose(&c->registry, clock_now(), out);
    } else if (strcmp(sub, "nodelay") == 0) {
        server_snapshot(c, &snap);
        rc = stats_nodelay_compose(&snap, NODELAY_VERSION, out);
    } else if (strcmp(sub, "reset") == 0) {
        server_stats_reset(c);
        return reply_str(out, "RESET\r\n");
    } else if (strcmp(sub, "detail") == 0) {
        return server_detail(c, a1, out);
    } else if (strcmp(sub, "cachedump") == 0) {
        return server_cachedump(c, a1, a2, out);
    } else {
        return -1;
    }
    if (rc == 0)
        rc = reply_str(out, "END\r\n");
    return rc;
}
