/* SPDX-License-Identifier: BSD-3-Clause */
/* What a restart adopts into the flash tier (persist/restore_flash.c
 * calls it): the segments its keep lists, and their linked items, with no
 * compaction running meanwhile (flash_tier.h). */
#include "store/flash/flash_tier.h"

void flash_tier_restore_begin(struct flash_tier *ft)
{
    pthread_mutex_lock(&ft->compact_lock);
}

void flash_tier_restore_end(struct flash_tier *ft)
{
    pthread_mutex_unlock(&ft->compact_lock);
}

bool flash_tier_adopt(struct flash_tier *ft, uint32_t n, const struct fk_seg *e, uint32_t nitems)
{
    if (n >= ft->nsegs)
        return false;
    pthread_mutex_lock(&ft->lock);
    struct flash_rec *r = &ft->recs[n];
    uint32_t vid = (uint32_t)(e->seq % ft->nvids);
    bool ok = r->state == FSEG_FREE && !ft->vmap[vid];
    if (ok) {
        flash_tier_cls_reset(ft, n);
        *r = (struct flash_rec){.vid = vid,
                                .seq = e->seq,
                                .cas_base = e->cas_base,
                                .max_exptime = e->max_exptime,
                                .nitems = nitems,
                                .nbytes = e->nbytes,
                                .state = FSEG_DISK,
                                .bucket = (uint8_t)e->bucket};
        ft->vmap[vid] = n + 1;
        ft->nfree--;
        if (e->seq >= ft->seq_next)
            ft->seq_next = e->seq + 1;
    }
    pthread_mutex_unlock(&ft->lock);
    return ok;
}

uint64_t flash_tier_adopt_item(struct flash_tier *ft, uint32_t n, uint64_t ftag,
                               const struct flash_item *fi)
{
    pthread_mutex_lock(&ft->lock);
    struct flash_rec *r = &ft->recs[n];
    r->live_items++;
    flash_tier_cls_note(ft, n, fi->h.nkey, fi->flags);
    if (fi->len > r->max_item)
        r->max_item = fi->len;
    uint64_t sl = slot_make_flash(ftag, FLASH_SEG_BASE + r->vid, fi->off);
    pthread_mutex_unlock(&ft->lock);
    return sl;
}
