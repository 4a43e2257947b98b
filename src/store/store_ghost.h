/* SPDX-License-Identifier: BSD-3-Clause */
/* The ghost list (store_ghost.c): fingerprints of keys that left a queue
 * unread, in a direct-mapped table of about one entry per item -m holds;
 * each entry 16 bits, 15 of fingerprint and the low bit saying which
 * queue. A key written again while its fingerprint is there was wanted
 * after all: it starts with one read to its name, so its first pass moves
 * it to the main queue (S3-FIFO's ghost queue), and the queue it left was
 * too short: the store moves the small queue's target (seg_steer_small;
 * docs/store-eviction.md "Eviction"). A key leaving main never overwrites
 * one that left small, so admission by the ghost stays S3-FIFO's.
 * Entries are relaxed atomics. A key not there matches an occupied entry
 * 1 time in 32,768; that, like a lost race, costs one promotion and one
 * step of small's target, nothing else. The segments reach it only
 * through their eviction hook (struct seg_hooks). */
#ifndef NODELAY_STORE_GHOST_H
#define NODELAY_STORE_GHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store_ghost {
    uint16_t *tab; /* NULL: no ghost list (out of memory at start) */
    uint64_t mask;
    /* Entries from small [0] and from main [1], atomic (a lost race
     * skews them by one); every add and take writes them, so they sit on
     * a cache line apart from tab and mask, which every take reads. */
    char counts_before[64];
    int64_t n[2];
    char counts_after[48];
};

/* Sized for a store of mem_limit bytes; without memory, no ghost list. */
void ghost_init(struct store_ghost *g, size_t mem_limit);
void ghost_release(struct store_ghost *g);

/* Which queue a ghost's key left. */
enum ghost_from { GHOST_NONE, GHOST_SMALL, GHOST_MAIN };

/* hv's entry: bits 0-25 and 52-63 of hv choose it (tables of up to 2^26
 * entries, ghost_init's cap). */
static inline uint16_t *ghost_entry(const struct store_ghost *g, uint64_t hv)
{
    return &g->tab[(hv >> 52 ^ hv) & g->mask];
}

/* A fingerprint with the low bit clear (set: left main); never 0. Bits
 * 26-40 of hv, which no table size uses to choose the entry, so keys that
 * share an entry differ in them as any two keys do. */
static inline uint16_t ghost_fp(uint64_t hv)
{
    uint16_t fp = (uint16_t)(hv >> 25) & 0xfffe;
    return fp ? fp : 2;
}

static inline void ghost_add(struct store_ghost *g, uint64_t hv, bool from_main)
{
    if (!g->tab)
        return;
    uint16_t *e = ghost_entry(g, hv);
    uint16_t old = __atomic_load_n(e, __ATOMIC_RELAXED);
    if (from_main && old && !(old & 1))
        return;
    old = __atomic_exchange_n(e, (uint16_t)(ghost_fp(hv) | from_main), __ATOMIC_RELAXED);
    if (old)
        __atomic_fetch_sub(&g->n[old & 1], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&g->n[from_main], 1, __ATOMIC_RELAXED);
}

/* Was hv's key evicted unread, and from where? Forgets it. */
static inline enum ghost_from ghost_take(struct store_ghost *g, uint64_t hv)
{
    if (!g->tab)
        return GHOST_NONE;
    uint16_t *e = ghost_entry(g, hv);
    uint16_t v = __atomic_load_n(e, __ATOMIC_RELAXED);
    if ((v & 0xfffe) != ghost_fp(hv) ||
        !__atomic_compare_exchange_n(e, &v, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return GHOST_NONE;
    __atomic_fetch_sub(&g->n[v & 1], 1, __ATOMIC_RELAXED);
    return v & 1 ? GHOST_MAIN : GHOST_SMALL;
}

/* How far a key back from queue `from` moves small's target: half its
 * bytes, times the other queue's entries over this one's when there are
 * more (ARC's weights: the rarer kind of hit says more). */
static inline uint64_t ghost_step(const struct store_ghost *g, enum ghost_from from,
                                  uint64_t item_bytes)
{
    int64_t mine = __atomic_load_n(&g->n[from == GHOST_MAIN], __ATOMIC_RELAXED);
    int64_t other = __atomic_load_n(&g->n[from != GHOST_MAIN], __ATOMIC_RELAXED);
    uint64_t step = item_bytes / 2;
    if (mine < 1)
        mine = 1;
    return other > mine ? step * (uint64_t)other / (uint64_t)mine : step;
}

#endif
