/* SPDX-License-Identifier: BSD-3-Clause */
/* The restore's index build: items filed by the segment walk, packed in
 * the table's own memory part by part (or spilled beside it), then the
 * table filled part by part. restore_index.h says why; docs/store.md "The
 * restore scan" where it sits in the restore.
 *
 * Nothing else runs yet: the walk is over before the fill starts, and each
 * fill thread owns whole units of the table (rix_half_bits), so no bucket
 * lock is taken. An item whose filed bucket is full (a spilled record,
 * with its hash) is handed to the thread that owns its other bucket,
 * which links it there after the fill (rix_second) if that has room; the
 * few whose two buckets are full are placed last (rix_place), moving an
 * entry of one of them, whose other bucket may be anywhere: under the
 * buckets' locks, as inserts.
 * The table holds the filed words until each part is filled: no lookup
 * may run before rix_fill returns (none does: the restore runs before the
 * store is handed to anyone).
 */
#include "store/persist/restore_index.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/log.h"
#include "store/hugemem.h"

/* Buckets in a part at least: 256 KiB, a quarter of a core's L2 here. */
#define RIX_PART_MIN_BITS 12
/* Parts at most: each walking thread gathers lines per part and writes
 * to as many places, whose pages must stay in its TLB between two writes
 * to one place (a TLB miss costs a two-level page walk on this VM), beside
 * the pages of the segments it walks. For 4 GiB of 100-byte items (2^23
 * buckets), taking turns on this machine: 512 parts of 1 MiB restored
 * after a graceful stop in 2.91-3.19 s of CPU against 3.27-3.43 s with
 * 1024 parts of 512 KiB (four runs each, load 10-11; after a crash, three
 * each at load 8, alike: 3.28-3.51 against 3.24-3.53); 256 parts of
 * 2 MiB spend less in the walk and more in the fill (parts larger than
 * L2), alike in all. Earlier, when the walk was slower: 1024 parts 3.4-4.6 s,
 * 2048 of 256 KiB 4.0-6.9 s (more walk). */
#define RIX_MAX_PART_BITS 9
/* Words ahead whose bucket the fill asks the CPU for. */
#define RIX_AHEAD 8
/* Blocks come from mappings of this size, given back at the end. */
#define RIX_ARENA_BYTES ((size_t)32 << 20)

struct rix_arena {
    struct rix_arena *next;
    size_t used;
};

static unsigned rix_bits(uint64_t n) /* bits to write 0..n-1, at least 1 */
{
    unsigned b = 1;
    while (b < 64 && ((uint64_t)1 << b) < n)
        b++;
    return b;
}

/* A unit, what one fill thread builds at once: a part of an unsplit
 * table; of a table of 2^L + s buckets, s > 0, the parts of the load area
 * (2^(L+1) buckets) at the same place in each half, part u and part
 * u + nparts / 2, since a key filed in either may belong in a bucket of
 * the other: bucket b of the lower half holds the keys of both parts when
 * it is not split yet (b >= s). A unit's buckets are its halves, 2^hbits
 * buckets each, one after the other. */
static unsigned rix_half_bits(const struct rix *x)
{
    unsigned l = index_shape_level(x->shape);
    return x->part_shift < l ? x->part_shift : l;
}

static size_t rix_unit_bytes(const struct rix *x)
{
    size_t halves = index_shape_split(x->shape) ? 2 : 1;
    return (((size_t)INDEX_WORDS * 8) << rix_half_bits(x)) * halves;
}

/* The count of items packed in each bucket (rix_file): on huge pages,
 * since every item filed reads and writes it at random. */
static size_t rix_filed_bytes(const struct rix *x)
{
    return (index_shape_buckets(x->shape) + HUGEMEM_PAGE - 1) & ~(HUGEMEM_PAGE - 1);
}

int rix_init(struct rix *x, struct store *s, uint32_t nbins)
{
    memset(x, 0, sizeof(*x));
    x->s = s;
    /* Only the restore uses the index yet: its table, read as it is,
     * every page of which the walk and the fill write (each walking
     * thread maps its share: rix_map). */
    int bits = index_load_begin(&s->index);
    if (bits < 0)
        return -1;
    x->table = s->index.cur->b;
    x->shape = s->index.shape;
    x->share = rix_unsplit_share(x->shape);
    x->power = (unsigned)bits;
    unsigned pbits = x->power > RIX_PART_MIN_BITS ? x->power - RIX_PART_MIN_BITS : 0;
    if (pbits > RIX_MAX_PART_BITS)
        pbits = RIX_MAX_PART_BITS;
    x->part_shift = x->power - pbits;
    x->nparts = 1u << pbits;
    /* a split table: a unit is a part of each half of the load area */
    x->nunits = index_shape_split(x->shape) && x->nparts > 1 ? x->nparts / 2 : x->nparts;
    x->nbins = nbins > SPLIT_THREADS ? SPLIT_THREADS : nbins ? nbins : 1;
    /* whole lines each, so that every line written is a whole line */
    x->cap = (uint32_t)((uint64_t)INDEX_WORDS << x->part_shift) / x->nbins & ~(RIX_STAGE - 1);
    x->seg_bits = rix_bits(s->pool.seg_cap);
    x->off_bits = rix_bits(s->pool.seg_size >> s->pool.off_shift);
    x->pack = x->part_shift + 11 + x->seg_bits + x->off_bits <= 64;
    /* A buffer for one unit's buckets per filling thread (up to one per
     * core, as the walkers). */
    x->filed = hugemem_map(rix_filed_bytes(x));
    if (!x->filed) {
        rix_release(x);
        return -1;
    }
    for (uint32_t i = 0; i < x->nbins; i++) {
        x->words[i] = aligned_alloc(64, rix_unit_bytes(x));
        if (!x->words[i]) {
            rix_release(x);
            return -1;
        }
    }
    for (uint32_t i = 0; i < x->nbins; i++) {
        struct rix_bins *b = &x->bins[i];
        b->packed = calloc(x->nparts, sizeof(*b->packed));
        b->stage = aligned_alloc(64, (size_t)x->nparts * sizeof(*b->stage));
        b->head = calloc(x->nparts, sizeof(*b->head));
        b->tail = calloc(x->nparts, sizeof(*b->tail));
        if (!b->packed || !b->stage || !b->head || !b->tail) {
            rix_release(x);
            return -1;
        }
    }
    return 0;
}

void rix_release(struct rix *x)
{
    if (x->filed)
        munmap(x->filed, rix_filed_bytes(x));
    for (uint32_t i = 0; i < x->nbins; i++) {
        free(x->words[i]);
        struct rix_bins *b = &x->bins[i];
        free(b->packed);
        free(b->stage);
        free(b->head);
        free(b->tail);
        while (b->arena) {
            struct rix_arena *a = b->arena;
            b->arena = a->next;
            munmap(a, RIX_ARENA_BYTES);
        }
    }
    memset(x, 0, sizeof(*x));
}

void rix_map(struct rix *x, uint32_t bin, rix_drop_fn drop, void *arg)
{
    x->bins[bin].drop = drop;
    x->bins[bin].drop_arg = arg;
    index_load_map(&x->s->index, bin, x->nbins);
}

void rix_lost(struct rix *x, uint32_t bin, uint64_t slot)
{
    struct rix_bins *b = &x->bins[bin];
    if (!b->nomem_logged)
        log_error("-e %s: out of memory restoring the index; dropping items",
                  x->s->opt.memory_file);
    b->nomem_logged = true;
    b->lost++;
    item_set_dead(seg_item(&x->s->pool, slot));
    b->drop(b->drop_arg, slot, false);
}

bool rix_spill(struct rix *x, struct rix_bins *b, uint32_t part, uint64_t hv, uint64_t slot)
{
    struct rix_block *k = b->tail[part];
    if (k && k->n < RIX_BLOCK_RECS) {
        k->rec[k->n++] = (struct rix_rec){hv, slot};
        return true;
    }
    struct rix_arena *a = b->arena;
    if (!a || a->used + sizeof(struct rix_block) > RIX_ARENA_BYTES) {
        void *m = mmap(NULL, RIX_ARENA_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return false;
        a = m;
        a->next = b->arena;
        a->used = sizeof(struct rix_block); /* the first block holds the header */
        b->arena = a;
    }
    k = (struct rix_block *)((char *)a + a->used);
    a->used += sizeof(struct rix_block);
    k->next = NULL;
    k->n = 1;
    k->rec[0] = (struct rix_rec){hv, slot};
    if (b->tail[part])
        b->tail[part]->next = k;
    else
        b->head[part] = k;
    b->tail[part] = k;
    (void)x;
    return true;
}

void rix_flush(struct rix *x, uint32_t bin, uint32_t part, uint32_t at)
{
    uint64_t *dst = x->table + ((uint64_t)part << (x->part_shift + 3)) + (uint64_t)bin * x->cap + at;
    const uint64_t *src = x->bins[bin].stage[part];
#ifdef __SSE2__
    for (unsigned i = 0; i < RIX_STAGE; i += 2)
        _mm_stream_si128((__m128i *)(dst + i), _mm_load_si128((const __m128i *)(src + i)));
#else
    memcpy(dst, src, RIX_STAGE * 8);
#endif
}

void rix_finish(struct rix *x, uint32_t bin)
{
    struct rix_bins *b = &x->bins[bin];
    for (uint64_t k = b->n > RIX_PEND ? b->n - RIX_PEND : 0, end = b->n; k < end; k++) {
        const struct rix_pending *e = &b->pend[k & (RIX_PEND - 1)];
        rix_file(x, bin, e->hv, e->fh, e->seg, e->off);
    }
    for (uint32_t part = 0; part < x->nparts && x->pack; part++) {
        uint32_t n = b->packed[part];
        if (n & (RIX_STAGE - 1))
            memcpy(x->table + ((uint64_t)part << (x->part_shift + 3)) + (uint64_t)bin * x->cap +
                       (n & ~(RIX_STAGE - 1)),
                   b->stage[part], (n & (RIX_STAGE - 1)) * 8);
    }
#ifdef __SSE2__
    _mm_sfence(); /* the streamed lines before the join that publishes them */
#endif
}

static bool rix_same_key(struct store *s, uint64_t a, uint64_t b)
{
    const char *p = seg_item(&s->pool, a), *q = seg_item(&s->pool, b);
    if (p[1] != q[1]) /* nkey */
        return false;
    struct item_hdr ha, hb;
    item_decode(p, &ha);
    item_decode(q, &hb);
    return ha.nkey == hb.nkey && memcmp(p + ha.hlen, q + hb.hlen, ha.nkey) == 0;
}

/* Two live copies of one key: which to keep. Without damage they are one
 * version (W5: eviction's copy, left by a kill between the copy and the
 * source's death; every other pair is settled by the journal, W4), and
 * either may stay. Otherwise the version decides: CAS, which the store
 * hands out under the key's bucket lock, so a later write of a key has a
 * higher one. Copies of one CAS (always under -C) that differ in value,
 * flags or expiry cannot be told apart: neither is served. */
enum rix_pick { RIX_PICK_SAME, RIX_PICK_OLD, RIX_PICK_NEW, RIX_PICK_NEITHER };

static enum rix_pick rix_pick(struct store *s, uint64_t old, uint64_t slot)
{
    const char *p = seg_item(&s->pool, old), *q = seg_item(&s->pool, slot);
    struct item_hdr ha, hb;
    item_decode(p, &ha);
    item_decode(q, &hb);
    uint64_t ca = item_get_cas(p, &ha, seg_of(&s->pool, slot_seg(old))->cas_base);
    uint64_t cb = item_get_cas(q, &hb, seg_of(&s->pool, slot_seg(slot))->cas_base);
    if (ca != cb)
        return cb > ca ? RIX_PICK_NEW : RIX_PICK_OLD;
    bool same = ha.nvalue == hb.nvalue &&
                item_get_u32(p, ha.flags_off) == item_get_u32(q, hb.flags_off) &&
                item_get_u32(p, ha.exp_off) == item_get_u32(q, hb.exp_off) &&
                memcmp(p + ha.hlen + ha.nkey, q + hb.hlen + hb.nkey, ha.nvalue) == 0;
    return same ? RIX_PICK_SAME : RIX_PICK_NEITHER;
}

enum rix_put {
    RIX_LINKED,   /* slot linked */
    RIX_FULL,     /* the bucket is full: tried later (rix_second, rix_place) */
    RIX_DUP,      /* a copy of the same version is linked: slot dropped */
    RIX_OLDER,    /* a newer version is linked: slot dropped */
    RIX_REPLACED, /* slot took the place of an older version, *other */
    RIX_NEITHER,  /* slot dropped, and *other, the copy it could not be told
                   * from, stays linked, dead, until the fill is over: any
                   * further copy meets it and is dropped too */
    RIX_NOMEM,
};

/* slot's key is linked at *at already: which of the two stays. */
static enum rix_put rix_settle(struct store *s, uint64_t *at, uint64_t slot, uint64_t *other)
{
    uint64_t v = slot_load(at);
    if (!item_state_live(item_state(seg_item(&s->pool, v))))
        return RIX_NEITHER; /* a key already found ambiguous */
    switch (rix_pick(s, v, slot)) {
    case RIX_PICK_SAME:
        return RIX_DUP;
    case RIX_PICK_OLD:
        return RIX_OLDER;
    case RIX_PICK_NEW:
        *other = v;
        slot_store(at, slot);
        return RIX_REPLACED;
    case RIX_PICK_NEITHER:
    default:
        *other = v;
        item_set_dead(seg_item(&s->pool, v));
        return RIX_NEITHER;
    }
}

/* Link slot into the chain of its key's first bucket b unless its key is
 * there already; when the chain is full, RIX_FULL, or with `chain` a new
 * overflow bucket. Nothing is unlinked while parts fill, so a chain's
 * empty slots are all after its full ones: the first empty slot ends the
 * search, and a key whose copy went to rix_place finds the bucket full
 * too, and goes there as well. */
static inline __attribute__((always_inline)) enum rix_put
rix_put(struct store *s, uint64_t *b, uint64_t slot, bool chain, uint64_t *other)
{
    struct index *ix = &s->index;
    uint32_t tag = slot_tag(slot);
    uint64_t *last = b;
    for (uint64_t *cur = b; cur; cur = index_next(ix, cur)) {
        for (int i = 0; i < INDEX_SLOTS; i++) {
            uint64_t *w = index_slot(cur, i), v = slot_load(w);
            if (slot_empty(w)) {
                slot_store(w, slot);
                return RIX_LINKED;
            }
            if (v && slot_tag(v) == tag && rix_same_key(s, v, slot))
                return rix_settle(s, w, slot, other);
        }
        last = cur;
    }
    if (!chain)
        return RIX_FULL;
    uint64_t *e = index_chain_grow(ix, last);
    if (!e)
        return RIX_NOMEM;
    slot_store(e, slot);
    return RIX_LINKED;
}

struct rix_dropped {
    uint64_t slot;
    bool dup;    /* a copy of a linked item's version, not damage */
    bool linked; /* still in the table: unlinked after the fill */
};

/* Items kept for a later step, with their hash. */
struct rix_list {
    struct rix_rec *r;
    size_t n, cap;
};

/* One fill thread: units [lo, hi) (rix_unit_bytes). On lines of its own (SPLIT_LINE). */
struct rix_filler {
    _Alignas(SPLIT_LINE) struct rix *x;
    uint32_t lo, hi;
    uint32_t nthreads;
    const uint32_t *first_unit; /* of each fill thread: which one owns a bucket */
    bool rehash;     /* link into a new, larger table: buckets from the keys */
    uint64_t *words; /* where a unit's buckets are built */
    uint64_t linked;
    uint64_t placed; /* by rix_place (counted in the index already) */
    struct rix_dropped *drops;
    size_t ndrops, cap;
    bool drops_lost; /* no memory to remember a drop */
    /* first bucket full: for the thread that owns the second (rix_second) */
    struct rix_list second[SPLIT_THREADS];
    struct rix_list both; /* both buckets full: for rix_place */
};

static void rix_note_drop(struct rix_filler *f, uint64_t slot, bool dup, bool linked)
{
    if (f->ndrops == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 64;
        struct rix_dropped *d = realloc(f->drops, cap * sizeof(*d));
        if (!d) {
            f->drops_lost = true;
            return;
        }
        f->drops = d;
        f->cap = cap;
    }
    f->drops[f->ndrops++] = (struct rix_dropped){slot, dup, linked};
}

/* Keep an item for a later step; false when out of memory for that. */
static bool rix_keep(struct rix_list *l, uint64_t hv, uint64_t slot)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        struct rix_rec *d = realloc(l->r, cap * sizeof(*d));
        if (!d)
            return false;
        l->r = d;
        l->cap = cap;
    }
    l->r[l->n++] = (struct rix_rec){hv, slot};
    return true;
}

/* The fill thread that owns bucket b of the table (its unit's). */
static uint32_t rix_owner(const struct rix_filler *f, uint64_t b)
{
    const struct rix *x = f->x;
    uint64_t u = (b & ((1ull << index_shape_level(x->shape)) - 1)) >> rix_half_bits(x);
    uint32_t t = 0;
    while (t + 1 < f->nthreads && f->first_unit[t + 1] <= u)
        t++;
    return t;
}

/* What a put came to: counted, or its dropped copies noted. */
static void rix_settled(struct rix_filler *f, enum rix_put r, uint64_t slot, uint64_t other)
{
    struct store *s = f->x->s;
    if (r == RIX_LINKED) {
        f->linked++;
        return;
    }
    /* Dead at once, so that the copy never comes back; only its segment's
     * counts wait for the caller. */
    if (r == RIX_REPLACED) {
        item_set_dead(seg_item(&s->pool, other));
        rix_note_drop(f, other, false, false);
        return;
    }
    item_set_dead(seg_item(&s->pool, slot));
    rix_note_drop(f, slot, r == RIX_DUP, false);
    if (r == RIX_NEITHER && other)
        rix_note_drop(f, other, false, true);
}

/* Link slot in bucket b, the one it is filed in (rix_filed_hash), or
 * (rehash) in that bucket of the table found from its key: there while it
 * has room, else later in its other bucket by the thread that owns that
 * (rix_second), as an insert would take the emptier. The key's hash is h
 * when `known` (a spilled record's); a packed word, which never finds its
 * filed bucket full (rix_file), has its key hashed only in a table made
 * anew (rehash). */
static inline __attribute__((always_inline)) void
rix_link(struct rix_filler *f, uint64_t *b, uint64_t slot, uint64_t h, bool known)
{
    struct store *s = f->x->s;
    struct index *ix = &s->index;
    uint64_t hf, ho;
    if (f->rehash) {
        if (!known)
            h = ix->rehash(ix->rehash_arg, slot);
        known = true;
        rix_both_hashes(ix->shape, h, &hf, &ho);
        b = index_bucket_of(ix, hf);
    }
    uint64_t other = 0;
    enum rix_put r = rix_put(s, b, slot, false, &other);
    if (r == RIX_FULL) {
        if (!known)
            h = ix->rehash(ix->rehash_arg, slot);
        rix_both_hashes(ix->shape, h, &hf, &ho);
        uint64_t *b2 = index_bucket_of(ix, ho);
        uint32_t to = rix_owner(f, (uint64_t)(b2 - ix->cur->b) >> 3);
        if (!rix_keep(&f->second[to], h, slot))
            r = rix_put(s, b, slot, true, &other); /* chained, as one choice would */
    }
    if (r != RIX_FULL)
        rix_settled(f, r, slot, other);
}

/* After the fill, on the thread that owns their other buckets: the items
 * whose filed bucket was full (and stays full: nothing is unlinked yet),
 * linked in the other where it has room, the emptier of the two; a copy
 * of the same key has the same two, and meets it there. */
static void rix_second(struct rix_filler *f, struct rix_filler *all, uint32_t t)
{
    struct store *s = f->x->s;
    struct index *ix = &s->index;
    uint32_t me = (uint32_t)(f - all);
    for (uint32_t i = 0; i < t; i++) {
        const struct rix_list *l = &all[i].second[me];
        for (size_t k = 0; k < l->n; k++) {
            uint64_t h = l->r[k].hv, slot = l->r[k].slot, other = 0, hf, ho;
            if (k + RIX_AHEAD < l->n) {
                rix_both_hashes(ix->shape, l->r[k + RIX_AHEAD].hv, &hf, &ho);
                __builtin_prefetch(index_bucket_of(ix, ho), 1);
            }
            rix_both_hashes(ix->shape, h, &hf, &ho);
            uint64_t *b = index_bucket_of(ix, ho);
            enum rix_put r =
                b == index_bucket_of(ix, hf) ? RIX_FULL : rix_put(s, b, slot, false, &other);
            if (r == RIX_FULL && rix_keep(&f->both, h, slot))
                continue;
            if (r == RIX_FULL) /* no memory to keep it: chained */
                r = rix_put(s, b, slot, true, &other);
            rix_settled(f, r, slot, other);
        }
    }
}

struct rix_second_run {
    _Alignas(SPLIT_LINE) struct rix_filler *f, *all;
    uint32_t t;
};

static void *rix_second_thread(void *arg)
{
    struct rix_second_run *r = arg;
    rix_second(r->f, r->all, r->t);
    return NULL;
}

/* The first empty slot of primary bucket b, and how many it has. */
static uint64_t *rix_empty(uint64_t *b, unsigned *n)
{
    uint64_t *e = NULL;
    *n = 0;
    for (int i = INDEX_SLOTS - 1; i >= 0; i--)
        if (slot_empty(index_slot(b, i))) {
            e = index_slot(b, i);
            ++*n;
        }
    return e;
}

/* Room for an item in the full primary bucket x of a locked pair p: an
 * entry of x moved to its other bucket where that has an empty slot, the
 * slot it left returned (NULL: none could move). As index_pair_free_slot's
 * move, but the entries' hashes come from their keys all at once: their
 * items are asked for together and then their other buckets, so that a
 * move waits for two misses, not two for each entry tried. Nothing else
 * runs but this on other fill threads, so the shape stays; the third
 * bucket is taken with a trylock (we hold two in address order). */
static uint64_t *rix_move_out(struct rix_filler *f, const struct index_pair *p, uint64_t *x)
{
    struct store *s = f->x->s;
    struct index *ix = &s->index;
    uint64_t *table = ix->cur->b, xi = (uint64_t)(x - table) >> 3;
    uint64_t *to[INDEX_SLOTS], sl[INDEX_SLOTS];
    for (int k = 0; k < INDEX_SLOTS; k++) {
        sl[k] = slot_load(index_slot(x, k));
        if (sl[k] && !slot_is_flash(sl[k]))
            __builtin_prefetch(seg_item(&s->pool, sl[k]));
    }
    for (int k = 0; k < INDEX_SLOTS; k++) {
        to[k] = NULL;
        if (!sl[k] || slot_is_flash(sl[k]))
            continue;
        uint64_t h = ix->rehash(ix->rehash_arg, sl[k]);
        uint64_t i = index_shape_bucket(ix->shape, h);
        uint64_t o = i == xi ? index_shape_bucket(ix->shape, index_hash2(h)) : i;
        uint64_t *ob = table + (o << 3);
        if (ob != p->b[0] && ob != p->b[1]) {
            to[k] = ob;
            __builtin_prefetch(ob, 1);
        }
    }
    for (int k = 0; k < INDEX_SLOTS; k++) {
        if (!to[k] || !index_trylock(to[k]))
            continue;
        unsigned n;
        uint64_t *e = rix_empty(to[k], &n);
        if (e) {
            slot_store(e, sl[k]);
            slot_store(index_slot(x, k), 0);
            __atomic_fetch_add(&ix->moves, 1, __ATOMIC_RELAXED);
        }
        index_unlock(to[k]);
        if (e)
            return index_slot(x, k);
    }
    return NULL;
}

/* The filled table: link slot in either bucket of its key, the emptier,
 * moving an entry of a full pair to its other bucket (rix_move_out) before
 * chaining (index_pair_free_slot, as an insert), unless its key is there
 * already. Entries move now, so every slot of both chains is looked at. A
 * move's third bucket may be any thread's: the fill threads run this at
 * once under the buckets' locks, as inserts. */
static void rix_place(struct rix_filler *f, uint64_t h, uint64_t slot)
{
    struct store *s = f->x->s;
    struct index *ix = &s->index;
    struct index_pair p;
    index_lock_key(ix, h, &p);
    uint32_t tag = slot_tag(slot);
    uint64_t other = 0;
    for (int c = 0; c < 2 && p.b[c]; c++)
        for (uint64_t *cur = p.b[c]; cur; cur = index_next(ix, cur))
            for (int i = 0; i < INDEX_SLOTS; i++) {
                uint64_t v = slot_load(index_slot(cur, i));
                if (v && slot_tag(v) == tag && rix_same_key(s, v, slot)) {
                    rix_settled(f, rix_settle(s, index_slot(cur, i), slot, &other), slot, other);
                    index_unlock_pair(&p);
                    return;
                }
            }
    uint64_t *e = NULL;
    if (p.b[1]) {
        unsigned na, nb;
        uint64_t *ea = rix_empty(p.b[0], &na), *eb = rix_empty(p.b[1], &nb);
        e = na >= nb ? ea : eb;
        for (int c = 0; c < 2 && !e; c++)
            e = rix_move_out(f, &p, p.b[c]);
    }
    if (e) {
        slot_store(e, slot);
        f->linked++;
    } else if ((e = index_pair_free_slot(ix, &p))) { /* chained; counts it in ix->items */
        slot_store(e, slot);
        f->placed++;
    } else {
        rix_settled(f, RIX_NOMEM, slot, 0);
    }
    index_unlock_pair(&p);
}

/* The items whose two buckets are full, their buckets asked for a few
 * items ahead. */
static void *rix_place_thread(void *arg)
{
    struct rix_filler *f = arg;
    struct index *ix = &f->x->s->index;
    for (size_t k = 0; k < f->both.n; k++) {
        if (k + RIX_AHEAD < f->both.n) {
            const uint64_t *second;
            index_prefetch(ix, f->both.r[k + RIX_AHEAD].hv, &second);
        }
        rix_place(f, f->both.r[k].hv, f->both.r[k].slot);
    }
    return NULL;
}

/* Copy a built part over the table, past the caches: the part's lines
 * hold filed words that nobody reads again, so a plain copy would read
 * each one from memory before writing it. */
static void rix_stream(uint64_t *dst, const uint64_t *src, size_t bytes)
{
#ifdef __SSE2__
    for (size_t i = 0; i < bytes / 8; i += 2)
        _mm_stream_si128((__m128i *)(dst + i), _mm_load_si128((const __m128i *)(src + i)));
    _mm_sfence(); /* before the join that publishes the table */
#else
    memcpy(dst, src, bytes);
#endif
}

/* Where in its unit's buffer the key of virtual bucket v (its hash's
 * low `power` bits) is linked: its first bucket in the table's shape. */
static inline uint64_t rix_local(const struct rix *x, unsigned l, unsigned hbits, uint64_t v)
{
    uint64_t r = index_shape_bucket(x->shape, v);
    return ((r >> l) << hbits) | (r & (((uint64_t)1 << hbits) - 1));
}

/* Fill one unit: its buckets are built in the thread's own buffer, which
 * stays in cache from unit to unit, from the words filed in the table
 * and the spilled records; then the buffer is written over the unit's
 * halves. */
static void rix_fill_unit(struct rix_filler *f, uint32_t u)
{
    struct rix *x = f->x;
    unsigned l = index_shape_level(x->shape), hbits = rix_half_bits(x);
    bool split = index_shape_split(x->shape) != 0;
    uint64_t *local = f->rehash ? NULL : f->words;
    if (local)
        memset(local, 0, rix_unit_bytes(x));
    uint64_t in_mask = ((uint64_t)1 << x->part_shift) - 1;
    uint64_t off_mask = ((uint64_t)1 << x->off_bits) - 1, seg_mask = ((uint64_t)1 << x->seg_bits) - 1;
    unsigned in_at = x->off_bits + x->seg_bits + 11; /* where a word's bucket starts */
    uint32_t parts[2] = {u, u + x->nparts / 2};
    int nparts = split && x->nparts > 1 ? 2 : 1;
    /* The packed words of both parts first: they are at most INDEX_SLOTS
     * a bucket (rix_file), so they fit, and the spilled records, which
     * carry their hash, are the ones a full bucket sends on. */
    for (int k = 0; k < nparts; k++) {
        uint32_t part = parts[k];
        uint64_t first = (uint64_t)part << x->part_shift; /* its first virtual bucket */
        const uint64_t *base = x->table + (first << 3);
        for (uint32_t q = 0; q < x->nbins && x->pack; q++) {
            const uint64_t *words = base + (uint64_t)q * x->cap;
            uint32_t n = x->bins[q].packed[part];
            for (uint32_t i = 0; i < n; i++) {
                if (local && i + RIX_AHEAD < n)
                    __builtin_prefetch(
                        local + (rix_local(x, l, hbits,
                                           first | ((words[i + RIX_AHEAD] >> in_at) & in_mask))
                                 << 3),
                        1);
                uint64_t w = words[i];
                uint32_t off = (uint32_t)(w & off_mask);
                w >>= x->off_bits;
                uint32_t seg = (uint32_t)(w & seg_mask);
                w >>= x->seg_bits;
                uint32_t tag = (uint32_t)(w & 2047);
                uint64_t v = first | ((w >> 11) & in_mask);
                rix_link(f, local ? local + (rix_local(x, l, hbits, v) << 3) : NULL,
                         slot_make(tag, seg, off), 0, false);
            }
        }
    }
    uint64_t v_mask = ((uint64_t)1 << x->power) - 1;
    for (int k = 0; k < nparts; k++)
        for (uint32_t q = 0; q < x->nbins; q++)
            for (struct rix_block *b = x->bins[q].head[parts[k]]; b; b = b->next)
                for (uint32_t i = 0; i < b->n; i++) {
                    uint64_t h = b->rec[i].hv;
                    uint64_t v = rix_filed_hash(x->shape, x->share, h) & v_mask;
                    rix_link(f, local ? local + (rix_local(x, l, hbits, v) << 3) : NULL,
                             b->rec[i].slot, h, true);
                }
    if (!local)
        return;
    /* the halves: buckets u 2^hbits.. and, split, 2^L + u 2^hbits.., whose
     * buckets past the table's 2^L + s are left empty */
    size_t half = ((size_t)INDEX_WORDS * 8) << hbits;
    uint64_t lo = (uint64_t)u << hbits;
    rix_stream(x->table + (lo << 3), local, half);
    if (split)
        rix_stream(x->table + ((((uint64_t)1 << l) + lo) << 3), local + (half / 8), half);
}

static void *rix_fill_thread(void *arg)
{
    struct rix_filler *f = arg;
    for (uint32_t u = f->lo; u < f->hi; u++)
        rix_fill_unit(f, u);
    return NULL;
}

/* Take a slot left linked by RIX_NEITHER out of the filled table (from
 * either bucket of its key). */
static bool rix_unlink(struct rix *x, uint64_t slot)
{
    struct index *ix = &x->s->index;
    uint64_t h = ix->rehash(ix->rehash_arg, slot);
    uint64_t *bs[2] = {index_bucket_of(ix, h), index_bucket_of(ix, index_hash2(h))};
    for (int c = 0; c < 2; c++)
        for (uint64_t *cur = bs[c]; cur; cur = index_next(ix, cur))
            for (int i = 0; i < INDEX_SLOTS; i++)
                if (slot_same(slot_load(index_slot(cur, i)), slot)) {
                    index_clear_slot(ix, bs[c], index_slot(cur, i));
                    return true;
                }
    return false;
}

uint64_t rix_fill(struct rix *x, uint32_t nthreads, rix_drop_fn drop, void *arg)
{
    struct store *s = x->s;
    uint64_t total = 0;
    for (uint32_t i = 0; i < x->nbins; i++)
        total += x->bins[i].n - x->bins[i].lost;
    /* The header's item count sized the table. After a crash it may be a
     * second of writes short: the table grows later, as it would have. If
     * it is far short (a damaged count), link into a table of the right
     * size instead, on one thread, finding buckets from the keys: slower,
     * but no chain is long. */
    struct index_table *old = NULL;
    if (total > 2 * INDEX_GROW_LOAD * index_shape_buckets(x->shape)) {
        /* as store_create sizes one: the power of two at or below,
         * then the buckets the items need; the level reported stays
         * (kept apart: the table is not made at it, which may be the
         * file's level from before the crash) */
        unsigned was = index_level(&s->index);
        old = index_swap_table(&s->index, index_level_to_hold(0, total));
        if (!old || index_presize(&s->index, total) != 0)
            log_error("store: out of memory sizing the index for %llu restored items",
                      (unsigned long long)total);
        index_keep_level(&s->index, was);
    }
    struct rix_filler f[SPLIT_THREADS];
    uint32_t first_unit[SPLIT_THREADS];
    uint32_t t = nthreads > x->nbins ? x->nbins : nthreads;
    if (t > x->nunits)
        t = x->nunits;
    if (t == 0 || old)
        t = 1;
    for (uint32_t i = 0; i < t; i++)
        first_unit[i] = (uint32_t)((uint64_t)x->nunits * i / t);
    for (uint32_t i = 0; i < t; i++)
        f[i] = (struct rix_filler){.x = x,
                                   .lo = first_unit[i],
                                   .hi = (uint32_t)((uint64_t)x->nunits * (i + 1) / t),
                                   .nthreads = t,
                                   .first_unit = first_unit,
                                   .rehash = old != NULL,
                                   .words = x->words[i]};
    split_run(rix_fill_thread, (char *)f, sizeof(f[0]), t);
    /* The items whose filed bucket was full, now that every bucket is
     * built: in their other (each thread its own buckets), then the rest
     * in either bucket of theirs, under the buckets' locks. */
    struct rix_second_run sr[SPLIT_THREADS];
    for (uint32_t i = 0; i < t; i++)
        sr[i] = (struct rix_second_run){.f = &f[i], .all = f, .t = t};
    split_run(rix_second_thread, (char *)sr, sizeof(sr[0]), t);
    split_run(rix_place_thread, (char *)f, sizeof(f[0]), t);
    for (uint32_t i = 0; i < t; i++) {
        for (uint32_t j = 0; j < t; j++)
            free(f[i].second[j].r);
        free(f[i].both.r);
    }
    uint64_t linked = 0;
    bool lost = false;
    for (uint32_t i = 0; i < t; i++)
        linked += f[i].linked;
    index_count(&s->index, linked);
    for (uint32_t i = 0; i < t; i++)
        linked += f[i].placed;
    for (uint32_t i = 0; i < t; i++) {
        for (size_t k = 0; k < f[i].ndrops; k++) {
            if (f[i].drops[k].linked && rix_unlink(x, f[i].drops[k].slot))
                linked--;
            drop(arg, f[i].drops[k].slot, f[i].drops[k].dup);
        }
        lost |= f[i].drops_lost;
        free(f[i].drops);
    }
    if (old) /* it held the filed words only */
        index_table_release(old);
    if (lost) /* the items are unlinked and dead, only their segment counts stay high */
        log_error("store: out of memory during the restore; some segments' live counts are high");
    return linked;
}
