/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier's numbers for `stats`, `stats extstore` and the extstore
 * gauges (store_flash_ctl.h): read from the tier's counters and records. */
#include "store/store_flash_ctl.h"

#include "store/store_core.h"

void store_flash_stats(struct store *s, struct store_stats *out)
{
    struct flash_tier *ft = s->flash;
    if (!ft)
        return;
    struct flash_tier_counters c;
    flash_tier_counters_read(ft, &c);
    struct flash_tier_gauges g;
    flash_tier_gauges(ft, &g);
    struct flash_dev_counters d;
    flash_dev_counters(&ft->dev, &d);
    out->get_extstore = c.get_extstore;
    out->get_oom_extstore = c.get_oom_extstore;
    out->get_aborted_extstore = c.get_aborted_extstore;
    out->recache_from_extstore = c.recache_from_extstore;
    out->miss_from_extstore = c.miss_from_extstore;
    out->badcrc_from_extstore = c.badcrc_from_extstore;
    out->extstore_compact_lost = c.compact_lost;
    out->extstore_compact_rescues = c.compact_rescues;
    out->extstore_compact_skipped = c.compact_skipped;
    out->extstore_page_allocs = c.page_allocs;
    out->extstore_page_evictions = c.page_evictions;
    out->extstore_page_reclaims = c.page_reclaims;
    out->extstore_pages_free = g.pages_free;
    out->extstore_pages_used = g.pages_used;
    out->extstore_objects_evicted = c.objects_evicted;
    out->extstore_objects_read = c.objects_read;
    out->extstore_objects_written = c.objects_written;
    out->extstore_objects_used = g.objects_used;
    out->extstore_bytes_evicted = c.bytes_evicted;
    out->extstore_bytes_written = c.bytes_written;
    out->extstore_bytes_read = c.bytes_read;
    out->extstore_bytes_used = g.bytes_used;
    out->extstore_bytes_fragmented = g.bytes_fragmented;
    out->extstore_limit_maxbytes = g.limit_maxbytes;
    out->extstore_io_queue = g.io_queue;
    out->extstore_device_bytes_written = d.bytes_written;
    out->extstore_value_bytes_moved = c.value_bytes_moved;
    out->extstore_device_bytes_read = d.bytes_read;
    out->extstore_write_errors = c.write_errors;
    out->extstore_read_errors = c.read_errors;
    out->extstore_ring_reads = d.ring_reads;
    out->extstore_pool_reads = d.pool_reads;
    out->extstore_skipped_full = c.skipped_full;
    out->extstore_slots_dropped = c.slots_dropped;
    out->extstore_index_dropped = c.index_dropped;
    out->extstore_tag_dropped = c.tag_dropped;
    out->curr_items += g.objects_used;
}

double store_flash_memory_pressure(struct store *s, const struct store_class_stats *cls, unsigned n,
                                   const struct store_stats *st)
{
    if (!s->flash)
        return 0;
    uint32_t item_size, item_age;
    flash_tier_idle_rules(s->flash, &item_size, &item_age);
    /* memcached's slab automover sums so: a large class of two pages or
     * fewer is left out, as it is no source of pages for it either */
    uint64_t small = 0, large = 0;
    for (unsigned k = 1; k <= n; k++) {
        if (cls[k].chunk_size < item_size)
            small += cls[k].pages;
        else if (cls[k].pages > 2)
            large += cls[k].pages;
    }
    uint64_t free_segs = st->seg_total > st->seg_used ? st->seg_total - st->seg_used : 0;
    uint64_t all = small + large + free_segs;
    return all ? 100.0 * (double)small / (double)all : 0;
}

size_t store_flash_pages(struct store *s, struct store_flash_page *out, size_t n)
{
    if (!s->flash)
        return 0;
    /* the tier's lock is held for one copy, not for the caller's output */
    uint32_t want = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    struct flash_tier_page *pg = want ? calloc(want, sizeof *pg) : NULL;
    if (want && !pg)
        return 0;
    uint32_t all = flash_tier_pages(s->flash, pg, want);
    for (uint32_t i = 0; i < want && i < all; i++)
        out[i] = (struct store_flash_page){.version = pg[i].version,
                                           .bytes = pg[i].bytes,
                                           .bucket = pg[i].bucket,
                                           .size = pg[i].size};
    free(pg);
    return all;
}
