#include "stats/stats_output.h"

#include <stdio.h>
#include <string.h>

/* Each group's rows go to the emitter; an error only stops the caller. */
#define U(name, v) rc |= stats_emit_u64(out, name, (uint64_t)(v))

/* "items:<class>:<field>" / "<class>:<field>" */
static int emit_cls(const struct stats_emit *out, const char *pre, unsigned k, const char *field,
                    uint64_t v)
{
    char name[64];
    snprintf(name, sizeof name, "%s%u:%s", pre, k, field);
    return stats_emit_u64(out, name, v);
}

/* One block per class holding a live item, memcached's field order. Counts
 * kept per class are real; LRU-segment and per-class hit counts are not
 * kept (a read touches no class counter) and read 0 (docs/store.md). */
int stats_items_compose(const struct stats_snapshot *s, const struct stats_emit *out)
{
    int rc = 0;
    for (unsigned k = 1; k <= s->nclasses; k++) {
        const struct store_class_stats *c = &s->cls[k];
        if (c->number == 0)
            continue;
#define ITEM(field, v) rc |= emit_cls(out, "items:", k, field, (uint64_t)(v))
        ITEM("number", c->number);
        ITEM("number_hot", 0);
        ITEM("number_warm", 0);
        ITEM("number_cold", c->number);
        ITEM("age_hot", 0);
        ITEM("age_warm", 0);
        ITEM("age", c->age);
        ITEM("mem_requested", c->mem_requested);
        ITEM("evicted", c->evicted);
        ITEM("evicted_nonzero", c->evicted_nonzero);
        ITEM("evicted_time", c->evicted_time);
        ITEM("outofmemory", 0);
        ITEM("tailrepairs", 0);
        ITEM("reclaimed", c->reclaimed);
        ITEM("expired_unfetched", c->expired_unfetched);
        ITEM("evicted_unfetched", c->evicted_unfetched);
        ITEM("evicted_active", 0);
        ITEM("crawler_reclaimed", 0);
        ITEM("crawler_items_checked", 0);
        ITEM("lrutail_reflocked", 0);
        ITEM("moves_to_cold", 0);
        ITEM("moves_to_warm", 0);
        ITEM("moves_within_lru", 0);
        ITEM("direct_reclaims", 0);
        ITEM("hits_to_hot", 0);
        ITEM("hits_to_warm", 0);
        ITEM("hits_to_cold", 0);
        ITEM("hits_to_temp", 0);
#undef ITEM
    }
    return rc ? -1 : 0;
}

/* A class's pages are the segments holding one of its live items; a page's
 * chunks are as many of its chunk size as a segment would hold. */
int stats_slabs_compose(const struct stats_snapshot *s, const struct stats_emit *out)
{
    const struct store_stats *st = &s->store;
    int rc = 0;
    uint64_t active = 0;
    for (unsigned k = 1; k <= s->nclasses; k++) {
        const struct store_class_stats *c = &s->cls[k];
        if (c->number == 0)
            continue;
        active++;
        uint64_t per = c->chunk_size ? st->seg_size / c->chunk_size : 0;
        if (per == 0)
            per = 1;
        uint64_t total = per * c->pages;
#define SLAB(field, v) rc |= emit_cls(out, "", k, field, (uint64_t)(v))
        SLAB("chunk_size", c->chunk_size);
        SLAB("chunks_per_page", per);
        SLAB("total_pages", c->pages);
        SLAB("total_chunks", total);
        SLAB("used_chunks", c->number);
        SLAB("free_chunks", total > c->number ? total - c->number : 0);
        SLAB("free_chunks_end", 0);
        SLAB("get_hits", 0);
        SLAB("cmd_set", 0);
        SLAB("delete_hits", 0);
        SLAB("incr_hits", 0);
        SLAB("decr_hits", 0);
        SLAB("cas_hits", 0);
        SLAB("cas_badval", 0);
        SLAB("touch_hits", 0);
#undef SLAB
    }
    U("active_slabs", active);
    U("total_malloced", st->seg_used * st->seg_size);
    return rc ? -1 : 0;
}
