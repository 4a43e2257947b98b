/* SPDX-License-Identifier: BSD-3-Clause */
/* The composition (store.c): struct store, which holds one of each part's
 * structs (the segment pool, index, classes, item life, ghost list,
 * uploads, housekeeper, the -e file), and the per-worker struct store_ctx
 * (with the pool's per-worker struct seg_ctx). Included only by the files
 * that compose the parts, from the lookup up; the parts below never see
 * it (docs/design.md "The store's parts"; scripts/check-layers.sh keeps
 * both the calls and the includes in order). The inline helpers here call
 * nothing above the items. Nothing outside src/store includes this header. */
#ifndef NODELAY_STORE_CORE_H
#define NODELAY_STORE_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_counters.h"
#include "store/store_item.h"
#include "store/store_index.h"
#include "store/store_life.h"
#include "store/store_classes.h"
#include "store/store_seg.h"
#include "store/store_ghost.h"
#include "store/store_upload.h"
#include "store/store_crawl.h"
#include "store/flash/flash_tier.h"

/* What store_ctx.flash_refill did. FLASH_UNREAD: nothing, but the key's
 * buckets hold a flash slot under its flash tag that its wait set read
 * nothing for (the item left RAM after the request's probe). */
enum flash_refill { FLASH_NONE, FLASH_REFILLED, FLASH_LEFT, FLASH_SERVED, FLASH_UNREAD };

/* Counts on a ctx's counters (store_counters.h). */
#define CTR_ADD(ctx, f, n) CNT_ADD(&(ctx)->cnt, f, n)
#define CTR_INC(ctx, f) CTR_ADD(ctx, f, 1)

struct store_key;
struct store_found;

struct store_ctx {
    struct store *store;
    struct seg_ctx seg;                 /* its open segments and eviction debt (store_seg.h) */
    uint8_t last_group;                 /* guess for store_reserve */
    struct store_ctx_counters cnt;
    struct store_cls_ctr cls[STORE_CLASSES];
    struct store_flash_wait *flash_wait; /* the session's flash reads (store_flash.h) */
    struct flash_cq *flash_cq;          /* its completed flash reads, or NULL */
    unsigned flash_inflight;            /* its reads submitted, done() not yet run */
    /* store_flash.c's, for store_lookup_write on a miss (f->keys, the
     * key's buckets, locked; how: its enum store_look): FLASH_REFILLED
     * when it put the key's item, read for flash_wait, back in RAM
     * (unlocked then); FLASH_LEFT when such an item was read and, with
     * STORE_LOOK_KEEP_FLASH, left on flash; FLASH_SERVED when, with
     * STORE_LOOK_FLASH_BUF, it is served from the read's buffer
     * (f->flash set); FLASH_NONE (still locked for the three). NULL: no
     * flash tier. */
    enum flash_refill (*flash_refill)(struct store_ctx *ctx, const struct store_key *k,
                                      struct store_found *f, unsigned how);
    /* store_flash.c's, for store_widen: it moved the key's item from slot
     * `from` to `to` for ctx's request (a touch or mark that did not
     * fit), so a RAM copy of a flash item lent to the request is still
     * that copy, not a write. NULL: no flash tier. */
    void (*flash_relinked)(struct store_ctx *ctx, const struct store_key *k, uint64_t from,
                           uint64_t to);
    /* store_flash.c's, for store_lookup_write on FLASH_UNREAD: the key's
     * item left RAM for flash after the request's probe had found it there
     * and read nothing (eviction, or the reservation of the request's own
     * copy of it). It reads the item as that probe would have, where no
     * wait is needed (its bytes still in a writer's buffer, as just after
     * an eviction): true when the request's lookups will find it. NULL:
     * no flash tier. */
    bool (*flash_reread)(struct store_ctx *ctx, const struct store_key *k);
    struct store_ctx *prev, *next;      /* store->ctxs, under ctx_lock */
    uint32_t set_ix;     /* which shared set it takes, when they are in use */
    uint32_t sets_epoch; /* the store's sets_epoch its seg.at follows */
};

struct store {
    struct store_options opt;
    struct seg_pool pool;       /* segments and their eviction (store_seg.h) */
    struct index index;

    uint64_t cas_next;     /* last CAS handed out */
    struct store_life life; /* flush_all's marks (store_life.h) */

    pthread_mutex_t ctx_lock;
    struct store_ctx *ctxs;
    /* Open sets workers share (store_seg.h "seg_open_set"): one per
     * writer, made at start; the running limit puts the first nsets in
     * use, or none, each ctx appending to its own (store_sets_for; under
     * ctx_lock). A ctx uses set set_ix % nsets. A limit change that
     * lowers the limit or changes nsets bumps sets_epoch (atomic), which
     * every ctx follows at its next write or its worker's next turn
     * (store_ctx_follow_limit). sets_limit: the segment limit they follow. */
    struct seg_open_set *shared_sets;
    uint32_t nshared_sets, nsets, next_set;
    uint32_t sets_epoch, sets_limit;
    struct store_ctx_counters gone; /* counters of destroyed ctxs */
    struct store_cls_ctr gone_cls[STORE_CLASSES];
    struct store_house hk;      /* the housekeeper and the crawler (store_crawl.h) */

    int64_t temp_ttl;          /* temporary_ttl, -1 = off (store_set_temporary_ttl) */
    uint8_t lru_flat;          /* no segmented LRU (store_set_lru_segmented), atomic */
    struct store_uploads up;   /* values still arriving (store_upload.h) */

    struct persist *pm;        /* the -e memory file, or NULL (persist.h) */

    struct store_ghost ghost;     /* keys evicted unread (store_ghost.h) */
    struct store_classes classes; /* memcached's size classes (store_classes.h) */
    struct flash_tier *flash;     /* the flash tier, or NULL (flash/flash_tier.h) */
    /* -e with a flash tier: its record in the memory file, and whether it
     * held segments to link again (persist/restore_flash.c) */
    struct flash_keep flash_keep;
    bool flash_kept;
};

/* The set ctx appends to under the running limit's rule (ctx_lock). */
static inline struct seg_open_set *store_set_of(struct store *s, struct store_ctx *c)
{
    return s->nsets ? &s->shared_sets[c->set_ix % s->nsets] : &c->seg.own;
}

/* memcached's item size check for -I and the key length (inline: every
 * reservation makes it). */
static inline enum store_status store_check_size(struct store *s, size_t nkey, size_t nvalue, uint32_t flags)
{
    if (nkey == 0 || nkey > STORE_KEY_MAX)
        return STORE_TOO_LARGE;
    if (nvalue > UINT32_MAX - 1024 ||
        item_mc_size(nkey, nvalue, flags, s->opt.cas_enabled) > s->opt.item_size_max)
        return STORE_TOO_LARGE;
    return STORE_OK;
}


/* Adds from's counters to into's (evicted_time: the larger). */
void store_cls_fold(struct store_cls_ctr *into, const struct store_cls_ctr *from);

#endif
