/* SPDX-License-Identifier: BSD-3-Clause */
/* The segment pool's policy arithmetic (seg.c does the moving): which
 * segments are dead, the small queue's target, main's readmission credit,
 * and what -M squeezes. Reads the pool; takes no lock of its own.
 * docs/store-eviction.md "Eviction". */
#include "store/store_seg.h"
#include "store/store_life.h"

#include "base/clock.h"

/* A key back from main's ghost is readmitted with probability
 * SEG_CREDIT_MUL times the share of bytes main's recent passes found read
 * (seg_main_credit); recent: the last SEG_CREDIT_WINDOW segments walked,
 * the count halved past that. docs/store-eviction.md "Eviction". */
#define SEG_CREDIT_MUL 2
#define SEG_CREDIT_WINDOW 4
/* Victim search looks this far into the FIFO for an all-dead segment. */
#define SEG_DEAD_SCAN 1024

/* Every item in it expired, flushed, overwritten or deleted. */
bool seg_dead(struct seg_pool *pool, struct seg *seg, rel_time_t now)
{
    if (__atomic_load_n(&seg->live_items, __ATOMIC_RELAXED) == 0)
        return true;
    uint32_t maxe = __atomic_load_n(&seg->max_exptime, __ATOMIC_RELAXED);
    if (maxe != SEG_EXP_NEVER && maxe <= now)
        return true;
    uint32_t ol = __atomic_load_n(&pool->life->oldest_live, __ATOMIC_RELAXED);
    uint64_t oc = __atomic_load_n(&pool->life->oldest_cas, __ATOMIC_RELAXED);
    if (ol && ol <= now && oc && pool->opt->cas_enabled &&
        __atomic_load_n(&seg->max_cas, __ATOMIC_RELAXED) < oc)
        return true;
    return false;
}

/* A sealed segment whose items are all dead, or NULL (pool lock held). */
struct seg *seg_find_dead(struct seg_pool *pool)
{
    rel_time_t now = clock_now();
    unsigned scanned = 0;
    struct seg_list *lists[3] = {&pool->small, &pool->fifo, &pool->temp};
    for (int l = 0; l < 3; l++)
        for (struct seg *c = lists[l]->head; c && scanned < SEG_DEAD_SCAN; c = c->next, scanned++)
            if (seg_dead(pool, c, now))
                return c;
    return NULL;
}

struct seg *seg_find_sparse(struct seg_pool *pool, unsigned live_div)
{
    unsigned scanned = 0;
    struct seg_list *lists[3] = {&pool->small, &pool->fifo, &pool->temp};
    for (int l = 0; l < 3; l++)
        for (struct seg *c = lists[l]->head; c && scanned < SEG_DEAD_SCAN; c = c->next, scanned++)
            if ((uint64_t)__atomic_load_n(&c->live_bytes, __ATOMIC_RELAXED) * live_div <=
                    c->write_off &&
                __atomic_load_n(&c->refcount, __ATOMIC_ACQUIRE) == 0)
                return c;
    return NULL;
}

/* The unpinned segment with the most dead bytes, at least an eighth of
 * one, or NULL (pool lock held): what -M squeezes instead of evicting. */
struct seg *seg_most_dead(struct seg_pool *pool)
{
    struct seg_list *lists[3] = {&pool->small, &pool->fifo, &pool->temp};
    struct seg *best = NULL;
    uint64_t best_dead = pool->seg_size / 8;
    for (int l = 0; l < 3; l++)
        for (struct seg *c = lists[l]->head; c; c = c->next) {
            uint64_t dead = c->write_off - __atomic_load_n(&c->live_bytes, __ATOMIC_RELAXED);
            if (dead > best_dead && __atomic_load_n(&c->refcount, __ATOMIC_ACQUIRE) == 0) {
                best = c;
                best_dead = dead;
            }
        }
    return best;
}

/* Publish main_credit from main's recent passes (pool lock held). */
void seg_credit_update(struct seg_pool *pool)
{
    if (!pool->main_walked)
        return;
    uint64_t credit = 1024 * SEG_CREDIT_MUL * pool->main_read / pool->main_walked;
    __atomic_store_n(&pool->main_credit, (uint32_t)(credit < 1024 ? credit : 1024),
                     __ATOMIC_RELAXED);
    if (pool->main_walked > (uint64_t)SEG_CREDIT_WINDOW * pool->seg_size) {
        pool->main_walked /= 2;
        pool->main_read /= 2;
    }
}

/* ARC's rule on S3-FIFO's queues (docs/store-eviction.md "Eviction"): a key back
 * from small's ghost grows small's target, one back from main's shrinks
 * it, by step bytes (ghost_step), between one segment and 9/10 of -m.
 * Called by a write that found its key in the ghost, without the pool
 * lock. */
void seg_steer_small(struct seg_pool *pool, bool grow, uint64_t step_bytes)
{
    int64_t lo = (int64_t)pool->seg_size;
    int64_t limit = (int64_t)__atomic_load_n(&pool->seg_limit, __ATOMIC_RELAXED);
    int64_t hi = limit * lo / 10 * 9;
    if (step_bytes > (uint64_t)hi)
        step_bytes = (uint64_t)hi;
    int64_t step = grow ? (int64_t)step_bytes : -(int64_t)step_bytes;
    int64_t old = __atomic_load_n(&pool->small_target, __ATOMIC_RELAXED), want;
    do {
        want = old + step;
        want = want > hi ? hi : want;
        want = want < lo ? lo : want;
    } while (want != old && !__atomic_compare_exchange_n(&pool->small_target, &old, want, true,
                                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}
