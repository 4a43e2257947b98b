/* The hash index: 2^power primary buckets of one cache line each, plus
 * overflow buckets chained from a pool when a bucket's seven slots are full.
 *
 * Every access to a chain happens under its primary bucket's lock, a
 * spinlock in bit 0 of the bucket's first word: a lookup touches one line in
 * the common case and never a global lock. Overflow buckets live in chunks
 * that are never moved or freed before index_release, so a chained id stays
 * valid; the pool mutex is taken only to hand out or take back a bucket.
 */
#include "store/store_int.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define INDEX_CHUNK_BUCKETS 4096u
#define INDEX_MAX_CHUNKS 65536u

int index_init(struct index *ix, unsigned power)
{
    memset(ix, 0, sizeof(*ix));
    size_t nbuckets = (size_t)1 << power;
    ix->table = aligned_alloc(64, nbuckets * 64);
    if (!ix->table)
        return -1;
    memset(ix->table, 0, nbuckets * 64);
    ix->chunks = calloc(INDEX_MAX_CHUNKS, sizeof(*ix->chunks));
    if (!ix->chunks) {
        free(ix->table);
        return -1;
    }
    ix->mask = nbuckets - 1;
    ix->power = power;
    ix->pool_next = 1;
    pthread_mutex_init(&ix->pool_lock, NULL);
    return 0;
}

void index_release(struct index *ix)
{
    for (uint32_t i = 0; i < ix->nchunks; i++)
        free(ix->chunks[i]);
    free(ix->chunks);
    free(ix->table);
    pthread_mutex_destroy(&ix->pool_lock);
    memset(ix, 0, sizeof(*ix));
}

size_t index_bytes(struct index *ix)
{
    pthread_mutex_lock(&ix->pool_lock);
    size_t n = ((size_t)ix->mask + 1) * 64 + (size_t)ix->nchunks * INDEX_CHUNK_BUCKETS * 64 +
               INDEX_MAX_CHUNKS * sizeof(*ix->chunks);
    pthread_mutex_unlock(&ix->pool_lock);
    return n;
}

void index_lock(uint64_t *b)
{
    unsigned spins = 0;
    while (__atomic_fetch_or(b, 1, __ATOMIC_ACQUIRE) & 1) {
        while (__atomic_load_n(b, __ATOMIC_RELAXED) & 1) {
            /* The holder may be descheduled (more workers than cores): yield
             * rather than burn its time slice. */
            if (++spins > 64) {
                sched_yield();
                spins = 0;
            } else {
                __builtin_ia32_pause();
            }
        }
    }
}

void index_unlock(uint64_t *b)
{
    __atomic_fetch_and(b, ~1ull, __ATOMIC_RELEASE);
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
 * which is already set, so a plain store keeping bit 0 loses nothing. */
static void hdr_set_next(uint64_t *b, uint32_t id)
{
    uint64_t lockbit = __atomic_load_n(b, __ATOMIC_RELAXED) & 1;
    __atomic_store_n(b, ((uint64_t)id << 32) | lockbit, __ATOMIC_RELAXED);
}

uint64_t *index_next(struct index *ix, uint64_t *b)
{
    uint32_t id = hdr_next(b);
    return id ? index_overflow(ix, id) : NULL;
}

static uint32_t pool_get(struct index *ix)
{
    uint32_t id = 0;
    pthread_mutex_lock(&ix->pool_lock);
    if (ix->pool_free) {
        id = ix->pool_free;
        uint64_t *b = index_overflow(ix, id);
        ix->pool_free = hdr_next(b);
        memset(b, 0, 64);
    } else {
        uint32_t i = ix->pool_next - 1;
        if (i / INDEX_CHUNK_BUCKETS >= ix->nchunks) {
            if (ix->nchunks == INDEX_MAX_CHUNKS)
                goto out;
            uint64_t *c = aligned_alloc(64, (size_t)INDEX_CHUNK_BUCKETS * 64);
            if (!c)
                goto out;
            memset(c, 0, (size_t)INDEX_CHUNK_BUCKETS * 64);
            ix->chunks[ix->nchunks++] = c;
        }
        id = ix->pool_next++;
    }
    __atomic_fetch_add(&ix->overflow_used, 1, __ATOMIC_RELAXED);
out:
    pthread_mutex_unlock(&ix->pool_lock);
    return id;
}

static void pool_put(struct index *ix, uint32_t id)
{
    pthread_mutex_lock(&ix->pool_lock);
    uint64_t *b = index_overflow(ix, id);
    __atomic_store_n(b, (uint64_t)ix->pool_free << 32, __ATOMIC_RELAXED);
    ix->pool_free = id;
    __atomic_fetch_sub(&ix->overflow_used, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ix->pool_lock);
}

uint64_t *index_free_slot(struct index *ix, uint64_t *b)
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

void index_clear_slot(struct index *ix, uint64_t *b, uint64_t *slot)
{
    *slot = 0;
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
