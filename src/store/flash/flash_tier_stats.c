/* SPDX-License-Identifier: BSD-3-Clause */
/* What `stats extstore`, the extstore gauges and `stats items` read of the
 * flash tier: its segments' records and their items by header class, under
 * the tier's lock (flash_tier.h). */
#include "store/flash/flash_tier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void flash_tier_counters_read(const struct flash_tier *ft, struct flash_tier_counters *out)
{
    const uint64_t *in = (const uint64_t *)&ft->c;
    uint64_t *o = (uint64_t *)out;
    for (size_t i = 0; i < sizeof *out / sizeof *o; i++)
        o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

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

/* --- items by the class of memcached's RAM header (flash_tier_class_counts) --- */

int flash_tier_cls_init(struct flash_tier *ft)
{
    const struct store_classes *c = ft->opt.classes;
    if (!c)
        return 0;
    /* the header classes keys of 1..STORE_KEY_MAX bytes span, with and
     * without client flags */
    uint8_t lo = classes_id(c, classes_ext_hdr_size(c, 1, 0));
    uint8_t hi = classes_id(c, classes_ext_hdr_size(c, STORE_KEY_MAX, 1));
    ft->cls_lo = lo;
    ft->cls_n = (uint8_t)(hi - lo + 1);
    ft->cls = calloc((size_t)ft->nsegs * ft->cls_n, sizeof *ft->cls);
    return ft->cls ? 0 : -ENOMEM;
}

void flash_tier_cls_free(struct flash_tier *ft)
{
    free(ft->cls);
    ft->cls = NULL;
}

void flash_tier_cls_reset(struct flash_tier *ft, uint32_t n)
{
    if (ft->cls)
        memset(&ft->cls[(size_t)n * ft->cls_n], 0, ft->cls_n * sizeof *ft->cls);
}

void flash_tier_cls_note(struct flash_tier *ft, uint32_t n, size_t nkey, uint32_t flags)
{
    if (!ft->cls)
        return;
    uint32_t size = classes_ext_hdr_size(ft->opt.classes, nkey, flags);
    unsigned k = classes_id(ft->opt.classes, size) - ft->cls_lo;
    if (k >= ft->cls_n) /* a key past STORE_KEY_MAX: none is written */
        k = ft->cls_n - 1u;
    struct flash_cls_count *e = &ft->cls[(size_t)n * ft->cls_n + k];
    e->items++;
    e->bytes += size;
}

/* Segment n's live items shared out by its items written per class: each
 * class its share rounded down, what rounding leaves to the class with the
 * most, so the shares sum to live. */
static void cls_share(const struct flash_tier *ft, uint32_t n, uint32_t live, uint64_t *items,
                      uint64_t *bytes)
{
    const struct flash_cls_count *e = &ft->cls[(size_t)n * ft->cls_n];
    uint64_t written = 0, given = 0;
    unsigned most = 0;
    for (unsigned k = 0; k < ft->cls_n; k++) {
        written += e[k].items;
        if (e[k].items > e[most].items)
            most = k;
    }
    if (!written)
        return;
    for (unsigned k = 0; k < ft->cls_n; k++) {
        if (!e[k].items)
            continue;
        uint64_t share = (uint64_t)live * e[k].items / written;
        items[ft->cls_lo + k] += share;
        bytes[ft->cls_lo + k] += share * e[k].bytes / e[k].items;
        given += share;
    }
    if (given < live) {
        items[ft->cls_lo + most] += live - given;
        bytes[ft->cls_lo + most] += (live - given) * e[most].bytes / e[most].items;
    }
}

void flash_tier_class_counts(struct flash_tier *ft, uint64_t *items, uint64_t *bytes)
{
    pthread_mutex_lock(&ft->lock);
    for (uint32_t i = 0; ft->cls && i < ft->nsegs; i++) {
        const struct flash_rec *r = &ft->recs[i];
        if (r->state != FSEG_FREE && r->live_items)
            cls_share(ft, i, r->live_items, items, bytes);
    }
    pthread_mutex_unlock(&ft->lock);
}
