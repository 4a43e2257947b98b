/* SPDX-License-Identifier: BSD-3-Clause */
/* One segment's header, struct seg, and what it counts of its items
 * (seg_counts.c): live items and bytes, per class, expiry and CAS bounds,
 * and the sums stats read. Beneath the segment pool (store_seg.h), which
 * notes every write, unlink and eviction here. */
#ifndef NODELAY_STORE_SEG_COUNTS_H
#define NODELAY_STORE_SEG_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "store/store.h"
#include "store/store_compat.h"
#include "store/store_classes.h"

struct seg_pool;

enum seg_state { SEG_UNUSED, SEG_FREE, SEG_OPEN, SEG_SEALED, SEG_COMPACTING, SEG_DRAINING };

#define SEG_EXP_NEVER UINT32_MAX

struct seg {
    char *data;                   /* seg_size bytes, NULL while SEG_UNUSED */
    uint32_t id;
    uint32_t write_off;           /* bytes used: written by its open set's owner (or lock holder) only */
    uint32_t refcount;    /* pins and pending reservations */
    uint32_t kept;        /* of which held by reply queues (seg_keep) */
    uint32_t reserving;   /* of which reservations not yet committed or aborted */
    uint32_t gen;         /* bumped when eviction of it starts */
    uint32_t live_items;
    uint64_t live_bytes;
    uint32_t max_exptime; /* latest expiry of its items, SEG_EXP_NEVER */
    uint32_t min_exptime; /* earliest expiry of its items that expire, or SEG_EXP_NEVER */
    uint64_t max_cas;
    uint64_t cas_base;
    rel_time_t created;
    /* the clock of its items' 2-byte access times (ITEM_AT_*): when it was
     * opened; kept by an in-place compaction, which moves items as they
     * are, and across a restart (pm_seg) */
    rel_time_t tbase;
    /* when an item was last linked into it: an upper bound of its items'
     * access times but for hits' bumps (store_flush_recent skips those
     * below the flush's oldest_live) */
    rel_time_t last_write;
    /* enum store_lru: set with state and queue, read atomically by a hit
     * (beside cas_base, which the hit reads too: one cache line) */
    uint8_t lru;
    /* Live items per memcached size class and their memcached sizes (stats
     * items/slabs). Updated where live_items is, on write, unlink and
     * eviction only: a read touches neither. Signed: see seg_counts. */
    int32_t cls_items[STORE_CLASSES];
    int32_t cls_bytes[STORE_CLASSES];
    /* Bit k: the segment holds bytes of a class-k item, live or dead, not
     * yet reclaimed (stats slabs' pages): set with the counts, cleared when
     * the segment is reset, and made again from the kept items when it is
     * compacted. */
    uint64_t cls_held;
    uint8_t state;                /* enum seg_state: set under the pool lock, read atomically */
    uint8_t group;
    uint8_t queue;                /* SEG_Q_SMALL, SEG_Q_MAIN or SEG_Q_TEMP while sealed */
    struct seg *prev, *next;      /* in free / fifo / draining lists */
    struct seg_pool *pool;        /* owner: seg_keep's bound is per pool */
};

/* The pool keeps its headers in chunks of SEG_CHUNK, never moved or freed
 * before the store is (an id stays valid for readers without a lock);
 * a chunk is mapped whole and its headers made as -m allows segments, so
 * its pages past the last one made cost nothing (seg.c). The header of
 * segment id in such a table. */
#define SEG_CHUNK 1024u
/* The chunk directory: a pointer for each chunk segment ids can name,
 * mapped (its pages cost only once a chunk is named). */
#define SEG_DIR_BYTES ((size_t)SLOT_MAX_SEGS / SEG_CHUNK * sizeof(struct seg *))
static inline struct seg *seg_at(struct seg *const *chunks, uint32_t id)
{
    return &chunks[id / SEG_CHUNK][id % SEG_CHUNK];
}

/* Readers load it without the pool lock (a hit's hits_to_* row). */
static inline void seg_set_lru(struct seg *g, enum store_lru lru)
{
    __atomic_store_n(&g->lru, (uint8_t)lru, __ATOMIC_RELAXED);
}

static inline enum seg_state seg_get_state(struct seg *seg)
{
    return (enum seg_state)__atomic_load_n(&seg->state, __ATOMIC_ACQUIRE);
}

/* cls and mc_size: the item's memcached size class and size
 * (classes_item). */
void seg_note_item(struct seg *seg, uint32_t size, rel_time_t exptime, uint64_t cas,
                   const struct store_cls_of *c);
void seg_note_gone(struct seg *seg, uint32_t size, const struct store_cls_of *c);
#ifdef NODELAY_DEBUG
/* Tests: called by seg_note_gone once the segment has no live item, at
 * the moment seg_recycle may see it so (tests/unit/store/test_store_life.c). */
extern void (*seg_debug_none_live)(struct seg *seg);
/* Tests: called by an in-place compaction with -e after each store to the
 * file that a kill could end on (tests/unit/store/persist/). */
extern void (*seg_debug_compact_step)(struct seg *v);
#endif
/* Per-class live counts and pages, summed over segments (pool lock). */
void seg_class_counts(struct seg_pool *pool, struct store_class_stats *out, unsigned n, rel_time_t now);
void seg_note_exptime(struct seg *seg, rel_time_t exptime);
void seg_note_cas(struct seg *seg, uint64_t cas);
/* Segment-side stats: curr_items, bytes, seg_*, dead_bytes; adds the
 * segment table to hash_bytes. */
void seg_counts(struct seg_pool *pool, struct store_stats *out);
/* True when some open or sealed segment may hold an item expired at `now`
 * (the housekeeper crawls the index only then). */
bool seg_any_expiring(struct seg_pool *pool, rel_time_t now);

#endif
