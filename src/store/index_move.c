/* SPDX-License-Identifier: BSD-3-Clause */
/* Where an insert's slot comes from (index_pair_free_slot): the emptier of
 * its key's two buckets; where both are full, a stale flash slot of
 * theirs, or room made by moving an entry to its other bucket, found from
 * its bucket and tag (index_other_bucket), from its place for a flash
 * entry or its key's hash for a RAM one where those fall short, one step
 * or two deep (a breadth-first cuckoo search cut at two levels); else a
 * chain. docs/store-index.md "Index". */
#include "store/store_index.h"

/* Empty slots of primary bucket b (its chain not counted). */
static unsigned primary_free(const uint64_t *b)
{
    unsigned n = 0;
    for (int i = 0; i < INDEX_SLOTS; i++)
        n += slot_empty(index_slot((uint64_t *)b, i));
    return n;
}

static uint64_t *primary_empty(uint64_t *b)
{
    for (int i = 0; i < INDEX_SLOTS; i++)
        if (slot_empty(index_slot(b, i)))
            return index_slot(b, i);
    return NULL;
}

/* An empty slot in the chain of b that needs no new overflow bucket. */
static uint64_t *chain_empty(struct index *ix, uint64_t *b)
{
    for (uint64_t *cur = b; cur; cur = index_next(ix, cur)) {
        uint64_t *e = primary_empty(cur);
        if (e)
            return e;
    }
    return NULL;
}

/* An entry to move: its slot's word, the primary bucket it is in, and
 * its key's hash once that was needed (`keyed`). */
struct move_from {
    uint64_t sl, xi, h;
    bool keyed;
};

/* The other bucket by `shape` of flash entry m in unsplit bucket m->xi
 * whose other bucket is split: which half takes it is hash bit L of m's
 * bucket, which its place says while L is one of its place bits. */
static bool flash_other(const struct index *ix, uint64_t shape, const struct move_from *m,
                        uint64_t *o)
{
    unsigned l = index_shape_level(shape);
    if (l < ix->place_base || l >= ix->place_base + INDEX_PLACE_BITS)
        return false;
    uint64_t x = m->xi ^ index_spread(slot_tag(m->sl));
    uint64_t bit = (slot_place(m->sl) >> (l - ix->place_base) ^ x >> l) & 1;
    *o = (x & (shape >> 32)) | bit << l;
    return true;
}

/* Slot sl as it is in its other bucket: a flash slot's place is that
 * bucket's hash's (index_hash2 flips the bits index_spread says). */
static uint64_t move_slot(const struct index *ix, uint64_t sl)
{
    if (!slot_is_flash(sl))
        return sl;
    uint64_t flip = index_spread(slot_tag(sl)) >> ix->place_base;
    return sl ^ ((flip << SLOT_PLACE_SHIFT) & SLOT_PLACE);
}

/* The other bucket by `shape` of entry m: from its bucket and tag
 * (index_other_bucket), or where that needs a hash bit its bucket does
 * not encode, from its key's hash (a RAM entry: rehashed once) or its
 * place (a flash entry, whose key is not in RAM: false past its places).
 * A RAM entry's key is read only there, which cut a fill's server CPU by
 * a fifth or more (docs/store-index.md "Index"). */
static bool move_other(struct index *ix, uint64_t shape, struct move_from *m, uint64_t *o)
{
    if (!m->keyed && index_other_bucket(shape, m->xi, slot_tag(m->sl), o))
        return true;
    if (slot_is_flash(m->sl))
        return flash_other(ix, shape, m, o);
    if (!m->keyed) {
        m->h = ix->rehash(ix->rehash_arg, m->sl);
        m->keyed = true;
    }
    uint64_t i = index_shape_bucket(shape, m->h);
    *o = i == m->xi ? index_shape_bucket(shape, index_hash2(m->h)) : i;
    return true;
}

/* Lock bucket o of table t for entry m to move into, o its other bucket
 * by `shape`, with a trylock (the mover holds two or three already, in
 * address order; a busy one is skipped), or NULL: busy, split since
 * `shape` so that o is not m's other bucket any more, or before m's
 * bucket while a walk that must meet every entry is on (one that passed o
 * already, but not m's, would miss it; a walk counted itself before it
 * locked its first bucket, so one that has been through o, and unlocked
 * it before we locked it, is seen here). m's bucket is locked: it cannot
 * split. */
static uint64_t *move_lock(struct index *ix, struct index_table *t, uint64_t o, struct move_from *m,
                           uint64_t shape)
{
    uint64_t *ob = t->b + (o << 3), now_o;
    if (__atomic_fetch_or(ob, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK)
        return NULL;
    uint64_t now = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    bool back = o < m->xi && __atomic_load_n(&ix->walks, __ATOMIC_SEQ_CST);
    if (back || (now != shape && (!move_other(ix, now, m, &now_o) || now_o != o))) {
        index_unlock(ob);
        return NULL;
    }
    return ob;
}

/* An entry of a full pair whose other bucket is full too: where a second
 * step may make room (move_deep). */
struct move_step {
    uint64_t *x; /* the entry's slot */
    uint64_t o;  /* its other bucket */
    struct move_from m;
};

/* Buckets a move searches two steps deep, at most: every other bucket of
 * the pair's entries. Each costs a look at up to eight entries (a read of
 * a RAM entry's key only where its bucket and tag do not say where its
 * other bucket is), but the search runs only where every entry of the
 * pair has a full other bucket, and it is what keeps chains rare at
 * INDEX_SPLIT_TENTHS (test_store_overhead's fills at 6.4 items a bucket
 * of seven slots: with four buckets, 3 % of the buckets chained; with
 * all, under 0.1 %). */
#define INDEX_MOVE_DEEP (2 * INDEX_SLOTS)

/* Move entry sl from slot `from` to the empty slot `to` in its other
 * bucket (the locks of both their buckets held: the copy first, then the
 * clear). */
static void move_entry(struct index *ix, uint64_t *to, uint64_t *from, uint64_t sl)
{
    slot_store(to, move_slot(ix, sl));
    slot_store(from, 0);
    __atomic_fetch_add(&ix->moves, 1, __ATOMIC_RELAXED);
}

/* Make room in bucket s->o for the entry s->x by moving an entry of o to
 * its own other bucket, then move s->x there. Every move copies the
 * entry, then clears where it was, under the locks of both its buckets,
 * as every lookup of its key holds one of them: no lookup can see it in
 * neither. The slot s->x left, or NULL. */
static uint64_t *move_deep(struct index *ix, struct index_table *t, uint64_t shape,
                           const struct index_pair *p, struct move_step *s)
{
    uint64_t *ob = move_lock(ix, t, s->o, &s->m, shape);
    if (!ob)
        return NULL;
    /* ob cannot split while held: its entries' buckets by the shape now */
    shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    uint64_t *room = primary_empty(ob); /* freed since the first look */
    for (int k = 0; k < INDEX_SLOTS && !room; k++) {
        struct move_from m = {.sl = slot_load(index_slot(ob, k)), .xi = s->o};
        uint64_t o2;
        if (!m.sl || !move_other(ix, shape, &m, &o2))
            continue;
        uint64_t *b2 = t->b + (o2 << 3);
        if (o2 == s->o || b2 == p->b[0] || b2 == p->b[1])
            continue;
        uint64_t *b2l = move_lock(ix, t, o2, &m, shape);
        if (!b2l)
            continue;
        uint64_t *e = primary_empty(b2l);
        if (e) {
            room = index_slot(ob, k);
            move_entry(ix, e, room, m.sl);
        }
        index_unlock(b2l);
    }
    if (room)
        move_entry(ix, room, s->x, slot_load(s->x));
    index_unlock(ob);
    return room ? s->x : NULL;
}

/* Both primaries of p full: move an entry of one of them to its other
 * bucket where that has an empty slot, and return the slot it left; where
 * none has, make room two steps deep (move_deep) in their other buckets:
 * a breadth-first cuckoo search, two levels deep. Every bucket beyond the
 * pair is taken with a trylock and checked against the shape as
 * index_lock_key does, so a mover never waits. An entry whose other
 * bucket needs a hash bit its bucket does not encode is skipped if it is
 * a flash one (move_other). */
static uint64_t *pair_move_out(struct index *ix, const struct index_pair *p)
{
    struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    struct move_step deep[INDEX_MOVE_DEEP];
    unsigned nd = 0;
    for (int c = 0; c < 2; c++) {
        uint64_t *x = p->b[c];
        uint64_t xi = (uint64_t)(x - t->b) >> 3;
        for (int k = 0; k < INDEX_SLOTS; k++) {
            struct move_from m = {.sl = slot_load(index_slot(x, k)), .xi = xi};
            uint64_t o;
            if (!m.sl || !move_other(ix, shape, &m, &o))
                continue;
            uint64_t *ob = t->b + (o << 3);
            if (ob == p->b[0] || ob == p->b[1])
                continue;
            uint64_t *obl = move_lock(ix, t, o, &m, shape);
            if (!obl)
                continue;
            uint64_t *e = primary_empty(obl);
            if (e)
                move_entry(ix, e, index_slot(x, k), m.sl);
            index_unlock(obl);
            if (e)
                return index_slot(x, k);
            if (nd < INDEX_MOVE_DEEP)
                deep[nd++] = (struct move_step){index_slot(x, k), o, m};
        }
    }
    for (unsigned d = 0; d < nd; d++) {
        uint64_t *slot = move_deep(ix, t, shape, p, &deep[d]);
        if (slot)
            return slot;
    }
    return NULL;
}

/* Both primaries of p full: clear the flash slots of theirs that name a
 * dropped segment (a lookup clears one when it meets it, but a key never
 * looked up again leaves its slot to fill the bucket) and return one of
 * those slots, or NULL. */
static uint64_t *pair_reclaim(struct index *ix, const struct index_pair *p)
{
    uint64_t *got = NULL;
    for (int c = 0; c < 2 && p->b[c] && ix->stale; c++)
        for (int k = 0; k < INDEX_SLOTS; k++) {
            uint64_t *w = index_slot(p->b[c], k), sl = slot_load(w);
            if (sl && slot_is_flash(sl) && ix->stale(ix->rehash_arg, sl)) {
                slot_store(w, 0);
                __atomic_fetch_sub(&ix->items, 1, __ATOMIC_RELAXED);
                if (!got)
                    got = w;
            }
        }
    return got;
}

uint64_t *index_pair_free_slot(struct index *ix, const struct index_pair *p)
{
    uint64_t *a = p->b[0], *b = p->b[1], *slot = NULL;
    if (b) {
        unsigned fa = primary_free(a), fb = primary_free(b);
        if (fa || fb)
            slot = primary_empty(fa >= fb ? a : b);
        else if (!(slot = pair_reclaim(ix, p)) && !(slot = pair_move_out(ix, p)) &&
                 !(slot = chain_empty(ix, a)))
            slot = chain_empty(ix, b);
    } else if (primary_free(a) == 0) {
        slot = pair_reclaim(ix, p);
    }
    if (!slot)
        return index_free_slot(ix, a);
    __atomic_fetch_add(&ix->items, 1, __ATOMIC_RELAXED);
    return slot;
}
