/* SPDX-License-Identifier: BSD-3-Clause */
/* The store itself (store.c): struct store and the per-worker struct
 * store_ctx that the store's files share, and store.c's helpers for them.
 *
 * Layering: item.c knows the byte layout of one item (store_item.h);
 * index.c the hash index of 8-byte slots (store_index.h); seg.c the
 * segments (store_seg.h); store_lookup.c the one lookup; store.c,
 * store_write.c and store_arith.c the operations of store.h on top.
 * Nothing outside src/store includes these headers. docs/store.md says why
 * it is shaped this way. */
#ifndef NODELAY_STORE_CORE_H
#define NODELAY_STORE_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/hugemem.h"
#include "store/store.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_classes.h"
#include "store/store_ghost.h"
#include "store/store_life.h"
#include "store/store_lookup.h"
#include "store/store_seg.h"

/* Per-ctx event counters (STORE_COUNTERS, store.h): single writer (the
 * ctx's thread), read by stats. */
struct store_ctx_counters {
#define STORE_CTX_FIELD(n) uint64_t n;
    STORE_COUNTERS(STORE_CTX_FIELD)
#undef STORE_CTX_FIELD
};

#define CTR_ADD(ctx, f, n)                                                     \
    __atomic_store_n(&(ctx)->cnt.f, __atomic_load_n(&(ctx)->cnt.f, __ATOMIC_RELAXED) + (n), \
                     __ATOMIC_RELAXED)
#define CTR_INC(ctx, f) CTR_ADD(ctx, f, 1)
/* The same single-writer update on a struct store_cls_ctr. */
#define CLS_SET(c, f, v) __atomic_store_n(&(c)->f, (v), __ATOMIC_RELAXED)
#define CLS_INC(c, f) CLS_SET(c, f, __atomic_load_n(&(c)->f, __ATOMIC_RELAXED) + 1)

#define CLS_ADD(c, f, n) CLS_SET(c, f, __atomic_load_n(&(c)->f, __ATOMIC_RELAXED) + (n))

/* Per-class event counters of one ctx (single writer, like cnt). */
struct store_cls_ctr {
#define STORE_CLS_CTR_FIELD(f) uint64_t f;
    STORE_CLASS_EVENTS(STORE_CLS_CTR_FIELD)
#undef STORE_CLS_CTR_FIELD
    uint32_t evicted_time; /* age of the last item this ctx evicted from the class */
};

struct store_ctx {
    struct store *store;
    struct seg *open[STORE_GROUPS];     /* this worker's open segments */
    uint8_t last_group;                 /* guess for store_reserve */
    uint32_t evict_debt;                /* bytes written not yet paid (store_owe) */
    struct store_ctx_counters cnt;
    struct store_cls_ctr cls[STORE_CLASSES];
    struct store_ctx *prev, *next;      /* store->ctxs, under ctx_lock */
};

struct store {
    struct store_options opt;
    size_t seg_size;
    unsigned off_shift;       /* item offsets are stored >> off_shift */
    struct index index;
    struct seg_hooks seg_hooks; /* what segments report (store_create fills it) */

    pthread_mutex_t pool_lock; /* segment lists, allocation, eviction */
    struct seg **seg_chunks;   /* SEG_CHUNK headers each, see seg_grow_cap */
    uint32_t seg_cap;          /* ids 0..seg_cap-1 have headers (pool lock) */
    uint32_t seg_limit;        /* segments -m allows */
    uint32_t kept_segs;        /* segments reply queues pin (seg_keep), atomic */
    uint32_t seg_alloc;        /* segments holding memory */
    struct hugemem_pool seg_mem; /* their memory, on huge pages (pool lock) */
    struct seg_list unused, free, fifo, small, draining; /* fifo: the main queue */
    struct seg_list temp;      /* sealed segments of the temporary_ttl group */
    struct seg *mopen;         /* main open segment: where kept items go (pool lock) */
    struct seg_walk walk;      /* the victim walked at the writers' pace (pool lock) */
    int64_t walk_ahead;        /* bytes it walked beyond what was owed, or short of it (pool lock) */
    uint8_t evict_pace;        /* writes owe eviction (seg_pay), atomic */
    uint32_t open_segs; /* workers' open segments, all groups */
    uint32_t open_max;          /* budget for them: an eighth of -m */
    size_t mem_limit;

    uint64_t cas_next;     /* last CAS handed out */
    struct store_life life; /* flush_all's marks (store_life.h) */

    pthread_mutex_t ctx_lock;
    struct store_ctx *ctxs;
    struct store_ctx_counters gone; /* counters of destroyed ctxs */
    struct store_cls_ctr gone_cls[STORE_CLASSES];
    struct store_ctx *house;        /* the housekeeper's own ctx */
    uint64_t crawl_cursor;          /* next bucket for store_crawl (housekeeper) */
    uint64_t crawl_classes;         /* classes `lru_crawler crawl` asked for (house_lock) */
    bool crawl_active;              /* the housekeeper is crawling them (house_lock) */
    bool crawl_running;             /* from the request to the crawl's end, atomic */

    pthread_t house_thread;
    bool house_running;
    pthread_mutex_t house_lock;
    pthread_cond_t house_cond;
    bool house_stop;
    bool house_kick;                /* run a pass now (an immediate flush_all) */

    int64_t temp_ttl;          /* temporary_ttl, -1 = off (store_set_temporary_ttl) */
    uint8_t lru_flat;          /* no segmented LRU (store_set_lru_segmented), atomic */
    uint64_t upload_bytes;     /* staged by incomplete uploads (store_upload.c) */
    uint64_t upload_limit;     /* bound on the large ones */
    pthread_mutex_t upload_lock;
    struct { struct store_upload *head, *tail; } uploads; /* oldest first */
    uint64_t upload_live;      /* large ones not cut off (upload_lock) */
    uint64_t upload_held;      /* large ones still allocated (upload_lock) */
    uint64_t upload_small;     /* the small ones, atomic: client memory (client_mem_limit) */

    struct persist *pm;        /* the -e memory file, or NULL (persist.h) */

    struct store_ghost ghost;     /* keys evicted unread (store_ghost.h) */
    struct store_classes classes; /* memcached's size classes (store_classes.h) */
};

/* Segments a limit of `bytes` allows: what the T_MEMD_INITIAL_MALLOC hook
 * (opt.initial_malloced) leaves of it, at least one with the hook, as
 * memcached grants a class its first page past its limit. */
static inline size_t store_seg_count(const struct store *s, size_t bytes)
{
    size_t pre = s->opt.initial_malloced;
    if (!pre)
        return bytes / s->seg_size;
    size_t n = bytes > pre ? (bytes - pre) / s->seg_size : 0;
    return n ? n : 1;
}

static inline struct seg *seg_of(struct store *s, uint32_t id)
{
    return &s->seg_chunks[id / SEG_CHUNK][id % SEG_CHUNK];
}
static inline char *seg_item(struct store *s, uint64_t slot)
{
    return seg_of(s, slot_seg(slot))->data + ((size_t)slot_off(slot) << s->off_shift);
}

/* Adds from's counters to into's (evicted_time: the larger). */
void store_cls_fold(struct store_cls_ctr *into, const struct store_cls_ctr *from);
/* store_crawl.c: the housekeeper thread (arg: the store); one pass of its
 * work, which tests call directly; and its sweep, which unlinks expired and
 * flushed items from up to max buckets of the index, reading only items
 * whose segment may hold some. */
void *store_housekeeper(void *arg);
void store_housekeep(struct store *s);
size_t store_crawl(struct store_ctx *ctx, uint64_t max);

#endif
