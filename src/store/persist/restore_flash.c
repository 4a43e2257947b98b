/* SPDX-License-Identifier: BSD-3-Clause */
/* A restart with the flash tier (-e and ext_path): link its live items
 * again from the record the -e file keeps of it (flash/flash_keep.h),
 * after restore_run has brought back the RAM items. docs/restarts.md
 * "The flash tier" has the rules this relies on.
 *
 * Only a segment the record says is on the device, of this instance, is
 * read; of it, only an item whose liveness bit is set and whose checksum
 * (seeded with the segment's sequence and instance) holds is linked.
 * Segments newest first: a key already met keeps what it has, the RAM
 * copy unless the flash one has a higher CAS, a newer segment's flash
 * copy always (one flash candidate per tag, as at run time). */
#include "store/persist/restore.h"
#include "store/persist/persist.h"
#include "store/flash/flash_dev.h"
#include "store/flash/flash_keep.h"
#include "store/flash/flash_layout.h"
#include "store/flash/flash_tier.h"
#include "store/store_core.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_life.h"
#include "store/store_lookup.h"
#include "store/store_find.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"

struct fr_count {
    uint64_t linked, expired, corrupt, superseded;
};

/* Newest sequence first. */
struct fr_ent {
    uint64_t seq;
    uint32_t n;
};
static int newest_first(const void *a, const void *b)
{
    uint64_t x = ((const struct fr_ent *)a)->seq, y = ((const struct fr_ent *)b)->seq;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* One flash item whose bit was set: linked unless the key has a newer
 * copy already. The bit is set again before the slot is (W3's order). */
static bool link_one(struct store *s, uint32_t n, const struct flash_item *fi)
{
    struct flash_tier *ft = s->flash;
    struct store_key k = store_key_of(fi->key, fi->h.nkey);
    struct store_found f;
    if (store_lookup(s->hk.ctx, &k, STORE_LOOK_FIND, &f)) {
        /* the RAM copy is the same version (a kill between the move's
         * steps, or a read brought back) or a newer one unless the flash
         * one's CAS is higher; under -C (CAS 0) RAM wins */
        uint64_t ram_cas = item_get_cas(f.p, &f.h, f.seg->cas_base);
        if (fi->cas <= ram_cas) {
            store_found_unlock(&f);
            return false;
        }
        store_unlink(s, &f);
    }
    /* a flash slot may be in either of the key's buckets: both locked (a
     * lookup that found the key in its first holds that one alone) */
    store_found_unlock(&f);
    struct index_pair keys;
    uint64_t ftag = index_flash_tag(&s->index, k.hv);
    index_lock_key(&s->index, k.hv, &keys);
    for (int c = 0; c < 2 && keys.b[c]; c++)
        for (uint64_t *cur = keys.b[c]; cur; cur = index_next(&s->index, cur))
            for (int i = 0; i < INDEX_SLOTS; i++) {
                uint64_t sl = slot_load(index_slot(cur, i));
                if (sl && slot_is_flash(sl) && slot_flash_tag(&s->index, sl) == ftag) {
                    index_unlock_pair(&keys);
                    return false;
                }
            }
    /* the emptier bucket, as an insert's */
    uint64_t *slot = index_pair_free_slot(&s->index, &keys);
    if (slot) {
        flash_keep_set(&s->flash_keep, n, fi->off);
        uint64_t fs = flash_tier_adopt_item(ft, n, ftag, fi);
        slot_store(slot, index_flash_place(&s->index, k.hv,
                                           index_pair_chain_of(&s->index, &keys, slot), fs));
    }
    index_unlock_pair(&keys);
    /* the table grows with what it holds, flash slots and all */
    index_maintain(&s->index);
    return slot != NULL;
}

/* Segment n, whose entry is e: read, checked, its items linked. */
static void restore_seg(struct store *s, uint32_t n, const struct fk_seg *e, char *buf,
                        uint64_t *bits, struct fr_count *c)
{
    struct flash_tier *ft = s->flash;
    struct flash_keep *k = &s->flash_keep;
    flash_keep_take_bits(k, n, bits);
    if (!flash_keep_any_in(bits, k->words)) {
        flash_keep_free(k, n);
        return;
    }
    uint32_t len = (e->nbytes + FLASH_DEV_ALIGN - 1) / FLASH_DEV_ALIGN * FLASH_DEV_ALIGN;
    uint32_t page = n / ft->segs_per_page;
    uint64_t off = (uint64_t)(n % ft->segs_per_page) * ft->opt.seg_size;
    struct flash_seg_hdr hdr;
    int rc = flash_dev_read(&ft->dev, page, off, buf, len);
    if (rc < 0 || flash_seg_parse_hdr(buf, len, ft->instance, &hdr) != FLASH_OK ||
        hdr.seq != e->seq || hdr.cas_base != e->cas_base ||
        FLASH_HDR_LEN + hdr.nbytes != e->nbytes) {
        /* a file truncated or replaced between runs: its items are misses */
        c->corrupt++;
        flash_keep_free(k, n);
        return;
    }
    if (!flash_tier_adopt(ft, n, e, hdr.nitems)) {
        flash_keep_free(k, n);
        return;
    }
    rel_time_t now = clock_now();
    struct flash_iter it;
    struct flash_item fi;
    flash_iter_init(&it, buf, &hdr);
    int r;
    while ((r = flash_iter_next(&it, &fi)) == 1) {
        if (!flash_keep_bit(bits, k->words, fi.off))
            continue;
        if (life_of_item(&s->life, fi.p, &fi.h, hdr.cas_base, 0, now) != ITEM_LIVE)
            c->expired++;
        else if (link_one(s, n, &fi))
            c->linked++;
        else
            c->superseded++;
    }
    /* a damaged item each, and the rest of a walk cut short */
    c->corrupt += it.damaged + (r < 0);
}

void restore_flash(struct store *s)
{
    struct flash_tier *ft = s->flash;
    struct flash_keep *k = &s->flash_keep;
    if (!ft || !s->flash_kept || !s->hk.ctx)
        return;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct fr_ent *order = calloc(k->nsegs, sizeof *order);
    uint64_t *bits = calloc(k->words, sizeof *bits);
    char *buf = aligned_alloc(FLASH_DEV_ALIGN, ft->opt.seg_size);
    uint32_t m = 0;
    struct fr_count c = {0};
    if (order && bits && buf) {
        struct fk_seg e;
        for (uint32_t n = 0; n < k->nsegs; n++) {
            if (flash_keep_get(k, n, &e))
                order[m++] = (struct fr_ent){.seq = e.seq, .n = n};
            else if (k->segs[n].state != FK_FREE)
                flash_keep_free(k, n); /* a writer's buffer at the stop, or damage */
        }
        qsort(order, m, sizeof *order, newest_first);
        flash_tier_restore_begin(ft);
        for (uint32_t i = 0; i < m; i++)
            if (flash_keep_get(k, order[i].n, &e))
                restore_seg(s, order[i].n, &e, buf, bits, &c);
        flash_tier_restore_end(ft);
    } else {
        /* nothing linked: nothing may stay marked live */
        log_error("-e %s: out of memory restoring the flash tier; its items are dropped",
                  s->opt.memory_file);
        for (uint32_t n = 0; n < k->nsegs; n++)
            flash_keep_free(k, n);
    }
    free(order);
    free(bits);
    free(buf);
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s->pm->restored_items += c.linked;
    s->pm->discarded_expired += c.expired;
    s->pm->discarded_corrupt += c.corrupt;
    log_info("-e %s: linked %llu flash items of %u segments in %llu ms (%llu expired, %llu "
             "superseded, %llu damaged)",
             s->opt.memory_file, (unsigned long long)c.linked, m,
             (unsigned long long)((t1.tv_sec - t0.tv_sec) * 1000 +
                                  (t1.tv_nsec - t0.tv_nsec) / 1000000),
             (unsigned long long)c.expired, (unsigned long long)c.superseded,
             (unsigned long long)c.corrupt);
}
