#include "stats/stats_output.h"

#include <string.h>

#include "net/tls.h"
#include "reply/reply.h"
#include "settings.h"
#include "watch/watch.h"

#define U(name, v) rc |= reply_printf(out, "STAT %s %llu\r\n", name, (unsigned long long)(v))
#define S(name, v) rc |= reply_printf(out, "STAT %s %s\r\n", name, v)
#define ZERO(name) rc |= reply_str(out, "STAT " name " 0\r\n")

int stats_general_compose(const struct stats_snapshot *s, struct reply_queue *out)
{
    int rc = 0;
    const struct stats_thread *t = &s->t;
    const struct store_stats *st = &s->store;
    U("pid", s->pid);
    U("uptime", s->uptime);
    rc |= reply_printf(out, "STAT time %lld\r\n", (long long)s->time);
    S("version", s->version);
    S("libevent", s->event_backend);
    U("pointer_size", sizeof(void *) * 8);
    rc |= reply_printf(out, "STAT rusage_user %ld.%06ld\r\n", (long)s->rusage_user.tv_sec,
                       (long)s->rusage_user.tv_usec);
    rc |= reply_printf(out, "STAT rusage_system %ld.%06ld\r\n", (long)s->rusage_system.tv_sec,
                       (long)s->rusage_system.tv_usec);
    U("max_connections", s->max_connections);
    U("curr_connections", s->curr_connections);
    U("total_connections", t->total_connections);
    if (s->show_rejected)
        U("rejected_connections", t->rejected_connections);
    U("connection_structures", s->connection_structures);
    ZERO("response_obj_oom");
    U("response_obj_count", s->curr_connections);
    U("response_obj_bytes", s->reply_bytes);
    U("read_buf_count", s->read_buf_count);
    U("read_buf_bytes", s->read_buf_bytes);
    ZERO("read_buf_bytes_free");
    ZERO("read_buf_oom");
    U("reserved_fds", s->reserved_fds);
    U("cmd_get", t->cmd_get);
    U("cmd_set", t->cmd_set);
    U("cmd_flush", t->cmd_flush);
    U("cmd_touch", t->cmd_touch);
    U("cmd_meta", t->cmd_meta);
    U("get_hits", t->get_hits);
    U("get_misses", t->get_misses);
    U("get_expired", st->get_expired);
    U("get_flushed", st->get_flushed);
    U("delete_misses", t->delete_misses);
    U("delete_hits", t->delete_hits);
    U("incr_misses", t->incr_misses);
    U("incr_hits", t->incr_hits);
    U("decr_misses", t->decr_misses);
    U("decr_hits", t->decr_hits);
    U("cas_misses", t->cas_misses);
    U("cas_hits", t->cas_hits);
    U("cas_badval", t->cas_badval);
    U("touch_hits", t->touch_hits);
    U("touch_misses", t->touch_misses);
    U("store_too_large", t->store_too_large);
    U("store_no_memory", t->store_no_memory);
    U("auth_cmds", t->auth_cmds);
    U("auth_errors", t->auth_errors);
    if (s->show_idle_kicks)
        U("idle_kicks", t->idle_kicks);
    U("bytes_read", t->bytes_read);
    U("bytes_written", t->bytes_written);
    U("limit_maxbytes", st->limit_maxbytes);
    U("accepting_conns", s->accepting_conns);
    U("listen_disabled_num", s->listen_disabled_num);
    ZERO("time_in_listen_disabled_us");
    U("threads", s->threads);
    U("conn_yields", t->conn_yields);
    U("hash_power_level", st->hash_power_level);
    U("hash_bytes", st->hash_bytes);
    U("hash_is_expanding", st->hash_is_expanding);
    /* memcached's slab mover: nodelay has no slabs to move */
    ZERO("slab_reassign_rescues");
    ZERO("slab_reassign_chunk_rescues");
    ZERO("slab_reassign_inline_reclaim");
    ZERO("slab_reassign_busy_items");
    ZERO("slab_reassign_busy_deletes");
    ZERO("slab_reassign_busy_nomem");
    ZERO("slab_reassign_last_busy_status");
    ZERO("slab_reassign_running");
    ZERO("slabs_moved");
    ZERO("lru_crawler_running");
    ZERO("lru_crawler_starts");
    ZERO("lru_maintainer_juggles");
    ZERO("malloc_fails");
    struct watch_counters wc;
    watch_counters_get(&wc);
    U("log_worker_dropped", wc.log_worker_dropped);
    U("log_worker_written", wc.log_worker_written);
    U("log_watcher_skipped", wc.log_watcher_skipped);
    U("log_watcher_sent", wc.log_watcher_sent);
    U("log_watchers", wc.log_watchers);
    if (tls_enabled()) {
        if (tls_session_cache())
            U("ssl_new_sessions", t->ssl_new_sessions);
        U("ssl_handshake_errors", t->ssl_handshake_errors);
        U("ssl_proto_errors", t->ssl_proto_errors);
        U("time_since_server_cert_refresh", tls_cert_age());
    }
    ZERO("unexpected_napi_ids");
    ZERO("round_robin_fallback");
    U("bytes", st->bytes);
    U("curr_items", st->curr_items);
    U("total_items", st->total_items);
    ZERO("slab_global_page_pool");
    U("expired_unfetched", st->expired_unfetched);
    U("evicted_unfetched", st->evicted_unfetched);
    U("evicted_active", st->evicted_active);
    U("evictions", st->evictions);
    U("reclaimed", st->reclaimed);
    ZERO("crawler_reclaimed");
    ZERO("crawler_items_checked");
    ZERO("lrutail_reflocked");
    ZERO("moves_to_cold");
    ZERO("moves_to_warm");
    ZERO("moves_within_lru");
    ZERO("direct_reclaims");
    ZERO("lru_bumps_dropped");
    return rc ? -1 : 0;
}

int stats_items_compose(const struct stats_snapshot *s, struct reply_queue *out)
{
    const struct store_stats *st = &s->store;
    if (st->curr_items == 0)
        return 0;
    int rc = 0;
#define ITEM(field, v) rc |= reply_printf(out, "STAT items:1:%s %llu\r\n", field, (unsigned long long)(v))
    ITEM("number", st->curr_items);
    ITEM("number_hot", 0);
    ITEM("number_warm", 0);
    ITEM("number_cold", st->curr_items);
    ITEM("age_hot", 0);
    ITEM("age_warm", 0);
    ITEM("age", 0);
    ITEM("mem_requested", st->bytes);
    ITEM("evicted", st->evictions);
    ITEM("evicted_nonzero", 0);
    ITEM("evicted_time", 0);
    ITEM("outofmemory", s->t.store_no_memory);
    ITEM("tailrepairs", 0);
    ITEM("reclaimed", st->reclaimed);
    ITEM("expired_unfetched", st->expired_unfetched);
    ITEM("evicted_unfetched", st->evicted_unfetched);
    ITEM("evicted_active", st->evicted_active);
    ITEM("crawler_reclaimed", 0);
    ITEM("crawler_items_checked", 0);
    ITEM("lrutail_reflocked", 0);
    ITEM("moves_to_cold", 0);
    ITEM("moves_to_warm", 0);
    ITEM("moves_within_lru", 0);
    ITEM("direct_reclaims", 0);
    ITEM("hits_to_hot", 0);
    ITEM("hits_to_warm", 0);
    ITEM("hits_to_cold", s->t.get_hits);
    ITEM("hits_to_temp", 0);
#undef ITEM
    return rc ? -1 : 0;
}

int stats_slabs_compose(const struct stats_snapshot *s, struct reply_queue *out)
{
    const struct store_stats *st = &s->store;
    int rc = 0;
    uint64_t active = st->seg_used > 0 ? 1 : 0;
    if (active) {
#define SLAB(field, v) rc |= reply_printf(out, "STAT 1:%s %llu\r\n", field, (unsigned long long)(v))
        SLAB("chunk_size", st->seg_size);
        SLAB("chunks_per_page", 1);
        SLAB("total_pages", st->seg_used);
        SLAB("total_chunks", st->seg_used);
        SLAB("used_chunks", st->seg_used);
        SLAB("free_chunks", 0);
        SLAB("free_chunks_end", 0);
        SLAB("get_hits", s->t.get_hits);
        SLAB("cmd_set", s->t.cmd_set);
        SLAB("delete_hits", s->t.delete_hits);
        SLAB("incr_hits", s->t.incr_hits);
        SLAB("decr_hits", s->t.decr_hits);
        SLAB("cas_hits", s->t.cas_hits);
        SLAB("cas_badval", s->t.cas_badval);
        SLAB("touch_hits", s->t.touch_hits);
#undef SLAB
    }
    U("active_slabs", active);
    U("total_malloced", st->seg_used * st->seg_size);
    return rc ? -1 : 0;
}

int stats_nodelay_compose(const struct stats_snapshot *s, const char *nodelay_version,
                          struct reply_queue *out)
{
    int rc = 0;
    const struct stats_thread *t = &s->t;
    const struct store_stats *st = &s->store;
    S("nodelay_version", nodelay_version);
    S("protocol_version", s->version);
    S("event_backend", s->event_backend);
    /* nodelay's own worker counters: the rows after memcached's in stats.h */
    U("read_calls", t->read_calls);
    U("write_calls", t->write_calls);
    U("direct_reads", t->direct_reads);
    U("quickacks", t->quickacks);
    U("slow_reader_kills", t->slow_reader_kills);
    U("nodelay_failures", t->nodelay_failures);
    U("reply_queue_bytes", s->reply_bytes);
    U("read_buffer_bytes", s->read_buf_bytes);
    U("index_bytes", st->hash_bytes);
    U("seg_size", st->seg_size);
    U("seg_total", st->seg_total);
    U("seg_used", st->seg_used);
    U("seg_evicted", st->seg_evicted);
    U("seg_expired", st->seg_expired);
    U("items_reinserted", st->items_reinserted);
    U("dead_bytes", st->dead_bytes);
    return rc ? -1 : 0;
}
