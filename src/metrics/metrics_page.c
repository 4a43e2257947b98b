/* The /metrics page: the counters table (stats/stats_table.h) in the
 * Prometheus text format.
 *
 * It walks the same rows `stats` and `stats nodelay` print, over a snapshot
 * the server takes without any worker's lock, so a row added to the table
 * shows up here with no second list. The tables below are only
 * memcached_exporter's vocabulary (its metric names, kinds and help, so its
 * dashboards work unchanged) for the `stats` and `stats settings` rows it
 * knows; every other `stats` row is exported as nodelay_<name> with the
 * row's own kind and help. The per-class rows (`stats items`) carry their
 * exporter name and help in their own row of STATS_ITEMS.
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

struct sample {
    char metric[96];
    char labels[96]; /* without braces; "" for none */
    char value[40];
    enum kind kind;
    const char *help;
};

/* Grown as rows come: 64 size classes of `stats items` alone are some
 * 1,800 samples. */
struct page {
    struct sample *s;
    size_t n, cap;
    bool oom; /* a sample could not be added: the page is not served */
};

static void page_add(struct page *p, const char *metric, const char *labels, const char *value,
                     enum kind kind, const char *help)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        struct sample *bigger = realloc(p->s, cap * sizeof *bigger);
        if (!bigger) {
            p->oom = true;
            return;
        }
        p->s = bigger;
        p->cap = cap;
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

static void on_settings(struct page *p, const char *name, const char *value)
{
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

static int on_settings_row(void *arg, const char *name, const char *value)
{
    on_settings(arg, name, value);
    return 0;
}

/* One `stats items` row of one class: its STATS_ITEMS metric, labelled
 * slab="<class>" and with the fixed labels the row names after it. */
static int on_items(void *arg, const struct stats_cls_sample *smp)
{
    struct page *p = arg;
    if (!smp->metric)
        return 0;
    const char *brace = strchr(smp->metric, '{');
    size_t nname = brace ? (size_t)(brace - smp->metric) : strlen(smp->metric);
    char metric[96], labels[96], value[24];
    snprintf(metric, sizeof metric, "%.*s", (int)nname, smp->metric);
    if (brace) /* {lru="hot"}: the labels between the braces */
        snprintf(labels, sizeof labels, "slab=\"%u\",%.*s", smp->cls,
                 (int)(strlen(brace) - 2), brace + 1);
    else
        snprintf(labels, sizeof labels, "slab=\"%u\"", smp->cls);
    snprintf(value, sizeof value, "%llu", (unsigned long long)smp->value);
    page_add(p, metric, labels, value, ends_with(metric, "_total") ? COUNTER : GAUGE, smp->help);
    return 0;
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
    struct page p = {0};
    struct stats_snapshot *snap = malloc(sizeof *snap);
    if (!snap)
        return -1;
    server_stats_snapshot(srv, snap);
    struct general_acc acc = {0};
    page_rows(&p, &stats_general_rows, snap, &acc);
    /* memcached counts cas in cmd_set too: the exporter's set = cmd_set - cas */
    char v[40];
    snprintf(v, sizeof v, "%.0f", acc.cmd_set - acc.cas_all);
    page_add(&p, "memcached_commands_total", "command=\"set\",status=\"hit\"", v, COUNTER,
             commands_help);
    int rc = server_settings_emit(srv, on_settings_row, &p);
    rc |= stats_items_walk(snap, on_items, &p);
    snprintf(v, sizeof v, "%llu", (unsigned long long)stats_slabs_malloced(snap));
    page_add(&p, "memcached_malloced_bytes", NULL, v, GAUGE,
             "Number of bytes of memory allocated to slab pages.");
    page_rows(&p, &stats_nodelay_rows, snap, NULL);
    page_add(&p, "memcached_up", NULL, "1", GAUGE, "Could the memcached server be reached.");
    if (p.oom)
        rc = -1;
    if (rc == 0) {
        rc = page_print(&p, out);
        rc |= page_histograms(out);
    }
    free(snap);
    free(p.s);
    return rc ? -1 : 0;
}
