/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading the tier's segments back: flash_scan.h. */
#include "store/flash/flash_scan.h"

#include <string.h>

bool flash_scan_live(struct flash_tier *ft, const struct flash_scan_seg *sg,
                     const struct flash_item *fi, unsigned *freq)
{
    struct index_pair keys;
    uint64_t *chain;
    enum item_life life;
    uint64_t *slot = flash_tier_item_slot(ft, sg->vid, fi, sg->cas_base, &keys, &chain, &life);
    /* the id names this write still (it comes round after nvids writes):
     * checked under the bucket lock, so the slot cannot move meanwhile */
    bool live = slot && life == ITEM_LIVE && flash_tier_still(ft, slot_load(slot), sg->seq);
    if (live)
        *freq = slot_freq(slot_load(slot));
    index_unlock_pair(&keys);
    return live;
}

enum flash_where flash_scan_next(struct flash_tier *ft, struct flash_scan_pos *pos,
                                 struct flash_scan_seg *sg, char *buf, uint32_t cap,
                                 uint32_t *copied)
{
    enum flash_where at = FLASH_AT_NONE;
    pthread_mutex_lock(&ft->lock);
    for (; pos->n < ft->nsegs; pos->n++, pos->seq = 0, pos->off = FLASH_HDR_LEN) {
        const struct flash_rec *r = &ft->recs[pos->n];
        /* dropped or rewritten since the walk began it: what it read of
         * it stands, the rest is another write's */
        if (r->state == FSEG_FREE || (pos->seq && r->seq != pos->seq) || !r->live_items)
            continue;
        if (pos->off < FLASH_HDR_LEN)
            pos->off = FLASH_HDR_LEN;
        if (pos->off >= r->nbytes)
            continue;
        pos->seq = r->seq;
        *sg = (struct flash_scan_seg){
            .n = pos->n,
            .vid = r->vid,
            .seq = r->seq,
            .seed = flash_seg_seed(r->seq, ft->instance),
            .cas_base = r->cas_base,
            .nbytes = r->nbytes,
            .max_item = r->max_item,
            .page = pos->n / ft->segs_per_page,
            .page_off = (uint64_t)(pos->n % ft->segs_per_page) * ft->opt.seg_size,
        };
        if (r->state == FSEG_DISK) {
            at = FLASH_AT_DISK;
        } else {
            uint32_t len = r->nbytes - pos->off;
            *copied = len < cap ? len : cap;
            memcpy(buf, r->buf + pos->off, *copied);
            at = FLASH_AT_BUF;
        }
        break;
    }
    pthread_mutex_unlock(&ft->lock);
    return at;
}
