/* SPDX-License-Identifier: BSD-3-Clause */
/* The ghost list (store_ghost.c): fingerprints of keys that left the small
 * queue unread, in a direct-mapped table of about one entry per item -m
 * holds. A key written again while its fingerprint is there was wanted
 * after all: it starts with one read to its name, so its first pass moves
 * it to the main queue (S3-FIFO's ghost queue). Entries are relaxed
 * atomics: a lost race costs one promotion, nothing else. The segments
 * reach it only through their eviction hook (struct seg_hooks). */
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

static inline uint32_t ghost_fp(uint64_t hv)
{
    uint32_t fp = (uint32_t)(hv >> 20);
    return fp ? fp : 1;
}

static inline void ghost_add(struct store_ghost *g, uint64_t hv)
{
    if (g->tab)
        __atomic_store_n(&g->tab[(hv >> 52 ^ hv) & g->mask], ghost_fp(hv), __ATOMIC_RELAXED);
}

/* Was hv's key evicted unread? Forgets it. */
static inline bool ghost_take(struct store_ghost *g, uint64_t hv)
{
    if (!g->tab)
        return false;
    uint32_t *e = &g->tab[(hv >> 52 ^ hv) & g->mask];
    if (__atomic_load_n(e, __ATOMIC_RELAXED) != ghost_fp(hv))
        return false;
    __atomic_store_n(e, 0, __ATOMIC_RELAXED);
    return true;
}

#endif
