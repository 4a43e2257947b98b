/* SPDX-License-Identifier: BSD-3-Clause */
/* Segments (seg.c): allocation, the FIFO queues, eviction by compaction,
 * expiry of whole segments, pins; docs/store.md "Segments". */
#ifndef NODELAY_STORE_SEG_H
#define NODELAY_STORE_SEG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/hugemem.h"
#include "store/store.h"
#include "store/store_classes.h"
#include "store/store_counters.h"
#include "store/store_index.h"
#include "store/seg_counts.h"

struct persist;
struct store_life;
struct flash_tier;

#define STORE_TTL_GROUPS 8
/* With -o temporary_ttl, items that expire within it (memcached's TEMP LRU)
 * get segments of their own, which eviction takes only as a last resort. */
#define STORE_GROUP_TEMP STORE_TTL_GROUPS
#define STORE_GROUPS (STORE_TTL_GROUPS + 1)
#define SEG_Q_MAIN 0
#define SEG_Q_SMALL 1
#define SEG_Q_TEMP 2

/* What the segments tell the parts above them. The segments call nothing
 * above them: the store fills this table in (store_create, pool.hooks) and
 * the segments call through it. */
struct seg_hooks {
    /* A live item was evicted without a read since it was written (small
     * queue) or since the last pass (main): the ghost list remembers its
     * key and queue. Called under the pool lock and the item's bucket
     * lock. */
    void (*evicted_unread)(void *arg, uint64_t hv, bool from_main);
    void *arg;
};

struct seg_list {
    struct seg *head, *tail;
    uint32_t n;
};

/* Eviction at the writers' pace (docs/store-eviction.md "Eviction"): once every
 * segment -m allows is in use, each write owes eviction as many bytes as it
 * wrote, and the debt walks one victim at a time from its cursor. A worker
 * pays once it owes SEG_PAY_BYTES (one write that large pays at once), so
 * the pool lock stays off the fast path of small writes. Nothing is walked
 * while SEG_PACE_FREE segments are already free, or one with a single
 * writer (seg_pace_free). */
#define SEG_PAY_BYTES 4096u
#define SEG_PACE_FREE 2u

/* A victim's walk (pool lock): out of its queue, items below off decided. */
struct seg_walk {
    struct seg *v;        /* NULL: no walk */
    uint32_t off;         /* cursor: the first byte not yet walked */
    uint32_t kept_from;   /* first item kept in place (main open segment full), or UINT32_MAX */
    size_t budget;        /* bytes it may still keep */
    bool retain, keep_all, from_small, any_evicted;
    /* Its live items are a quarter of its bytes or less: all of them are
     * kept (carried), as freeing it makes three quarters of a segment of
     * room at least without evicting anything (SEG_GATHER_LIVE). */
    bool gather;
};

/* The segment pool (seg.c): every segment's header, the queues, the
 * memory, and the eviction walk at the writers' pace. Fields marked (pool
 * lock) are under lock. */
struct seg_pool {
    size_t seg_size;
    unsigned off_shift;       /* item offsets are stored >> off_shift */
    pthread_mutex_t lock;      /* segment lists, allocation, eviction */
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
    /* Bytes the small queue may hold before it gives the victim (atomic):
     * written by any worker whose write finds its key in the ghost, so it
     * has a cache line of its own, away from evict_pace that every write
     * reads. */
    char small_target_before[64];
    int64_t small_target;
    /* Of 1024 keys back from main's ghost, how many get their read
     * (seg_main_credit; atomic, written by the walk): twice the share of
     * bytes main's recent passes found read, at most all. */
    uint32_t main_credit;
    char small_target_after[52];
    uint64_t main_walked, main_read; /* main's recent passes: live bytes, read bytes (pool lock) */
    uint64_t walk_mean16;            /* live items walked: mean size x 16, moving (pool lock) */
    uint8_t evict_pace;        /* writes owe eviction (seg_pay), atomic */
    uint32_t open_segs; /* workers' open segments, all groups */
    uint32_t seg_needs;  /* seg_open calls finding no segment free (pool lock) */
    /* Sealed segments whose last live item went since seg_open last looked
     * (atomic; a hint, seg_take_dead): raised by the unlink that empties
     * one, without the pool lock; lowered under it. */
    uint32_t dead_sealed;
    uint32_t open_max;          /* budget for them (seg_open_max_for; atomic) */
    size_t mem_limit;

    /* What it reads of the parts below it and reports above it, set by the
     * store before seg_pool_init and fixed from then. */
    const struct store_options *opt; /* evictions, -C, the T_MEMD hook (the store's) */
    struct index *index;             /* evictions unlink from it */
    const struct store_life *life;   /* flush marks: which items are live */
    const struct store_classes *classes; /* an item's class, for its counts */
    const uint64_t *cas_next;        /* the store's CAS counter (atomic): a segment's cas_base */
    struct persist *pm;              /* the -e file, or NULL */
    struct flash_tier *flash;        /* where live items go instead of leaving, or NULL */
    struct seg_hooks hooks;
};

/* Where a worker appends: the open segment of each TTL group. Open
 * segments are never evicted, so when more workers would each hold one
 * than the pool can spare (more writers than half its segments, at a
 * tiny -m or with many threads), workers share sets and append under the
 * set's lock; else each has its own and takes no lock. A set is one kind
 * for its life: when a limit change moves the rule, workers move to the
 * other kind of set (store_ctx_follow_limit). */
struct seg_open_set {
    struct seg *open[STORE_GROUPS];
    bool shared;          /* its writers take lock */
    uint32_t users;       /* ctxs appending here (the store's ctx_lock) */
    uint32_t epoch;       /* the limit change it was last closed for (its lock) */
    pthread_mutex_t lock; /* shared only */
};

static inline void seg_open_set_lock(struct seg_open_set *set)
{
    if (set->shared)
        pthread_mutex_lock(&set->lock);
}
static inline void seg_open_set_unlock(struct seg_open_set *set)
{
    if (set->shared)
        pthread_mutex_unlock(&set->lock);
}

/* A worker's side of the pool (in its store_ctx): where it appends
 * (its own open set, or a shared one), what its writes owe eviction, and
 * its counters that eviction adds to (the ctx's own). */
struct seg_ctx {
    struct seg_pool *pool;
    struct seg_open_set *at; /* &own, or one of the store's shared sets */
    struct seg_open_set own;
    uint32_t evict_debt;              /* bytes written not yet paid (store_owe) */
    struct store_ctx_counters *cnt;
    struct store_cls_ctr *cls;        /* [STORE_CLASSES] */
    /* A segment this worker holds one read pin on while it reserves (an
     * append's old value, a widen's or a relocation's source): a write
     * must not wait for that pin, which only it can drop. */
    struct seg *self_pin;
    uint32_t reserving; /* its reservations not yet committed or aborted */
};

/* The open segments' budget at a limit of `segs`: open segments are
 * partly empty memory that eviction cannot take, so past an eighth of -m
 * a new TTL group shares a writer's nearest open one (store_reserve_at). */
static inline uint32_t seg_open_max_for(uint32_t segs)
{
    return segs / 8 ? segs / 8 : 1;
}

static inline struct seg *seg_of(const struct seg_pool *pool, uint32_t id)
{
    return seg_at(pool->seg_chunks, id);
}
static inline char *seg_item(const struct seg_pool *pool, uint64_t slot)
{
    return seg_of(pool, slot_seg(slot))->data + ((size_t)slot_off(slot) << pool->off_shift);
}

/* Segments a limit of `bytes` allows: what the T_MEMD_INITIAL_MALLOC hook
 * (opt->initial_malloced) leaves of it, at least one with the hook, as
 * memcached grants a class its first page past its limit. */
static inline size_t seg_limit_for(const struct seg_pool *pool, size_t bytes)
{
    size_t pre = pool->opt->initial_malloced;
    if (!pre)
        return bytes / pool->seg_size;
    size_t n = bytes > pre ? (bytes - pre) / pool->seg_size : 0;
    return n ? n : 1;
}

/* An open segment is recycled rather than appended to (seg_recycle) once
 * at least this share of it is written and nothing in it is wanted any
 * more: no live item (all deleted, overwritten or reclaimed by the
 * housekeeper) or its latest expiry passed, and no pin. The check costs a
 * write two loads on the segment's header (which the write touches
 * anyway), and one clock read in an expiring TTL group; the recycle itself
 * at most once per this share of a segment written. */
#define SEG_RECYCLE_DIV 8

static inline bool seg_spent(struct seg *g, size_t seg_size)
{
    if (g->write_off < seg_size / SEG_RECYCLE_DIV)
        return false;
    if (__atomic_load_n(&g->live_items, __ATOMIC_RELAXED) != 0) {
        uint32_t maxe = __atomic_load_n(&g->max_exptime, __ATOMIC_RELAXED);
        if (maxe == SEG_EXP_NEVER || maxe > clock_now())
            return false;
    }
    return __atomic_load_n(&g->refcount, __ATOMIC_ACQUIRE) == 0;
}

/* The pool's memory and headers for seg_limit segments; its geometry
 * (seg_size, off_shift, seg_limit, mem_limit, open_max) and the fields
 * below mem_limit set first. */
int seg_pool_init(struct seg_pool *pool);
void seg_pool_release(struct seg_pool *pool);
/* A fresh, empty open segment for ctx in TTL group g, evicting when needed;
 * NULL when no room can be made. Seals the ctx's previous open segment of g. */
struct seg *seg_open(struct seg_ctx *ctx, unsigned g);
/* A key written again after it left a queue unread (the ghost list): that
 * queue was too short; moves the small queue's target by step bytes
 * (ghost_step). */
void seg_steer_small(struct seg_pool *pool, bool grow, uint64_t step);
/* seg_policy.c, for seg.c (pool lock held but seg_dead): every item of
 * seg dead at now; a sealed all-dead segment; the unpinned one with the
 * most dead bytes; main_credit brought up to date. */
bool seg_dead(struct seg_pool *pool, struct seg *seg, rel_time_t now);
struct seg *seg_find_dead(struct seg_pool *pool);
struct seg *seg_most_dead(struct seg_pool *pool);
/* The first sealed, unpinned segment, in queue order, whose live bytes are
 * at most 1/live_div of those written to it, or NULL (pool lock held). */
struct seg *seg_find_sparse(struct seg_pool *pool, unsigned live_div);
void seg_credit_update(struct seg_pool *pool);
/* seg_walk.c, for seg.c (pool lock held): walk the victim w->v from its
 * cursor until about `bytes` are freed, returning those freed; and, once it
 * is walked to its end, compact the items it kept in place (compact) or
 * drop them (it is pinned). */
size_t seg_walk_step(struct seg_ctx *ctx, struct seg_walk *w, size_t bytes);
void seg_walk_settle(struct seg_ctx *ctx, struct seg_walk *w, bool compact);
/* The slot still naming v's item at off (p, h), with its key's buckets
 * locked in *keys (the caller unlocks) and *chain the bucket whose chain
 * holds it; NULL: the item is dead or was copied out. */
uint64_t *seg_find_slot(struct seg_pool *pool, struct seg *v, size_t off, const char *p,
                        const struct item_hdr *h, uint64_t *hv, uint32_t *tag,
                        struct index_pair *keys, uint64_t **chain);
/* Unlink w->v's item at p that leaves (to flash when it qualifies):
 * evicted when live, else reclaimed, counted as memcached counts it. */
void seg_drop_item(struct seg_ctx *ctx, struct seg_walk *w, char *p, const struct item_hdr *h,
                   const struct index_pair *keys, uint64_t *b, uint64_t *slot, uint64_t hv,
                   rel_time_t now);
/* Whether a key back from main's ghost starts with a read (and so returns
 * to main): only while main's passes find their items read again, and then
 * a fixed subset of keys, by hash, so that a loop larger than the cache
 * keeps a stable part of itself in main rather than churning all of it. */
static inline bool seg_main_credit(const struct seg_pool *pool, uint64_t hv)
{
    return ((hv >> 40) & 1023) < __atomic_load_n(&pool->main_credit, __ATOMIC_RELAXED);
}
/* Pay ctx->evict_debt: walk the paced victim at least that far (store_owe). */
void seg_pay(struct seg_ctx *ctx);
/* Make ctx's spent open segment (seg_spent) empty in place, its expired
 * items unlinked; false when an item is wanted again or a pin is held. */
bool seg_recycle(struct seg_ctx *ctx, struct seg *seg);
/* seg_open with no segment free (pool lock held): wait for the pins of
 * reads in progress on draining segments that are not ctx's own, up to a
 * bound from the first wait (*until, 0 before it); false: past it, or no
 * such pin (seg_pins.c). */
bool seg_wait_pins(const struct seg_ctx *ctx, uint64_t *until);
/* Draining segments held only by pins of reads in progress other than
 * ctx's own (pool lock). */
unsigned seg_pins_passing(const struct seg_ctx *ctx);
/* Give a ctx's open segment back (ctx destroy). */
void seg_close(struct seg_ctx *ctx, struct seg *seg);
void seg_unpin(struct seg *seg);
/* A pin a reply queue holds: false past the bound (store_pin_keep). */
bool seg_keep(struct seg *seg, bool must);
void seg_unkeep(struct seg *seg);
/* Take a pin on the segment of an item found under its bucket lock; false
 * while eviction is compacting it: unlock, seg_wait_compacted, look again. */
bool seg_try_pin(struct seg *seg);
void seg_wait_compacted(struct seg *seg);
/* Housekeeping pass: reclaim segments whose items all expired or were
 * flushed. Returns segments reclaimed. */
unsigned seg_reclaim_expired(struct seg_ctx *ctx);
int seg_set_limit(struct seg_pool *pool, size_t bytes);
#endif
