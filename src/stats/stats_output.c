#include "stats/stats_output.h"

#include <string.h>

#include "settings.h"

/* Each group's rows go to the emitter; an error only stops the caller. */
#define U(name, v) rc |= stats_emit_u64(out, name, (uint64_t)(v))
#define S(name, v) rc |= stats_emit_str(out, name, v)
#define F(name, ...) rc |= stats_emitf(out, name, __VA_ARGS__)
#define ZERO(name) rc |= stats_emit_str(out, name, "0")

static const char *yes_no(bool b)
{
    return b ? "yes" : "no";
}

int stats_settings_compose(const struct settings *s, const struct stats_emit *out)
{
    int rc = 0;
    U("maxbytes", s->maxbytes);
    U("maxconns", s->maxconns);
    F("tcpport", "%d", s->port);
    U("udpport", s->udpport);
    S("inter", s->inter ? s->inter : "NULL");
    U("verbosity", __atomic_load_n(&s->verbosity, __ATOMIC_RELAXED));
    ZERO("oldest");
    S("evictions", s->evictions ? "on" : "off");
    S("domain_socket", s->domain_socket ? s->domain_socket : "NULL");
    F("umask", "%o", (unsigned)s->umask);
    S("shutdown_command", yes_no(s->shutdown_command));
    F("growth_factor", "%.2f", s->growth_factor);
    U("chunk_size", s->chunk_size);
    U("num_threads", s->num_threads);
    U("num_threads_per_udp", s->num_threads);
    F("stat_key_prefix", "%c", s->prefix_delimiter);
    S("detail_enabled", yes_no(__atomic_load_n(&s->detail_enabled, __ATOMIC_RELAXED)));
    U("reqs_per_event", s->reqs_per_event);
    S("cas_enabled", yes_no(s->cas_enabled));
    U("tcp_backlog", s->tcp_backlog);
    S("binding_protocol",
      strcmp(s->binding_protocol, "auto") == 0 ? "auto-negotiate" : s->binding_protocol);
    S("auth_enabled_sasl", yes_no(s->sasl));
    S("auth_enabled_ascii", yes_no(s->auth_file != NULL));
    U("item_size_max", s->item_size_max);
    S("maxconns_fast", yes_no(s->maxconns_fast));
    U("hashpower_init", s->hashpower_init);
    S("slab_reassign", yes_no(s->slab_reassign));
    U("slab_automove", s->slab_automove);
    F("slab_automove_ratio", "%.2f", s->slab_automove_ratio);
    U("slab_automove_window", s->slab_automove_window);
    U("slab_chunk_max", s->slab_chunk_max);
    S("lru_crawler", yes_no(s->lru_crawler));
    U("lru_crawler_sleep", s->lru_crawler_sleep);
    U("lru_crawler_tocrawl", s->lru_crawler_tocrawl);
    U("tail_repair_time", s->tail_repair_time);
    S("flush_enabled", yes_no(s->flush_enabled));
    S("dump_enabled", yes_no(s->dump_enabled));
    S("hash_algorithm", s->hash_algorithm);
    S("lru_maintainer_thread", yes_no(s->lru_maintainer_thread));
    S("lru_segmented", yes_no(s->lru_segmented));
    U("hot_lru_pct", s->hot_lru_pct);
    U("warm_lru_pct", s->warm_lru_pct);
    F("hot_max_factor", "%.2f", s->hot_max_factor);
    F("warm_max_factor", "%.2f", s->warm_max_factor);
    S("temp_lru", yes_no(s->temp_lru));
    U("temporary_ttl", s->temporary_ttl);
    U("idle_timeout", s->idle_timeout);
    U("watcher_logbuf_size", s->watcher_logbuf_size);
    U("worker_logbuf_size", s->worker_logbuf_size);
    U("read_buf_mem_limit", s->read_buf_mem_limit);
    S("track_sizes", yes_no(s->track_sizes));
    S("inline_ascii_response", yes_no(s->inline_ascii_response));
    U("num_napi_ids", s->num_napi_ids);
    S("memory_file", s->memory_file ? s->memory_file : "(null)");
    U("client_flags_size", 4);
    return rc ? -1 : 0;
}

int stats_items_compose(const struct stats_snapshot *s, const struct stats_emit *out)
{
    const struct store_stats *st = &s->store;
    if (st->curr_items == 0)
        return 0;
    int rc = 0;
#define ITEM(field, v) U("items:1:" field, v)
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

int stats_slabs_compose(const struct stats_snapshot *s, const struct stats_emit *out)
{
    const struct store_stats *st = &s->store;
    int rc = 0;
    uint64_t active = st->seg_used > 0 ? 1 : 0;
    if (active) {
#define SLAB(field, v) U("1:" field, v)
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
