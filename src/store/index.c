/* SPDX-License-Identifier: BSD-3-Clause */
/* The hash index: primary buckets of one cache line each, plus overflow
 * buckets chained from a pool when a bucket's eight slots are full: its
 * last slot's entry moves to the overflow bucket and the slot links to it.
 *
 * Every access to a chain happens under its primary bucket's lock, a
 * spinlock in a bit of the bucket's first slot (SLOT_LOCK, which no slot
 * field uses; slot_store keeps it): a lookup touches one line in
 * the common case and never a global lock. Overflow buckets live in chunks
 * that are never moved or freed before index_release, so a chained id stays
 * valid; the pool mutex is taken only to hand out or take back a bucket.
 *
 * Growth is linear hashing: the primary buckets are one reservation of
 * address space, made writable as the table grows into it, and the table
 * grows by one bucket whenever the items pass INDEX_SPLIT_TENTHS / 10 a bucket, so
 * its load stays at that threshold instead of falling to half of it at
 * each doubling. A word holds the level L and the split pointer s
 * (index_shape_make); splitting bucket s locks it and bucket 2^L + s (which no
 * hash reaches yet), moves the items whose hash bit L is set, and advances
 * the word before unlocking. A lookup reads the word, locks its bucket and
 * reads the word again, looking again when its bucket changed
 * (index_lock_hash): every hash has exactly one live bucket at any time.
 * Buckets never move in memory, so a bucket address read without a lock
 * (a prefetch) is always mapped.
 */
#define _GNU_SOURCE /* MADV_POPULATE_WRITE */
#include "store/store_index.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"

/* A spin-wait hint to the CPU, where the architecture has one. */
#if defined(__x86_64__) || defined(__i386__)
#define INDEX_CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define INDEX_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define INDEX_CPU_RELAX() ((void)0)
#endif

#define INDEX_CHUNK_BYTES ((size_t)INDEX_CHUNK_BUCKETS * 64)
/* Splits an insert makes at most when the table is owed some. */
#define INDEX_SPLIT_STEP 4
/* The most buckets, 2^32 (24 G items): the reservation's size, 256 GiB of
 * address space (smaller when the system refuses that much). */
#define INDEX_MAX_POWER 32
/* A table made this large asks for huge pages at once. */
#define INDEX_HUGE_MIN ((size_t)4 << 20)
/* A table that grows past this many bytes of buckets goes on huge pages:
 * the pages it wrote are collapsed into one, and the next ones are faulted
 * in ahead (index_ahead). A lookup lands on a random bucket, so a table
 * spread over 256 small pages or more misses the TLB on most lookups. */
#define INDEX_AHEAD_MIN ((size_t)1 << 20)
#define INDEX_MIN_POWER 1
/* Slots a split gathers to pack its bucket's chain again. */
#define INDEX_PACK_MAX (INDEX_SLOTS * 32)

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* A reservation of up to 2^INDEX_MAX_POWER buckets, the first 2^power
 * writable (the rest is PROT_NONE, which costs no commit charge). */
static struct index_table *table_new(unsigned power)
{
    struct index_table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    size_t need = round_up((size_t)64 << power, HUGEMEM_PAGE);
    for (unsigned max = INDEX_MAX_POWER; !t->b; max--) {
        size_t len = (size_t)64 << max;
        if (len < need || max < power) {
            free(t);
            return NULL;
        }
        char *raw = mmap(NULL, len + HUGEMEM_PAGE, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw == MAP_FAILED)
            continue;
        /* huge pages must be aligned: trim both ends */
        char *p = (char *)(((uintptr_t)raw + HUGEMEM_PAGE - 1) & ~(uintptr_t)(HUGEMEM_PAGE - 1));
        if (p > raw)
            munmap(raw, (size_t)(p - raw));
        munmap(p + len, (size_t)(raw + HUGEMEM_PAGE - p));
        t->b = (uint64_t *)(void *)p;
        t->reserved = len;
    }
    if (mprotect(t->b, need, PROT_READ | PROT_WRITE) != 0) {
        munmap(t->b, t->reserved);
        free(t);
        return NULL;
    }
    t->writable = need;
    t->power = power;
    t->mask = ((uint64_t)1 << power) - 1;
#ifdef MADV_HUGEPAGE
    /* Lookups land on random buckets: a large table on huge pages misses
     * the TLB far less. A hint; without it the table works the same. */
    if (((size_t)64 << power) >= INDEX_HUGE_MIN)
        madvise(t->b, need, MADV_HUGEPAGE);
#endif
    return t;
}

static void table_free(struct index_table *t)
{
    munmap(t->b, t->reserved);
    free(t);
}

/* Make the table writable up to `end` bytes; false when the reservation
 * ends first (the table stops growing; chains take the rest). Grow lock
 * held. */
static bool table_reach(struct index_table *t, size_t end)
{
    if (end <= t->writable)
        return true;
    size_t to = round_up(end, HUGEMEM_PAGE);
    if (to > t->reserved ||
        mprotect((char *)t->b + t->writable, to - t->writable, PROT_READ | PROT_WRITE) != 0)
        return false;
    t->writable = to;
    return true;
}

/* The items past which the table of this shape splits a bucket. */
static uint64_t index_split_at(uint64_t shape)
{
    return index_shape_buckets(shape) * INDEX_SPLIT_TENTHS / 10;
}

/* The slots growth counts: those held, less those known stale. */
static uint64_t index_live(struct index *ix)
{
    uint64_t items = __atomic_load_n(&ix->items, __ATOMIC_RELAXED);
    int64_t stale = __atomic_load_n(&ix->stale_slots, __ATOMIC_RELAXED);
    return stale <= 0 ? items : (uint64_t)stale < items ? items - (uint64_t)stale : 0;
}

void index_stale_add(struct index *ix, int64_t n)
{
    __atomic_fetch_add(&ix->stale_slots, n, __ATOMIC_RELAXED);
}

static unsigned index_power_of(unsigned level)
{
    if (level < INDEX_MIN_POWER + INDEX_LEVEL_SHIFT)
        return INDEX_MIN_POWER;
    return level - INDEX_LEVEL_SHIFT < INDEX_MAX_POWER ? level - INDEX_LEVEL_SHIFT
                                                        : INDEX_MAX_POWER;
}

unsigned index_level_for(unsigned level, uint64_t items)
{
    unsigned power = index_power_of(level);
    while (power < INDEX_MAX_POWER && items > ((uint64_t)INDEX_GROW_LOAD << power))
        power++;
    return power + INDEX_LEVEL_SHIFT;
}

unsigned index_level_to_hold(unsigned level, uint64_t items)
{
    unsigned power = index_power_of(level);
    uint64_t want = (items * 10 + INDEX_SPLIT_TENTHS - 1) / INDEX_SPLIT_TENTHS;
    while (power < INDEX_MAX_POWER && ((uint64_t)2 << power) <= want)
        power++;
    return power + INDEX_LEVEL_SHIFT;
}

/* The index's table becomes t, unsplit. */
static void index_set_table(struct index *ix, struct index_table *t)
{
    __atomic_store_n(&ix->cur, t, __ATOMIC_RELEASE);
    __atomic_store_n(&ix->shape, index_shape_make(t->power, 0), __ATOMIC_RELEASE);
    ix->base_level = t->power + INDEX_LEVEL_SHIFT;
    /* the huge pages after the table's first ones are faulted in ahead */
    ix->ahead_end = t->writable;
    ix->head_huge = ((size_t)64 << t->power) >= INDEX_HUGE_MIN;
}

int index_init(struct index *ix, unsigned level, index_rehash_fn rehash, void *arg)
{
    memset(ix, 0, sizeof(*ix));
    struct index_table *t = table_new(index_power_of(level));
    if (!t)
        return -1;
    ix->chunks = calloc(INDEX_MAX_CHUNKS, sizeof(*ix->chunks));
    ix->chunk_free = calloc(INDEX_MAX_CHUNKS, sizeof(*ix->chunk_free));
    if (!ix->chunks || !ix->chunk_free) {
        free(ix->chunks);
        free(ix->chunk_free);
        table_free(t);
        return -1;
    }
    index_set_table(ix, t);
    ix->rehash = rehash;
    ix->rehash_arg = arg;
    hugemem_ahead_init(&ix->next);
    pthread_mutex_init(&ix->pool_lock, NULL);
    pthread_mutex_init(&ix->grow_lock, NULL);
    return 0;
}

int index_presize(struct index *ix, uint64_t items)
{
    struct index_table *t = ix->cur;
    uint64_t low = (uint64_t)1 << t->power;
    uint64_t want = (items * 10 + INDEX_SPLIT_TENTHS - 1) / INDEX_SPLIT_TENTHS;
    if (ix->items || index_shape_split(ix->shape) || want <= low)
        return 0;
    /* 2^L + s buckets, s < 2^L: as if bucket s had just been split, which
     * an empty table needs no moves for */
    uint64_t n = want < 2 * low ? want : 2 * low - 1;
    if (!table_reach(t, (size_t)n * 64))
        return -1;
#ifdef MADV_HUGEPAGE
    if (ix->head_huge)
        madvise(t->b, t->writable, MADV_HUGEPAGE);
#endif
    ix->ahead_end = t->writable;
    __atomic_store_n(&ix->shape, index_shape_make(t->power, n - low), __ATOMIC_RELEASE);
    return 0;
}

void index_release(struct index *ix)
{
    hugemem_ahead_release(&ix->next);
    for (uint32_t i = 0; i < ix->nchunks; i++)
        munmap(ix->chunks[i], INDEX_CHUNK_BYTES);
    free(ix->chunks);
    free(ix->chunk_free);
    table_free(__atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE));
    pthread_mutex_destroy(&ix->pool_lock);
    pthread_mutex_destroy(&ix->grow_lock);
    memset(ix, 0, sizeof(*ix));
}

/* The table's bytes: the buckets in use, and the pages faulted in ahead
 * of them (*ahead: those alone). */
static size_t index_table_bytes(struct index *ix, size_t *ahead)
{
    pthread_mutex_lock(&ix->grow_lock);
    struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    size_t n = round_up(index_shape_buckets(shape) * 64, 4096);
    const char *done = hugemem_ahead_done(&ix->next), *b = (const char *)t->b;
    *ahead = 0;
    if (done > b + n && done <= b + t->reserved) {
        *ahead = (size_t)(done - b) - n;
        n = (size_t)(done - b);
    }
    pthread_mutex_unlock(&ix->grow_lock);
    return n;
}

size_t index_ahead_bytes(struct index *ix)
{
    size_t ahead;
    index_table_bytes(ix, &ahead);
    return ahead;
}

size_t index_bytes(struct index *ix)
{
    size_t ahead;
    size_t n = index_table_bytes(ix, &ahead);
    pthread_mutex_lock(&ix->pool_lock);
    n += (size_t)ix->nchunks *
         (INDEX_CHUNK_BYTES + sizeof(*ix->chunks) + sizeof(*ix->chunk_free));
    pthread_mutex_unlock(&ix->pool_lock);
    return n;
}

unsigned index_level(struct index *ix)
{
    return index_level_for(ix->base_level, __atomic_load_n(&ix->most, __ATOMIC_RELAXED));
}

bool index_expanding(struct index *ix)
{
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    return index_live(ix) > index_split_at(shape);
}

void index_lock(uint64_t *b)
{
    unsigned spins = 0;
    /* (index_lock_hash tries once inline before it calls this) */
    while (__atomic_fetch_or(b, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK) {
        while (__atomic_load_n(b, __ATOMIC_RELAXED) & INDEX_LOCK) {
            /* The holder may be descheduled (more workers than cores): yield
             * rather than burn its time slice. */
            if (++spins > 64) {
                sched_yield();
                spins = 0;
            } else {
                INDEX_CPU_RELAX();
            }
        }
    }
}

bool index_trylock(uint64_t *b)
{
    return !(__atomic_fetch_or(b, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK);
}

void index_lock_key(struct index *ix, uint64_t h, struct index_pair *p)
{
    struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    uint64_t h2 = index_hash2(h);
    for (;;) {
        uint64_t i = index_shape_bucket(shape, h), j = index_shape_bucket(shape, h2);
        uint64_t *bi = t->b + (i << 3), *bj = t->b + (j << 3);
        uint64_t *lo = i < j ? bi : bj, *hi = i < j ? bj : bi;
        if (__atomic_fetch_or(lo, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK)
            index_lock(lo);
        if (hi != lo && (__atomic_fetch_or(hi, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK))
            index_lock(hi);
        /* as index_lock_hash: a split that moved either is seen now */
        uint64_t now = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
        if (now == shape || (index_shape_bucket(now, h) == i && index_shape_bucket(now, h2) == j)) {
            p->b[0] = bi;
            p->b[1] = i == j ? NULL : bj;
            return;
        }
        if (hi != lo)
            index_unlock(hi);
        index_unlock(lo);
        shape = now;
    }
}

bool index_lock_second(struct index *ix, uint64_t h, struct index_pair *p)
{
    struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t h2 = index_hash2(h);
    for (;;) {
        /* The first stays h's bucket: splitting it needs its lock. */
        uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
        uint64_t j = index_shape_bucket(shape, h2);
        uint64_t *bj = t->b + (j << 3);
        if (bj == p->b[0])
            return true;
        if (bj > p->b[0]) {
            if (__atomic_fetch_or(bj, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK)
                index_lock(bj);
        } else if (__atomic_fetch_or(bj, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK) {
            index_unlock(p->b[0]);
            index_lock_key(ix, h, p);
            return false;
        }
        uint64_t now = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
        if (now == shape || index_shape_bucket(now, h2) == j) {
            p->b[1] = bj;
            return true;
        }
        index_unlock(bj); /* split before we had it: look again */
    }
}

uint64_t *index_pair_find(struct index *ix, const struct index_pair *p, uint64_t want,
                          uint64_t **chain)
{
    for (int c = 0; c < 2 && p->b[c]; c++)
        for (uint64_t *cur = p->b[c]; cur; cur = index_next(ix, cur))
            for (int i = 0; i < INDEX_SLOTS; i++)
                if (slot_same(slot_load(index_slot(cur, i)), want)) {
                    *chain = p->b[c];
                    return index_slot(cur, i);
                }
    return NULL;
}

uint64_t *index_pair_chain_of(struct index *ix, const struct index_pair *p, const uint64_t *slot)
{
    for (int c = 0; c < 2 && p->b[c]; c++)
        for (uint64_t *cur = p->b[c]; cur; cur = index_next(ix, cur))
            if (slot >= index_slot(cur, 0) && slot < index_slot(cur, INDEX_SLOTS))
                return p->b[c];
    return NULL;
}

uint64_t index_flash_place(struct index *ix, uint64_t h, const uint64_t *chain, uint64_t fslot)
{
    /* chain is locked, so it is still one of h's buckets: the first, or
     * else the second (a key whose two are one takes the first). A split
     * of it needs no more than that bucket's hash bits above the level. */
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    const struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t hc = chain == t->b + (index_shape_bucket(shape, h) << 3) ? h : index_hash2(h);
    uint64_t place = (hc >> ix->place_base) & ((1u << INDEX_PLACE_BITS) - 1);
    return (fslot & ~SLOT_PLACE) | place << SLOT_PLACE_SHIFT;
}

void index_place_from_here(struct index *ix)
{
    ix->place_base = index_shape_level(__atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE));
}

static uint64_t *index_overflow(struct index *ix, uint32_t id)
{
    uint32_t i = id - 1;
    return ix->chunks[i / INDEX_CHUNK_BUCKETS] + (size_t)(i % INDEX_CHUNK_BUCKETS) * 8;
}

/* The id of the overflow bucket chained after b, 0 = none. */
static uint32_t chain_next(const uint64_t *b)
{
    uint64_t w = __atomic_load_n(&b[INDEX_SLOTS - 1], __ATOMIC_RELAXED);
    return slot_is_link(w) ? slot_link_id(w) : 0;
}

/* Make b's last slot, which holds no entry, a link to bucket id (0: empty). */
static void chain_set_next(uint64_t *b, uint32_t id)
{
    slot_store(&b[INDEX_SLOTS - 1], id ? slot_link(id) : 0);
}

uint64_t *index_next(struct index *ix, uint64_t *b)
{
    uint32_t id = chain_next(b);
    return id ? index_overflow(ix, id) : NULL;
}

/* The overflow pool hands out the lowest free bucket's chunk first and
 * unmaps chunks from the top once they are free, keeping one free chunk
 * mapped so that a bucket taken and given back at the edge does not map
 * and unmap a chunk each time. Chains shrink back after a growth (a quarter
 * of the buckets overflow at six items a bucket, a twentieth after the
 * doubling), and without this the pool kept its high-water mark.
 * Pool lock held. */
static void pool_trim(struct index *ix)
{
    while (ix->nchunks >= 2 &&
           ix->chunk_free[ix->nchunks - 1].nfree == INDEX_CHUNK_BUCKETS &&
           ix->chunk_free[ix->nchunks - 2].nfree == INDEX_CHUNK_BUCKETS) {
        uint32_t c = --ix->nchunks;
        munmap(ix->chunks[c], INDEX_CHUNK_BYTES);
        __atomic_store_n(&ix->chunks[c], NULL, __ATOMIC_RELAXED);
        ix->chunk_free[c] = (struct index_chunk){0};
    }
    if (ix->pool_low > ix->nchunks)
        ix->pool_low = ix->nchunks;
}

static uint32_t pool_get(struct index *ix)
{
    uint32_t id = 0;
    pthread_mutex_lock(&ix->pool_lock);
    uint32_t c = ix->pool_low;
    while (c < ix->nchunks && ix->chunk_free[c].nfree == 0)
        c++;
    if (c == ix->nchunks) {
        if (ix->nchunks == INDEX_MAX_CHUNKS)
            goto out;
        void *m = mmap(NULL, INDEX_CHUNK_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            goto out;
        __atomic_store_n(&ix->chunks[c], (uint64_t *)m, __ATOMIC_RELAXED);
        ix->chunk_free[c] = (struct index_chunk){.nfree = INDEX_CHUNK_BUCKETS};
        ix->nchunks++;
    }
    ix->pool_low = c;
    struct index_chunk *k = &ix->chunk_free[c];
    if (k->head) {
        id = k->head;
        uint64_t *b = index_overflow(ix, id);
        k->head = (uint32_t)__atomic_load_n(b, __ATOMIC_RELAXED);
        memset(b, 0, 64);
    } else {
        id = c * INDEX_CHUNK_BUCKETS + k->fresh++ + 1; /* zero since mapped */
    }
    k->nfree--;
    __atomic_fetch_add(&ix->overflow_used, 1, __ATOMIC_RELAXED);
out:
    pthread_mutex_unlock(&ix->pool_lock);
    return id;
}

static void pool_put(struct index *ix, uint32_t id)
{
    pthread_mutex_lock(&ix->pool_lock);
    uint32_t c = (id - 1) / INDEX_CHUNK_BUCKETS;
    struct index_chunk *k = &ix->chunk_free[c];
    uint64_t *b = index_overflow(ix, id);
    __atomic_store_n(b, (uint64_t)k->head, __ATOMIC_RELAXED);
    k->head = id;
    k->nfree++;
    if (c < ix->pool_low)
        ix->pool_low = c;
    __atomic_fetch_sub(&ix->overflow_used, 1, __ATOMIC_RELAXED);
    if (k->nfree == INDEX_CHUNK_BUCKETS && c + 1 >= ix->nchunks - 1)
        pool_trim(ix);
    pthread_mutex_unlock(&ix->pool_lock);
}

/* Chain a new overflow bucket after `last`, whose slots are all full: its
 * last slot's entry moves to the new bucket's first slot, and the slot
 * links to it. The new bucket's second slot, empty; NULL when out of
 * memory. */
static uint64_t *chain_grow(struct index *ix, uint64_t *last)
{
    uint32_t id = pool_get(ix);
    if (!id)
        return NULL;
    uint64_t *nb = index_overflow(ix, id);
    uint64_t *tail = index_slot(last, INDEX_SLOTS - 1);
    slot_store(index_slot(nb, 0), slot_load(tail));
    slot_store(tail, slot_link(id));
    return index_slot(nb, 1);
}

static uint64_t *chain_free_slot(struct index *ix, uint64_t *b)
{
    uint64_t *last = b;
    for (uint64_t *cur = b; cur; cur = index_next(ix, cur)) {
        for (int i = 0; i < INDEX_SLOTS; i++)
            if (slot_empty(index_slot(cur, i)))
                return index_slot(cur, i);
        last = cur;
    }
    return chain_grow(ix, last);
}

uint64_t *index_free_slot(struct index *ix, uint64_t *b)
{
    uint64_t *slot = chain_free_slot(ix, b);
    if (slot)
        __atomic_fetch_add(&ix->items, 1, __ATOMIC_RELAXED);
    return slot;
}

uint64_t *index_lock_other_of(struct index *ix, uint64_t h, uint64_t *from)
{
    struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    uint64_t i = index_shape_bucket(shape, h), j = index_shape_bucket(shape, index_hash2(h));
    uint64_t *bi = t->b + (i << 3), *bj = t->b + (j << 3);
    /* from is locked: no split moved it meanwhile, so it is one of the two
     * unless the shape read is older than the entry's place */
    if (bi != from && bj != from)
        return NULL;
    uint64_t *ob = bi == from ? bj : bi;
    if (ob == from)
        return from;
    /* address order, as index_lock_key; a lower one only with a trylock */
    if (__atomic_fetch_or(ob, INDEX_LOCK, __ATOMIC_ACQUIRE) & INDEX_LOCK) {
        if (ob < from)
            return NULL;
        index_lock(ob);
    }
    uint64_t now = __atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE);
    if (now != shape && (index_shape_bucket(now, h) != i ||
                         index_shape_bucket(now, index_hash2(h)) != j)) {
        index_unlock(ob);
        return NULL;
    }
    return ob;
}

void index_walk_begin(struct index *ix)
{
    __atomic_fetch_add(&ix->walks, 1, __ATOMIC_SEQ_CST);
}

void index_walk_end(struct index *ix)
{
    __atomic_fetch_sub(&ix->walks, 1, __ATOMIC_SEQ_CST);
}

/* Give back the overflow buckets of b's chain that hold nothing. */
static void chain_drop_empty(struct index *ix, uint64_t *b)
{
    uint64_t *prev = b;
    uint64_t *cur = index_next(ix, b);
    while (cur) {
        bool empty = true;
        for (int i = 0; i < INDEX_SLOTS && empty; i++)
            empty = !slot_load(index_slot(cur, i));
        uint32_t id = chain_next(prev);
        uint64_t *next = index_next(ix, cur);
        if (empty) {
            chain_set_next(prev, chain_next(cur));
            pool_put(ix, id);
        } else {
            prev = cur;
        }
        cur = next;
    }
}

void index_clear_slot(struct index *ix, uint64_t *b, uint64_t *slot)
{
    slot_store(slot, 0);
    __atomic_fetch_sub(&ix->items, 1, __ATOMIC_RELAXED);
    chain_drop_empty(ix, b);
}

/* Pack b's chain after a split took some of its entries: its entries
 * from the front, in as few buckets as hold them (the last one's last slot
 * an entry, not a link), the overflow buckets left over given back. A
 * chain too long to gather only gives back its empty buckets. */
static void chain_pack(struct index *ix, uint64_t *b)
{
    uint64_t keep[INDEX_PACK_MAX];
    unsigned n = 0;
    for (uint64_t *cur = b; cur; cur = index_next(ix, cur))
        for (int i = 0; i < INDEX_SLOTS; i++) {
            uint64_t sl = slot_load(index_slot(cur, i));
            if (!sl)
                continue;
            if (n == INDEX_PACK_MAX) {
                chain_drop_empty(ix, b);
                return;
            }
            keep[n++] = sl;
        }
    unsigned k = 0;
    for (uint64_t *cur = b; cur; cur = index_next(ix, cur)) {
        /* the chain held them all with a link in each bucket but its
         * last: so does the front of it */
        if (n - k > INDEX_SLOTS) {
            for (int i = 0; i < INDEX_SLOTS - 1; i++)
                slot_store(index_slot(cur, i), keep[k++]);
            continue;
        }
        uint32_t rest = chain_next(cur);
        for (int i = 0; i < INDEX_SLOTS; i++)
            slot_store(index_slot(cur, i), k < n ? keep[k++] : 0);
        while (rest) {
            uint32_t id = rest;
            rest = chain_next(index_overflow(ix, id));
            pool_put(ix, id);
        }
        return;
    }
}

/* Split bucket s of level l into itself and bucket 2^l + s, both locked:
 * the slots whose hash has bit l set move. */
static void index_split_move(struct index *ix, uint64_t *src, uint64_t *dst, unsigned l)
{
    bool moved = false;
    for (uint64_t *cur = src; cur; cur = index_next(ix, cur)) {
        for (int k = 0; k < INDEX_SLOTS; k++) {
            uint64_t *w = index_slot(cur, k), sl = slot_load(w);
            if (!sl)
                continue;
            if (slot_is_flash(sl) && l >= ix->place_base &&
                l < ix->place_base + INDEX_PLACE_BITS) {
                /* a flash item's key is not in RAM: its place says its
                 * bucket's hash bit l, which is where a rehash puts it */
                if (!((slot_place(sl) >> (l - ix->place_base)) & 1))
                    continue;
            } else if (ix->forget && ix->forget(ix->rehash_arg, sl)) {
                /* a slot whose hash cannot be had is dropped */
                slot_store(w, 0);
                __atomic_fetch_sub(&ix->items, 1, __ATOMIC_RELAXED);
                moved = true;
                continue;
            } else {
                /* it stays where either of its buckets is still this one */
                uint64_t h = ix->rehash(ix->rehash_arg, sl), h2 = index_hash2(h);
                uint64_t si = (uint64_t)(src - ix->cur->b) >> 3, mask = (2ull << l) - 1;
                if ((h & mask) == si || (h2 & mask) == si)
                    continue;
            }
            uint64_t *to = chain_free_slot(ix, dst);
            if (!to) {
                log_error("store: out of memory growing the index");
                abort();
            }
            slot_store(to, sl);
            slot_store(w, 0);
            moved = true;
        }
    }
    if (moved)
        chain_pack(ix, src);
}

/* Once the table passes INDEX_AHEAD_MIN, a thread of the index's own
 * collapses the small pages it wrote into huge ones (the writable part,
 * whole huge pages), and faults in each next huge page INDEX_AHEAD_LEAD
 * ahead of the splits (grow lock held). */
static void index_ahead(struct index *ix, struct index_table *t, size_t used)
{
    if (used < INDEX_AHEAD_MIN)
        return;
    if (!ix->head_huge) {
        ix->head_huge = true;
        hugemem_ahead_ask(&ix->next, t->b, ix->ahead_end);
        return;
    }
    if (used + INDEX_AHEAD_LEAD <= ix->ahead_end || !table_reach(t, ix->ahead_end + HUGEMEM_PAGE))
        return;
    hugemem_ahead_ask(&ix->next, (char *)t->b + ix->ahead_end, HUGEMEM_PAGE);
    ix->ahead_end += HUGEMEM_PAGE;
}

/* Split the next bucket if the items are owed one; false if not (or the
 * reservation is full). Grow lock held: the only writer of the shape. */
static bool index_split(struct index *ix)
{
    struct index_table *t = ix->cur;
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_RELAXED);
    uint64_t n = index_shape_buckets(shape);
    if (index_live(ix) <= index_split_at(shape))
        return false;
    unsigned l = index_shape_level(shape);
    uint64_t s = index_shape_split(shape);
    if (l >= INDEX_MAX_POWER || !table_reach(t, (n + 1) * 64))
        return false;
    uint64_t *src = t->b + (s << 3), *dst = t->b + (n << 3);
    /* dst is past every hash's bucket until the shape moves: nobody else
     * locks it, so taking it after src cannot deadlock */
    index_lock(src);
    index_lock(dst);
    index_split_move(ix, src, dst, l);
    uint64_t next = s + 1 == (1ull << l) ? index_shape_make(l + 1, 0) : shape + 1;
    __atomic_store_n(&ix->shape, next, __ATOMIC_RELEASE);
    index_unlock(dst);
    index_unlock(src);
    index_ahead(ix, t, (size_t)(n + 1) * 64);
    return true;
}

static void index_note_most(struct index *ix, uint64_t items)
{
    uint64_t most = __atomic_load_n(&ix->most, __ATOMIC_RELAXED);
    while (items > most && !__atomic_compare_exchange_n(&ix->most, &most, items, true,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void index_maintain(struct index *ix)
{
    uint64_t items = __atomic_load_n(&ix->items, __ATOMIC_RELAXED);
    index_note_most(ix, items);
    uint64_t shape = __atomic_load_n(&ix->shape, __ATOMIC_RELAXED);
    if (index_live(ix) <= index_split_at(shape))
        return;
    /* one splitter at a time; the others go on with their requests */
    if (pthread_mutex_trylock(&ix->grow_lock) != 0)
        return;
    for (unsigned k = 0; k < INDEX_SPLIT_STEP && index_split(ix); k++)
        ;
    pthread_mutex_unlock(&ix->grow_lock);
}

void index_finish_growth(struct index *ix)
{
    pthread_mutex_lock(&ix->grow_lock);
    while (index_split(ix))
        ;
    pthread_mutex_unlock(&ix->grow_lock);
}

uint64_t *index_lock_nth(struct index *ix, uint64_t i, uint64_t *nbuckets)
{
    struct index_table *t = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    *nbuckets = index_shape_buckets(__atomic_load_n(&ix->shape, __ATOMIC_ACQUIRE));
    if (i >= *nbuckets)
        return NULL;
    uint64_t *b = t->b + (i << 3);
    index_lock(b);
    return b;
}

struct index_table *index_swap_table(struct index *ix, unsigned level)
{
    struct index_table *c = ix->cur;
    if (ix->items)
        return NULL;
    struct index_table *t = table_new(index_power_of(level));
    if (!t)
        return NULL;
    index_set_table(ix, t);
    return c;
}

void index_table_release(struct index_table *t)
{
    table_free(t);
}

void index_wipe(struct index *ix)
{
    struct index_table *c = ix->cur;
    /* Pages given back read as zeros again, without writing them. */
    if (madvise(c->b, c->writable, MADV_DONTNEED) != 0)
        memset(c->b, 0, c->writable);
}

/* A restore writes the whole table at once (restore_index.c). Faulting
 * in fresh huge pages is slow on a VM whose host hands out memory the
 * guest gave back (free page reporting): the host backs each 4 KiB on
 * first touch while the guest zeroes 2 MiB. Small pages come from memory
 * the guest still holds. For a 512 MiB table on the 2-core build VM:
 * 0.06-2.2 s of CPU on huge pages, 0.3-0.5 s on small ones; 4 GiB of
 * 100-byte values restored in a median 4.21 s of CPU against 5.37 s
 * (five interleaved runs each, load 17-20). So the load runs on small
 * pages, mapped in one call per restore thread (index_load_map: each its
 * share, so that the serial part of a restore does not grow with the
 * table), and the table asks for huge pages afterwards: khugepaged merges
 * them in the background, and until it has a lookup may take a TLB miss.
 *
 * The load files items by 2^bits buckets (store_index.h): for a table of
 * 2^L + s buckets, s > 0, that is 2^(L+1), the area of the table once
 * bucket 2^L - 1 is split too, which holds at most 7.4 items a bucket on
 * average where the unsplit buckets hold up to 14.8. The area past the
 * table's buckets holds filed words only while the load runs; the load
 * leaves it zero and index_load_done gives it back. */
int index_load_begin(struct index *ix)
{
    struct index_table *c = ix->cur;
    uint64_t shape = ix->shape;
    unsigned bits = index_shape_level(shape) + (index_shape_split(shape) != 0);
    size_t len = (size_t)64 << bits;
    if (!table_reach(c, len))
        return -1;
    ix->load_bytes = len;
#ifdef MADV_NOHUGEPAGE
    if (len >= INDEX_HUGE_MIN)
        (void)madvise(c->b, len, MADV_NOHUGEPAGE);
#endif
    return (int)bits;
}

void index_load_map(struct index *ix, uint32_t i, uint32_t n)
{
#ifdef MADV_POPULATE_WRITE
    struct index_table *c = ix->cur;
    size_t len = ix->load_bytes;
    if (len < INDEX_HUGE_MIN || n == 0 || i >= n)
        return;
    long ps = sysconf(_SC_PAGESIZE);
    size_t page = ps > 0 ? (size_t)ps : 4096, pages = len / page; /* whole pages each */
    size_t from = pages * i / n * page, to = pages * (i + 1) / n * page;
    (void)madvise((char *)c->b + from, to - from, MADV_POPULATE_WRITE);
#else
    (void)ix;
    (void)i;
    (void)n;
#endif
}

void index_load_done(struct index *ix)
{
    struct index_table *c = ix->cur;
    size_t load = ix->load_bytes;
    /* The pages past the buckets in use (zero: the load's filed words
     * there were overwritten), and the address space past the huge page
     * that ends them, as the table had it before the load. */
    size_t used = round_up(index_shape_buckets(ix->shape) * 64, 4096);
    size_t keep = round_up(used, HUGEMEM_PAGE);
    if (load && c->writable > used) {
        (void)madvise((char *)c->b + used, c->writable - used, MADV_DONTNEED);
        if (c->writable > keep &&
            mprotect((char *)c->b + keep, c->writable - keep, PROT_NONE) == 0)
            c->writable = keep;
    }
    ix->load_bytes = 0;
#ifdef MADV_HUGEPAGE
    /* as before the load (index_load_begin asked for small pages) */
    if (ix->head_huge || load >= INDEX_HUGE_MIN)
        (void)madvise(c->b, c->writable, MADV_HUGEPAGE);
#endif
}

unsigned index_bucket_bits(struct index *ix)
{
    return index_shape_level(ix->shape);
}

void index_keep_level(struct index *ix, unsigned level)
{
    if (level > ix->base_level)
        ix->base_level = level;
}

uint64_t *index_bucket_of(struct index *ix, uint64_t h)
{
    return ix->cur->b + (index_shape_bucket(ix->shape, h) << 3);
}

uint64_t *index_chain_grow(struct index *ix, uint64_t *last)
{
    return chain_grow(ix, last);
}

void index_count(struct index *ix, uint64_t n)
{
    index_note_most(ix, __atomic_add_fetch(&ix->items, n, __ATOMIC_RELAXED));
}
