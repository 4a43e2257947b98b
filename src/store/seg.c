/* SPDX-License-Identifier: BSD-3-Clause */
/* Segments: allocation, the queues of sealed segments, eviction, expiry
 * (what each counts of its items: seg_counts.c).
 *
 * Every byte of item data lives in a segment of seg_size bytes; -m allows
 * seg_limit of them. A worker appends to its own open segment per TTL group;
 * a full one is sealed onto the small queue. Once -m is all in use, a victim
 * is chosen S3-FIFO style (seg_pick_victim): from the small queue while it
 * holds more than its target, else from the main queue (the target moves
 * with the ghost's hits, seg_steer_small); and it
 * is walked item by item at the writers' pace (seg_pay): every write owes
 * the bytes it wrote, paid every SEG_PAY_BYTES by walking the victim that
 * far. Items read since they were written (small) or since the last pass
 * (main) are kept, copied to the main open segment; when that is full they
 * stay in place and, at the walk's end, the victim is compacted and takes
 * its place. The rest leave; keys that leave unread go to the ghost (the
 * evicted_unread hook, struct seg_hooks). At most 15/16 of
 * a victim is kept, so room is always made, and the walk is paced by the
 * room it frees. A worker that needs a segment and finds none free finishes
 * the walk from its cursor keeping at most half of it (seg_evict_one).
 *
 * A segment whose items are all expired, flushed or overwritten is preferred
 * as a victim and costs no eviction; below the limit one emptied by unlinks
 * is taken before fresh memory is mapped (seg_take_dead); the housekeeper
 * reclaims such segments ahead of need, and a worker's own open one is
 * emptied in place by its next write (seg_recycle).
 *
 * Pins: readers hold a segment's refcount while they send from it. A pinned
 * victim is not compacted: its items are unlinked or copied out (so no new
 * pin can be taken) and it waits in `draining` until its refcount drops to
 * zero. While a victim is being compacted (SEG_COMPACTING) a reader may not
 * pin it: it waits and looks again (seg_try_pin). The pins themselves, and
 * a write's wait for them: seg_pins.c.
 *
 * Lock order: the pool lock (pool.lock), then bucket locks, then the index pool lock.
 */
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_classes.h"
#include "store/store_life.h"
#include "store/store_seg.h"
#include "store/persist/persist.h"
#include "store/flash/flash_tier.h"
#include "watch/watch.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

/* The small queue's target starts at this share of the segments. */
#ifndef SEG_SMALL_DIV
#define SEG_SMALL_DIV 10
#endif
#ifndef SEG_RETAIN_NUM
#define SEG_RETAIN_NUM 15
#define SEG_RETAIN_DEN 16
#endif

/* A victim whose live bytes are at most 1/SEG_GATHER_LIVE of what was
 * written to it keeps them all: overwrites and deletes spread dead bytes
 * over every segment, and a cache whose live data is a quarter of -m
 * evicted its unread items where memcached reuses the freed chunks and
 * evicts nothing. Carrying that little costs at most a quarter of a
 * segment's copying for three quarters of one freed. */
#define SEG_GATHER_LIVE 4

static void seg_set_state(struct seg *seg, enum seg_state st)
{
    __atomic_store_n(&seg->state, (uint8_t)st, __ATOMIC_RELEASE);
}

static void list_push(struct seg_list *l, struct seg *s)
{
    s->next = NULL;
    s->prev = l->tail;
    if (l->tail)
        l->tail->next = s;
    else
        l->head = s;
    l->tail = s;
    l->n++;
}

static void list_remove(struct seg_list *l, struct seg *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        l->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        l->tail = s->prev;
    s->prev = s->next = NULL;
    l->n--;
}

/* Headers, made as -m allows in chunks never moved (seg_counts.h; pool
 * lock held). */
static int seg_grow_cap(struct seg_pool *pool, uint64_t want)
{
    if (want > SLOT_MAX_SEGS)
        return -1;
    while (pool->seg_cap < want) {
        uint32_t id = pool->seg_cap;
        struct seg *c = pool->seg_chunks[id / SEG_CHUNK];
        if (!c) {
            c = mmap(NULL, SEG_CHUNK * sizeof(*c), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (c == MAP_FAILED)
                return -1;
            __atomic_store_n(&pool->seg_chunks[id / SEG_CHUNK], c, __ATOMIC_RELEASE);
        }
        c[id % SEG_CHUNK] = (struct seg){.id = id, .pool = pool};
        list_push(&pool->unused, &c[id % SEG_CHUNK]);
        pool->seg_cap++;
    }
    return 0;
}

int seg_pool_init(struct seg_pool *pool)
{
    pool->seg_chunks = mmap(NULL, SEG_DIR_BYTES, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pool->seg_chunks == MAP_FAILED)
        return -1;
    pthread_mutex_init(&pool->lock, NULL);
    hugemem_pool_init(&pool->seg_mem);
    uint32_t small = pool->seg_limit / SEG_SMALL_DIV ? pool->seg_limit / SEG_SMALL_DIV : 1;
    pool->small_target = (int64_t)small * (int64_t)pool->seg_size;
    pool->main_credit = 1024;
    /* Headers are made as segments are first taken (seg_take_free), so a
     * vast -m or cache_memlimit costs nothing until it is filled; -e makes
     * them all, as its restore finds segments anywhere in its file. */
    if (seg_grow_cap(pool, pool->pm ? pool->seg_limit : 1) != 0) {
        seg_pool_release(pool);
        return -1;
    }
    return 0;
}

void seg_pool_release(struct seg_pool *pool)
{
    for (uint32_t i = 0; i < pool->seg_cap && !pool->pm; i++) {
        struct seg *g = seg_of(pool, i);
        if (g->data)
            munmap(g->data, pool->seg_size);
    }
    hugemem_pool_release(&pool->seg_mem);
    for (uint32_t c = 0; c < (pool->seg_cap + SEG_CHUNK - 1) / SEG_CHUNK; c++)
        munmap(pool->seg_chunks[c], SEG_CHUNK * sizeof(struct seg));
    if (pool->seg_chunks)
        munmap(pool->seg_chunks, SEG_DIR_BYTES);
    pool->seg_chunks = NULL;
    pool->seg_cap = 0;
    pthread_mutex_destroy(&pool->lock);
}

static void seg_unmap(struct seg_pool *pool, struct seg *seg)
{
    if (pool->pm) {
        /* Part of the file mapping: give its pages back to tmpfs. */
        persist_seg_free(pool->pm, seg);
        madvise(seg->data, pool->seg_size, MADV_REMOVE);
    } else {
        munmap(seg->data, pool->seg_size);
    }
    seg->data = NULL;
    seg_set_state(seg, SEG_UNUSED);
    pool->seg_alloc--;
    list_push(&pool->unused, seg);
}

/* Move drained segments whose pins are gone to the free list and give back
 * what a lowered limit no longer allows (pool lock held). */
static void seg_collect_drained(struct seg_pool *pool)
{
    for (struct seg *d = pool->draining.head, *n; d; d = n) {
        n = d->next;
        if (__atomic_load_n(&d->refcount, __ATOMIC_ACQUIRE) == 0) {
            list_remove(&pool->draining, d);
            seg_set_state(d, SEG_FREE);
            list_push(&pool->free, d);
        }
    }
    while (pool->seg_alloc > pool->seg_limit && pool->free.head) {
        struct seg *f = pool->free.head;
        list_remove(&pool->free, f);
        seg_unmap(pool, f);
    }
}

/* A segment with no items in use, or NULL (pool lock held). */
static struct seg *seg_take_free(struct seg_pool *pool)
{
    seg_collect_drained(pool);
    if (pool->free.head) {
        struct seg *f = pool->free.head;
        list_remove(&pool->free, f);
        return f;
    }
    if (pool->seg_alloc < pool->seg_limit && !pool->unused.head &&
        seg_grow_cap(pool, (uint64_t)pool->seg_cap + 1) != 0)
        return NULL;
    if (pool->seg_alloc < pool->seg_limit && pool->unused.head) {
        struct seg *u = pool->unused.head;
        bool more = pool->seg_alloc + 1 < pool->seg_limit;
        void *p = pool->pm ? pm_seg_data(pool->pm, pool->seg_size, u->id)
                        : hugemem_piece(&pool->seg_mem, pool->seg_size,
                                        (size_t)pool->seg_alloc * pool->seg_size, more);
        if (!p)
            return NULL;
        list_remove(&pool->unused, u);
        u->data = p;
        pool->seg_alloc++;
        return u;
    }
    return NULL;
}

static void seg_reset(struct seg_pool *pool, struct seg *seg, unsigned group, uint64_t cas_base)
{
    seg->write_off = 0;
    __atomic_store_n(&seg->live_items, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->live_bytes, 0, __ATOMIC_RELAXED);
    memset(seg->cls_items, 0, sizeof(seg->cls_items));
    memset(seg->cls_bytes, 0, sizeof(seg->cls_bytes));
    __atomic_store_n(&seg->cls_held, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->max_exptime, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->min_exptime, SEG_EXP_NEVER, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->max_cas, 0, __ATOMIC_RELAXED);
    seg->cas_base = cas_base;
    /* atomic: seg_recycle resets an open segment without the pool lock,
     * under which stats read it (seg_class_counts) */
    __atomic_store_n(&seg->created, clock_now(), __ATOMIC_RELAXED);
    __atomic_store_n(&seg->tbase, seg->created, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->last_write, 0, __ATOMIC_RELAXED);
    seg->group = (uint8_t)group;
    seg_set_lru(seg, group == STORE_GROUP_TEMP ? STORE_LRU_TEMP : STORE_LRU_HOT);
    seg_set_state(seg, SEG_OPEN);
    if (pool->pm)
        persist_seg_open(pool->pm, seg);
}

/* A worker's full segment enters the small (probation) queue; one of the
 * temporary_ttl group goes to its own queue, which eviction spares. With
 * moves, its live items move from HOT to COLD (moves_to_cold, counted in
 * ctx, the segment's owner); without, they are about to be reclaimed. */
static void seg_seal(struct seg_ctx *ctx, struct seg *seg, bool moves)
{
    struct seg_pool *pool = ctx->pool;
    seg_set_state(seg, SEG_SEALED);
    bool temp = seg->group == STORE_GROUP_TEMP;
    if (!temp && moves) {
        uint64_t moved = 0;
        for (unsigned k = 1; k < pool->classes->n; k++) {
            int32_t n = __atomic_load_n(&seg->cls_items[k], __ATOMIC_RELAXED);
            if (n > 0) {
                CLS_ADD(&ctx->cls[k], moves_to_cold, (uint64_t)n);
                moved += (uint64_t)n;
            }
        }
        CNT_ADD(ctx->cnt, moves_to_cold, moved);
    }
    seg->queue = temp ? SEG_Q_TEMP : SEG_Q_SMALL;
    seg_set_lru(seg, temp ? STORE_LRU_TEMP : STORE_LRU_COLD);
    list_push(temp ? &pool->temp : &pool->small, seg);
    if (__atomic_load_n(&seg->live_items, __ATOMIC_ACQUIRE) == 0)
        __atomic_fetch_add(&pool->dead_sealed, 1, __ATOMIC_RELAXED); /* as seg_note_gone */
}

static struct seg_list *seg_queue(struct seg_pool *pool, struct seg *seg)
{
    return seg->queue == SEG_Q_TEMP ? &pool->temp : seg->queue == SEG_Q_SMALL ? &pool->small : &pool->fifo;
}

/* Start evicting sealed segment v (pool lock held): it leaves its queue and
 * its items are walked by seg_walk_step, S3-FIFO style on segments:
 *  - from the small (probation) queue, items read since they were written
 *    move to the main queue, the rest leave;
 *  - from the main queue, items read since the last pass stay, owing one
 *    read, the rest leave.
 * Readers may still pin v and read the items past the cursor: nothing of v
 * moves until seg_walk_end. keep_all (-M): every live item is kept, only
 * dead bytes are freed; v is marked COMPACTING from the start (no pin can
 * be taken); false when it holds a pin. */
static bool seg_walk_begin(struct seg_ctx *ctx, struct seg_walk *w, struct seg *v, bool retain,
                           bool keep_all)
{
    struct seg_pool *pool = ctx->pool;
    *w = (struct seg_walk){
        .v = v,
        .kept_from = UINT32_MAX,
        .budget = keep_all ? pool->seg_size : pool->seg_size * SEG_RETAIN_NUM / SEG_RETAIN_DEN,
        .retain = retain,
        .keep_all = keep_all,
        /* a temporary segment (a last resort) is treated as probation too */
        .from_small = v->queue != SEG_Q_MAIN,
        .gather = retain && (uint64_t)__atomic_load_n(&v->live_bytes, __ATOMIC_RELAXED) *
                                    SEG_GATHER_LIVE <= v->write_off,
    };
    if (keep_all) {
        __atomic_store_n(&v->state, SEG_COMPACTING, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&v->refcount, __ATOMIC_SEQ_CST) != 0) {
            seg_set_state(v, SEG_SEALED);
            w->v = NULL;
            return false;
        }
    }
    list_remove(seg_queue(pool, v), v);
    /* A reservation still being filled in here sees this and relocates. */
    __atomic_fetch_add(&v->gen, 1, __ATOMIC_RELEASE);
    if (!keep_all)
        seg_set_state(v, SEG_DRAINING);
    return true;
}

/* Finish a victim walked to its end (pool lock held): it goes to draining,
 * free once its pins are released, or, when it kept items in place, is
 * compacted and becomes the main open segment. A pin on it forbids the
 * compaction: with must (a worker needs room now) the kept items are then
 * dropped, as the whole-segment walk always did; without, false: it waits
 * for a later call. */
static bool seg_walk_end(struct seg_ctx *ctx, struct seg_walk *w, bool must)
{
    struct seg_pool *pool = ctx->pool;
    struct seg *v = w->v;
    bool compact = false;
    if (w->kept_from != UINT32_MAX) {
        compact = w->keep_all; /* COMPACTING since seg_walk_begin, unpinned */
        if (!compact) {
            __atomic_store_n(&v->state, SEG_COMPACTING, __ATOMIC_SEQ_CST);
            compact = __atomic_load_n(&v->refcount, __ATOMIC_SEQ_CST) == 0;
            if (!compact) {
                seg_set_state(v, SEG_DRAINING);
                if (!must)
                    return false;
            }
        }
        if (compact && pool->mopen) {
            pool->mopen->queue = SEG_Q_MAIN;
            seg_set_state(pool->mopen, SEG_SEALED);
            list_push(&pool->fifo, pool->mopen);
            pool->mopen = NULL;
        }
        seg_walk_settle(ctx, w, compact);
    }
    if (w->any_evicted)
        CNT_INC(ctx->cnt, seg_evicted);
    else
        CNT_INC(ctx->cnt, seg_expired);
    w->v = NULL;
    if (compact) {
        v->created = clock_now();
        v->queue = SEG_Q_MAIN;
        seg_set_lru(v, STORE_LRU_WARM);
        __atomic_store_n(&v->state, SEG_OPEN, __ATOMIC_RELEASE);
        pool->mopen = v;
        return true;
    }
    if (pool->pm)
        persist_seg_free(pool->pm, v); /* every item in it is dead or copied out */
    list_push(&pool->draining, v);
    return true;
}

/* Evict a sealed segment whole (pool lock held); false: -M and pinned. */
static bool seg_evict(struct seg_ctx *ctx, struct seg *v, bool retain, bool keep_all)
{
    struct seg_walk w;
    if (!seg_walk_begin(ctx, &w, v, retain, keep_all))
        return false;
    seg_walk_step(ctx, &w, SIZE_MAX);
    return seg_walk_end(ctx, &w, true);
}

/* The next live victim, S3-FIFO style (pool lock held), or NULL. ahead: it
 * is picked while the writer's segment that will need its room is still
 * open; that one enters the small queue before the room is taken, so it is
 * counted there, and the pick is the one a worker needing a segment would
 * make. */
static struct seg *seg_pick_victim(struct seg_pool *pool, bool ahead)
{
    /* The small queue holds its target (seg_steer_small); below that the
     * main queue gives room, and when it has nothing sealed yet, its open
     * segment is sealed so that kept items cannot sit there for ever. */
    int64_t target = __atomic_load_n(&pool->small_target, __ATOMIC_RELAXED);
    bool want_main = (int64_t)(pool->small.n + ahead) * (int64_t)pool->seg_size <= target ||
                     !pool->small.head;
    if (want_main && !pool->fifo.head && pool->mopen && pool->mopen->write_off) {
        pool->mopen->queue = SEG_Q_MAIN;
        seg_set_state(pool->mopen, SEG_SEALED);
        list_push(&pool->fifo, pool->mopen);
        pool->mopen = NULL;
    }
    struct seg *v = want_main && pool->fifo.head ? pool->fifo.head : pool->small.head;
    if (!v)
        v = pool->fifo.head;
    /* Items within temporary_ttl expire on their own: they are evicted for
     * others only when nothing else is left (memcached would refuse). */
    if (!v)
        v = pool->temp.head;
    return v;
}

/* Start the paced walk on the next victim (pool lock held): an all-dead
 * segment first, else the S3-FIFO choice; false when there is none. Above
 * a lowered limit victims are given back, nothing kept. */
static bool seg_pace_start(struct seg_ctx *ctx, bool ahead)
{
    struct seg_pool *pool = ctx->pool;
    struct seg *v = seg_find_dead(pool);
    bool retain = v == NULL && pool->seg_alloc <= pool->seg_limit;
    /* one mostly dead goes first, its live items gathered: no eviction */
    if (!v && retain)
        v = seg_find_sparse(pool, SEG_GATHER_LIVE);
    if (!v)
        v = seg_pick_victim(pool, ahead);
    return v && seg_walk_begin(ctx, &pool->walk, v, retain, false);
}

/* -M compacts instead of evicting, and a compaction frees a segment only
 * when the main open segment takes all of its victim's items: with a
 * fraction d of every segment dead, about 1/d compactions (8 at most, as
 * the victim has an eighth dead at least) free one. Under -e the gaps an
 * in-place compaction leaves stay as padding, which counts as dead and is
 * never reclaimed: two segments of it were found compacted in turn forever
 * under the pool lock, every other thread waiting on it. So a need stops
 * at a compaction that reclaimed nothing, and after this many, and is then
 * refused (out of memory, as memcached's -M). */
#define SEG_COMPACT_PER_NEED 16u

/* Make room for a worker that needs a segment now (pool lock held): false
 * if impossible. An all-dead segment costs no eviction; else the paced
 * walk's victim is finished from its cursor (usually little is left), or a
 * victim is walked whole; with -M a segment is compacted, at most
 * SEG_COMPACT_PER_NEED times a need (*compacted counts them). */
static bool seg_evict_one(struct seg_ctx *ctx, unsigned *compacted)
{
    struct seg_pool *pool = ctx->pool;
    struct seg *d = seg_find_dead(pool);
    if (d)
        return seg_evict(ctx, d, false, false);
    if (!pool->opt->evictions) {
        /* -M: never drop a live item, but squeeze out dead bytes: compact
         * the unpinned segment with the most of them (an eighth at least). */
        if (*compacted >= SEG_COMPACT_PER_NEED)
            return false;
        struct seg *best = seg_most_dead(pool);
        if (!best)
            return false;
        (*compacted)++;
        uint32_t dead = best->write_off - __atomic_load_n(&best->live_bytes, __ATOMIC_RELAXED);
        if (!seg_evict(ctx, best, true, true))
            return false;
        /* emptied (free, or draining until its pins go), still being
         * compacted (its readers' pins hold it), or made room */
        uint8_t st = __atomic_load_n(&best->state, __ATOMIC_ACQUIRE);
        return st == SEG_FREE || st == SEG_DRAINING || st == SEG_COMPACTING ||
               best->write_off - __atomic_load_n(&best->live_bytes, __ATOMIC_RELAXED) < dead;
    }
    if (!pool->walk.v && !seg_pace_start(ctx, false))
        return false;
    /* A worker waits: the victim keeps at most half of itself in all, so
     * at most two more victims after it make a free segment. */
    size_t kept = pool->seg_size * SEG_RETAIN_NUM / SEG_RETAIN_DEN - pool->walk.budget;
    pool->walk.budget = kept < pool->seg_size / 2 ? pool->seg_size / 2 - kept : 0;
    seg_walk_step(ctx, &pool->walk, SIZE_MAX);
    return seg_walk_end(ctx, &pool->walk, true);
}

/* Writers owe eviction once every segment -m allows is in use (pool lock
 * held); store_owe reads it without the lock. */
static void seg_pace_update(struct seg_pool *pool)
{
    bool pace = pool->opt->evictions && pool->seg_alloc >= pool->seg_limit;
    __atomic_store_n(&pool->evict_pace, (uint8_t)pace, __ATOMIC_RELAXED);
}

/* The free segments the walk stops at. The second is room for a worker
 * whose open segment fills while another's does, so that neither waits on a
 * walk; with one writer no other can, and it would only hold no items: a
 * segment of -m 8 is an eighth of it (docs/store-eviction.md). */
static uint32_t seg_pace_free(const struct seg_pool *pool)
{
    return pool->opt->writers == 1 ? 1 : SEG_PACE_FREE;
}

void seg_pay(struct seg_ctx *ctx)
{
    struct seg_pool *pool = ctx->pool;
    int64_t want = ctx->evict_debt;
    ctx->evict_debt = 0;
    uint32_t stop = seg_pace_free(pool);
    pthread_mutex_lock(&pool->lock);
    seg_collect_drained(pool);
    /* Room already made (expiry, flush, deletes) is used first: nothing is
     * evicted for it. */
    if (!pool->opt->evictions || pool->seg_alloc < pool->seg_limit || pool->free.n >= stop) {
        pool->walk_ahead = 0;
        goto out;
    }
    /* What the walk went past or fell short of last time counts in this
     * payment, so the walk keeps the writers' pace and never drifts. */
    want -= pool->walk_ahead;
    while (want > 0) {
        if (!pool->walk.v && !seg_pace_start(ctx, true))
            break;
        want -= (int64_t)seg_walk_step(ctx, &pool->walk, (size_t)want);
        if (pool->walk.off < pool->walk.v->write_off)
            break; /* the rest of the next item is owed by later writes */
        if (!seg_walk_end(ctx, &pool->walk, false))
            break; /* pinned while it must be compacted: retried later */
        seg_collect_drained(pool);
        if (pool->free.n >= stop)
            break;
    }
    /* Behind (want > 0) by part of an item, or ahead by at most half a one;
     * a debt that found nothing to walk is kept up to a segment. */
    pool->walk_ahead = pool->free.n >= stop ? 0 : -want;
    if (pool->walk_ahead < -(int64_t)pool->seg_size)
        pool->walk_ahead = -(int64_t)pool->seg_size;
out:
    seg_pace_update(pool);
    pthread_mutex_unlock(&pool->lock);
}

/* A segment for a worker that found none free (pool lock held, counted
 * in seg_needs), or NULL: no room can be made. A victim found pinned by a
 * read only drains. Once the victims draining give the room every waiting
 * worker needs when their pins go (a victim walked for a worker keeps at
 * most half of itself: two apiece), it waits for those pins rather than
 * evict more, so a write under read pressure evicts about what it needs,
 * not the cache. An all-dead segment costs no eviction and is taken
 * first; past the wait's bound victims are taken again until none is
 * left. Each eviction takes a sealed segment from a queue, -M's
 * compactions are counted (SEG_COMPACT_PER_NEED) and the wait is bounded,
 * so this ends. */
#define SEG_DRAIN_PER_NEED 2u

static struct seg *seg_make_room(struct seg_ctx *ctx)
{
    struct seg_pool *pool = ctx->pool;
    struct seg *seg = NULL;
    uint64_t until = 0;
    unsigned compacted = 0;
    while (!seg) {
        /* an all-dead one is looked for before the first wait, not each nap */
        bool enough = seg_pins_passing(ctx) >= SEG_DRAIN_PER_NEED * pool->seg_needs &&
                      (until || !seg_find_dead(pool));
        if (!(enough && seg_wait_pins(ctx, &until)) && !seg_evict_one(ctx, &compacted) &&
            !seg_wait_pins(ctx, &until))
            return NULL;
        seg = seg_take_free(pool);
    }
    return seg;
}

/* Below the limit with nothing free, a sealed segment that unlinks emptied
 * (overwrites, deletes) is taken before fresh memory is mapped (pool lock
 * held). A cache whose keys are rewritten then stays on the memory its
 * live items need, as memcached reuses a slab class's chunks, instead of
 * mapping all of -m before it reuses any: first touches fault and zero
 * huge pages (the filler thread's, and more under a hypervisor), and
 * write to memory no cache holds. Looked for only after such an unlink
 * (dead_sealed), so a filling cache scans nothing; an expired segment is
 * the housekeeper's. */
static void seg_take_dead(struct seg_ctx *ctx)
{
    struct seg_pool *pool = ctx->pool;
    seg_collect_drained(pool);
    if (pool->free.head || pool->seg_alloc >= pool->seg_limit ||
        !__atomic_load_n(&pool->dead_sealed, __ATOMIC_RELAXED))
        return;
    struct seg *d = seg_find_dead(pool);
    if (d && seg_evict(ctx, d, false, false))
        __atomic_fetch_sub(&pool->dead_sealed, 1, __ATOMIC_RELAXED);
    else
        __atomic_store_n(&pool->dead_sealed, 0, __ATOMIC_RELAXED);
}

struct seg *seg_open(struct seg_ctx *ctx, unsigned g)
{
    struct seg_pool *pool = ctx->pool;
    pthread_mutex_lock(&pool->lock);
    struct seg *prev = ctx->at->open[g];
    if (prev) {
        seg_seal(ctx, prev, true);
        ctx->at->open[g] = NULL;
        __atomic_fetch_sub(&pool->open_segs, 1, __ATOMIC_RELAXED);
    }
    seg_take_dead(ctx);
    struct seg *seg = seg_take_free(pool);
    if (!seg) {
        pool->seg_needs++;
        seg = seg_make_room(ctx);
        pool->seg_needs--;
    }
    if (seg)
        seg_reset(pool, seg, g, __atomic_load_n(pool->cas_next, __ATOMIC_RELAXED));
    if (seg) {
        seg->group = (uint8_t)g;
        ctx->at->open[g] = seg;
        __atomic_fetch_add(&pool->open_segs, 1, __ATOMIC_RELAXED);
    }
    seg_pace_update(pool);
    pthread_mutex_unlock(&pool->lock);
    return seg;
}

/* Empty a worker's spent open segment in place, without the pool lock: it
 * is in no queue and only its owner writes it (a shared set's writers
 * call this holding the set's lock). Expired items still linked
 * are unlinked (reclaimed, as memcached's allocation counts them); with
 * none linked no new pin can be taken, and with no pin left it is reset. */
bool seg_recycle(struct seg_ctx *ctx, struct seg *seg)
{
    struct seg_pool *pool = ctx->pool;
    rel_time_t now = clock_now();
    size_t align = (size_t)1 << pool->off_shift;
    struct seg_walk w = {.v = seg};
    for (size_t off = 0; off < seg->write_off &&
                         __atomic_load_n(&seg->live_items, __ATOMIC_ACQUIRE) != 0;) {
        char *p = seg->data + off;
        if (!__atomic_load_n((const uint8_t *)p, __ATOMIC_RELAXED)) {
            off += align; /* padding, as seg_walk_step */
            continue;
        }
        struct item_hdr h;
        item_decode(p, &h);
        uint64_t hv, *b;
        uint32_t tag;
        struct index_pair kb;
        uint64_t *slot = seg_find_slot(pool, seg, off, p, &h, &hv, &tag, &kb, &b);
        if (slot && life_of_item(pool->life, p, &h, seg->cas_base, seg->tbase, now) == ITEM_LIVE) {
            index_unlock_pair(&kb); /* touched to a later expiry meanwhile: wanted */
            return false;
        }
        if (slot)
            seg_drop_item(ctx, &w, p, &h, &kb, b, slot, hv, now);
        index_unlock_pair(&kb);
        off = (off + item_total(&h) + align - 1) & ~(align - 1);
    }
    /* Acquire pairs with seg_note_gone's release: a pin taken before an
     * item was unlinked is seen here. */
    if (__atomic_load_n(&seg->live_items, __ATOMIC_ACQUIRE) != 0 ||
        __atomic_load_n(&seg->refcount, __ATOMIC_ACQUIRE) != 0)
        return false;
    __atomic_fetch_add(&seg->gen, 1, __ATOMIC_RELEASE);
    if (pool->pm)
        persist_seg_free(pool->pm, seg); /* every item in it is dead */
    seg_reset(pool, seg, seg->group, __atomic_load_n(pool->cas_next, __ATOMIC_RELAXED));
    CNT_INC(ctx->cnt, seg_expired);
    return true;
}

void seg_close(struct seg_ctx *ctx, struct seg *seg)
{
    struct seg_pool *pool = ctx->pool;
    pthread_mutex_lock(&pool->lock);
    __atomic_fetch_sub(&pool->open_segs, 1, __ATOMIC_RELAXED);
    if (seg->write_off == 0 && __atomic_load_n(&seg->refcount, __ATOMIC_ACQUIRE) == 0) {
        if (pool->pm)
            persist_seg_free(pool->pm, seg);
        seg_set_state(seg, SEG_FREE);
        list_push(&pool->free, seg);
    } else {
        seg_seal(ctx, seg, true);
    }
    pthread_mutex_unlock(&pool->lock);
}

unsigned seg_reclaim_expired(struct seg_ctx *ctx)
{
    struct seg_pool *pool = ctx->pool;
    unsigned n = 0;
    pthread_mutex_lock(&pool->lock);
    rel_time_t now = clock_now();
    struct seg_list *lists[3] = {&pool->small, &pool->fifo, &pool->temp};
    for (int l = 0; l < 3; l++)
        for (struct seg *c = lists[l]->head, *next; c; c = next) {
            next = c->next;
            if (seg_dead(pool, c, now)) {
                seg_evict(ctx, c, false, false);
                n++;
            }
        }
    /* Move drained segments to the free list and give back what a lowered
     * limit no longer allows. */
    struct seg *f = seg_take_free(pool);
    if (f) {
        seg_set_state(f, SEG_FREE);
        list_push(&pool->free, f);
    }
    pthread_mutex_unlock(&pool->lock);
    return n;
}

int seg_set_limit(struct seg_pool *pool, size_t bytes)
{
    size_t n = seg_limit_for(pool, bytes);
    if (n < 1 || n > SLOT_MAX_SEGS || (pool->flash && n >= FLASH_SEG_BASE))
        return -1;
    if (pool->pm && n > pool->pm->nsegs)
        return -1; /* -e: the file was sized for the -m it started with */
    pthread_mutex_lock(&pool->lock);
    __atomic_store_n(&pool->seg_limit, (uint32_t)n, __ATOMIC_RELAXED);
    __atomic_store_n(&pool->open_max, seg_open_max_for((uint32_t)n), __ATOMIC_RELAXED);
    __atomic_store_n(&pool->mem_limit, bytes, __ATOMIC_RELAXED);
    /* small's target back within its bounds for the new -m: above them it
     * would count every segment as small's, and main would be evicted to
     * nothing until the next ghost hit */
    seg_steer_small(pool, false, 0);
    while (pool->seg_alloc > pool->seg_limit && pool->free.head) {
        struct seg *f = pool->free.head;
        list_remove(&pool->free, f);
        seg_unmap(pool, f);
    }
    seg_pace_update(pool);
    pthread_mutex_unlock(&pool->lock);
    return 0;
}
