/* SPDX-License-Identifier: BSD-3-Clause */
/* The /metrics page: the counters table (stats/stats_table.h) in the
 * Prometheus text format.
 *
 * It walks the same rows `stats`, `stats nodelay`, `stats items` and
 * `stats settings` print, over a snapshot the server takes without any
 * worker's lock, so a row added to a table shows up here with no second
 * list. A row that names memcached_exporter's metric (its metric column)
 * is served under that name, labels and help, so the exporter's dashboards
 * work unchanged; every other numeric `stats` and `stats nodelay` row is
 * nodelay_<name> with the row's own kind and help. What no row prints is
 * here alone: the exporter's set (cmd_set less the cas commands),
 * memcached_malloced_bytes (`stats slabs` total_malloced), memcached_up and
 * the service-time histograms.
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
#include "server/server_ops.h"
#include "stats/stats_output.h"
#include "stats/stats_table.h"

enum kind { GAUGE, COUNTER };

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

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* nodelay_<field>[_total], in base units (a field in _us or _ms becomes
 * _seconds, the caller scaling the value), as promtool's lint asks. A row
 * whose name would not make a good metric name this way (no unit, nodelay_
 * twice, a gauge ending in a counter's or histogram's suffix) names its
 * metric in the table instead (stats_table.h), and test_metrics.py checks
 * every name on the page for it. */
static void nodelay_name(char *out, size_t cap, const char *field, bool counter)
{
    char base[80];
    snprintf(base, sizeof base, "%s", field);
    if ((ends_with(base, "_us") || ends_with(base, "_ms")) && strlen(base) + 5 < sizeof base)
        strcpy(base + strlen(base) - 3, "_seconds");
    snprintf(out, cap, counter ? "nodelay_%s_total" : "nodelay_%s", base);
}

/* A metric named "name" or "name{labels}" (a metric column's form), with
 * the labels `pre` ahead of its own; a counter exactly when the name ends
 * in _total. */
static void page_add_named(struct page *p, const char *named, const char *pre, const char *value,
                           const char *help)
{
    const char *brace = strchr(named, '{');
    size_t nname = brace ? (size_t)(brace - named) : strlen(named);
    char metric[96], labels[96];
    snprintf(metric, sizeof metric, "%.*s", (int)nname, named);
    if (brace) /* {lru="hot"}: the labels between the braces */
        snprintf(labels, sizeof labels, "%s%s%.*s", pre, *pre ? "," : "",
                 (int)(strlen(brace) - 2), brace + 1);
    else
        snprintf(labels, sizeof labels, "%s", pre);
    page_add(p, metric, labels, value, ends_with(metric, "_total") ? COUNTER : GAUGE, help);
}

/* One row of `stats` or `stats nodelay`: under its metric when it names
 * one, else nodelay_<name> with the row's kind (a CLOCK only grows, so it
 * is a counter too) and help. */
static void on_row(struct page *p, const struct stats_row *r, const char *value)
{
    if (r->metric && r->kind == STATS_KIND_INFO) {
        /* an info metric: 1, the text in a label named after the row */
        char labels[96];
        snprintf(labels, sizeof labels, "%s=\"%.80s\"", r->name, value);
        page_add(p, r->metric, labels, "1", GAUGE, r->help);
        return;
    }
    if (r->kind == STATS_KIND_INFO || !numeric(value))
        return;
    if (r->metric) {
        page_add_named(p, r->metric, "", value, r->help);
        return;
    }
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

static void page_rows(struct page *p, const struct stats_rows *rows, const struct stats_snapshot *snap)
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
        on_row(p, r, value);
    }
}

/* memcached counts cas in cmd_set: memcached_exporter's set is cmd_set less
 * the cas commands (never below 0, as a counter). */
static void page_set_commands(struct page *p, const struct stats_snapshot *snap)
{
    const struct stats_thread *t = &snap->t;
    uint64_t cas = t->cas_hits + t->cas_misses + t->cas_badval;
    char v[24];
    snprintf(v, sizeof v, "%llu", (unsigned long long)(t->cmd_set > cas ? t->cmd_set - cas : 0));
    page_add_named(p, STATS_COMMAND("set", "hit"), "", v, STATS_HELP_COMMANDS);
}

/* One `stats settings` row the exporter exports; yes/no as 1/0. */
static int on_setting(void *arg, const char *metric, const char *help, const char *value)
{
    if (strcmp(value, "yes") == 0)
        value = "1";
    else if (strcmp(value, "no") == 0)
        value = "0";
    if (numeric(value))
        page_add_named(arg, metric, "", value, help);
    return 0;
}

/* One `stats items` row of one class: its STATS_ITEMS metric, labelled
 * slab="<class>" and with the fixed labels the row names after it. */
static int on_items(void *arg, const struct stats_cls_sample *smp)
{
    if (!smp->metric)
        return 0;
    char slab[24], value[24];
    snprintf(slab, sizeof slab, "slab=\"%u\"", smp->cls);
    snprintf(value, sizeof value, "%llu", (unsigned long long)smp->value);
    page_add_named(arg, smp->metric, slab, value, smp->help);
    return 0;
}

/* One `stats slabs` row of one class: its STATS_SLABS metric, labelled
 * slab="<class>"; the classes seen are noted for page_slab_sets. */
struct slabs_walk {
    struct page *p;
    bool seen[STATS_CLASSES];
};

static int on_slabs(void *arg, const struct stats_cls_sample *smp)
{
    struct slabs_walk *w = arg;
    if (smp->cls < STATS_CLASSES)
        w->seen[smp->cls] = true;
    return on_items(w->p, smp);
}

/* The exporter's per-class set, as page_set_commands: cmd_set less the cas
 * commands of the class (never below 0: cas counts in the old item's class,
 * its set in the new one's). */
static void page_slab_sets(struct page *p, const struct slabs_walk *w,
                           const struct stats_snapshot *snap)
{
    for (unsigned k = 0; k < STATS_CLASSES; k++) {
        if (!w->seen[k])
            continue;
        const struct stats_class_counts *c = &snap->t.cls[k];
        uint64_t cas = c->cas_hits + c->cas_badval;
        char slab[24], v[24];
        snprintf(slab, sizeof slab, "slab=\"%u\"", k);
        snprintf(v, sizeof v, "%llu", (unsigned long long)(c->cmd_set > cas ? c->cmd_set - cas : 0));
        page_add_named(p, STATS_SLAB_COMMAND("set", "hit"), slab, v, STATS_HELP_SLAB_COMMANDS);
    }
}

/* Names the page served before they followed Prometheus' naming (old, new),
 * served beside the new ones for one release so that dashboards and alerts
 * can move (docs/observability.md "Prometheus endpoint"); then this table goes. */
#define PAGE_RENAMED(old, now) {old, now, "Deprecated: renamed " now "; this name goes in the next release."}
static const struct {
    const char *old, *now, *help;
} page_renamed[] = {
    PAGE_RENAMED("nodelay_nodelay_failures_total", "nodelay_tcp_nodelay_failures_total"),
    PAGE_RENAMED("nodelay_seg_total_value", "nodelay_seg_limit"),
    PAGE_RENAMED("nodelay_seg_size", "nodelay_seg_size_bytes"),
    PAGE_RENAMED("nodelay_read_buf_count_value", "nodelay_read_buffers"),
    PAGE_RENAMED("nodelay_read_buf_bytes_free", "nodelay_read_buf_free_bytes"),
    PAGE_RENAMED("nodelay_response_obj_count_value", "nodelay_response_objects"),
    PAGE_RENAMED("nodelay_upload_limit", "nodelay_upload_limit_bytes"),
    PAGE_RENAMED("nodelay_time_since_server_cert_refresh", "nodelay_server_cert_age_seconds"),
};
#undef PAGE_RENAMED

static void page_old_names(struct page *p)
{
    size_t n = p->n; /* the samples added here are not looked at again */
    for (size_t k = 0; k < sizeof page_renamed / sizeof page_renamed[0]; k++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(p->s[i].metric, page_renamed[k].now) == 0) {
                struct sample now = p->s[i]; /* page_add may move p->s */
                page_add(p, page_renamed[k].old, now.labels, now.value, now.kind,
                         page_renamed[k].help);
            }
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

/* One gauge per write bucket, labelled bucket="<bucket>". */
static void page_ext_buckets(struct page *p, const char *metric, const char *help,
                             const uint64_t *by_bucket)
{
    static const unsigned buckets[] = {
#define PAGE_EXT_BUCKET(b) b,
        STATS_EXTSTORE_BUCKETS(PAGE_EXT_BUCKET)
#undef PAGE_EXT_BUCKET
    };
    for (size_t i = 0; i < sizeof buckets / sizeof buckets[0]; i++) {
        char label[24], v[24];
        snprintf(label, sizeof label, "bucket=\"%u\"", buckets[i]);
        snprintf(v, sizeof v, "%llu", (unsigned long long)by_bucket[buckets[i]]);
        page_add(p, metric, label, v, GAUGE, help);
    }
}

/* `stats extstore` summed over the pages (stats_table_extstore.h): a page
 * label would make 64k series at 64 GB of flash in 4 MB pages. Returns whether
 * there is a flash tier, or -1. */
static int page_extstore(struct page *p, struct server *srv, struct stats_extstore_sum *sum)
{
    struct store_flash_page *pg;
    size_t n;
    if (server_extstore_pages(srv, &pg, &n) != 0)
        return -1;
    stats_extstore_sum(pg, n, sum);
    free(pg);
    if (!n)
        return 0;
    char v[24];
#define PAGE_EXT_BY(field, metric, help) page_ext_buckets(p, metric, help, sum->field);
    STATS_EXTSTORE_BY_BUCKET(PAGE_EXT_BY)
#undef PAGE_EXT_BY
#define PAGE_EXT_TOTAL(field, metric, help)                                                        \
    snprintf(v, sizeof v, "%llu", (unsigned long long)sum->field);                                 \
    page_add(p, metric, NULL, v, GAUGE, help);
    STATS_EXTSTORE_TOTALS(PAGE_EXT_TOTAL)
#undef PAGE_EXT_TOTAL
    return 1;
}

/* The written pages by fill, a histogram (page_print has no histograms). */
static int page_extstore_fill(const struct stats_extstore_sum *sum, struct reply_queue *out)
{
    const char *m = STATS_EXTSTORE_FILL_METRIC;
    int rc = reply_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", m, STATS_EXTSTORE_FILL_HELP, m);
    uint64_t cum = 0;
    for (int k = 0; k < STATS_EXTSTORE_FILL_STEPS; k++) {
        cum += sum->fill[k];
        rc |= reply_printf(out, "%s_bucket{le=\"%g\"} %llu\n", m,
                           (double)(k + 1) / STATS_EXTSTORE_FILL_STEPS, (unsigned long long)cum);
    }
    rc |= reply_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", m,
                       (unsigned long long)sum->written, m, sum->fill_sum, m,
                       (unsigned long long)sum->written);
    return rc;
}

int metrics_compose(struct server *srv, struct reply_queue *out)
{
    struct page p = {0};
    struct stats_snapshot *snap = malloc(sizeof *snap);
    if (!snap)
        return -1;
    server_stats_snapshot(srv, snap);
    page_rows(&p, &stats_general_rows, snap);
    page_set_commands(&p, snap);
    int rc = server_settings_metrics(srv, on_setting, &p);
    rc |= stats_items_walk(snap, on_items, &p);
    struct slabs_walk sw = {.p = &p};
    rc |= stats_slabs_walk(snap, on_slabs, &sw);
    page_slab_sets(&p, &sw, snap);
    char v[40];
    snprintf(v, sizeof v, "%llu", (unsigned long long)stats_slabs_malloced(snap));
    page_add(&p, "memcached_malloced_bytes", NULL, v, GAUGE,
             "Number of bytes of memory allocated to slab pages.");
    page_rows(&p, &stats_nodelay_rows, snap);
    struct stats_extstore_sum ext;
    int flash = page_extstore(&p, srv, &ext);
    if (flash < 0)
        rc = -1;
    page_add(&p, "memcached_up", NULL, "1", GAUGE, "Could the memcached server be reached.");
    page_old_names(&p);
    if (p.oom)
        rc = -1;
    if (rc == 0) {
        rc = page_print(&p, out);
        rc |= page_histograms(out);
        if (flash > 0)
            rc |= page_extstore_fill(&ext, out);
    }
    free(snap);
    free(p.s);
    return rc ? -1 : 0;
}
