/* SPDX-License-Identifier: BSD-3-Clause */
/* What `stats extstore` and the extstore gauges read of the flash tier:
 * its segments' records, under the tier's lock (flash_tier.h). */
#include "store/flash/flash_tier.h"

#include <string.h>

uint32_t flash_tier_pages(struct flash_tier *ft, struct flash_tier_page *out, uint32_t n)
{
    /* memcached's page buckets by writer: default, low TTL, compaction */
    static const uint32_t mc_bucket[FLASH_WRITERS] = {0, 3, 1};
    pthread_mutex_lock(&ft->lock);
    for (uint32_t i = 0; i < ft->nsegs && i < n; i++) {
        const struct flash_rec *r = &ft->recs[i];
        if (r->state == FSEG_FREE) {
            out[i] = (struct flash_tier_page){.size = ft->opt.seg_size};
            continue;
        }
        uint64_t items = r->nbytes > FLASH_HDR_LEN ? r->nbytes - FLASH_HDR_LEN : 0;
        out[i] = (struct flash_tier_page){
            .version = r->seq,
            .bytes = r->nitems ? items * r->live_items / r->nitems : 0,
            .bucket = r->bucket < FLASH_WRITERS ? mc_bucket[r->bucket] : 0,
            .size = ft->opt.seg_size,
        };
    }
    uint32_t all = ft->nsegs;
    pthread_mutex_unlock(&ft->lock);
    return all;
}

void flash_tier_gauges(struct flash_tier *ft, struct flash_tier_gauges *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_lock(&ft->lock);
    uint64_t used_segs = 0;
    for (uint32_t i = 0; i < ft->nsegs; i++) {
        const struct flash_rec *r = &ft->recs[i];
        if (r->state == FSEG_FREE)
            continue;
        used_segs++;
        g->objects_used += r->live_items;
        uint64_t items = r->nbytes > FLASH_HDR_LEN ? r->nbytes - FLASH_HDR_LEN : 0;
        uint64_t live = r->nitems ? items * r->live_items / r->nitems : 0;
        g->bytes_used += live;
        g->bytes_fragmented += ft->opt.seg_size - live;
        if (r->state == FSEG_WRITING)
            g->io_queue++;
    }
    g->pages_used = (used_segs + ft->segs_per_page - 1) / ft->segs_per_page;
    g->pages_free = ft->dev.npages - g->pages_used;
    g->limit_maxbytes = (uint64_t)ft->dev.npages * ft->dev.page_size;
    pthread_mutex_unlock(&ft->lock);
}
