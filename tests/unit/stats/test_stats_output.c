/* SPDX-License-Identifier: BSD-3-Clause */
/* `stats` family composition: memcached's names, order and formats. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reply/reply.h"
#include "settings/settings.h"
#include "stats/stats_detail.h"
#include "stats/stats_output.h"

void store_pin_release(struct store_pin *pin)
{
    (void)pin; /* stats never reference item memory */
}
bool store_pin_keep(struct store_pin *pin, bool must)
{
    (void)pin;
    (void)must;
    return true;
}
void store_pin_release_kept(struct store_pin *pin)
{
    (void)pin;
}

static char *drain(struct reply_queue *q)
{
    size_t n = reply_pending(q);
    char *s = malloc(n + 1);
    size_t got = 0;
    while (reply_pending(q) > 0) {
        struct iovec iov[64];
        int k = reply_iov(q, iov, 64);
        size_t batch = 0;
        for (int i = 0; i < k; i++) {
            memcpy(s + got, iov[i].iov_base, iov[i].iov_len);
            got += iov[i].iov_len;
            batch += iov[i].iov_len;
        }
        reply_consume(q, batch);
    }
    s[got] = '\0';
    return s;
}

/* The names of "STAT <name> <value>" lines, in order, space separated. */
static char *names(const char *text)
{
    char *out = calloc(1, strlen(text) + 1);
    for (const char *p = text; *p;) {
        const char *eol = strstr(p, "\r\n");
        assert_non_null(eol);
        assert_memory_equal(p, "STAT ", 5);
        const char *n = p + 5;
        const char *sp = memchr(n, ' ', (size_t)(eol - n));
        assert_non_null(sp);
        if (*out)
            strcat(out, " ");
        strncat(out, n, (size_t)(sp - n));
        p = eol + 2;
    }
    return out;
}

/* memcached 1.6's general stats (memcached-behaviour.md §5), no extstore,
 * TLS or proxy; rejected_connections with maxconns_fast, idle_kicks with
 * idle_timeout. */
static const char general_order[] =
    "pid uptime time version libevent pointer_size rusage_user rusage_system "
    "max_connections curr_connections total_connections rejected_connections "
    "connection_structures response_obj_oom response_obj_count response_obj_bytes "
    "read_buf_count read_buf_bytes read_buf_bytes_free read_buf_oom reserved_fds "
    "cmd_get cmd_set cmd_flush cmd_touch cmd_meta get_hits get_misses get_expired "
    "get_flushed delete_misses delete_hits incr_misses incr_hits decr_misses decr_hits "
    "cas_misses cas_hits cas_badval touch_hits touch_misses store_too_large "
    "store_no_memory auth_cmds auth_errors idle_kicks bytes_read bytes_written "
    "limit_maxbytes accepting_conns listen_disabled_num time_in_listen_disabled_us "
    "threads conn_yields hash_power_level hash_bytes hash_is_expanding "
    "slab_reassign_rescues slab_reassign_chunk_rescues slab_reassign_inline_reclaim "
    "slab_reassign_busy_items slab_reassign_busy_deletes slab_reassign_busy_nomem "
    "slab_reassign_last_busy_status slab_reassign_running slabs_moved "
    "lru_crawler_running lru_crawler_starts lru_maintainer_juggles malloc_fails "
    "log_worker_dropped log_worker_written log_watcher_skipped log_watcher_sent "
    "log_watchers unexpected_napi_ids round_robin_fallback bytes curr_items total_items "
    "slab_global_page_pool expired_unfetched evicted_unfetched evicted_active evictions "
    "reclaimed crawler_reclaimed crawler_items_checked lrutail_reflocked moves_to_cold "
    "moves_to_warm moves_within_lru direct_reclaims lru_bumps_dropped";

/* Every optional row on: maxconns_fast, idle_timeout, slab_reassign,
 * lru_crawler, lru_maintainer. */
#define ALL_SHOWN                                                                                  \
    (1u << STATS_WHEN_MAXCONNS_FAST | 1u << STATS_WHEN_IDLE_TIMEOUT |                              \
     1u << STATS_WHEN_SLAB_REASSIGN | 1u << STATS_WHEN_LRU_CRAWLER |                               \
     1u << STATS_WHEN_LRU_MAINTAINER)

static int general(const struct stats_snapshot *s, struct reply_queue *q)
{
    struct stats_emit e = stats_emit_text(q);
    return stats_rows_emit(&stats_general_rows, s, &e);
}

static void snapshot(struct stats_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->pid = 4242;
    s->uptime = 17;
    s->time = 1700000000;
    s->version = "1.6.45";
    s->libevent = "epoll";
    s->nodelay_version = "0.1.0";
    s->rusage_user.tv_sec = 1;
    s->rusage_user.tv_usec = 5;
    s->max_connections = 1024;
    s->curr_connections = 3;
    s->threads = 4;
    s->accepting_conns = 1;
    s->shown = ALL_SHOWN;
    s->t.cmd_get = 11;
    s->t.get_hits = 7;
    s->t.bytes_read = 1234567890123ull;
    s->t.total_connections = 9;
    s->t.quickacks = 5;
    s->store.limit_maxbytes = 64u << 20;
    s->store.curr_items = 2;
    s->store.bytes = 100;
    s->store.get_expired = 3;
    s->store.hash_power_level = 16;
    s->store.seg_size = 1 << 20;
    s->store.seg_used = 3;
}

static void test_general_order_and_values(void **state)
{
    (void)state;
    struct stats_snapshot s;
    snapshot(&s);
    struct reply_queue q;
    reply_init(&q);
    assert_int_equal(general(&s, &q), 0);
    char *text = drain(&q);
    char *n = names(text);
    assert_string_equal(n, general_order);
    assert_non_null(strstr(text, "STAT pid 4242\r\n"));
    assert_non_null(strstr(text, "STAT version 1.6.45\r\n"));
    assert_non_null(strstr(text, "STAT rusage_user 1.000005\r\n"));
    assert_non_null(strstr(text, "STAT pointer_size 64\r\n"));
    assert_non_null(strstr(text, "STAT cmd_get 11\r\n"));
    assert_non_null(strstr(text, "STAT get_expired 3\r\n"));
    assert_non_null(strstr(text, "STAT bytes_read 1234567890123\r\n"));
    assert_non_null(strstr(text, "STAT limit_maxbytes 67108864\r\n"));
    /* nodelay's own counters stay out of plain stats */
    assert_null(strstr(text, "quickacks"));
    free(n);
    free(text);

    /* without idle_timeout and maxconns_fast, memcached omits those two */
    s.shown &= ~(1u << STATS_WHEN_IDLE_TIMEOUT | 1u << STATS_WHEN_MAXCONNS_FAST);
    assert_int_equal(general(&s, &q), 0);
    text = drain(&q);
    assert_null(strstr(text, "idle_kicks"));
    assert_null(strstr(text, "rejected_connections"));
    free(text);
    reply_release(&q);
}


/* memcached 1.6.45 drops rows with the settings behind them: with
 * -o no_lru_crawler,no_lru_maintainer it prints 84 (measured against
 * ../shared/ref; test_stats_fields.py compares the two servers live). */
static void test_general_field_sets(void **state)
{
    (void)state;
    struct stats_snapshot s;
    snapshot(&s);
    s.shown = 1u << STATS_WHEN_MAXCONNS_FAST | 1u << STATS_WHEN_SLAB_REASSIGN;
    struct reply_queue q;
    reply_init(&q);
    assert_int_equal(general(&s, &q), 0);
    char *text = drain(&q);
    char *n = names(text);
    size_t count = 1;
    for (const char *p = n; *p; p++)
        count += *p == ' ';
    assert_int_equal(count, 84);
    static const char *const gone[] = {
        "lru_crawler_running", "lru_crawler_starts", "lru_maintainer_juggles", "evicted_active",
        "moves_to_cold", "moves_to_warm", "moves_within_lru", "direct_reclaims",
        "lru_bumps_dropped", "idle_kicks"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        assert_null(strstr(text, gone[i]));
    assert_non_null(strstr(text, "STAT slabs_moved 0\r\n"));
    free(n);
    free(text);

    /* no_slab_reassign drops the slab mover's nine */
    s.shown = 0;
    assert_int_equal(general(&s, &q), 0);
    text = drain(&q);
    assert_null(strstr(text, "slab_reassign_"));
    assert_null(strstr(text, "slabs_moved"));
    assert_null(strstr(text, "rejected_connections"));
    free(text);
    reply_release(&q);
}

/* `stats reset` reads the table's kinds: every worker counter and every
 * store counter is a COUNTER row of some table, and no gauge moves. */
static void test_reset_covers_every_counter(void **state)
{
    (void)state;
    struct stats_snapshot now, base;
    memset(&now, 0, sizeof now);
    memset(&base, 0, sizeof base);
#define SET_T(name, src, field, ...) SET_T_##src(field)
#define SET_T_WORKER(f) now.t.f = 5; base.t.f = 2;
#define SET_T_STORE(f)
#define SET_T_SNAP(f)
#define SET_T_CONST(f)
    STATS_GENERAL(SET_T)
    STATS_NODELAY(SET_T)
#define SET_S(f) now.store.f = 5; base.store.f = 2;
    STORE_STATS(SET_S)
    now.total_connections = 9;
    base.total_connections = 4;
    now.uptime = 100;
    base.uptime = 10;
    stats_snapshot_since(&now, &base);
#define CHECK_T(name, src, field, ...) CHECK_T_##src(field)
#define CHECK_T_WORKER(f) assert_int_equal(now.t.f, 3);
#define CHECK_T_STORE(f)
#define CHECK_T_SNAP(f)
#define CHECK_T_CONST(f)
    STATS_GENERAL(CHECK_T)
    STATS_NODELAY(CHECK_T)
#define CHECK_COUNTER(f) assert_int_equal(now.store.f, 3);
    STORE_COUNTERS(CHECK_COUNTER)
#define CHECK_GAUGE(f) assert_int_equal(now.store.f, 5);
    STORE_GAUGES(CHECK_GAUGE)
    assert_int_equal(now.total_connections, 5);
    assert_int_equal(now.uptime, 100); /* a CLOCK: reset leaves it */
}

/* The per-class counters reset too, as memcached's slab_stats and
 * itemstats; the class levels (number, pages) stay. */
static void test_reset_covers_class_counters(void **state)
{
    (void)state;
    struct stats_snapshot now, base;
    memset(&now, 0, sizeof now);
    memset(&base, 0, sizeof base);
    for (unsigned k = 0; k < STATS_CLASSES; k++) {
#define SET_C(f) now.t.cls[k].f = 7; base.t.cls[k].f = 3;
        STATS_CLASS_COUNTERS(SET_C)
#undef SET_C
    }
    now.cls[2] = (struct store_class_stats){.number = 9, .pages = 2, .evicted = 6,
                                            .evicted_time = 40, .reclaimed = 4};
    base.cls[2] = (struct store_class_stats){.number = 8, .pages = 2, .evicted = 5,
                                             .evicted_time = 30, .reclaimed = 4};
    now.cls[3] = (struct store_class_stats){.number = 1, .evicted = 2, .evicted_time = 50};
    base.cls[3] = (struct store_class_stats){.number = 1, .evicted = 2, .evicted_time = 50};
    stats_snapshot_since(&now, &base);
    for (unsigned k = 0; k < STATS_CLASSES; k++) {
#define CHECK_C(f) assert_int_equal(now.t.cls[k].f, 4);
        STATS_CLASS_COUNTERS(CHECK_C)
#undef CHECK_C
    }
    assert_int_equal(now.cls[2].evicted, 1);
    assert_int_equal(now.cls[2].evicted_time, 40); /* an eviction came since */
    assert_int_equal(now.cls[2].reclaimed, 0);
    assert_int_equal(now.cls[2].number, 9);
    assert_int_equal(now.cls[2].pages, 2);
    assert_int_equal(now.cls[3].evicted, 0);
    assert_int_equal(now.cls[3].evicted_time, 0); /* none since: 0, as after memcached's */
    /* every event counter of stats items (crawler_*, moves_* too) */
    memset(&now, 0, sizeof now);
    memset(&base, 0, sizeof base);
#define SET_E(f) now.cls[4].f = 7; base.cls[4].f = 3;
    STORE_CLASS_EVENTS(SET_E)
#undef SET_E
    stats_snapshot_since(&now, &base);
#define CHECK_E(f) assert_int_equal(now.cls[4].f, 4);
    STORE_CLASS_EVENTS(CHECK_E)
#undef CHECK_E
}

/* What an exporter walking the table relies on: a name once per table,
 * help on every row, strings only in INFO rows. */
static void test_table_rows(void **state)
{
    (void)state;
    const struct stats_rows *tables[] = {&stats_general_rows, &stats_nodelay_rows};
    for (size_t t = 0; t < 2; t++) {
        const struct stats_rows *rows = tables[t];
        assert_true(rows->n > 10);
        for (size_t i = 0; i < rows->n; i++) {
            const struct stats_row *r = &rows->row[i];
            assert_true(strlen(r->help) > 0);
            if (r->fmt == STATS_FMT_STR)
                assert_int_equal(r->kind, STATS_KIND_INFO);
            for (size_t j = i + 1; j < rows->n; j++)
                assert_string_not_equal(r->name, rows->row[j].name);
        }
    }
    /* 1.6.45 with idle_timeout, -Z, ssl_session_cache and ext_path set */
    assert_int_equal(stats_general_rows.n, 126);
    struct stats_snapshot s;
    snapshot(&s);
    for (size_t i = 0; i < stats_general_rows.n; i++) {
        const struct stats_row *r = &stats_general_rows.row[i];
        if (strcmp(r->name, "rusage_user") == 0)
            assert_true(stats_row_number(r, &s) > 1.0 && stats_row_number(r, &s) < 1.1);
        if (strcmp(r->name, "cmd_get") == 0)
            assert_true(stats_row_number(r, &s) == 11.0);
        if (strcmp(r->name, "pointer_size") == 0)
            assert_true(stats_row_number(r, &s) == 64.0);
    }
}

/* A Prometheus name, then optionally {labels}: what the page splits the
 * metric column into. */
static bool metric_well_formed(const char *m)
{
    size_t n = strspn(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_:0123456789");
    if (n == 0 || (m[0] >= '0' && m[0] <= '9'))
        return false;
    if (m[n] == '\0')
        return true;
    return m[n] == '{' && m[strlen(m) - 1] == '}' && strchr(m + n, '=') != NULL;
}

/* The metric column: every exporter name well formed, a counter row's
 * (other than a CLOCK the exporter types gauge) ending in _total, an INFO
 * row named only as an info metric, and no name and labels twice. */
static void test_metric_column(void **state)
{
    (void)state;
    const struct stats_rows *tables[] = {&stats_general_rows, &stats_nodelay_rows};
    size_t named = 0;
    const char *seen[128];
    for (size_t t = 0; t < 2; t++) {
        for (size_t i = 0; i < tables[t]->n; i++) {
            const struct stats_row *r = &tables[t]->row[i];
            if (!r->metric)
                continue;
            if (!metric_well_formed(r->metric))
                fail_msg("%s: metric %s", r->name, r->metric);
            const char *brace = strchr(r->metric, '{');
            size_t len = brace ? (size_t)(brace - r->metric) : strlen(r->metric);
            bool total = len > 6 && strncmp(r->metric + len - 6, "_total", 6) == 0;
            if (r->kind == STATS_KIND_COUNTER && !total)
                fail_msg("%s is a counter: %s wants _total", r->name, r->metric);
            if ((r->kind == STATS_KIND_GAUGE || r->kind == STATS_KIND_INFO) && total)
                fail_msg("%s is no counter: %s", r->name, r->metric);
            if (r->kind == STATS_KIND_INFO)
                assert_null(brace);
            for (size_t k = 0; k < named; k++)
                if (strcmp(seen[k], r->metric) == 0)
                    fail_msg("%s twice", r->metric);
            assert_true(named < sizeof seen / sizeof seen[0]);
            seen[named++] = r->metric;
        }
    }
    assert_true(named >= 40); /* memcached_exporter's vocabulary for `stats` */
}

static void test_settings_like_memcached(void **state)
{
    (void)state;
    struct settings set;
    settings_defaults(&set);
    set.port = 21150;
    SETTINGS_SET(&set, verbosity, 2);
    struct reply_queue q;
    reply_init(&q);
    assert_int_equal(stats_settings_compose(&set, &q), 0);
    char *text = drain(&q);
    /* the head of memcached 1.6.45's `stats settings` with the same flags */
    static const char head[] =
        "STAT maxbytes 67108864\r\nSTAT maxconns 1024\r\nSTAT tcpport 21150\r\n"
        "STAT udpport 0\r\nSTAT inter 127.0.0.1\r\nSTAT verbosity 2\r\nSTAT oldest 0\r\n"
        "STAT evictions on\r\nSTAT domain_socket NULL\r\nSTAT umask 700\r\n"
        "STAT shutdown_command no\r\nSTAT growth_factor 1.25\r\nSTAT chunk_size 48\r\n"
        "STAT num_threads 4\r\nSTAT num_threads_per_udp 4\r\nSTAT stat_key_prefix :\r\n"
        "STAT detail_enabled no\r\nSTAT reqs_per_event 20\r\nSTAT cas_enabled yes\r\n"
        "STAT tcp_backlog 1024\r\nSTAT binding_protocol auto-negotiate\r\n"
        "STAT auth_enabled_sasl no\r\nSTAT auth_enabled_ascii no\r\n"
        "STAT item_size_max 1048576\r\nSTAT maxconns_fast yes\r\nSTAT hashpower_init 0\r\n"
        "STAT slab_reassign yes\r\nSTAT slab_automove 1\r\nSTAT slab_automove_ratio 0.80\r\n"
        "STAT slab_automove_window 10\r\nSTAT slab_chunk_max 524288\r\nSTAT lru_crawler yes\r\n"
        "STAT lru_crawler_sleep 100\r\nSTAT lru_crawler_tocrawl 0\r\n"
        "STAT tail_repair_time 0\r\nSTAT flush_enabled yes\r\nSTAT dump_enabled yes\r\n"
        "STAT hash_algorithm murmur3\r\nSTAT lru_maintainer_thread yes\r\n"
        "STAT lru_segmented yes\r\nSTAT hot_lru_pct 20\r\nSTAT warm_lru_pct 40\r\n"
        "STAT hot_max_factor 0.20\r\nSTAT warm_max_factor 2.00\r\nSTAT temp_lru no\r\n"
        "STAT temporary_ttl 61\r\nSTAT idle_timeout 0\r\nSTAT watcher_logbuf_size 262144\r\n"
        "STAT worker_logbuf_size 65536\r\nSTAT read_buf_mem_limit 0\r\n"
        "STAT track_sizes no\r\nSTAT inline_ascii_response no\r\n";
    assert_memory_equal(text, head, strlen(head));
    assert_string_equal(text + strlen(head),
                        "STAT ext_item_size 512\r\nSTAT ext_item_age 4294967295\r\n"
                        "STAT ext_low_ttl 0\r\nSTAT ext_recache_rate 2000\r\n"
                        "STAT ext_wbuf_size 4194304\r\nSTAT ext_compact_under 0\r\n"
                        "STAT ext_drop_under 0\r\nSTAT ext_max_sleep 1000000\r\n"
                        "STAT ext_max_frag 0.80\r\nSTAT slab_automove_freeratio 0.010\r\n"
                        "STAT ext_drop_unread no\r\n"
                        "STAT ssl_enabled no\r\nSTAT ssl_chain_cert (null)\r\n"
                        "STAT ssl_key (null)\r\nSTAT ssl_verify_mode 0\r\n"
                        "STAT ssl_keyformat 1\r\nSTAT ssl_ciphers NULL\r\n"
                        "STAT ssl_ca_cert NULL\r\nSTAT ssl_wbuf_size 16384\r\n"
                        "STAT ssl_session_cache no\r\nSTAT ssl_kernel_tls no\r\n"
                        "STAT ssl_min_version tlsv1.2\r\n"
                        "STAT num_napi_ids 0\r\nSTAT memory_file (null)\r\n"
                        "STAT client_flags_size 4\r\n");
    free(text);
    reply_release(&q);
}

static void test_items_and_slabs(void **state)
{
    (void)state;
    struct stats_snapshot s;
    snapshot(&s);
    /* class 1 holds the items, class 2 none (not shown) */
    s.nclasses = 2;
    s.cls[1] = (struct store_class_stats){.chunk_size = 96, .number = 2, .pages = 1, .age = 7,
                                          .number_lru = {[STORE_LRU_HOT] = 1,
                                                         [STORE_LRU_COLD] = 1}};
    s.cls[2] = (struct store_class_stats){.chunk_size = 120};
    s.t.cls[1].hits_to_warm = 4;
    s.t.cls[1].get_hits = 4;
    s.t.cls[1].cmd_set = 3;
    struct reply_queue q;
    reply_init(&q);
    struct stats_emit e = stats_emit_text(&q);
    assert_int_equal(stats_items_compose(&s, &e), 0);
    char *text = drain(&q);
    char *n = names(text);
    assert_string_equal(n,
        "items:1:number items:1:number_hot items:1:number_warm items:1:number_cold "
        "items:1:age_hot items:1:age_warm items:1:age items:1:mem_requested items:1:evicted "
        "items:1:evicted_nonzero items:1:evicted_time items:1:outofmemory items:1:tailrepairs "
        "items:1:reclaimed items:1:expired_unfetched items:1:evicted_unfetched "
        "items:1:evicted_active items:1:crawler_reclaimed items:1:crawler_items_checked "
        "items:1:lrutail_reflocked items:1:moves_to_cold items:1:moves_to_warm "
        "items:1:moves_within_lru items:1:direct_reclaims items:1:hits_to_hot "
        "items:1:hits_to_warm items:1:hits_to_cold items:1:hits_to_temp");
    assert_non_null(strstr(text, "STAT items:1:number 2\r\n"));
    assert_non_null(strstr(text, "STAT items:1:age 7\r\n"));
    assert_non_null(strstr(text, "STAT items:1:number_hot 1\r\n"));
    assert_non_null(strstr(text, "STAT items:1:number_cold 1\r\n"));
    assert_non_null(strstr(text, "STAT items:1:hits_to_warm 4\r\n"));
    free(n);
    free(text);
    /* -o temporary_ttl: number_temp after number_cold, as 1.6.45 */
    s.shown |= 1u << STATS_WHEN_TEMP_LRU;
    assert_int_equal(stats_items_compose(&s, &e), 0);
    text = drain(&q);
    assert_non_null(strstr(text, "STAT items:1:number_cold 1\r\nSTAT items:1:number_temp 0\r\n"));
    free(text);
    s.shown &= ~(1u << STATS_WHEN_TEMP_LRU);
    /* -o no_lru_maintainer: 1.6.45's 14 rows */
    s.shown &= ~(1u << STATS_WHEN_LRU_MAINTAINER);
    assert_int_equal(stats_items_compose(&s, &e), 0);
    text = drain(&q);
    n = names(text);
    assert_string_equal(n,
        "items:1:number items:1:age items:1:mem_requested items:1:evicted "
        "items:1:evicted_nonzero items:1:evicted_time items:1:outofmemory items:1:tailrepairs "
        "items:1:reclaimed items:1:expired_unfetched items:1:evicted_unfetched "
        "items:1:crawler_reclaimed items:1:crawler_items_checked items:1:lrutail_reflocked");
    free(n);
    free(text);
    s.shown = ALL_SHOWN;

    assert_int_equal(stats_slabs_compose(&s, &e), 0);
    text = drain(&q);
    n = names(text);
    assert_string_equal(n, "1:chunk_size 1:chunks_per_page 1:total_pages 1:total_chunks "
                           "1:used_chunks 1:free_chunks 1:free_chunks_end 1:get_hits 1:cmd_set "
                           "1:delete_hits 1:incr_hits 1:decr_hits 1:cas_hits 1:cas_badval "
                           "1:touch_hits active_slabs total_malloced");
    assert_non_null(strstr(text, "STAT total_malloced 3145728\r\n"));
    assert_non_null(strstr(text, "STAT 1:used_chunks 2\r\n"));
    assert_non_null(strstr(text, "STAT 1:get_hits 4\r\nSTAT 1:cmd_set 3\r\n"));
    assert_non_null(strstr(text, "STAT 1:total_pages 1\r\n"));
    free(n);
    free(text);
    /* the T_MEMD_INITIAL_MALLOC hook's bytes count in it, as in memcached */
    s.store.initial_malloced = ((uint64_t)1 << 32) + 32;
    assert_int_equal(stats_slabs_compose(&s, &e), 0);
    text = drain(&q);
    assert_non_null(strstr(text, "STAT total_malloced 4298113056\r\n"));
    free(text);
    s.store.initial_malloced = 0;

    /* a class whose items are gone while a segment still holds their
     * bytes keeps its slab block, used_chunks 0, as memcached keeps an
     * emptied class's pages; stats items leaves it out, as memcached */
    s.cls[2] = (struct store_class_stats){.chunk_size = 120, .pages = 1};
    assert_int_equal(stats_items_compose(&s, &e), 0);
    text = drain(&q);
    assert_null(strstr(text, "items:2:"));
    free(text);
    assert_int_equal(stats_slabs_compose(&s, &e), 0);
    text = drain(&q);
    assert_non_null(strstr(text, "STAT 2:total_pages 1\r\n"));
    assert_non_null(strstr(text, "STAT 2:used_chunks 0\r\n"));
    assert_non_null(strstr(text, "STAT 2:free_chunks 8738\r\n")); /* 1 MiB / 120 */
    assert_non_null(strstr(text, "STAT active_slabs 2\r\n"));
    free(text);

    /* an empty cache: no class lines, as memcached */
    memset(&s.store, 0, sizeof s.store);
    memset(s.cls, 0, sizeof s.cls);
    assert_int_equal(stats_items_compose(&s, &e), 0);
    assert_int_equal(reply_pending(&q), 0);
    assert_int_equal(stats_slabs_compose(&s, &e), 0);
    text = drain(&q);
    assert_string_equal(text, "STAT active_slabs 0\r\nSTAT total_malloced 0\r\n");
    free(text);
    reply_release(&q);
}

/* What stats_items_walk hands the metrics page: the rows and values
 * `stats items` prints, in its order, each with its /metrics name from
 * STATS_ITEMS; only a CONST row may go without one. */
struct walked {
    char text[4096];
    size_t len;
    int n, named;
};

static int walk_row(void *ctx, const struct stats_cls_sample *smp)
{
    struct walked *w = ctx;
    w->len += (size_t)snprintf(w->text + w->len, sizeof w->text - w->len,
                               "STAT items:%u:%s %llu\r\n", smp->cls, smp->name,
                               (unsigned long long)smp->value);
    w->n++;
    if (smp->metric) {
        w->named++;
        assert_non_null(smp->help);
        assert_int_equal(strncmp(smp->metric, "memcached_slab_", 15), 0);
    } else {
        /* a real per-class row names its metric, but for the one
         * memcached_exporter does not export */
        assert_true(smp->constant || strcmp(smp->name, "crawler_items_checked") == 0);
    }
    return 0;
}

static void test_items_walk_names_every_metric(void **state)
{
    (void)state;
    struct stats_snapshot s;
    snapshot(&s);
    s.nclasses = 3;
    s.cls[1] = (struct store_class_stats){.chunk_size = 96, .number = 2, .pages = 1, .age = 7};
    s.cls[3] = (struct store_class_stats){.chunk_size = 152, .number = 1, .pages = 1,
                                          .evicted = 5};
    s.t.cls[3].hits_to_cold = 9;
    struct walked w = {0};
    assert_int_equal(stats_items_walk(&s, walk_row, &w), 0);
    /* byte for byte what the text form prints */
    struct reply_queue q;
    reply_init(&q);
    struct stats_emit e = stats_emit_text(&q);
    assert_int_equal(stats_items_compose(&s, &e), 0);
    char *text = drain(&q);
    assert_string_equal(w.text, text);
    free(text);
    reply_release(&q);
    assert_int_equal(w.n % 2, 0); /* two classes, the same rows each */
    assert_true(w.named > 0 && w.named < w.n);
    assert_non_null(strstr(w.text, "STAT items:3:evicted 5\r\n"));
    assert_non_null(strstr(w.text, "STAT items:3:hits_to_cold 9\r\n"));
}

/* What stats_slabs_walk hands the metrics page: the class rows `stats
 * slabs` prints (its totals after them are not class rows), each named but
 * cmd_set, whose set the page derives. */
static int walk_slab_row(void *ctx, const struct stats_cls_sample *smp)
{
    struct walked *w = ctx;
    w->len += (size_t)snprintf(w->text + w->len, sizeof w->text - w->len, "STAT %u:%s %llu\r\n",
                               smp->cls, smp->name, (unsigned long long)smp->value);
    w->n++;
    if (smp->metric) {
        w->named++;
        assert_non_null(smp->help);
        assert_int_equal(strncmp(smp->metric, "memcached_slab_", 15), 0);
    } else {
        assert_string_equal(smp->name, "cmd_set");
    }
    return 0;
}

static void test_slabs_walk_names_every_metric(void **state)
{
    (void)state;
    struct stats_snapshot s;
    snapshot(&s);
    s.nclasses = 3;
    s.cls[1] = (struct store_class_stats){.chunk_size = 96, .number = 2, .pages = 1};
    s.cls[2] = (struct store_class_stats){.chunk_size = 120, .number = 0, .pages = 1};
    s.t.cls[1].get_hits = 4;
    struct walked w = {0};
    assert_int_equal(stats_slabs_walk(&s, walk_slab_row, &w), 0);
    struct reply_queue q;
    reply_init(&q);
    struct stats_emit e = stats_emit_text(&q);
    assert_int_equal(stats_slabs_compose(&s, &e), 0);
    char *text = drain(&q);
    /* the text form is the walk and then the totals */
    assert_int_equal(strncmp(text, w.text, w.len), 0);
    assert_int_equal(strncmp(text + w.len, "STAT active_slabs 2\r\n", 21), 0);
    free(text);
    reply_release(&q);
    assert_int_equal(w.n % 2, 0); /* two classes with pages, the same rows each */
    assert_int_equal(w.named, w.n - 2);
    assert_non_null(strstr(w.text, "STAT 1:get_hits 4\r\n"));
    assert_non_null(strstr(w.text, "STAT 2:used_chunks 0\r\n"));
}

static void test_nodelay_stats(void **state)
{
    (void)state;
    struct stats_snapshot s;
    snapshot(&s);
    struct reply_queue q;
    reply_init(&q);
    struct stats_emit e = stats_emit_text(&q);
    assert_int_equal(stats_rows_emit(&stats_nodelay_rows, &s, &e), 0);
    char *text = drain(&q);
    assert_non_null(strstr(text, "STAT nodelay_version 0.1.0\r\n"));
    assert_non_null(strstr(text, "STAT protocol_version 1.6.45\r\n"));
    assert_non_null(strstr(text, "STAT quickacks 5\r\n"));
    assert_non_null(strstr(text, "STAT nodelay_failures 0\r\n"));
    free(text);
    reply_release(&q);
}

static void test_detail(void **state)
{
    (void)state;
    stats_detail_clear();
    stats_detail_set_delimiter(':');
    stats_detail_record("user:1", 6, 'g', true);
    stats_detail_record("user:2", 6, 'g', false);
    stats_detail_record("user:2", 6, 's', false);
    stats_detail_record("nodelim", 7, 's', false);
    stats_detail_record("user:3", 6, 'd', false);
    struct reply_queue q;
    reply_init(&q);
    assert_int_equal(stats_detail_dump(&q), 0);
    char *text = drain(&q);
    assert_string_equal(text, "PREFIX user get 2 hit 1 set 1 del 1\r\nEND\r\n");
    free(text);
    stats_detail_clear();
    assert_int_equal(stats_detail_dump(&q), 0);
    text = drain(&q);
    assert_string_equal(text, "END\r\n");
    free(text);
    reply_release(&q);
}

/* `stats extstore`: memcached's four rows a page, and the same pages summed
 * for /metrics: per bucket, free, and by fill (a page at a tenth's bound
 * is in that tenth's bucket). */
static void test_extstore_rows_and_sum(void **state)
{
    (void)state;
    const uint64_t sz = 2u << 20;
    const struct store_flash_page pg[] = {
        {.version = 0, .size = sz},                                        /* free */
        {.version = 1, .bytes = sz, .bucket = 0, .size = sz},              /* full: le 1 */
        {.version = 2, .bytes = 0, .bucket = 0, .size = sz},               /* emptied: le 0.1 */
        {.version = 3, .bytes = sz / 10, .bucket = 1, .size = sz},         /* at 0.1 */
        {.version = 4, .bytes = sz / 10 + 1, .bucket = 3, .size = sz},     /* just past: 0.2 */
        {.version = 0, .size = sz},                                        /* free */
        {.version = 5, .bytes = sz * 7 / 10 - 1, .bucket = 0, .size = sz}, /* 0.7 */
    };
    const size_t n = sizeof pg / sizeof pg[0];
    struct reply_queue q;
    reply_init(&q);
    struct stats_emit e = stats_emit_text(&q);
    assert_int_equal(stats_extstore_compose(pg, 2, &e), 0);
    char *text = drain(&q);
    assert_string_equal(text, "STAT 0:version 0\r\nSTAT 0:bytes 0\r\nSTAT 0:bucket 0\r\n"
                              "STAT 0:free_bucket 0\r\nSTAT 1:version 1\r\nSTAT 1:bytes 2097152\r\n"
                              "STAT 1:bucket 0\r\nSTAT 1:free_bucket 0\r\n");
    free(text);
    reply_release(&q);

    struct stats_extstore_sum sum;
    stats_extstore_sum(pg, n, &sum);
    assert_int_equal(sum.free_pages, 2);
    assert_int_equal(sum.written, 5);
    assert_int_equal(sum.pages[0], 3);
    assert_int_equal(sum.pages[1], 1);
    assert_int_equal(sum.pages[2], 0);
    assert_int_equal(sum.pages[3], 1);
    assert_int_equal(sum.bytes[0], sz + sz * 7 / 10 - 1);
    assert_int_equal(sum.bytes[1], sz / 10);
    assert_int_equal(sum.bytes[3], sz / 10 + 1);
    const uint64_t fill[STATS_EXTSTORE_FILL_STEPS] = {2, 1, 0, 0, 0, 0, 1, 0, 0, 1};
    assert_memory_equal(sum.fill, fill, sizeof fill);
    double want = 0;
    for (size_t i = 0; i < n; i++)
        want += pg[i].version ? (double)pg[i].bytes / (double)sz : 0;
    assert_true(sum.fill_sum > want - 1e-9 && sum.fill_sum < want + 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_general_order_and_values),
        cmocka_unit_test(test_general_field_sets),
        cmocka_unit_test(test_reset_covers_every_counter),
        cmocka_unit_test(test_reset_covers_class_counters),
        cmocka_unit_test(test_table_rows),
        cmocka_unit_test(test_metric_column),
        cmocka_unit_test(test_settings_like_memcached),
        cmocka_unit_test(test_items_and_slabs),
        cmocka_unit_test(test_items_walk_names_every_metric),
        cmocka_unit_test(test_slabs_walk_names_every_metric),
        cmocka_unit_test(test_nodelay_stats),
        cmocka_unit_test(test_detail),
        cmocka_unit_test(test_extstore_rows_and_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
