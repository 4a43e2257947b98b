/* SPDX-License-Identifier: BSD-3-Clause */
/* The ghost list (store_ghost.c): fingerprints of keys that left a queue
 * unread, in a direct-mapped table of about one entry per item -m holds;
 * the low bit says which queue. A key written again while its fingerprint
 * is there was wanted after all: it starts with one read to its name, so
 * its first pass moves it to the main queue (S3-FIFO's ghost queue), and
 * the queue it left was too short: the store moves the small queue's
 * target (seg_steer_small; docs/store.md "Eviction"). A key leaving main
 * never overwrites one that left small, so admission by the ghost stays
 * S3-FIFO's. Entries are relaxed atomics: a lost race costs one promotion,
 * nothing else. The segments reach it only through their eviction hook
 * (struct seg_hooks). */
#ifndef NODELAY_STORE_GHOST_H
#define NODELAY_STORE_GHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store_ghost {
    uint32_t *tab; /* NULL: no ghost list (out of memory at start) */
    uint64_t mask;
};

/* Sized for a store of mem_limit bytes; without memory, no ghost list. */
void ghost_init(struct store_ghost *g, size_t mem_limit);
void ghost_release(struct store_ghost *g);

/* Which queue a ghost's key left. */
enum ghost_from { GHOST_NONE, GHOST_SMALL, GHOST_MAIN };

/* A fingerprint with the low bit clear (set: left main); never 0. */
static inline uint32_t ghost_fp(uint64_t hv)
{
    uint32_t fp = (uint32_t)(hv >> 20) & ~1u;
    return fp ? fp : 2;
}

static inline void ghost_add(struct store_ghost *g, uint64_t hv, bool from_main)
{
    if (!g->tab)
        return;
    uint32_t *e = &g->tab[(hv >> 52 ^ hv) & g->mask];
    if (from_main) {
        uint32_t old = __atomic_load_n(e, __ATOMIC_RELAXED);
        if (old && !(old & 1))
            return;
    }
    __atomic_store_n(e, ghost_fp(hv) | from_main, __ATOMIC_RELAXED);
}

/* Was hv's key evicted unread, and from where? Forgets it. */
static inline enum ghost_from ghost_take(struct store_ghost *g, uint64_t hv)
{
    if (!g->tab)
        return GHOST_NONE;
    uint32_t *e = &g->tab[(hv >> 52 ^ hv) & g->mask];
    uint32_t v = __atomic_load_n(e, __ATOMIC_RELAXED);
    if ((v & ~1u) != ghost_fp(hv))
        return GHOST_NONE;
    __atomic_store_n(e, 0, __ATOMIC_RELAXED);
    return v & 1 ? GHOST_MAIN : GHOST_SMALL;
}

#endif
