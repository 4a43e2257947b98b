/* SPDX-License-Identifier: BSD-3-Clause */
/* The hash index (index.c): buckets of 8-byte slots, bucket locks,
 * overflow chains and growth. Knows nothing of items: it rehashes a slot
 * through the callback it is given; docs/store-index.md "Index". */
#ifndef NODELAY_STORE_INDEX_H
#define NODELAY_STORE_INDEX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/hugemem.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Built for ThreadSanitizer: reads that race only with a bucket lock's
 * atomic bit set, harmless, are made atomic for it (index_match). */
#if defined(__SANITIZE_THREAD__)
#define INDEX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define INDEX_TSAN 1
#endif
#endif

/* A bucket is one cache line of eight slots, with no header: the bucket's
 * lock is bit 2 of its first slot (SLOT_LOCK, a bit no slot field uses),
 * and a chain is a link in its last slot (slot_link). A slot:
 *   tag(11) | segment id(24) | offset(26) | lock(1) | frequency(2)
 * 0 = empty. The frequency counts reads since the item was written or last
 * kept at an eviction, saturating at 3 (S3-FIFO's counter). */
#define INDEX_WORDS 8 /* a bucket's words: one cache line */
#define INDEX_SLOTS 8
#define INDEX_SLOT0 0 /* the word of a bucket's first slot */
/* The bucket lock's bit: set in slot 0 alone, clear in every other. */
#define SLOT_LOCK 4ull
#define SLOT_FREQ 3ull
#define SLOT_OFF_BITS 26
#define SLOT_SEG_BITS 24
#define SLOT_MAX_SEGS (1u << SLOT_SEG_BITS)
#define SLOT_MAX_OFF (1u << SLOT_OFF_BITS)

static inline uint64_t slot_make(uint32_t tag, uint32_t seg, uint32_t off)
{
    return ((uint64_t)tag << 53) | ((uint64_t)seg << 29) | ((uint64_t)off << 3);
}
static inline uint32_t slot_tag(uint64_t s) { return (uint32_t)(s >> 53); }
static inline uint32_t slot_seg(uint64_t s) { return (uint32_t)(s >> 29) & (SLOT_MAX_SEGS - 1); }
static inline uint32_t slot_off(uint64_t s) { return (uint32_t)(s >> 3) & (SLOT_MAX_OFF - 1); }
static inline unsigned slot_freq(uint64_t s) { return (unsigned)(s & SLOT_FREQ); }
static inline uint64_t slot_hit(uint64_t s) { return (s & SLOT_FREQ) == SLOT_FREQ ? s : s + 1; }
/* Segment ids from FLASH_SEG_BASE up name flash segments (docs/store.md
 * "Flash tier"): RAM segments stay below it when a flash tier is on. */
#define FLASH_SEG_BASE (1u << 23)
static inline bool slot_is_flash(uint64_t s) { return slot_seg(s) >= FLASH_SEG_BASE; }
/* A flash slot's place (docs/store-index.md "Growth"): INDEX_PLACE_BITS
 * bits of the hash whose bucket it is in (its key's first or second),
 * from the index's place_base up, so that at a level below place_base +
 * INDEX_PLACE_BITS a split moves it as a rehash would, and a mover finds
 * its other bucket where its bucket's bits do not say it (a move flips
 * the place as index_hash2 flips the hash). They are the
 * top bits of its segment id under the flash bit; the rest names the
 * flash segment (SLOT_FLASH_IDS of them). Not part of what the slot
 * names: slot_id. */
#define INDEX_PLACE_BITS 4
#define SLOT_PLACE_SHIFT (29 + SLOT_SEG_BITS - 1 - INDEX_PLACE_BITS)
#define SLOT_PLACE (((1ull << INDEX_PLACE_BITS) - 1) << SLOT_PLACE_SHIFT)
#define SLOT_FLASH_IDS (1u << (SLOT_SEG_BITS - 1 - INDEX_PLACE_BITS))
static inline unsigned slot_place(uint64_t s) { return (unsigned)((s & SLOT_PLACE) >> SLOT_PLACE_SHIFT); }
/* A flash slot's further tag (docs/store-index.md "Flash tags"): a
 * flash segment's offsets fit in fewer than the 26 bits a slot holds
 * (4 MiB: 22), so up to INDEX_XTAG_BITS of a flash slot's top offset bits
 * (index.flash_xmask, set by the tier for its segment size) carry more
 * bits of its key's hash, 49 up: neither the tag's (53 up) nor any a
 * bucket or place is chosen by (below 32), and the same in both of the
 * key's hashes (index_hash2 flips bits below 32). A lookup reads a flash
 * candidate only when they match too, and one flash candidate per flash
 * tag (tag and those bits: index_flash_tag) is kept, so a write forgets
 * another key's flash copy 2^INDEX_XTAG_BITS times less often. Part of
 * what the slot names (slot_id): they follow from the key. */
#define INDEX_XTAG_BITS 4
#define INDEX_XTAG_HASH_SHIFT 49
#define SLOT_TAG_BITS (0x7FFull << 53)
#define SLOT_XTAG_TOP (3 + SLOT_OFF_BITS) /* the slot bit above the offset */
/* The slot bits that carry x extra tag bits: the offset's top x. */
static inline uint64_t slot_xtag_mask(unsigned x)
{
    return ((1ull << x) - 1) << (SLOT_XTAG_TOP - x);
}
/* A flash slot of flash tag ftag (index_flash_tag), flash segment id
 * seg, byte offset off (below 2^(26 - x)). */
static inline uint64_t slot_make_flash(uint64_t ftag, uint32_t seg, uint32_t off)
{
    return ftag | slot_make(0, seg, off);
}
/* The item a slot names: without its frequency, nor a flash slot's place. */
static inline uint64_t slot_id(uint64_t s)
{
    return s & ~(SLOT_FREQ | (SLOT_PLACE & -(uint64_t)slot_is_flash(s)));
}
/* Same item, whatever the frequency (or a flash slot's place) says. */
static inline bool slot_same(uint64_t a, uint64_t b) { return slot_id(a) == slot_id(b); }
/* A bucket's last slot, when its entries overflow, is a link to the
 * overflow bucket chained after it instead: tag 0, which index_tag never
 * gives an entry, and the bucket's id. */
static inline uint64_t slot_link(uint32_t id) { return (uint64_t)id << 3; }
static inline bool slot_is_link(uint64_t s) { return s - 1 < (1ull << 53) - 1; /* s, tag 0 */ }
static inline uint32_t slot_link_id(uint64_t s) { return (uint32_t)(s >> 3); }

/* Slot i (0 .. INDEX_SLOTS - 1) of bucket b. Every read and write of a
 * slot goes through slot_load and slot_store (bucket lock held): a word may
 * carry the lock bit, which other threads set atomically meanwhile, or be
 * a link to an overflow bucket, which is no entry. */
static inline uint64_t *index_slot(uint64_t *b, int i) { return b + INDEX_SLOT0 + i; }
/* The entry in slot word w: 0 when it is empty or a link. */
static inline uint64_t slot_load(const uint64_t *w)
{
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED) & ~SLOT_LOCK;
    return slot_tag(v) ? v : 0;
}
/* The word of a slot whose tag a lookup matched (an entry), for its fields
 * alone: it may carry the lock bit, which no field holds. A lookup's
 * read, one load where slot_load's tests cost a few instructions. */
static inline uint64_t slot_matched(const uint64_t *w)
{
    return __atomic_load_n(w, __ATOMIC_RELAXED);
}
/* Whether slot word w holds nothing, not even a link. */
static inline bool slot_empty(const uint64_t *w)
{
    return !(__atomic_load_n(w, __ATOMIC_RELAXED) & ~SLOT_LOCK);
}
/* Put entry v (0: none) in slot word w, keeping the lock bit it holds. */
static inline void slot_store(uint64_t *w, uint64_t v)
{
    uint64_t lock = __atomic_load_n(w, __ATOMIC_RELAXED) & SLOT_LOCK;
    __atomic_store_n(w, v | lock, __ATOMIC_RELAXED);
}
/* A read of the entry in slot word w: its frequency counted. */
static inline void slot_hit_at(uint64_t *w)
{
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    if ((v & SLOT_FREQ) != SLOT_FREQ)
        __atomic_store_n(w, v + 1, __ATOMIC_RELAXED);
}

/* The slots of bucket b whose tag is `tag` (never 0, so never an empty
 * slot nor a link): bits 2i and 2i + 1 for slot i, so the slots are
 * __builtin_ctz(m) / 2 in order, for each pair (m &= m - 1 twice). What a
 * lookup scans every slot of a bucket for: the tags are the words' top 11
 * bits, compared four at a time, where a slot at a time was a load, a test
 * and a branch each. The words are read plainly, so this is a guess only
 * (each match read again atomically) where the bucket is not locked.
 * Where it is, slot 0 may meet other threads setting its lock bit
 * atomically, which changes nothing as the bit is set: a ThreadSanitizer
 * build, which would name that read, reads slot 0 atomically instead (a
 * load and an insert more than the one 16-byte load: 3 instructions a
 * request at pipeline 16, bench/callgrind_server.py). */
static inline unsigned index_match(const uint64_t *b, uint32_t tag)
{
#ifdef __SSE2__
    const __m128i top = _mm_set1_epi32((int)(0x7FFu << 21));
    const __m128i want = _mm_set1_epi32((int)(tag << 21));
#ifdef INDEX_TSAN
    uint64_t w0 = __atomic_load_n(b, __ATOMIC_RELAXED);
    __m128d lo = _mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)(const void *)&w0));
    __m128 w01 = _mm_castpd_ps(_mm_loadh_pd(lo, (const double *)(const void *)(b + 1)));
#else
    __m128 w01 = _mm_castsi128_ps(_mm_loadu_si128((const __m128i *)(const void *)b));
#endif
    __m128 w23 = _mm_castsi128_ps(_mm_loadu_si128((const __m128i *)(const void *)(b + 2)));
    __m128 w45 = _mm_castsi128_ps(_mm_loadu_si128((const __m128i *)(const void *)(b + 4)));
    __m128 w67 = _mm_castsi128_ps(_mm_loadu_si128((const __m128i *)(const void *)(b + 6)));
    /* the high halves of words 0-3 and 4-7 (little-endian) */
    __m128i h03 = _mm_castps_si128(_mm_shuffle_ps(w01, w23, _MM_SHUFFLE(3, 1, 3, 1)));
    __m128i h47 = _mm_castps_si128(_mm_shuffle_ps(w45, w67, _MM_SHUFFLE(3, 1, 3, 1)));
    __m128i e03 = _mm_cmpeq_epi32(_mm_and_si128(h03, top), want);
    __m128i e47 = _mm_cmpeq_epi32(_mm_and_si128(h47, top), want);
    return (unsigned)_mm_movemask_epi8(_mm_packs_epi32(e03, e47)); /* slot i at bits 2i, 2i + 1 */
#else
    unsigned m = 0;
    for (int i = 0; i < INDEX_SLOTS; i++)
        if (slot_tag(__atomic_load_n(&b[i], __ATOMIC_RELAXED)) == tag)
            m |= 3u << (2 * i);
    return m;
#endif
}

/* The bucket array: one reservation of address space for the most buckets
 * the index may reach, made writable as the table grows into it. */
struct index_table {
    uint64_t *b;       /* HUGEMEM_PAGE-aligned */
    size_t reserved;   /* bytes of address space */
    size_t writable;   /* bytes from b on that are readable and writable */
    unsigned power;    /* log2 of its buckets when made */
    uint64_t mask;     /* (1 << power) - 1 */
};

/* Overflow buckets come in chunks of INDEX_CHUNK_BUCKETS, at most
 * INDEX_MAX_CHUNKS of them. */
#define INDEX_CHUNK_BUCKETS 1024u
#define INDEX_MAX_CHUNKS 262144u

/* The free overflow buckets of one chunk: a list linked through their
 * first words, then the never used ones from `fresh` on. */
struct index_chunk {
    uint32_t head;  /* first free bucket's id, 0 = none */
    uint16_t nfree; /* free buckets, listed or fresh */
    uint16_t fresh; /* buckets fresh..INDEX_CHUNK_BUCKETS-1 never used */
};

/* Rehash the item a slot points to (the index stores no full hashes). */
typedef uint64_t (*index_rehash_fn)(void *arg, uint64_t slot);
/* Whether a growth must drop this slot, whose hash cannot be had (a flash
 * item's key is not in RAM) and whose place bits do not reach the level
 * split; it accounts for what it drops. */
typedef bool (*index_forget_fn)(void *arg, uint64_t slot);
/* Whether a flash slot names nothing any more (its segment was dropped);
 * it accounts for the slots it says so of, which the index then clears. */
typedef bool (*index_stale_fn)(void *arg, uint64_t slot);

/* Linear hashing: the table has 2^L + s buckets, L and s in one word
 * (index_shape: 2^L - 1 in the high half, s < 2^L in the low half, so a
 * lookup finds its bucket with two masks and no shift by L). A hash's
 * bucket is h mod 2^L, or h mod 2^(L+1) when that is below s: buckets
 * 0..s-1 have been split into themselves and 2^L..2^L+s-1 by hash bit L. */
static inline uint64_t index_shape_make(unsigned l, uint64_t s)
{
    return (((1ull << l) - 1) << 32) | s;
}
static inline unsigned index_shape_level(uint64_t shape)
{
    return (unsigned)__builtin_ctzll((shape >> 32) + 1);
}
static inline uint64_t index_shape_split(uint64_t shape)
{
    return (uint32_t)shape;
}
static inline uint64_t index_shape_bucket(uint64_t shape, uint64_t h)
{
    uint64_t low = shape >> 32, i = h & low;
    return i < (uint32_t)shape ? h & (low << 1 | 1) : i;
}
static inline uint64_t index_shape_buckets(uint64_t shape)
{
    return (shape >> 32) + 1 + (uint32_t)shape;
}

struct index {
    struct index_table *cur;
    uint64_t shape;          /* index_shape_make(L, s); only grows */
    uint64_t items;          /* occupied slots */
    int64_t stale_slots;     /* of them, known to name nothing (index_stale_add) */
    uint64_t most;           /* the most items held (hash_power_level) */
    unsigned base_level;     /* the level it was made at */
    unsigned place_base;     /* the level a flash slot's place bits start at */
    pthread_mutex_t grow_lock; /* one split at a time; the table's mapping */
    index_rehash_fn rehash;
    index_forget_fn forget;    /* NULL: every slot rehashes */
    index_stale_fn stale;      /* NULL: no slot goes stale */
    void *rehash_arg;
    pthread_mutex_t pool_lock; /* overflow bucket pool */
    uint64_t **chunks;         /* overflow buckets, INDEX_CHUNK_BUCKETS each */
    struct index_chunk *chunk_free; /* per chunk: its free buckets */
    uint32_t nchunks;          /* chunks 0..nchunks-1 are mapped */
    uint32_t pool_low;         /* no chunk below it has a free bucket */
    uint64_t overflow_used;
    uint64_t moves;            /* entries moved to their other bucket */
    uint32_t walks;            /* walks that must meet every entry (index_walk_begin) */
    /* The table's next huge page, faulted in ahead of the splits that
     * reach it: its first touch may compact memory, which no request may
     * wait for (docs/store.md "Huge pages"). */
    struct hugemem_ahead next;
    size_t ahead_end;          /* bytes of the table asked to be faulted in */
    bool head_huge;            /* the pages made before the ahead asked for huge ones */
    size_t load_bytes;         /* a bulk load's area (index_load_begin), 0 = none */
    /* a flash slot's bits that are its further tag (slot_xtag_mask), set
     * before the first flash slot is made; 0 = none */
    uint64_t flash_xmask;
};

/* memcached's hash power (-o hashpower, `hash_power_level`) counts chains,
 * and its table doubles past 1.5 items a chain. A bucket of ours stands for
 * 2^INDEX_LEVEL_SHIFT of those chains (a table of level N starts with
 * 2^(N - 2) buckets) of INDEX_GROW_LOAD items. The level reported is
 * memcached's for the most items the index has held (index_level_for from
 * the level it was made at: 17 after 98,304 items, as memcached's), whatever
 * the table's size, which follows INDEX_SPLIT_TENTHS. */
#define INDEX_LEVEL_SHIFT 2
#define INDEX_GROW_LOAD 6
/* The table itself splits a bucket each time the items pass this many
 * tenths of an item a bucket on average, of eight slots (92.5 %): two
 * choices with moves two steps deep keep overflow chains rare there, as
 * rare as seven slots' at 6.4; at 7.6 a bucket in 70 chains
 * (docs/store-index.md "Index"). */
#ifndef INDEX_SPLIT_TENTHS
#define INDEX_SPLIT_TENTHS 74
#endif


/* How far before the splits reach the end of the huge pages asked for the
 * next one is asked for: 8,192 splits (49,152 inserts) to fault it in,
 * which takes well under a millisecond unless memory must be compacted
 * first. Bytes faulted in ahead count in hash_bytes, so the lead is kept
 * short: on average it holds the lead plus half a page. */
#define INDEX_AHEAD_LEAD (HUGEMEM_PAGE / 4)

/* A table of memcached's level `level` (2^(level - 2) buckets). */
int index_init(struct index *ix, unsigned level, index_rehash_fn rehash, void *arg);
void index_release(struct index *ix);
/* An empty table made at a level (index_init) takes up to twice as many
 * buckets as its level says, as many as `items` need at INDEX_SPLIT_TENTHS
 * a bucket: a table about to take that many at once (a restore's) sized
 * for them, not for the power of two above that. 0, or -1 when the table
 * could not be made larger. */
int index_presize(struct index *ix, uint64_t items);
size_t index_bytes(struct index *ix);
/* Of index_bytes, the table's pages faulted in ahead of its buckets in use
 * (at most a huge page beyond them). */
size_t index_ahead_bytes(struct index *ix);
/* memcached's hash power for the most items held (a view). */
unsigned index_level(struct index *ix);
/* The level the table reaches by growth as it takes `items` items (from
 * `level`): what a restore sizes the table at before inserting them. */
unsigned index_level_for(unsigned level, uint64_t items);
bool index_expanding(struct index *ix);
/* The level (at least `level`) of the table index_presize takes to
 * `items`: its 2^(level - 2) buckets the power of two at or below the
 * buckets those items take at INDEX_SPLIT_TENTHS. */
unsigned index_level_to_hold(unsigned level, uint64_t items);

static inline uint32_t index_tag(uint64_t h)
{
    uint32_t t = (uint32_t)(h >> 53);
    return t ? t : 1;
}
/* The flash tag of the key of hash h: the bits of a flash slot of its
 * that say whose it may be (tag and further tag), in their places. */
static inline uint64_t index_flash_tag(const struct index *ix, uint64_t h)
{
    uint64_t x = (h >> INDEX_XTAG_HASH_SHIFT) & ((1u << INDEX_XTAG_BITS) - 1);
    return (uint64_t)index_tag(h) << 53 | (x << (SLOT_XTAG_TOP - INDEX_XTAG_BITS) & ix->flash_xmask);
}
/* A flash slot's flash tag, and its byte offset without it. */
static inline uint64_t slot_flash_tag(const struct index *ix, uint64_t s)
{
    return s & (SLOT_TAG_BITS | ix->flash_xmask);
}
static inline uint32_t slot_flash_off(const struct index *ix, uint64_t s)
{
    return slot_off(s & ~ix->flash_xmask);
}
/* Two choices: a key's item may be in either of two buckets, the bucket
 * of its hash h (its first) and the bucket of index_hash2(h) (its
 * second). An insert takes the emptier, and when both are full moves an
 * entry of theirs to that entry's other bucket (docs/store-index.md
 * "Index"). The second hash is h with the bits that choose buckets
 * flipped by a mix of its tag alone (partial-key cuckoo): the tag is the
 * same for both hashes, index_hash2(index_hash2(h)) == h, and an entry's
 * other bucket follows from the bucket it is in and its tag, with no key
 * (index_other_bucket), so a flash entry, whose key is not in RAM, moves
 * as a RAM one does. Bit 0 is always flipped: the two differ. */
/* the bits that choose among 2^32 buckets, the most (index.c) */
#define INDEX_SPREAD_MASK 0xFFFFFFFFull
static inline uint64_t index_spread(uint32_t tag)
{
    uint64_t x = (uint64_t)tag * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return ((x >> 32) & INDEX_SPREAD_MASK) | 1;
}
static inline uint64_t index_hash2(uint64_t h)
{
    return h ^ index_spread(index_tag(h));
}
/* The other bucket, by `shape`, of an entry under `tag` in bucket xi,
 * from the bits of its hash that xi encodes (its low L bits, or L + 1
 * where xi is split): false when that depends on a bit xi does not encode
 * (xi unsplit and the other bucket's low L bits name a split bucket:
 * which half takes it is hash bit L). */
static inline bool index_other_bucket(uint64_t shape, uint64_t xi, uint32_t tag, uint64_t *o)
{
    uint64_t low = shape >> 32, s = (uint32_t)shape, x = xi ^ index_spread(tag);
    if ((x & low) >= s) {
        *o = x & low;
        return true;
    }
    if (xi <= low && xi >= s)
        return false;
    *o = x & (low << 1 | 1);
    return true;
}
/* Flash slot fslot (no place yet) of the key of hash h, to go in the chain
 * of primary bucket `chain`, locked: with its place there (SLOT_PLACE). */
uint64_t index_flash_place(struct index *ix, uint64_t h, const uint64_t *chain, uint64_t fslot);
/* From now on flash slots carry their hash's bits from the table's level
 * up: a split keeps them until the table is 2^INDEX_PLACE_BITS times as
 * large (at most) as now, and drops them (index->forget) past that. */
void index_place_from_here(struct index *ix);
/* n more (or, negative, fewer) of the slots held name nothing any more (a
 * dropped flash segment's, until met and cleared): growth does not count
 * them, as a table it grew for them would keep them (an insert clears one
 * only where its two buckets are full: index->stale). */
void index_stale_add(struct index *ix, int64_t n);
/* A key's two buckets, both locked (index_lock_key): b[0] the first,
 * b[1] the second or NULL when they are one bucket. */
struct index_pair {
    uint64_t *b[2];
};
/* Lock the two buckets that may hold hash h now (a split may have moved
 * them since a previous look), the lower address first: every thread that
 * holds two bucket locks took them in that order or took the second with
 * a trylock, so two keys sharing a bucket cannot deadlock. */
void index_lock_key(struct index *ix, uint64_t h, struct index_pair *p);
/* The same in two steps, for a lookup that mostly finds its key in the
 * first bucket: lock that one (p->b[1] NULL), then, if the key is not
 * there, the second too. index_lock_second keeps the first locked and
 * returns true, or (the second is at a lower address and busy) lets it go
 * and locks both in order, returning false: either may hold anything new
 * then, so look in both. While the first is held no entry of the key can
 * come into or leave it, since a move holds both of its buckets. */
static inline void index_lock_first(struct index *ix, uint64_t h, struct index_pair *p);
bool index_lock_second(struct index *ix, uint64_t h, struct index_pair *p);
static inline void index_unlock_pair(const struct index_pair *p);
/* The slot of p's locked buckets' chains that is `want` (whatever its
 * frequency), *chain the primary bucket whose chain holds it; NULL when
 * none is. */
uint64_t *index_pair_find(struct index *ix, const struct index_pair *p, uint64_t want,
                          uint64_t **chain);
/* The primary bucket of p's whose chain holds slot (NULL: neither). */
uint64_t *index_pair_chain_of(struct index *ix, const struct index_pair *p, const uint64_t *slot);
/* Start loading the two buckets of hash h (a pipelined read looks up
 * many: issuing the loads ahead hides their latency). Returns the first
 * and sets *second, unlocked: hints to read, never to trust. */
static inline const uint64_t *index_prefetch(struct index *ix, uint64_t h,
                                             const uint64_t **second)
{
    struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    uint64_t *b = t->b + (index_shape_bucket(shape, h) << 3);
    uint64_t *c = t->b + (index_shape_bucket(shape, index_hash2(h)) << 3);
    __builtin_prefetch(b, 1);
    __builtin_prefetch(c, 1);
    *second = c;
    return b;
}
/* Start loading the overflow bucket chained after bucket b, if any (read
 * unlocked: a guess, as index_prefetch's bucket is, but always an id the
 * pool handed out; a chunk unmapped meanwhile is no harm, as a prefetch
 * never faults). */
static inline void index_prefetch_next(struct index *ix, const uint64_t *b)
{
    uint64_t w = __atomic_load_n(b + INDEX_SLOTS - 1, __ATOMIC_RELAXED);
    if (!slot_is_link(w))
        return;
    uint32_t id = slot_link_id(w);
    const uint64_t *c =
        __atomic_load_n(&ix->chunks[(id - 1) / INDEX_CHUNK_BUCKETS], __ATOMIC_RELAXED);
    if (c)
        __builtin_prefetch(c + (size_t)((id - 1) % INDEX_CHUNK_BUCKETS) * 8, 1);
}
/* A bucket's lock: SLOT_LOCK in its first slot. index_lock spins (and
 * yields) until it has it; the lookups' own lock and unlock are inline
 * below, every request takes them. */
#define INDEX_LOCK SLOT_LOCK
void index_lock(uint64_t *bucket);
static inline void index_unlock(uint64_t *bucket)
{
    uint64_t was = __atomic_fetch_and(bucket, ~INDEX_LOCK, __ATOMIC_RELEASE);
#ifdef NODELAY_DEBUG
    /* a lock not held: a write of the first slot that dropped its bit
     * (slot_store keeps it) let another thread in meanwhile */
    if (!(was & INDEX_LOCK))
        __builtin_trap();
#endif
    (void)was;
}
/* Lock and return the first bucket of hash h now (index_lock_first). */
static inline uint64_t *index_lock_hash(struct index *ix, uint64_t h)
{
    struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    for (;;) {
        uint64_t i = index_shape_bucket(shape, h);
        uint64_t *b = t->b + (i << 3);
        if (__atomic_fetch_or(b, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK)
            index_lock(b);
        /* A split publishes the word before it unlocks, and the lock was
         * taken after that unlock: the word read now is at least as new. */
        uint64_t now = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
        if (now == shape || index_shape_bucket(now, h) == i)
            return b;
        index_unlock(b);
        shape = now;
    }
}
static inline void index_lock_first(struct index *ix, uint64_t h, struct index_pair *p)
{
    p->b[0] = index_lock_hash(ix, h);
    p->b[1] = NULL;
}
static inline void index_unlock_pair(const struct index_pair *p)
{
    if (p->b[1])
        index_unlock(p->b[1]);
    index_unlock(p->b[0]);
}
/* Lock bucket if it is free now; false when another thread holds it. */
bool index_trylock(uint64_t *bucket);
/* The bucket chained after b, or NULL (bucket lock held). */
uint64_t *index_next(struct index *ix, uint64_t *b);
/* An empty slot in the chain of primary bucket b, chaining a new overflow
 * bucket when all are full; NULL when out of memory. The caller fills it. */
uint64_t *index_free_slot(struct index *ix, uint64_t *b);
/* An empty slot for a new item of the key whose buckets p holds locked:
 * in the emptier bucket, or where a stale flash slot of theirs was
 * (index->stale), or made by moving an entry to its other bucket (locked
 * with a trylock, skipped when busy), or in a chain. */
uint64_t *index_pair_free_slot(struct index *ix, const struct index_pair *p);
/* With no bucket lock held: split a bucket or two when the table is
 * loaded (every insert pays a little). */
void index_maintain(struct index *ix);
/* Make every split the items are owed. */
void index_finish_growth(struct index *ix);
/* Lock bucket i for a walk; NULL past the end; *nbuckets is the table's
 * size now. Splits only move items to buckets past the one split, so a
 * walk in bucket order meets every item that stays (some twice). */
uint64_t *index_lock_nth(struct index *ix, uint64_t i, uint64_t *nbuckets);
/* With primary bucket `from` locked (and no other), holding an entry of
 * hash h: lock h's other bucket too and return it (`from` when it is both
 * of h's buckets), for what must look in both, as a flash slot made from a
 * RAM one in place does (its key's other flash candidates go). NULL when
 * it cannot be had now: busy at a lower address (a trylock, as the
 * address order wants) or split meanwhile. */
uint64_t *index_lock_other_of(struct index *ix, uint64_t h, uint64_t *from);
/* Around a walk in bucket order that must meet every entry (some twice):
 * meanwhile an entry moves only to a later bucket, as a split's do. */
void index_walk_begin(struct index *ix);
void index_walk_end(struct index *ix);
/* Empty a slot and drop overflow buckets left empty. */
void index_clear_slot(struct index *ix, uint64_t *b, uint64_t *slot);

/* Bulk loading, for a restore before any other thread uses the index: a
 * caller owns the buckets it touches and takes no bucket lock. */
/* An empty index takes a new table of `level`, unsplit; the old one is
 * the caller's (its memory may hold anything), to give back with
 * index_table_release. NULL when out of memory or not empty. */
struct index_table *index_swap_table(struct index *ix, unsigned level);
void index_table_release(struct index_table *t);
/* Empty every bucket of an index that holds no item (its memory held
 * something else). */
void index_wipe(struct index *ix);
/* Before a bulk load writes every page of the current (empty, untouched)
 * table: make its load area writable and keep it on small pages
 * (index_load_begin, before any page is touched), map it now, share i of
 * n on each of n threads (index_load_map); index_load_done gives back
 * what the load used beyond the table's buckets and asks for huge pages
 * again. index.c says why. The load area is 2^bits buckets, bits the
 * level L, or L + 1 when the split pointer is not 0: a hash's bucket by
 * those bits is one bucket of an unsplit table, the key's own bucket
 * (index_shape_bucket) in a split one, and a bulk load files items by
 * them (restore_index.c). Returns bits, or -1 when the area cannot be
 * made writable. */
int index_load_begin(struct index *ix);
void index_load_map(struct index *ix, uint32_t i, uint32_t n);
void index_load_done(struct index *ix);
/* The level L of the table's shape (2^L + s buckets). */
unsigned index_bucket_bits(struct index *ix);
/* The level reported (index_level) is at least `level` from now on: a
 * restart keeps memcached's hash power, whatever size its table is. */
void index_keep_level(struct index *ix, unsigned level);
/* The primary bucket of hash h in the current table (no lock, no growth). */
uint64_t *index_bucket_of(struct index *ix, uint64_t h);
/* Chain an empty overflow bucket after `last`, the last of its chain and
 * full, and return an empty slot of it; NULL when out of memory. */
uint64_t *index_chain_grow(struct index *ix, uint64_t *last);
/* n slots were filled by hand. */
void index_count(struct index *ix, uint64_t n);

#endif
