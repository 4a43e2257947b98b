/* SPDX-License-Identifier: BSD-3-Clause */
/* The eviction walk's item work (seg.c takes the victim off its queue and
 * settles it after): each item of the victim past the cursor is found in
 * the index and kept (copied to the main open segment, or left in place
 * for compaction), moved to flash, or dropped, with memcached's counters
 * and `watch evictions` lines; then the items kept in place are compacted
 * down, in an order a kill at any store leaves restorable with -e.
 * docs/store-eviction.md "Eviction", docs/restarts.md W3, W5, W6.
 * Pool lock held throughout. */
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_classes.h"
#include "store/store_life.h"
#include "store/store_seg.h"
#include "store/persist/persist.h"
#include "store/flash/flash_tier.h"
#include "watch/watch.h"

#include <string.h>
#include <xxhash.h>

/* The read count an item moved from small into main starts with. */
#ifndef SEG_SMALL_NFREQ
#define SEG_SMALL_NFREQ 0
#endif

#ifdef NODELAY_DEBUG
void (*seg_debug_compact_step)(struct seg *v);
#define SEG_COMPACT_STEP(v)                                                                        \
    do {                                                                                           \
        if (seg_debug_compact_step)                                                                \
            seg_debug_compact_step(v);                                                             \
    } while (0)
#else
#define SEG_COMPACT_STEP(v) ((void)0)
#endif

/* Copy a kept item (tbase: its segment's) to the end of the main open
 * segment; its new slot, or 0 when it does not fit (pool lock and the
 * item's bucket lock held). */
static uint64_t seg_carry(struct seg_pool *pool, const char *p, const struct item_hdr *h,
                          rel_time_t tbase, uint64_t cas, uint32_t tag)
{
    struct seg *r = pool->mopen;
    if (!r)
        return 0;
    uint32_t st = item_get_st(p, h, tbase);
    uint8_t layout = h->layout & (ITEM_L_FLAGS | ITEM_L_EXP | ITEM_L_SUM);
    rel_time_t ol = __atomic_load_n(&pool->life->oldest_live, __ATOMIC_ACQUIRE);
    if (!item_at_moves(st & ~ITEM_S_MASK, r->tbase, ol))
        layout |= ITEM_L_AT32;
    if (h->cas_off)
        layout |= item_cas_layout(cas, r->cas_base);
    uint32_t size = item_hdr_len(layout, h->nvalue) + h->nkey + h->nvalue;
    size_t align = (size_t)1 << pool->off_shift;
    if (r->write_off + size > pool->seg_size)
        return 0;
    uint32_t off = r->write_off;
    char *d = r->data + off;
    item_init(d, layout, p + h->hlen, h->nkey, h->nvalue);
    struct item_hdr nh;
    item_decode(d, &nh);
    item_put_st(d, &nh, r->tbase, st);
    rel_time_t exp = item_get_u32(p, h->exp_off);
    if (nh.flags_off)
        item_put_u32(d, nh.flags_off, item_get_u32(p, h->flags_off));
    if (nh.exp_off)
        item_put_u32(d, nh.exp_off, exp);
    item_put_cas(d, &nh, cas, r->cas_base);
    memcpy(d + nh.hlen + nh.nkey, p + h->hlen + h->nkey, h->nvalue);
    r->write_off = (uint32_t)((off + size + align - 1) & ~(align - 1));
    if (pool->pm) {
        /* The same key, flags and value: the same checksum. Committed before
         * the segment's end moves over it; the old copy dies after the slot
         * moves (a copy of the same version, so a kill between is harmless). */
        item_put_u32(d, nh.sum_off, item_get_u32(p, h->sum_off));
        item_set_state(d, ITEM_L_COMMIT);
        pm_store32(&pm_seg(pool->pm, r->id)->write_off, r->write_off);
    }
    struct store_cls_of c = classes_item(pool->classes, p, h);
    seg_note_item(r, size, exp, cas, &c);
    return slot_make(tag, r->id, off >> pool->off_shift);
}

/* memcached's eviction line for a `watch evictions` stream. */
static void seg_watch_eviction(struct seg_pool *pool, const char *p, const struct item_hdr *h,
                               uint32_t status, rel_time_t now)
{
    rel_time_t exp = item_get_u32(p, h->exp_off);
    rel_time_t atime = status & ~ITEM_S_MASK;
    watch_eviction(p + h->hlen, h->nkey, status & ITEM_S_FETCHED,
                   exp == REL_TIME_NEVER ? -1 : (long long)exp - (long long)now,
                   atime <= now ? now - atime : 0, classes_item(pool->classes, p, h).cls,
                   h->nvalue);
}

/* The slot that still refers to the victim's item at off, with its key's
 * buckets locked (the caller unlocks *keys) and *chain the one whose chain
 * holds it, or NULL: the item is dead or was copied out. */
uint64_t *seg_find_slot(struct seg_pool *pool, struct seg *v, size_t off, const char *p,
                        const struct item_hdr *h, uint64_t *hv, uint32_t *tag,
                        struct index_pair *keys, uint64_t **chain)
{
    *hv = XXH3_64bits(p + h->hlen, h->nkey);
    *tag = index_tag(*hv);
    uint64_t want = slot_make(*tag, v->id, (uint32_t)(off >> pool->off_shift));
    index_lock_key(pool->index, *hv, keys);
    for (int c = 0; c < 2 && keys->b[c]; c++)
        for (uint64_t *cur = keys->b[c]; cur; cur = index_next(pool->index, cur))
            for (int i = 0; i < INDEX_SLOTS; i++)
                if (slot_same(slot_load(index_slot(cur, i)), want)) {
                    *chain = keys->b[c];
                    return index_slot(cur, i);
                }
    *chain = NULL;
    return NULL;
}

/* Unlink a victim's item that leaves (its key's buckets locked, b the one
 * whose chain holds slot): evicted when it was live, else reclaimed; dead
 * before gone (docs/restarts.md, W3). */
void seg_drop_item(struct seg_ctx *ctx, struct seg_walk *w, char *p, const struct item_hdr *h,
                   const struct index_pair *keys, uint64_t *b, uint64_t *slot, uint64_t hv,
                   rel_time_t now)
{
    struct seg_pool *pool = ctx->pool;
    struct seg *v = w->v;
    uint32_t status = item_get_st(p, h, v->tbase);
    bool fetched = status & ITEM_S_FETCHED;
    unsigned freq = slot_freq(slot_load(slot));
    enum item_life life = life_of_item(pool->life, p, h, v->cas_base, v->tbase, now);
    struct store_cls_of cls = classes_item(pool->classes, p, h);
    if (life == ITEM_LIVE && pool->flash) {
        /* to flash instead, when it qualifies (flash/flash_tier.c): its
         * flash slot takes the RAM slot's place, in whichever of the key's
         * buckets that is (a mover may take it to the other: its bucket
         * and tag say which, index_hash2) */
        uint64_t ns =
            flash_tier_take(pool->flash, p, h, v->cas_base, v->tbase,
                            index_flash_tag(pool->index, hv), now, FLASH_TAKE_EVICT, NULL);
        if (ns) {
            /* its RAM bytes are dead from here (W3): only the flash copy
             * may come back after a restart; its reads so far go with it,
             * as memcached's header keeps the item's FETCHED and ACTIVE
             * (store_flash.c's recache) */
            if (pool->pm)
                item_set_dead(p);
            slot_store(slot, index_flash_place(pool->index, hv, b, ns) | freq);
            flash_tier_drop_tag(pool->flash, keys, slot_flash_tag(pool->index, ns), slot);
            seg_note_gone(v, item_total(h), &cls);
            return;
        }
    }
    if (pool->pm)
        item_set_dead(p);
    index_clear_slot(pool->index, b, slot);
    seg_note_gone(v, item_total(h), &cls);
    struct store_cls_ctr *cc = &ctx->cls[cls.cls];
    if (life == ITEM_LIVE) {
        w->any_evicted = true;
        if (!freq)
            pool->hooks.evicted_unread(pool->hooks.arg, hv, !w->from_small);
        CNT_INC(ctx->cnt, evictions);
        CLS_INC(cc, evicted);
        rel_time_t atime = status & ~ITEM_S_MASK;
        CLS_SET(cc, evicted_time, atime <= now ? now - atime : 0);
        if (item_get_u32(p, h->exp_off) != REL_TIME_NEVER)
            CLS_INC(cc, evicted_nonzero);
        if (watch_active(WATCH_EVICTIONS))
            seg_watch_eviction(pool, p, h, status, now);
        if (!fetched) {
            CNT_INC(ctx->cnt, evicted_unfetched);
            CLS_INC(cc, evicted_unfetched);
        }
        if (freq)
            CNT_INC(ctx->cnt, evicted_active);
    } else {
        CNT_INC(ctx->cnt, reclaimed);
        CLS_INC(cc, reclaimed);
        /* flushed ones too, as memcached's lru_pull_tail */
        if (!fetched) {
            CNT_INC(ctx->cnt, expired_unfetched);
            CLS_INC(cc, expired_unfetched);
        }
    }
}

/* An item an eviction walk keeps: from a probation (or temporary_ttl)
 * victim it moves into WARM, from a main one within WARM (memcached's
 * moves_to_warm, moves_within_lru; docs/store.md "Size classes"). */
static void seg_note_move(struct seg_ctx *ctx, const struct seg_walk *w, unsigned cls)
{
    if (w->from_small) {
        CNT_INC(ctx->cnt, moves_to_warm);
        CLS_INC(&ctx->cls[cls], moves_to_warm);
    } else {
        CNT_INC(ctx->cnt, moves_within_lru);
        CLS_INC(&ctx->cls[cls], moves_within_lru);
    }
}

/* A hit costs an item, whatever its size: an unread item much smaller
 * than the mean stays longer, in proportion (as GreedyDual-Size weighs
 * items, and as memcached's size classes let small items outlast large
 * ones). Its age and the victim's are counted in CAS numbers (writes);
 * once older than the victim's age times mean / size (at most
 * SEG_SMALL_STAY), it leaves as any unread item does. One kept into main
 * waits there until main is walked, which may be far longer: bounding
 * that cost hits (docs/history.md "Eviction"). */
#ifndef SEG_SMALL_BELOW
#define SEG_SMALL_BELOW 4 /* "much smaller": under mean / 4 */
#endif
#ifndef SEG_SMALL_STAY
#define SEG_SMALL_STAY 16
#endif

static bool seg_small_stays(const struct seg_pool *pool, const struct seg *v, const char *p,
                            const struct item_hdr *h, uint32_t size)
{
    uint64_t mean = pool->walk_mean16 / 16;
    if ((uint64_t)size * SEG_SMALL_BELOW >= mean)
        return false;
    uint64_t cas = item_get_cas(p, h, v->cas_base);
    if (!cas)
        return false;
    uint64_t now = __atomic_load_n(pool->cas_next, __ATOMIC_RELAXED);
    uint64_t stay = mean / size < SEG_SMALL_STAY ? mean / size : SEG_SMALL_STAY;
    return now > v->cas_base && now - cas < (now - v->cas_base) * stay;
}

/* Walk the victim's items from the cursor until it has freed about `bytes`
 * (walked past minus kept: a victim of hot items is walked further for the
 * same room): the next item is taken while more than half of it is still
 * owed (so the walk overshoots or falls short by at most half an item,
 * which seg_pay carries to the next payment), or to its end (pool lock
 * held); returns the bytes freed. Each item still linked is kept or leaves by its read counter. A
 * kept one is copied
 * to the end of the main open segment; once that is full, it and every
 * later kept item stay where they are (kept_from), to be compacted in
 * place by seg_walk_end, when no reader can reach past the cursor. */
size_t seg_walk_step(struct seg_ctx *ctx, struct seg_walk *w, size_t bytes)
{
    struct seg_pool *pool = ctx->pool;
    struct seg *v = w->v;
    rel_time_t now = clock_now();
    size_t align = (size_t)1 << pool->off_shift;
    size_t start = w->off, kept = 0;
    while (w->off < v->write_off && w->off - start - kept < bytes) {
        size_t off = w->off;
        char *p = v->data + off;
        if (!__atomic_load_n((const uint8_t *)p, __ATOMIC_RELAXED)) {
            /* padding left by an in-place compaction with -e (seg_walk_end) */
            w->off += (uint32_t)align;
            continue;
        }
        struct item_hdr h;
        item_decode(p, &h);
        uint32_t size = item_total(&h);
        if (off - start - kept + size / 2 >= bytes)
            break;
        uint64_t hv, *b;
        uint32_t tag;
        struct index_pair kb;
        uint64_t *slot = seg_find_slot(pool, v, off, p, &h, &hv, &tag, &kb, &b);
        if (slot) {
            unsigned freq = slot_freq(slot_load(slot));
            bool live = life_of_item(pool->life, p, &h, v->cas_base, v->tbase, now) == ITEM_LIVE;
            if (live) /* moving over the last 64 or so */
                pool->walk_mean16 = pool->walk_mean16
                                        ? pool->walk_mean16 - pool->walk_mean16 / 64 + size / 4
                                        : (uint64_t)size * 16;
            bool keep =
                live &&
                (w->keep_all || (w->retain && w->budget >= size &&
                                 (w->gather || freq > 0 || seg_small_stays(pool, v, p, &h, size))));
            if (live && !w->from_small) {
                pool->main_walked += size;
                pool->main_read += freq > 0 ? size : 0;
            }
            if (keep) {
                uint64_t nfreq = w->keep_all || (w->gather && !freq) ? freq
                                 : w->from_small || !freq            ? SEG_SMALL_NFREQ
                                                                     : freq - 1;
                uint64_t moved =
                    w->kept_from == UINT32_MAX
                        ? seg_carry(pool, p, &h, v->tbase, item_get_cas(p, &h, v->cas_base), tag)
                        : 0;
                if (moved) {
                    struct store_cls_of cls = classes_item(pool->classes, p, &h);
                    seg_note_gone(v, size, &cls);
                    slot_store(slot, moved | nfreq);
                    if (pool->pm)
                        item_set_dead(p); /* the copy left behind (W5) */
                    CNT_INC(ctx->cnt, items_reinserted);
                    seg_note_move(ctx, w, cls.cls);
                } else {
                    /* Main open segment full: kept here, v takes its place. */
                    if (w->kept_from == UINT32_MAX)
                        w->kept_from = (uint32_t)off;
                    slot_store(slot, (slot_load(slot) & ~SLOT_FREQ) | nfreq);
                }
                w->budget -= size;
                kept += size;
            } else {
                seg_drop_item(ctx, w, p, &h, &kb, b, slot, hv, now);
            }
        }
        index_unlock_pair(&kb);
        w->off = (uint32_t)((off + size + align - 1) & ~(align - 1));
    }
    if (!w->from_small)
        seg_credit_update(pool);
    return w->off - start - kept;
}

/* Items kept in place from kept_from on, once v is walked to its end (pool
 * lock held): with compact, moved down to the front of v (every byte below
 * the walk is unreferenced by then), else (v is pinned) dropped. */
void seg_walk_settle(struct seg_ctx *ctx, struct seg_walk *w, bool compact)
{
    struct seg_pool *pool = ctx->pool;
    struct seg *v = w->v;
    rel_time_t now = clock_now();
    size_t align = (size_t)1 << pool->off_shift;
    struct pm_seg *ps = pool->pm ? pm_seg(pool->pm, v->id) : NULL;
    size_t wr = 0;
    uint64_t held = 0; /* the classes of the items compacted: all v holds after */
    if (compact && ps) {
        /* Everything below kept_from is dead or copied out: a restore reads
         * [0, compact_w) and [compact_off, write_off) (W6). */
        pm_store_pair(&ps->compact_pair, 0, w->kept_from);
        pm_store32(&ps->flags, PM_SEG_COMPACTING);
        SEG_COMPACT_STEP(v);
    }
    for (size_t off = w->kept_from; off < v->write_off;) {
        char *p = v->data + off;
        if (!__atomic_load_n((const uint8_t *)p, __ATOMIC_RELAXED)) {
            off += align;
            continue;
        }
        struct item_hdr h;
        item_decode(p, &h);
        uint32_t size = item_total(&h);
        uint64_t hv, *b;
        uint32_t tag;
        struct index_pair kb;
        uint64_t *slot = seg_find_slot(pool, v, off, p, &h, &hv, &tag, &kb, &b);
        if (slot && compact) {
            unsigned cls = classes_item(pool->classes, p, &h).cls; /* read before it moves */
            /* Only dead or moved bytes lie below: nothing a slot or a pin
             * refers to is overwritten. With -e an item is never moved over
             * its own bytes (a kill mid-copy would tear the only copy): it
             * stays, and the gap becomes padding. The restore's two ranges
             * cover it whole at every store: first the gap takes the bytes
             * up to it (padding, dead items), then both bounds move past
             * the copy in one store (compact_w over the copy, compact_off
             * still at the source: a kill then leaves two copies of one
             * version, W5), and only then the source dies. */
            if (ps) {
                pm_store_pair(&ps->compact_pair, (uint32_t)wr, (uint32_t)off);
                SEG_COMPACT_STEP(v);
                if (wr != off && off - wr < size) {
                    memset(v->data + wr, 0, off - wr);
                    wr = off;
                    SEG_COMPACT_STEP(v);
                }
            }
            bool moved_down = wr != off;
            if (moved_down) {
                memmove(v->data + wr, p, size);
                SEG_COMPACT_STEP(v);
            }
            size_t end = (wr + size + align - 1) & ~(align - 1);
            if (ps) {
                pm_store_pair(&ps->compact_pair, (uint32_t)end, (uint32_t)(moved_down ? off : end));
                SEG_COMPACT_STEP(v);
            }
            slot_store(slot, slot_make(tag, v->id, (uint32_t)(wr >> pool->off_shift)) |
                                 (slot_load(slot) & SLOT_FREQ));
            if (ps && moved_down) {
                item_set_dead(p); /* the copy left behind */
                SEG_COMPACT_STEP(v);
            }
            wr = end;
            CNT_INC(ctx->cnt, items_reinserted);
            held |= (uint64_t)1 << cls;
            seg_note_move(ctx, w, cls);
        } else if (slot) {
            seg_drop_item(ctx, w, p, &h, &kb, b, slot, hv, now);
        }
        index_unlock_pair(&kb);
        off = (off + size + align - 1) & ~(align - 1);
        if (ps && compact) {
            pm_store_pair(&ps->compact_pair, (uint32_t)wr, (uint32_t)off);
            SEG_COMPACT_STEP(v);
        }
    }
    if (!compact)
        return;
    __atomic_store_n(&v->cls_held, held, __ATOMIC_RELAXED);
    v->write_off = (uint32_t)wr;
    if (ps) /* the new end and the end of compacting at once: compact_off lies past the new end */
        pm_store_pair(&ps->end_pair, (uint32_t)wr, 0);
}
