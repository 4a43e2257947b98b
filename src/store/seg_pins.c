/* SPDX-License-Identifier: BSD-3-Clause */
/* Pins on segments (docs/store.md "Pins and zero copy"): a read's pin,
 * the share of segments reply queues may keep pinned, and a write that
 * finds every segment open or draining waiting for the pins of reads in
 * progress. A pinned segment is never reused; eviction (seg.c) drains it. */
#include "store/store_seg.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

bool seg_try_pin(struct seg *seg)
{
    /* Pairs with seg_evict: either it sees our pin, or we see its state. */
    __atomic_fetch_add(&seg->refcount, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&seg->state, __ATOMIC_SEQ_CST) == SEG_COMPACTING) {
        __atomic_fetch_sub(&seg->refcount, 1, __ATOMIC_RELEASE);
        return false;
    }
    return true;
}

void seg_wait_compacted(struct seg *seg)
{
    while (__atomic_load_n(&seg->state, __ATOMIC_ACQUIRE) == SEG_COMPACTING)
        sched_yield();
}

/* A draining segment with a pin that goes within moments: a read in
 * progress, or a reservation of a worker that is running. Pins reply
 * queues keep wait for clients that may never read. The waiting worker's
 * own pins go only when it runs again: its read pin (self_pin) and its
 * reservations; on io_uring a reservation spans a turn while its value's
 * receive is the kernel's. Which reservations are whose is not known, so
 * none is waited for while this worker has any, while another worker
 * waits for room too (its own may be what this one would wait for), or
 * while workers share this one's open set (they may be waiting on its
 * lock). Waiting on regardless stalled a worker for the whole bound on
 * every write at -m 2, and every client with it. */
static bool seg_passing(struct seg *d, const struct seg_ctx *ctx)
{
    bool stuck = ctx->reserving || ctx->pool->seg_needs > 1 || ctx->at->shared;
    uint32_t not_passing = (d == ctx->self_pin ? 1u : 0u) +
                           (stuck ? __atomic_load_n(&d->reserving, __ATOMIC_RELAXED) : 0u);
    return __atomic_load_n(&d->kept, __ATOMIC_RELAXED) == 0 &&
           __atomic_load_n(&d->refcount, __ATOMIC_ACQUIRE) > not_passing;
}

unsigned seg_pins_passing(const struct seg_ctx *ctx)
{
    unsigned n = 0;
    for (struct seg *d = ctx->pool->draining.head; d; d = d->next)
        n += seg_passing(d, ctx);
    return n;
}

/* No segment free (pool lock held): room comes when a draining segment's
 * pins go. With only pins reply queues keep, false: the write is refused
 * (memcached: SERVER_ERROR out of memory). Others are a read in progress
 * (no segment is held across a read: store_upload.c), gone in
 * microseconds: wait for them, pool lock released, up to SEG_PIN_WAIT_NS
 * after the first wait (*until, 0 before it; bounded for a caller that
 * holds such a pin itself). false: past the bound or nothing to wait for. */
#define SEG_PIN_WAIT_NS (500ull * 1000 * 1000)

bool seg_wait_pins(const struct seg_ctx *ctx, uint64_t *until)
{
    struct seg_pool *pool = ctx->pool;
    bool passing = false;
    for (struct seg *d = pool->draining.head; d && !passing; d = d->next)
        passing = seg_passing(d, ctx);
    if (!passing)
        return false;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (!*until)
        *until = now + SEG_PIN_WAIT_NS;
    else if (now >= *until)
        return false;
    pthread_mutex_unlock(&pool->lock);
    struct timespec nap = {0, 20 * 1000};
    nanosleep(&nap, NULL);
    pthread_mutex_lock(&pool->lock);
    return true;
}

void seg_unpin(struct seg *seg)
{
    __atomic_fetch_sub(&seg->refcount, 1, __ATOMIC_RELEASE);
}

/* Reply queues may pin at most this share of the segments -m allows
 * (docs/store.md "Pins and zero copy"): a client that stops reading then
 * holds copies, counted in client_mem_limit, never segments eviction needs. */
#define SEG_KEEP_DIV 4

/* Counted per segment, not per pin: what blocks eviction is a segment with
 * any pin, however many values of it are queued. The global count moves
 * only when a segment's first kept pin comes or its last one goes. A segment
 * taking its first kept pin reserves a place in the count before it is
 * marked, so two workers racing past the bound cannot both keep one. With
 * must, it is kept and counted whatever the count (a value too large to
 * copy, reply_ref). */
bool seg_keep(struct seg *seg, bool must)
{
    struct seg_pool *pool = seg->pool;
    if (__atomic_load_n(&seg->kept, __ATOMIC_RELAXED) == 0) {
        uint32_t lim = __atomic_load_n(&pool->seg_limit, __ATOMIC_RELAXED) / SEG_KEEP_DIV;
        if (__atomic_add_fetch(&pool->kept_segs, 1, __ATOMIC_RELAXED) > (lim ? lim : 1) && !must) {
            __atomic_fetch_sub(&pool->kept_segs, 1, __ATOMIC_RELAXED);
            return false;
        }
        if (__atomic_fetch_add(&seg->kept, 1, __ATOMIC_RELAXED) != 0)
            __atomic_fetch_sub(&pool->kept_segs, 1, __ATOMIC_RELAXED); /* raced: counted already */
        return true;
    }
    if (__atomic_fetch_add(&seg->kept, 1, __ATOMIC_RELAXED) == 0)
        __atomic_fetch_add(&pool->kept_segs, 1, __ATOMIC_RELAXED); /* its last went meanwhile */
    return true;
}

void seg_unkeep(struct seg *seg)
{
    if (__atomic_fetch_sub(&seg->kept, 1, __ATOMIC_RELAXED) == 1)
        __atomic_fetch_sub(&seg->pool->kept_segs, 1, __ATOMIC_RELAXED);
    seg_unpin(seg);
}
