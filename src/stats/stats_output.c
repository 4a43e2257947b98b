#include "stats/stats_output.h"

#include <string.h>

/* Each group's rows go to the emitter; an error only stops the caller. */
#define U(name, v) rc |= stats_emit_u64(out, name, (uint64_t)(v))

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
