/* SPDX-License-Identifier: BSD-3-Clause */
/* The hash index: 2^power primary buckets of one cache line each, plus
 * overflow buckets chained from a pool when a bucket's seven slots are full.
 *
 * Every access to a chain happens under its primary bucket's lock, a
 * spinlock in bit 0 of the bucket's first word: a lookup touches one line in
 * the common case and never a global lock. Overflow buckets live in chunks
 * that are never moved or freed before index_release, so a chained id stays
 * valid; the pool mutex is taken only to hand out or take back a bucket.
 *
 * Growth: when the table holds more than INDEX_GROW_LOAD items per bucket a
 * table twice the size becomes current, and inserting threads move a few old
 * buckets each (index_maintain) until all are moved. A moved old bucket is
 * marked MOVED under its lock; whoever locks a MOVED bucket looks again
 * (index_lock_hash), so every hash has exactly one live bucket at any time.
 * A thread may still be about to lock a bucket of an old table when the
 * growth ends, so old tables stay mapped until index_release, but their
 * memory is given back (table_tombstone).
 */
#define _GNU_SOURCE /* memfd_create, MADV_POPULATE_WRITE */
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

#define INDEX_CHUNK_BUCKETS 1024u
#define INDEX_CHUNK_BYTES ((size_t)INDEX_CHUNK_BUCKETS * 64)
#define INDEX_MAX_CHUNKS 262144u
#define HDR_LOCK 1ull
#define HDR_MOVED 2ull
#define HDR_BITS (HDR_LOCK | HDR_MOVED)
/* Old buckets an insert moves while a growth is in progress. */
#define INDEX_MIGRATE_STEP 4
#define INDEX_MAX_POWER 32
/* Tables from this size on are asked to be on huge pages. */
#define INDEX_HUGE_MIN ((size_t)4 << 20)
#define INDEX_MIN_POWER 1

/* Per-table migration counters live beside the table they count, so a
 * thread still working on a finished growth cannot steal a later one's. */
struct index_table_mig {
    struct index_table t;
    uint64_t next; /* next bucket to move */
    uint64_t done; /* buckets moved */
};

/* A table of 2^power buckets, in `made` (zeroed, that size) when given. */
static struct index_table *table_new_in(unsigned power, void *made)
{
    struct index_table_mig *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    size_t nbuckets = (size_t)1 << power;
    void *p = made;
    if (!p) {
        p = mmap(NULL, nbuckets * 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                 0);
        if (p == MAP_FAILED) {
            free(m);
            return NULL;
        }
#ifdef MADV_HUGEPAGE
        /* Lookups land on random buckets: a large table on huge pages
         * misses the TLB far less. A hint; without it the table works the
         * same. */
        if (nbuckets * 64 >= INDEX_HUGE_MIN)
            madvise(p, nbuckets * 64, MADV_HUGEPAGE);
#endif
    }
    m->t.b = p;
    m->t.mask = nbuckets - 1;
    m->t.power = power;
    return &m->t;
}

static struct index_table *table_new(unsigned power)
{
    return table_new_in(power, NULL);
}

static void table_free(struct index_table *t)
{
    munmap(t->b, (t->mask + 1) * 64);
    free((struct index_table_mig *)t);
}

/* A retired table's memory is given back by mapping, over it, copies of a
 * small file whose every bucket reads MOVED: a thread that loaded the old
 * table pointer just before the growth finished still locks a bucket, sees
 * MOVED and looks again, while the table costs only the pages such a thread
 * writes to (copy on write). */
#define INDEX_TOMB_BYTES (2u << 20)

static int index_tomb_fd(struct index *ix)
{
    if (ix->tomb_fd >= 0)
        return ix->tomb_fd;
#ifdef MFD_CLOEXEC
    int fd = memfd_create("nodelay-index-moved", MFD_CLOEXEC);
#else
    int fd = -1; /* no memfd: old tables keep their memory */
#endif
    if (fd < 0)
        return -1;
    uint64_t *page = calloc(1, 4096);
    bool ok = page && ftruncate(fd, INDEX_TOMB_BYTES) == 0;
    for (size_t i = 0; ok && i < 4096 / 8; i += 8)
        page[i] = HDR_MOVED;
    for (size_t off = 0; ok && off < INDEX_TOMB_BYTES; off += 4096)
        ok = pwrite(fd, page, 4096, (off_t)off) == 4096;
    free(page);
    if (!ok) {
        close(fd);
        return -1;
    }
    ix->tomb_fd = fd;
    return fd;
}

static void table_tombstone(struct index *ix, struct index_table *t)
{
#if defined(__SANITIZE_THREAD__)
    /* TSan sees the remap as a plain write racing with a straggler's atomic
     * lock; both pages read MOVED, so it is benign, but TSan builds keep
     * the memory instead of teaching it that. */
    (void)ix;
    (void)t;
    return;
#endif
    int fd = index_tomb_fd(ix);
    size_t len = (t->mask + 1) * 64;
    if (fd < 0)
        return; /* keep the memory: still correct */
    for (size_t off = 0; off < len; off += INDEX_TOMB_BYTES) {
        size_t n = len - off < INDEX_TOMB_BYTES ? len - off : INDEX_TOMB_BYTES;
        mmap((char *)t->b + off, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0);
    }
    t->tomb = true;
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

int index_init(struct index *ix, unsigned level, index_rehash_fn rehash, void *arg)
{
    memset(ix, 0, sizeof(*ix));
    unsigned power = index_power_of(level);
    struct index_table *t = table_new(power);
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
    __atomic_store_n(&ix->cur, t, __ATOMIC_RELEASE);
    ix->rehash = rehash;
    ix->rehash_arg = arg;
    ix->tomb_fd = -1;
    hugemem_ahead_init(&ix->next);
    pthread_mutex_init(&ix->pool_lock, NULL);
    pthread_mutex_init(&ix->grow_lock, NULL);
    return 0;
}

void index_release(struct index *ix)
{
    for (uint32_t i = 0; i < ix->nchunks; i++)
        munmap(ix->chunks[i], INDEX_CHUNK_BYTES);
    free(ix->chunks);
    free(ix->chunk_free);
    struct index_table *cur = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    struct index_table *old = __atomic_load_n(&ix->old, __ATOMIC_ACQUIRE);
    if (old && old != cur)
        table_free(old);
    table_free(cur);
    while (ix->retired) {
        struct index_table *t = ix->retired;
        ix->retired = t->retired_next;
        table_free(t);
    }
    if (ix->tomb_fd >= 0)
        close(ix->tomb_fd);
    hugemem_ahead_release(&ix->next);
    pthread_mutex_destroy(&ix->pool_lock);
    pthread_mutex_destroy(&ix->grow_lock);
    memset(ix, 0, sizeof(*ix));
}

size_t index_bytes(struct index *ix)
{
    pthread_mutex_lock(&ix->grow_lock);
    size_t n = 0;
    struct index_table *cur = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    struct index_table *old = __atomic_load_n(&ix->old, __ATOMIC_ACQUIRE);
    n += (cur->mask + 1) * 64;
    if (old && old != cur)
        n += (old->mask + 1) * 64;
    for (struct index_table *t = ix->retired; t; t = t->retired_next)
        n += t->tomb ? 0 : (t->mask + 1) * 64;
    pthread_mutex_unlock(&ix->grow_lock);
    pthread_mutex_lock(&ix->pool_lock);
    n += (size_t)ix->nchunks *
         (INDEX_CHUNK_BYTES + sizeof(*ix->chunks) + sizeof(*ix->chunk_free));
    pthread_mutex_unlock(&ix->pool_lock);
    return n + hugemem_ahead_bytes(&ix->next);
}

unsigned index_level(struct index *ix)
{
    return __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE)->power + INDEX_LEVEL_SHIFT;
}

bool index_expanding(struct index *ix)
{
    return __atomic_load_n(&ix->old, __ATOMIC_ACQUIRE) != NULL;
}

void index_lock(uint64_t *b)
{
    unsigned spins = 0;
    while (__atomic_fetch_or(b, HDR_LOCK, __ATOMIC_ACQUIRE) & HDR_LOCK) {
        while (__atomic_load_n(b, __ATOMIC_RELAXED) & HDR_LOCK) {
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

void index_unlock(uint64_t *b)
{
    __atomic_fetch_and(b, ~HDR_LOCK, __ATOMIC_RELEASE);
}

static bool hdr_moved(const uint64_t *b)
{
    return __atomic_load_n(b, __ATOMIC_RELAXED) & HDR_MOVED;
}

uint64_t *index_lock_hash(struct index *ix, uint64_t h)
{
    for (;;) {
        /* cur before old: a growth publishes old before cur. */
        struct index_table *c = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
        struct index_table *o = __atomic_load_n(&ix->old, __ATOMIC_ACQUIRE);
        uint64_t *b;
        if (o && o != c) {
            b = o->b + ((h & o->mask) << 3);
            index_lock(b);
            if (!hdr_moved(b))
                return b;
            index_unlock(b);
        }
        b = c->b + ((h & c->mask) << 3);
        index_lock(b);
        if (!hdr_moved(b))
            return b;
        index_unlock(b);
    }
}

const uint64_t *index_prefetch(struct index *ix, uint64_t h)
{
    struct index_table *c = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t *b = c->b + ((h & c->mask) << 3);
    __builtin_prefetch(b, 1);
    return b;
}

static uint64_t *index_overflow(struct index *ix, uint32_t id)
{
    uint32_t i = id - 1;
    return ix->chunks[i / INDEX_CHUNK_BUCKETS] + (size_t)(i % INDEX_CHUNK_BUCKETS) * 8;
}

static uint32_t hdr_next(const uint64_t *b)
{
    return (uint32_t)(__atomic_load_n(b, __ATOMIC_RELAXED) >> 32);
}

/* Only the lock holder changes the next field; spinners only OR in bit 0,
 * which is already set, so a plain store keeping the low bits loses nothing. */
static void hdr_set_next(uint64_t *b, uint32_t id)
{
    uint64_t bits = __atomic_load_n(b, __ATOMIC_RELAXED) & HDR_BITS;
    __atomic_store_n(b, ((uint64_t)id << 32) | bits, __ATOMIC_RELAXED);
}

uint64_t *index_next(struct index *ix, uint64_t *b)
{
    uint32_t id = hdr_next(b);
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
        ix->chunks[c] = NULL;
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
        ix->chunks[c] = m;
        ix->chunk_free[c] = (struct index_chunk){.nfree = INDEX_CHUNK_BUCKETS};
        ix->nchunks++;
    }
    ix->pool_low = c;
    struct index_chunk *k = &ix->chunk_free[c];
    if (k->head) {
        id = k->head;
        uint64_t *b = index_overflow(ix, id);
        k->head = hdr_next(b);
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
    __atomic_store_n(b, (uint64_t)k->head << 32, __ATOMIC_RELAXED);
    k->head = id;
    k->nfree++;
    if (c < ix->pool_low)
        ix->pool_low = c;
    __atomic_fetch_sub(&ix->overflow_used, 1, __ATOMIC_RELAXED);
    if (k->nfree == INDEX_CHUNK_BUCKETS && c + 1 >= ix->nchunks - 1)
        pool_trim(ix);
    pthread_mutex_unlock(&ix->pool_lock);
}

static uint64_t *chain_free_slot(struct index *ix, uint64_t *b)
{
    uint64_t *last = b;
    for (uint64_t *cur = b; cur; cur = index_next(ix, cur)) {
        for (int i = 1; i <= INDEX_SLOTS; i++)
            if (cur[i] == 0)
                return &cur[i];
        last = cur;
    }
    uint32_t id = pool_get(ix);
    if (!id)
        return NULL;
    hdr_set_next(last, id);
    return &index_overflow(ix, id)[1];
}

uint64_t *index_free_slot(struct index *ix, uint64_t *b)
{
    uint64_t *slot = chain_free_slot(ix, b);
    if (slot)
        __atomic_fetch_add(&ix->items, 1, __ATOMIC_RELAXED);
    return slot;
}

void index_clear_slot(struct index *ix, uint64_t *b, uint64_t *slot)
{
    *slot = 0;
    __atomic_fetch_sub(&ix->items, 1, __ATOMIC_RELAXED);
    uint64_t *prev = b;
    uint64_t *cur = index_next(ix, b);
    while (cur) {
        bool empty = true;
        for (int i = 1; i <= INDEX_SLOTS && empty; i++)
            empty = cur[i] == 0;
        uint32_t id = hdr_next(prev);
        uint64_t *next = index_next(ix, cur);
        if (empty) {
            hdr_set_next(prev, hdr_next(cur));
            pool_put(ix, id);
        } else {
            prev = cur;
        }
        cur = next;
    }
}

/* Move old bucket i into its two halves in the new table. Nobody can reach
 * those halves before the old bucket is MOVED, so taking their locks after
 * the old one's cannot deadlock. */
static void index_migrate_bucket(struct index *ix, struct index_table *o, struct index_table *c,
                                 uint64_t i)
{
    uint64_t *ob = o->b + (i << 3);
    index_lock(ob);
    if (hdr_moved(ob)) {
        index_unlock(ob);
        return;
    }
    uint64_t *nb[2] = {c->b + (i << 3), c->b + ((i + o->mask + 1) << 3)};
    index_lock(nb[0]);
    index_lock(nb[1]);
    for (uint64_t *cur = ob; cur; cur = index_next(ix, cur)) {
        for (int k = 1; k <= INDEX_SLOTS; k++) {
            uint64_t sl = cur[k];
            if (!sl)
                continue;
            if (ix->forget && ix->forget(ix->rehash_arg, sl)) {
                cur[k] = 0;
                __atomic_fetch_sub(&ix->items, 1, __ATOMIC_RELAXED);
                continue;
            }
            uint64_t h = ix->rehash(ix->rehash_arg, sl);
            uint64_t *dst = chain_free_slot(ix, nb[((h & c->mask) >> o->power) & 1]);
            if (!dst) {
                log_error("store: out of memory growing the index");
                abort();
            }
            *dst = sl;
            cur[k] = 0;
        }
    }
    /* Give the old chain's overflow buckets back. */
    for (uint32_t id = hdr_next(ob); id;) {
        uint32_t next = hdr_next(index_overflow(ix, id));
        pool_put(ix, id);
        id = next;
    }
    __atomic_store_n(ob, HDR_LOCK | HDR_MOVED, __ATOMIC_RELAXED);
    index_unlock(nb[1]);
    index_unlock(nb[0]);
    index_unlock(ob);
}

/* Move up to `max` buckets of the growth in progress; false when none left. */
static bool index_migrate_some(struct index *ix, unsigned max)
{
    struct index_table *o = __atomic_load_n(&ix->old, __ATOMIC_ACQUIRE);
    struct index_table *c = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    if (!o || o == c)
        return false;
    struct index_table_mig *m = (struct index_table_mig *)o;
    uint64_t n = o->mask + 1;
    for (unsigned k = 0; k < max; k++) {
        uint64_t i = __atomic_fetch_add(&m->next, 1, __ATOMIC_RELAXED);
        if (i >= n)
            return false;
        index_migrate_bucket(ix, o, c, i);
        if (__atomic_add_fetch(&m->done, 1, __ATOMIC_ACQ_REL) == n) {
            pthread_mutex_lock(&ix->grow_lock);
            __atomic_store_n(&ix->old, NULL, __ATOMIC_RELEASE);
            o->retired_next = ix->retired;
            ix->retired = o;
            table_tombstone(ix, o);
            pthread_mutex_unlock(&ix->grow_lock);
            return false;
        }
    }
    return true;
}

void index_maintain(struct index *ix)
{
    if (__atomic_load_n(&ix->old, __ATOMIC_ACQUIRE)) {
        index_migrate_some(ix, INDEX_MIGRATE_STEP);
        return;
    }
    struct index_table *c = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
    uint64_t items = __atomic_load_n(&ix->items, __ATOMIC_RELAXED);
    uint64_t grow_at = (c->mask + 1) * INDEX_GROW_LOAD;
    size_t next_len = (c->mask + 1) * 128;
    if (c->power >= INDEX_MAX_POWER)
        return;
    if (items <= grow_at) {
        /* Three quarters of the way there: the next table is made now,
         * on huge pages where it fills one, by a thread of its own. */
        if (items > grow_at / 4 * 3 && next_len >= HUGEMEM_PAGE &&
            __atomic_load_n(&ix->next_power, __ATOMIC_RELAXED) != c->power + 1) {
            __atomic_store_n(&ix->next_power, c->power + 1, __ATOMIC_RELAXED);
            hugemem_ahead_ask(&ix->next, next_len);
        }
        return;
    }
    pthread_mutex_lock(&ix->grow_lock);
    if (__atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE) == c &&
        !__atomic_load_n(&ix->old, __ATOMIC_ACQUIRE)) {
        /* Made ahead if it is ready; else mapped here, on small pages
         * below INDEX_HUGE_MIN. */
        void *made = next_len >= HUGEMEM_PAGE ? hugemem_ahead_take(&ix->next, next_len) : NULL;
        struct index_table *t = table_new_in(c->power + 1, made);
        if (!t && made)
            munmap(made, next_len);
        if (t) {
            /* old first, then cur: see index_lock_hash. */
            __atomic_store_n(&ix->old, c, __ATOMIC_RELEASE);
            __atomic_store_n(&ix->cur, t, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&ix->grow_lock);
}

void index_finish_growth(struct index *ix)
{
    while (__atomic_load_n(&ix->old, __ATOMIC_ACQUIRE)) {
        if (!index_migrate_some(ix, 1024))
            sched_yield(); /* others are moving the last buckets */
    }
}

uint64_t *index_lock_nth(struct index *ix, uint64_t i, uint64_t *nbuckets)
{
    for (;;) {
        index_finish_growth(ix);
        struct index_table *c = __atomic_load_n(&ix->cur, __ATOMIC_ACQUIRE);
        *nbuckets = c->mask + 1;
        if (i > c->mask)
            return NULL;
        uint64_t *b = c->b + (i << 3);
        index_lock(b);
        if (!hdr_moved(b))
            return b;
        index_unlock(b);
    }
}

struct index_table *index_swap_table(struct index *ix, unsigned level)
{
    struct index_table *c = ix->cur;
    if (ix->old || ix->items)
        return NULL;
    struct index_table *t = table_new(index_power_of(level));
    if (!t)
        return NULL;
    __atomic_store_n(&ix->cur, t, __ATOMIC_RELEASE);
    return c;
}

void index_table_release(struct index_table *t)
{
    table_free(t);
}

void index_wipe(struct index *ix)
{
    struct index_table *c = ix->cur;
    size_t len = (c->mask + 1) * 64;
    /* Pages given back read as zeros again, without writing them. */
    if (madvise(c->b, len, MADV_DONTNEED) != 0)
        memset(c->b, 0, len);
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
 * table), and the table asks for huge pages afterwards: khugepaged merges them in the background, and until it has
 * a lookup may take a TLB miss. */
void index_load_begin(struct index *ix)
{
#ifdef MADV_NOHUGEPAGE
    struct index_table *c = ix->cur;
    size_t len = (c->mask + 1) * 64;
    if (len >= INDEX_HUGE_MIN)
        (void)madvise(c->b, len, MADV_NOHUGEPAGE);
#else
    (void)ix;
#endif
}

void index_load_map(struct index *ix, uint32_t i, uint32_t n)
{
#ifdef MADV_POPULATE_WRITE
    struct index_table *c = ix->cur;
    size_t len = (c->mask + 1) * 64;
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
#ifdef MADV_HUGEPAGE
    struct index_table *c = ix->cur;
    size_t len = (c->mask + 1) * 64;
    if (len >= INDEX_HUGE_MIN)
        (void)madvise(c->b, len, MADV_HUGEPAGE);
#else
    (void)ix;
#endif
}

unsigned index_bucket_bits(struct index *ix)
{
    return ix->cur->power;
}

uint64_t *index_bucket_of(struct index *ix, uint64_t h)
{
    struct index_table *c = ix->cur;
    return c->b + ((h & c->mask) << 3);
}

uint64_t *index_chain_grow(struct index *ix, uint64_t *last)
{
    uint32_t id = pool_get(ix);
    if (!id)
        return NULL;
    hdr_set_next(last, id);
    return index_overflow(ix, id);
}

void index_count(struct index *ix, uint64_t n)
{
    __atomic_fetch_add(&ix->items, n, __ATOMIC_RELAXED);
}
