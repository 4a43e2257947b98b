/* SPDX-License-Identifier: BSD-3-Clause */
/* The restore's index build (restore_index.c), shared with the segment walk
 * (restore.c) only.
 *
 * Inserting millions of items one by one lands each on a random bucket of
 * a table of hundreds of MiB: a cache and TLB miss per item, most of what
 * a restore cost. So the walk only files each item it keeps under the part
 * of the table it belongs in (a part: 4096 buckets or more, 256 KiB), and
 * the table is then filled part by part, one thread per part and no lock,
 * the part's buckets staying in cache while it fills.
 *
 * Where the items are filed is the table itself: a part's own 256 KiB
 * holds eight words a bucket, and a bucket takes 7.4 items on average at
 * most (INDEX_SPLIT_TENTHS), so an item packed in one word (its bucket in the
 * part, tag, segment, offset) fits in its part's memory, split between the
 * walking threads. A table of 2^L + s buckets, s > 0, is filed by L + 1
 * bits of the hash, in 2^(L+1) buckets' memory: by them a bucket not yet
 * split is two, 7.4 items each at most on average, and its part of the
 * upper half is given back once the table is built (index_load_done).
 * Each item is filed in one of its two buckets (rix_filed_hash), so that
 * split and unsplit buckets are filed alike. Filling a part links its
 * items into buckets built in a buffer of the thread's, then writes the
 * buffer over the part. A walking thread gathers each part's words a
 * cache line at a time and writes the line whole, past the caches (it
 * would only be read back from memory anyway): its writes to a thousand
 * places at once then cost no read of each line first. A word keeps too
 * few bits of the hash to find the item's other bucket, so the items past
 * the INDEX_SLOTS of their bucket (counted per bucket as they are filed),
 * those of a part that runs out of room, and all of a file whose numbers
 * do not pack in 64 bits, are spilled to blocks of (hash, slot) records
 * beside it. Beyond the table it must build anyway, a restore takes a
 * byte a bucket for the counts and 16 bytes a record: at six items a
 * bucket on average, about one item in ten is one (0.82 M of 8.6 M).
 *
 * A unit's fill links the packed words, which fit, then the records in
 * their filed bucket while that has room: the others wait until every
 * unit is built, then go to their other bucket where it has room (each by
 * the thread that owns that bucket), found from the hash they carry, and
 * the few left are put in either of their buckets as an insert would (the
 * emptier, moving an entry of a full pair before chaining), under the
 * buckets' locks. So a restart leaves less overflow than the run before
 * it had, and only a move reads an item again (to hash the key of the
 * entry it moves).
 */
#ifndef NODELAY_RESTORE_INDEX_H
#define NODELAY_RESTORE_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "store/persist/persist.h"
#include "store/persist/split.h"
#include "store/store_core.h"


struct rix_rec {
    uint64_t hv;   /* the key's hash */
    uint64_t slot; /* the index slot that will point at the item */
};

#define RIX_BLOCK_RECS 255
struct rix_block { /* 4 KiB: a run of one part's spilled records */
    struct rix_block *next;
    uint32_t n;
    uint32_t pad;
    struct rix_rec rec[RIX_BLOCK_RECS];
};

struct rix_arena;

/* Words a walking thread gathers per part before it writes them out: four
 * lines, so that each write to one of the thousand-odd pages it fills at
 * once is four lines long, a TLB miss per four lines while the table is
 * on small pages (index_load_begin). 4 GiB of 100-byte values: median
 * 4.17 s of CPU against 4.72 s with one line (five interleaved runs, load
 * 17-20); eight lines was no better (3.95 against 4.07). */
#ifndef RIX_STAGE
#define RIX_STAGE 32u
#endif

/* An item rix_add has yet to file. */
struct rix_pending {
    uint64_t hv, fh;
    uint32_t seg, off;
};
/* Items rix_add keeps while their bucket's count comes in: 16 items of
 * 100 bytes are a few hundred ns of the walk, the time of a miss. */
#define RIX_PEND 16u

/* An item filed but not linked (and marked dead): another copy of its key
 * was linked (dup), or no memory could be had for it. For the fill, called
 * on the calling thread after the fill, for each such slot; for the walk,
 * on the walking thread that found it. Fixes its segment's counts. */
typedef void (*rix_drop_fn)(void *arg, uint64_t slot, bool dup);

/* One walking thread's filing: packed words per part, and its spill. On
 * cache lines of its own (SPLIT_LINE): every item filed writes it. */
struct rix_bins {
    _Alignas(SPLIT_LINE) uint32_t *packed; /* per part: words filed in the table */
    uint64_t (*stage)[RIX_STAGE];    /* per part: the lines being gathered */
    struct rix_block **head, **tail; /* per part: spilled records */
    struct rix_arena *arena;         /* where spill blocks come from */
    bool nomem_logged;
    uint64_t n;                      /* items filed (rix_add) */
    uint64_t lost;                   /* of them, dropped for want of memory */
    rix_drop_fn drop;                /* an item the walk could not file (rix_map) */
    void *drop_arg;
    struct rix_pending pend[RIX_PEND]; /* the last items, from n - RIX_PEND on */
};

struct rix {
    struct store *s;
    uint64_t *table;     /* the index's buckets, holding packed words */
    uint64_t shape;      /* the table's (index_shape_make): 2^L + s buckets */
    uint32_t share;      /* rix_unsplit_share(shape) */
    unsigned power;      /* log2 of the load area's buckets: L, or L + 1 when s > 0 */
    unsigned part_shift; /* part = (hv >> part_shift) & (nparts - 1) */
    uint32_t nparts;
    uint32_t nunits;     /* what a fill thread takes whole (rix_unit) */
    uint32_t nbins;
    uint32_t cap;        /* packed words per part and walking thread */
    bool pack;           /* the numbers fit in a word */
    uint8_t *filed;      /* per bucket of the table: items packed in it (rix_file) */
    unsigned seg_bits, off_bits; /* a packed word: bucket in part | tag | seg | off */
    struct rix_bins bins[SPLIT_THREADS];
    uint64_t *words[SPLIT_THREADS]; /* a filling thread's buckets of a part */
};

/* Filing for `nbins` walking threads, in the index's (empty) table. */
int rix_init(struct rix *x, struct store *s, uint32_t nbins);
void rix_release(struct rix *x);

/* Map walking thread bin's share of the table's pages (index_load_map),
 * and name what takes an item it cannot file; on that thread, before it
 * files anything. */
void rix_map(struct rix *x, uint32_t bin, rix_drop_fn drop, void *arg);
bool rix_spill(struct rix *x, struct rix_bins *b, uint32_t part, uint64_t hv, uint64_t slot);
/* No memory to file slot: it is marked dead and dropped (rix_map). */
void rix_lost(struct rix *x, uint32_t bin, uint64_t slot);
/* Write walking thread bin's staged lines of part's words, the first at
 * word `at` of its share. */
void rix_flush(struct rix *x, uint32_t bin, uint32_t part, uint32_t at);
/* A walking thread is done: file what it still keeps and write what it
 * still stages. On that thread. */
void rix_finish(struct rix *x, uint32_t bin);

/* Which of its two buckets an item of hash hv is filed in, by the hash
 * that picks it (hv, or index_hash2(hv) for its second). In a table of
 * 2^L + s buckets the s split buckets and their s new ones each take
 * half the hashes of an unsplit one, first choices and second alike, so
 * filing every item in its first bucket would load an unsplit bucket
 * with 7.4 (2^L + s) / 2^L items, up to 14.8, and a split one with half
 * that, before either can be evened out by moves, one by one. Instead an
 * item whose two buckets are both unsplit or both split takes its first,
 * and one with one of each takes the unsplit one for a share
 * s / (2 (2^L + s)) of the hashes (its bits 32..47), its split one
 * otherwise: then every bucket is filed 7.4 items on average (u unsplit
 * buckets out of M = 2^L take u/M of the choices; the items with both
 * there, u^2 n / M^2 at 7.4 items a bucket of n, and that share of the
 * 2u (M - u) n / M^2 with one make 7.4u, since M^2 - u n = (M - u)^2). */
static inline bool rix_unsplit(uint64_t shape, uint64_t h)
{
    uint64_t r = index_shape_bucket(shape, h);
    return r >= index_shape_split(shape) && r <= shape >> 32;
}

/* The share of rix_filed_hash in 2^16ths. */
static inline uint32_t rix_unsplit_share(uint64_t shape)
{
    uint64_t sp = index_shape_split(shape);
    return (uint32_t)((sp << 15) / ((shape >> 32) + 1 + sp));
}

static inline uint64_t rix_filed_hash(uint64_t shape, uint32_t share, uint64_t hv)
{
    if (!index_shape_split(shape))
        return hv;
    uint64_t h2 = index_hash2(hv);
    bool u1 = rix_unsplit(shape, hv);
    if (u1 == rix_unsplit(shape, h2))
        return hv;
    bool to_unsplit = ((hv >> 32) & 0xFFFF) < share;
    return to_unsplit == u1 ? hv : h2;
}

/* The hashes of the bucket an item is filed in and of its other one. */
static inline void rix_both_hashes(uint64_t shape, uint64_t hv, uint64_t *filed, uint64_t *other)
{
    *filed = rix_filed_hash(shape, rix_unsplit_share(shape), hv);
    *other = *filed == hv ? index_hash2(hv) : hv;
}

/* File an item of key hash hv, filed by hash fh (rix_filed_hash), at
 * segment seg, offset off in slot units, for walking thread `bin`. A
 * packed word keeps too few bits of the hash to find the item's other
 * bucket, so an item past the INDEX_SLOTS its bucket holds is spilled
 * with its hash, and the fill sends it to its other bucket without
 * reading the item again to hash its key. The walking threads count the
 * items packed in each bucket together (`filed`, one compare-and-swap an
 * item), so that a bucket's packed words always fit in it and only the
 * items past its slots are records: at six items a bucket on average,
 * about one in ten. */
static inline void rix_file(struct rix *x, uint32_t bin, uint64_t hv, uint64_t fh, uint32_t seg,
                            uint32_t off)
{
    struct rix_bins *b = &x->bins[bin];
    uint32_t tag = index_tag(hv);
    uint32_t part = (uint32_t)(fh >> x->part_shift) & (x->nparts - 1);
    if (x->pack && b->packed[part] < x->cap) {
        uint8_t *c = &x->filed[index_shape_bucket(x->shape, fh)];
        uint8_t k = __atomic_load_n(c, __ATOMIC_RELAXED);
        while (k < INDEX_SLOTS &&
               !__atomic_compare_exchange_n(c, &k, (uint8_t)(k + 1), true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
            ;
        if (k < INDEX_SLOTS) {
            uint64_t in_part = fh & (((uint64_t)1 << x->part_shift) - 1);
            uint32_t n = b->packed[part]++;
            b->stage[part][n & (RIX_STAGE - 1)] =
                (((in_part << 11) | tag) << x->seg_bits | seg) << x->off_bits | off;
            if ((n & (RIX_STAGE - 1)) == RIX_STAGE - 1)
                rix_flush(x, bin, part, n & ~(RIX_STAGE - 1));
            return;
        }
    }
    if (!rix_spill(x, b, part, hv, slot_make(tag, seg, off)))
        rix_lost(x, bin, slot_make(tag, seg, off));
}

/* File an item (rix_file) for walking thread `bin`. Its bucket's count is
 * a read and write at random in memory larger than the caches, so it is
 * asked for here and the item filed RIX_PEND items later, when the line
 * has come. An item that cannot be filed (out of memory) is dead and
 * handed to the thread's drop function (rix_map). */
static inline void rix_add(struct rix *x, uint32_t bin, uint64_t hv, uint32_t seg, uint32_t off)
{
    struct rix_bins *b = &x->bins[bin];
    uint64_t fh = rix_filed_hash(x->shape, x->share, hv);
    if (x->pack)
        __builtin_prefetch(&x->filed[index_shape_bucket(x->shape, fh)], 1);
    struct rix_pending *e = &b->pend[b->n & (RIX_PEND - 1)];
    if (b->n >= RIX_PEND)
        rix_file(x, bin, e->hv, e->fh, e->seg, e->off);
    *e = (struct rix_pending){hv, fh, seg, off};
    b->n++;
}

/* Link every filed item, on up to `nthreads` threads (at most nbins);
 * returns how many were linked. */
uint64_t rix_fill(struct rix *x, uint32_t nthreads, rix_drop_fn drop, void *arg);

#endif
