/* The /metrics page: the counters table (stats/stats_table.h) in the
 * Prometheus text format.
 *
 * It walks the same rows `stats` and `stats nodelay` print, over a snapshot
 * the server takes without any worker's lock, so a row added to the table
 * shows up here with no second list. The tables below are only
 * memcached_exporter's vocabulary (its metric names, kinds and help, so its
 * dashboards work unchanged) for the rows it knows; every other row is
 * exported as nodelay_<name> with the row's own kind and help.
 *
 * Kinds differ from the exporter's in one respect: a counter whose name does
 * not end in _total (uptime_seconds, the slab moves) is typed gauge, which
 * promtool's lint requires and no dashboard reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "metrics/metrics.h"
#include "stats/stats_hist.h"
#include "reply/reply.h"
#include "server.h"
#include "stats/stats_emit.h"
#include "stats/stats_output.h"

enum kind { GAUGE, COUNTER };

struct export {
    const char *stat;   /* field of `stats` (or `stats settings` when settings) */
    const char *metric; /* memcached_exporter's name */
    enum kind kind;
    const char *help;
};

/* `stats` fields, memcached_exporter's names for them. */
static const struct export general[] = {
    {"uptime", "memcached_uptime_seconds", GAUGE, "Number of seconds since the server started."},
    {"time", "memcached_time_seconds", GAUGE, "current UNIX time according to the server."},
    {"rusage_user", "memcached_process_user_cpu_seconds_total", COUNTER,
     "Accumulated user time for this process."},
    {"rusage_system", "memcached_process_system_cpu_seconds_total", COUNTER,
     "Accumulated system time for this process."},
    {"bytes", "memcached_current_bytes", GAUGE, "Current number of bytes used to store items."},
    {"limit_maxbytes", "memcached_limit_bytes", GAUGE,
     "Number of bytes this server is allowed to use for storage."},
    {"curr_items", "memcached_current_items", GAUGE,
     "Current number of items stored by this instance."},
    {"total_items", "memcached_items_total", COUNTER,
     "Total number of items stored during the life of this instance."},
    {"bytes_read", "memcached_read_bytes_total", COUNTER,
     "Total number of bytes read by this server from network."},
    {"bytes_written", "memcached_written_bytes_total", COUNTER,
     "Total number of bytes sent by this server to network."},
    {"curr_connections", "memcached_current_connections", GAUGE,
     "Current number of open connections."},
    {"total_connections", "memcached_connections_total", COUNTER,
     "Total number of connections opened since the server started running."},
    {"rejected_connections", "memcached_connections_rejected_total", COUNTER,
     "Total number of connections rejected due to hitting the -c limit in maxconns_fast mode."},
    {"conn_yields", "memcached_connections_yielded_total", COUNTER,
     "Total number of connections yielded running due to hitting the -R limit."},
    {"listen_disabled_num", "memcached_connections_listener_disabled_total", COUNTER,
     "Number of times the server has hit its connections limit and disabled its listener."},
    {"evictions", "memcached_items_evicted_total", COUNTER,
     "Total number of valid items removed from cache to free memory for new items."},
    {"reclaimed", "memcached_items_reclaimed_total", COUNTER,
     "Total number of times an entry was stored using memory from an expired entry."},
    {"store_too_large", "memcached_item_too_large_total", COUNTER,
     "The number of times an item exceeded the max-item-size when being stored."},
    {"store_no_memory", "memcached_item_no_memory_total", COUNTER,
     "The number of times an item could not be stored due to no more memory."},
    {"lru_crawler_starts", "memcached_lru_crawler_starts_total", COUNTER,
     "Times an LRU crawler was started."},
    {"direct_reclaims", "memcached_direct_reclaims_total", COUNTER,
     "Times worker threads had to directly reclaim or evict items."},
    {"crawler_items_checked", "memcached_lru_crawler_items_checked_total", COUNTER,
     "Total items examined by LRU Crawler."},
    {"crawler_reclaimed", "memcached_lru_crawler_reclaimed_total", COUNTER,
     "Total items freed by LRU Crawler."},
    {"moves_to_cold", "memcached_lru_crawler_moves_to_cold_total", COUNTER,
     "Total number of items moved from HOT/WARM to COLD LRU's."},
    {"moves_to_warm", "memcached_lru_crawler_moves_to_warm_total", COUNTER,
     "Total number of items moved from COLD to WARM LRU."},
    {"moves_within_lru", "memcached_lru_crawler_moves_within_lru_total", COUNTER,
     "Total number of items reshuffled within HOT or WARM LRU's."},
    {"accepting_conns", "memcached_accepting_connections", GAUGE,
     "The server is currently accepting new connections."},
    {NULL, NULL, GAUGE, NULL},
};

static const struct export settings_rows[] = {
    {"maxconns", "memcached_max_connections", GAUGE, "Maximum number of clients allowed."},
    {"lru_crawler", "memcached_lru_crawler_enabled", GAUGE, "Whether the LRU crawler is enabled."},
    {"lru_crawler_sleep", "memcached_lru_crawler_sleep", GAUGE,
     "Microseconds to sleep between LRU crawls."},
    {"lru_crawler_tocrawl", "memcached_lru_crawler_to_crawl", GAUGE,
     "Max items to crawl per slab per run."},
    {"lru_maintainer_thread", "memcached_lru_crawler_maintainer_thread", GAUGE,
     "Split LRU mode and background threads."},
    {"hot_lru_pct", "memcached_lru_crawler_hot_percent", GAUGE,
     "Percent of slab memory reserved for HOT LRU."},
    {"warm_lru_pct", "memcached_lru_crawler_warm_percent", GAUGE,
     "Percent of slab memory reserved for WARM LRU."},
    {"hot_max_factor", "memcached_lru_crawler_hot_max_factor", GAUGE,
     "Set idle age of HOT LRU to COLD age * this"},
    {"warm_max_factor", "memcached_lru_crawler_warm_max_factor", GAUGE,
     "Set idle age of WARM LRU to COLD age * this"},
    {NULL, NULL, GAUGE, NULL},
};

/* `stats items` fields (items:<class>:<field>), with a slab label. */
static const struct export items_rows[] = {
    {"number", "memcached_slab_current_items", GAUGE,
     "Number of items currently stored in this slab class."},
    {"age", "memcached_slab_items_age_seconds", GAUGE,
     "Number of seconds the oldest item has been in the slab class."},
    {"crawler_reclaimed", "memcached_slab_items_crawler_reclaimed_total", COUNTER,
     "Number of items freed by the LRU Crawler."},
    {"evicted", "memcached_slab_items_evicted_total", COUNTER,
     "Total number of times an item had to be evicted from the LRU before it expired."},
    {"evicted_nonzero", "memcached_slab_items_evicted_nonzero_total", COUNTER,
     "Total number of times an item which had an explicit expire time set had to be evicted."},
    {"evicted_time", "memcached_slab_items_evicted_time_seconds", GAUGE,
     "Seconds since the last access for the most recent item evicted from this class."},
    {"evicted_unfetched", "memcached_slab_items_evicted_unfetched_total", COUNTER,
     "Total number of items evicted and never fetched."},
    {"expired_unfetched", "memcached_slab_items_expired_unfetched_total", COUNTER,
     "Total number of valid items evicted from the LRU which were never touched after being set."},
    {"outofmemory", "memcached_slab_items_outofmemory_total", COUNTER,
     "Total number of items for this slab class that have triggered an out of memory error."},
    {"reclaimed", "memcached_slab_items_reclaimed_total", COUNTER,
     "Total number of items reclaimed."},
    {"tailrepairs", "memcached_slab_items_tailrepairs_total", COUNTER,
     "Total number of times the entries for a particular ID need repairing."},
    {"mem_requested", "memcached_slab_mem_requested_bytes", GAUGE,
     "Number of bytes of memory actual items take up within a slab."},
    {"moves_to_cold", "memcached_slab_items_moves_to_cold", GAUGE,
     "Number of items moved from HOT or WARM into COLD."},
    {"moves_to_warm", "memcached_slab_items_moves_to_warm", GAUGE,
     "Number of items moves from COLD into WARM."},
    {"moves_within_lru", "memcached_slab_items_moves_within_lru", GAUGE,
     "Number of times active items were bumped within HOT or WARM."},
    {"number_hot", "memcached_slab_hot_items", GAUGE, "Number of items presently stored in the HOT LRU."},
    {"number_warm", "memcached_slab_warm_items", GAUGE, "Number of items presently stored in the WARM LRU."},
    {"number_cold", "memcached_slab_cold_items", GAUGE, "Number of items presently stored in the COLD LRU."},
    {"number_temp", "memcached_slab_temporary_items", GAUGE,
     "Number of items presently stored in the TEMPORARY LRU."},
    {"age_hot", "memcached_slab_hot_age_seconds", GAUGE, "Age of the oldest item in HOT LRU."},
    {"age_warm", "memcached_slab_warm_age_seconds", GAUGE, "Age of the oldest item in WARM LRU."},
    {NULL, NULL, GAUGE, NULL},
};

static const char *const lru_hits[][2] = {
    {"hits_to_hot", "hot"}, {"hits_to_warm", "warm"}, {"hits_to_cold", "cold"}, {"hits_to_temp", "temporary"},
};

static const char commands_help[] =
    "Total number of all requests broken down by command (get, set, etc.) and status.";

/* memcached_exporter's commands_total{command,status} from these fields */
static const char *const command_rows[][3] = {
    {"get_hits", "get", "hit"},     {"get_misses", "get", "miss"},
    {"delete_hits", "delete", "hit"}, {"delete_misses", "delete", "miss"},
    {"incr_hits", "incr", "hit"},   {"incr_misses", "incr", "miss"},
    {"decr_hits", "decr", "hit"},   {"decr_misses", "decr", "miss"},
    {"cas_hits", "cas", "hit"},     {"cas_misses", "cas", "miss"},
    {"touch_hits", "touch", "hit"}, {"touch_misses", "touch", "miss"},
    {"cas_badval", "cas", "badval"}, {"cmd_flush", "flush", "hit"},
};

/* ---- samples, grouped by metric when printed ---- */

#define PAGE_SAMPLES_MAX 1024

struct sample {
    char metric[96];
    char labels[96]; /* without braces; "" for none */
    char value[40];
    enum kind kind;
    const char *help;
};

struct page {
    struct sample *s;
    size_t n;
    bool full;
};

static void page_add(struct page *p, const char *metric, const char *labels, const char *value,
                     enum kind kind, const char *help)
{
    if (p->n == PAGE_SAMPLES_MAX) {
        p->full = true;
        return;
    }
    struct sample *s = &p->s[p->n++];
    snprintf(s->metric, sizeof s->metric, "%s", metric);
    snprintf(s->labels, sizeof s->labels, "%s", labels ? labels : "");
    snprintf(s->value, sizeof s->value, "%s", value);
    s->kind = kind;
    s->help = help;
}

static bool numeric(const char *v)
{
    if (!*v)
        return false;
    char *end;
    strtod(v, &end);
    return *end == '\0';
}

/* A stats group's rows (stats_emit.h) handed to fn as C strings. */
typedef void (*stat_fn)(struct page *p, const char *name, const char *value, void *arg);

struct page_emit {
    struct page *p;
    stat_fn fn;
    void *arg;
};

static int page_emit_row(void *ctx, const char *name, size_t nname, const char *value,
                         size_t nvalue)
{
    struct page_emit *pe = ctx;
    char n[128], v[128];
    snprintf(n, sizeof n, "%.*s", (int)nname, name);
    snprintf(v, sizeof v, "%.*s", (int)nvalue, value);
    pe->fn(pe->p, n, v, pe->arg);
    return 0;
}

static struct stats_emit page_emitter(struct page_emit *pe)
{
    return (struct stats_emit){page_emit_row, pe};
}

static const struct export *find(const struct export *rows, const char *stat)
{
    for (; rows->stat; rows++)
        if (strcmp(rows->stat, stat) == 0)
            return rows;
    return NULL;
}

struct general_acc {
    double cmd_set, cas_all;
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* nodelay_<field>[_total], kept clear of the suffixes the text format
 * reserves (a gauge ending _count or _total gets _value) and in base units
 * (a field in _us or _ms becomes _seconds), as promtool's lint asks. */
static void nodelay_name(char *out, size_t cap, const char *field, bool counter)
{
    char base[80];
    snprintf(base, sizeof base, "%s", field);
    if ((ends_with(base, "_us") || ends_with(base, "_ms")) && strlen(base) + 5 < sizeof base)
        strcpy(base + strlen(base) - 3, "_seconds"); /* the caller scales the value */
    if (counter)
        snprintf(out, cap, "nodelay_%s_total", base);
    else if (ends_with(base, "_count") || ends_with(base, "_total") || ends_with(base, "_sum") ||
             ends_with(base, "_bucket"))
        snprintf(out, cap, "nodelay_%s_value", base);
    else
        snprintf(out, cap, "nodelay_%s", base);
}

/* A row memcached_exporter does not name: nodelay_<name>, the row's kind
 * (a CLOCK only grows, so it is a counter too) and help. */
static void on_nodelay_row(struct page *p, const struct stats_row *r, const char *value)
{
    if (r->kind == STATS_KIND_INFO || !numeric(value))
        return;
    bool counter = r->kind == STATS_KIND_COUNTER || r->kind == STATS_KIND_CLOCK;
    char metric[96], scaled[40];
    nodelay_name(metric, sizeof metric, r->name, counter);
    if (ends_with(r->name, "_us") || ends_with(r->name, "_ms")) {
        double unit = ends_with(r->name, "_us") ? 1e6 : 1e3;
        snprintf(scaled, sizeof scaled, "%.6f", strtod(value, NULL) / unit);
        value = scaled;
    }
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->s[i].metric, metric) == 0)
            return; /* a `stats nodelay` row that repeats a `stats` one */
    page_add(p, metric, NULL, value, counter ? COUNTER : GAUGE, r->help);
}

static void on_general(struct page *p, const struct stats_row *r, const char *value,
                       struct general_acc *acc);

static void page_rows(struct page *p, const struct stats_rows *rows, const struct stats_snapshot *snap,
                      struct general_acc *acc)
{
    for (size_t i = 0; i < rows->n; i++) {
        const struct stats_row *r = &rows->row[i];
        if (!stats_row_shown(r, snap))
            continue;
        char buf[STATS_VALUE_MAX + 1];
        size_t len;
        const char *text = stats_row_text(r, snap, buf, &len);
        char value[64];
        snprintf(value, sizeof value, "%.*s", (int)len, text);
        if (acc)
            on_general(p, r, value, acc);
        else
            on_nodelay_row(p, r, value);
    }
}

/* One row of `stats`: memcached_exporter's name when it has one. */
static void on_general(struct page *p, const struct stats_row *r, const char *value,
                       struct general_acc *acc)
{
    const char *name = r->name;
    if (strcmp(name, "version") == 0) {
        char labels[96];
        snprintf(labels, sizeof labels, "version=\"%.80s\"", value);
        page_add(p, "memcached_version", labels, "1", GAUGE, "The version of this memcached server.");
        return;
    }
    if (r->kind == STATS_KIND_INFO || !numeric(value))
        return;
    for (size_t i = 0; i < sizeof command_rows / sizeof command_rows[0]; i++) {
        if (strcmp(name, command_rows[i][0]) == 0) {
            char labels[64];
            snprintf(labels, sizeof labels, "command=\"%s\",status=\"%s\"", command_rows[i][1],
                     command_rows[i][2]);
            page_add(p, "memcached_commands_total", labels, value, COUNTER, commands_help);
            if (strncmp(name, "cas_", 4) == 0)
                acc->cas_all += strtod(value, NULL);
            return;
        }
    }
    if (strcmp(name, "cmd_set") == 0)
        acc->cmd_set = strtod(value, NULL);
    const struct export *e = find(general, name);
    if (e) {
        page_add(p, e->metric, NULL, value, e->kind, e->help);
        return;
    }
    on_nodelay_row(p, r, value);
}

static void on_settings(struct page *p, const char *name, const char *value, void *arg)
{
    (void)arg;
    const struct export *e = find(settings_rows, name);
    if (!e)
        return;
    if (strcmp(value, "yes") == 0)
        value = "1";
    else if (strcmp(value, "no") == 0)
        value = "0";
    if (numeric(value))
        page_add(p, e->metric, NULL, value, e->kind, e->help);
}

static void on_items(struct page *p, const char *name, const char *value, void *arg)
{
    (void)arg;
    unsigned cls;
    char field[64];
    if (sscanf(name, "items:%u:%63s", &cls, field) != 2 || !numeric(value))
        return;
    char labels[64];
    for (size_t i = 0; i < sizeof lru_hits / sizeof lru_hits[0]; i++) {
        if (strcmp(field, lru_hits[i][0]) == 0) {
            snprintf(labels, sizeof labels, "slab=\"%u\",lru=\"%s\"", cls, lru_hits[i][1]);
            page_add(p, "memcached_slab_lru_hits_total", labels, value, COUNTER,
                     "Number of get_hits to the LRU.");
            return;
        }
    }
    const struct export *e = find(items_rows, field);
    if (!e)
        return;
    snprintf(labels, sizeof labels, "slab=\"%u\"", cls);
    page_add(p, e->metric, labels, value, e->kind, e->help);
}

static int on_settings_row(void *arg, const char *name, const char *value)
{
    on_settings(arg, name, value, NULL);
    return 0;
}

static void on_slabs(struct page *p, const char *name, const char *value, void *arg)
{
    (void)arg;
    if (strcmp(name, "total_malloced") == 0 && numeric(value))
        page_add(p, "memcached_malloced_bytes", NULL, value, GAUGE,
                 "Number of bytes of memory allocated to slab pages.");
}

static int page_print(const struct page *p, struct reply_queue *out)
{
    int rc = 0;
    bool *done = calloc(p->n ? p->n : 1, sizeof *done);
    if (!done)
        return -1;
    for (size_t i = 0; i < p->n; i++) {
        if (done[i])
            continue;
        const struct sample *first = &p->s[i];
        rc |= reply_printf(out, "# HELP %s %s\n# TYPE %s %s\n", first->metric, first->help,
                           first->metric, first->kind == COUNTER ? "counter" : "gauge");
        for (size_t j = i; j < p->n; j++) {
            const struct sample *s = &p->s[j];
            if (done[j] || strcmp(s->metric, first->metric) != 0)
                continue;
            done[j] = true;
            if (s->labels[0])
                rc |= reply_printf(out, "%s{%s} %s\n", s->metric, s->labels, s->value);
            else
                rc |= reply_printf(out, "%s %s\n", s->metric, s->value);
        }
    }
    free(done);
    return rc;
}

static int page_histograms(struct reply_queue *out)
{
    int rc = reply_str(out, "# HELP nodelay_request_duration_seconds Request service time, from "
                            "the request line parsed to its reply queued, per command family.\n"
                            "# TYPE nodelay_request_duration_seconds histogram\n");
    for (int f = 0; f < METRICS_FAMILIES; f++) {
        struct metrics_hist_sum h;
        metrics_hist_sum((enum metrics_family)f, &h);
        const char *fam = metrics_family_names[f];
        uint64_t cum = 0;
        for (int b = 0; b < METRICS_HIST_BUCKETS; b++) {
            cum += h.counts[b];
            rc |= reply_printf(out, "nodelay_request_duration_seconds_bucket{family=\"%s\",le=\"%g\"} %llu\n",
                               fam, (double)metrics_hist_bounds_ns[b] / 1e9, (unsigned long long)cum);
        }
        rc |= reply_printf(out, "nodelay_request_duration_seconds_bucket{family=\"%s\",le=\"+Inf\"} %llu\n",
                           fam, (unsigned long long)h.count);
        rc |= reply_printf(out, "nodelay_request_duration_seconds_sum{family=\"%s\"} %.9f\n", fam,
                           (double)h.sum_ns / 1e9);
        rc |= reply_printf(out, "nodelay_request_duration_seconds_count{family=\"%s\"} %llu\n", fam,
                           (unsigned long long)h.count);
    }
    return rc;
}

int metrics_compose(struct server *srv, struct reply_queue *out)
{
    struct page p = {.s = calloc(PAGE_SAMPLES_MAX, sizeof(struct sample))};
    if (!p.s)
        return -1;
    struct stats_snapshot *snap = malloc(sizeof *snap);
    if (!snap) {
        free(p.s);
        return -1;
    }
    server_stats_snapshot(srv, snap);
    struct general_acc acc = {0};
    page_rows(&p, &stats_general_rows, snap, &acc);
    /* memcached counts cas in cmd_set too: the exporter's set = cmd_set - cas */
    char v[40];
    snprintf(v, sizeof v, "%.0f", acc.cmd_set - acc.cas_all);
    page_add(&p, "memcached_commands_total", "command=\"set\",status=\"hit\"", v, COUNTER,
             commands_help);
    struct page_emit pe = {&p, on_settings, NULL};
    struct stats_emit e = page_emitter(&pe);
    int rc = server_settings_emit(srv, on_settings_row, &p);
    pe.fn = on_items;
    rc |= stats_items_compose(snap, &e);
    pe.fn = on_slabs;
    rc |= stats_slabs_compose(snap, &e);
    page_rows(&p, &stats_nodelay_rows, snap, NULL);
    page_add(&p, "memcached_up", NULL, "1", GAUGE, "Could the memcached server be reached.");
    if (rc == 0 && !p.full) {
        rc = page_print(&p, out);
        rc |= page_histograms(out);
    }
    free(snap);
    free(p.s);
    return rc ? -1 : 0;
}
