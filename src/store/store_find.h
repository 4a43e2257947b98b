/* SPDX-License-Identifier: BSD-3-Clause */
/* The lookup's find (store_lookup.h's contract) and the unlink, inline
 * for the two that run the find on every request: store_lookup_write
 * (store_lookup.c), which every other operation calls, and store_get
 * (store.c), where a get's call into it was some 25 instructions of its
 * own; and for the files that unlink what they found. */
#ifndef NODELAY_STORE_FIND_H
#define NODELAY_STORE_FIND_H

#include <string.h>

#include "store/store_lookup.h"
#include "store/store_core.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_seg.h"
#include "store/store_life.h"
#include "store/store_classes.h"
#include "store/seg_counts.h"
#include "store/flash/flash_tier.h"

/* Unlink a found item (bucket lock held): dead in the -e file first, then
 * out of the index and its segment's counts. */
static inline void store_unlink(struct store *s, struct store_found *f)
{
    /* -e: dead in the file before anyone can see it gone */
    if (s->pm)
        item_set_dead(f->p);
    index_clear_slot(&s->index, f->chain, f->slot);
    struct store_cls_of c = classes_item(&s->classes, f->p, &f->h);
    seg_note_gone(f->seg, item_total(&f->h), &c);
}

/* The item's key is the one looked up: keys of 8 to 16 bytes (most are)
 * as two overlapping 8-byte words each, without a call to memcmp. */
static inline bool store_key_eq(const char *a, const char *b, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a0, b0, a1, b1;
        memcpy(&a0, a, 8);
        memcpy(&b0, b, 8);
        memcpy(&a1, a + n - 8, 8);
        memcpy(&b1, b + n - 8, 8);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    return memcmp(a, b, n) == 0;
}

/* store_find_live in the chain of bucket b. Inline: every lookup runs it
 * once or twice, and a call was some 15 instructions a time. */
static inline __attribute__((always_inline)) bool
store_find_chain(struct store_ctx *ctx, uint64_t *b, const struct store_key *k, bool reclaim,
                 struct store_found *f)
{
    struct store *s = ctx->store;
    for (uint64_t *cur = b; cur; cur = index_next(&s->index, cur)) {
        for (unsigned m = index_match(cur, k->tag); m; m &= m - 1, m &= m - 1) {
            int i = __builtin_ctz(m) >> 1;
            uint64_t sl = slot_matched(&cur[i]);
            /* a flash item is read by a probe first (store_flash.h) and
             * found in RAM then: here it is a miss, left linked */
            if (slot_is_flash(sl))
                continue;
            char *p = seg_item(&s->pool, sl);
            if ((uint8_t)p[1] != k->nkey)
                continue;
            struct item_hdr h;
            item_decode(p, &h);
            if (h.nkey != k->nkey || !store_key_eq(p + h.hlen, k->key, k->nkey))
                continue;
            f->chain = b;
            f->slot = &cur[i];
            f->p = p;
            f->seg = seg_of(&s->pool, slot_seg(sl));
            f->h = h;
            enum item_life life =
                life_of_item(&s->life, p, &h, f->seg->cas_base, f->seg->tbase, f->now);
            if (life == ITEM_LIVE)
                return true;
            if (reclaim) {
                /* as memcached's lru_pull_tail: flushed ones count too */
                bool fetched = item_get_status(p, &h) & ITEM_S_FETCHED;
                struct store_cls_ctr *cc = &ctx->cls[classes_item(&s->classes, p, &h).cls];
                CTR_INC(ctx, reclaimed);
                CLS_INC(cc, reclaimed);
                if (!fetched) {
                    CTR_INC(ctx, expired_unfetched);
                    CLS_INC(cc, expired_unfetched);
                }
            } else if (life == ITEM_FLUSHED) {
                CTR_INC(ctx, get_flushed);
            } else {
                CTR_INC(ctx, get_expired);
            }
            store_unlink(s, f);
            f->gone = life;
            return false;
        }
    }
    return false;
}

/* index_lock_second let the first bucket go meanwhile: both again. Out of
 * line, as it is rare, to keep the lookup's own code short. */
static __attribute__((noinline)) bool store_find_both(struct store_ctx *ctx,
                                                      const struct store_key *k, bool reclaim,
                                                      struct store_found *f)
{
    enum item_life gone = f->gone;
    f->gone = ITEM_LIVE;
    for (int c = 0; c < 2 && f->keys.b[c]; c++)
        if (store_find_chain(ctx, f->keys.b[c], k, reclaim, f) || f->gone != ITEM_LIVE)
            return f->gone == ITEM_LIVE;
    f->gone = gone;
    return false;
}

/* Lock the key's buckets and find it in their chains, unlinking it if it
 * has expired or been flushed (counted as get_expired / get_flushed, or
 * with reclaim as reclaimed: store_lookup_write). Found in the first
 * bucket, only that one is locked; else both are. */
static inline __attribute__((always_inline)) bool store_find_live(struct store_ctx *ctx,
                                                                  const struct store_key *k,
                                                                  bool reclaim,
                                                                  struct store_found *f)
{
    struct index *ix = &ctx->store->index;
    index_lock_first(ix, k->hv, &f->keys);
    if (store_find_chain(ctx, f->keys.b[0], k, reclaim, f))
        return true;
    if (index_lock_second(ix, k->hv, &f->keys))
        return f->gone == ITEM_LIVE && f->keys.b[1] &&
               store_find_chain(ctx, f->keys.b[1], k, reclaim, f);
    return store_find_both(ctx, k, reclaim, f);
}

/* store_lookup_write's body. */
static inline __attribute__((always_inline)) bool store_lookup_at(struct store_ctx *ctx,
                                                                  const struct store_key *k,
                                                                  enum store_look how, bool reclaim,
                                                                  struct store_found *f)
{
    bool refilled = false, reread = false;
    for (;;) {
        f->now = clock_now();
        f->gone = ITEM_LIVE;
        f->on_flash = false;
        f->flash = NULL;
        if (!store_find_live(ctx, k, reclaim, f)) {
            /* Its flash item read for this request goes back in RAM now,
             * not when the read completed: the request's other keys could
             * have pushed it out again (store_flash.h's promise). Once. */
            if (refilled || !ctx->flash_wait || !ctx->flash_refill)
                return false;
            enum flash_refill r = ctx->flash_refill(ctx, k, f, how);
            if (r == FLASH_UNREAD && !reread) {
                /* gone to flash since the probe: read it back, once */
                index_unlock_pair(&f->keys);
                reread = true;
                (void)ctx->flash_reread(ctx, k);
                continue;
            }
            if (r != FLASH_REFILLED) {
                f->on_flash = r == FLASH_LEFT;
                return false;
            }
            refilled = true;
            continue;
        }
        /* A segment being compacted moves its items: wait until it is done
         * and look again, the item is somewhere else by then. */
        if ((how & STORE_LOOK_PIN) && !seg_try_pin(f->seg)) {
            index_unlock_pair(&f->keys); /* store_found_unlock */
            seg_wait_compacted(f->seg);
            continue;
        }
        return true;
    }
}

#endif
