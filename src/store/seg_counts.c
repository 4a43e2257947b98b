/* SPDX-License-Identifier: BSD-3-Clause */
/* What a segment counts of the items it holds (kept up by writes, unlinks
 * and eviction under the items' bucket locks), and the sums over all
 * segments that stats read. */
#include "store/seg_counts.h"
#include "store/store_seg.h"

static void atomic_max32(uint32_t *p, uint32_t v)
{
    uint32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
        ;
}

static void atomic_max64(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
        ;
}

void seg_note_exptime(struct seg *seg, rel_time_t exptime)
{
    atomic_max32(&seg->max_exptime, exptime == REL_TIME_NEVER ? SEG_EXP_NEVER : exptime);
    if (exptime != REL_TIME_NEVER) {
        uint32_t cur = __atomic_load_n(&seg->min_exptime, __ATOMIC_RELAXED);
        while (exptime < cur && !__atomic_compare_exchange_n(&seg->min_exptime, &cur, exptime,
                                                             true, __ATOMIC_RELAXED,
                                                             __ATOMIC_RELAXED))
            ;
    }
}

void seg_note_item(struct seg *seg, uint32_t size, rel_time_t exptime, uint64_t cas,
                   const struct store_cls_of *c)
{
    /* a plain load first: the bit is nearly always there already */
    uint64_t bit = (uint64_t)1 << c->cls;
    if (!(__atomic_load_n(&seg->cls_held, __ATOMIC_RELAXED) & bit))
        __atomic_fetch_or(&seg->cls_held, bit, __ATOMIC_RELAXED);
    __atomic_fetch_add(&seg->live_items, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&seg->live_bytes, size, __ATOMIC_RELAXED);
    __atomic_fetch_add(&seg->cls_items[c->cls], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&seg->cls_bytes[c->cls], (int32_t)c->mc_size, __ATOMIC_RELAXED);
    seg_note_exptime(seg, exptime);
    atomic_max64(&seg->max_cas, cas);
    rel_time_t now = clock_now();
    if (__atomic_load_n(&seg->last_write, __ATOMIC_RELAXED) < now)
        __atomic_store_n(&seg->last_write, now, __ATOMIC_RELAXED);
}

#ifdef NODELAY_DEBUG
void (*seg_debug_none_live)(struct seg *seg);
#endif

void seg_note_gone(struct seg *seg, uint32_t size, const struct store_cls_of *c)
{
    __atomic_fetch_sub(&seg->live_bytes, size, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&seg->cls_items[c->cls], 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&seg->cls_bytes[c->cls], (int32_t)c->mc_size, __ATOMIC_RELAXED);
    /* Last, with release: seg_recycle, seeing none live, may reset the
     * segment at once (no lock between), and must see every count above
     * lowered already, and every pin taken before the unlink. */
    bool none = __atomic_sub_fetch(&seg->live_items, 1, __ATOMIC_RELEASE) == 0;
    /* An emptied sealed segment is room seg_open takes before it maps
     * fresh memory (seg_take_dead). */
    if (none && seg_get_state(seg) == SEG_SEALED)
        __atomic_fetch_add(&seg->pool->dead_sealed, 1, __ATOMIC_RELAXED);
#ifdef NODELAY_DEBUG
    if (none && seg_debug_none_live)
        seg_debug_none_live(seg);
#endif
}

void seg_class_counts(struct seg_pool *pool, struct store_class_stats *out, unsigned n, rel_time_t now)
{
    int64_t items[STORE_CLASSES] = {0}, bytes[STORE_CLASSES] = {0};
    int64_t lru_items[STORE_CLASSES][STORE_LRUS] = {{0}};
    pthread_mutex_lock(&pool->lock);
    for (uint32_t i = 0; i < pool->seg_cap; i++) {
        struct seg *g = seg_at(pool->seg_chunks, i);
        if (!g->data)
            continue;
        /* a free segment's bits are stale until it is reset: it holds nothing */
        uint8_t st = seg_get_state(g);
        uint64_t held = st == SEG_FREE || st == SEG_UNUSED
                            ? 0
                            : __atomic_load_n(&g->cls_held, __ATOMIC_RELAXED);
        for (unsigned k = 1; k <= n; k++) {
            if (held >> k & 1)
                out[k].pages++;
            int32_t c = __atomic_load_n(&g->cls_items[k], __ATOMIC_RELAXED);
            if (c == 0)
                continue;
            items[k] += c;
            bytes[k] += __atomic_load_n(&g->cls_bytes[k], __ATOMIC_RELAXED);
            unsigned lru = __atomic_load_n(&g->lru, __ATOMIC_RELAXED);
            if (lru < STORE_LRUS)
                lru_items[k][lru] += c;
            if (c > 0) {
                rel_time_t made = __atomic_load_n(&g->created, __ATOMIC_RELAXED);
                uint32_t age = made <= now ? now - made : 0;
                if (age > out[k].age)
                    out[k].age = age;
                if (lru == STORE_LRU_HOT && age > out[k].age_hot)
                    out[k].age_hot = age;
                if (lru == STORE_LRU_WARM && age > out[k].age_warm)
                    out[k].age_warm = age;
            }
        }
    }
    pthread_mutex_unlock(&pool->lock);
    /* a step behind one another, as in seg_counts: never less than nothing */
    for (unsigned k = 1; k <= n; k++) {
        out[k].number = items[k] > 0 ? (uint64_t)items[k] : 0;
        out[k].mem_requested = bytes[k] > 0 ? (uint64_t)bytes[k] : 0;
        for (unsigned l = 0; l < STORE_LRUS; l++)
            out[k].number_lru[l] = lru_items[k][l] > 0 ? (uint64_t)lru_items[k][l] : 0;
    }
}

bool seg_any_expiring(struct seg_pool *pool, rel_time_t now)
{
    bool any = false;
    pthread_mutex_lock(&pool->lock); /* the segment table may grow */
    for (uint32_t i = 0; i < pool->seg_cap && !any; i++) {
        struct seg *g = seg_at(pool->seg_chunks, i);
        uint8_t st = seg_get_state(g);
        any = (st == SEG_OPEN || st == SEG_SEALED) &&
              __atomic_load_n(&g->min_exptime, __ATOMIC_RELAXED) <= now;
    }
    pthread_mutex_unlock(&pool->lock);
    return any;
}

void seg_counts(struct seg_pool *pool, struct store_stats *out)
{
    pthread_mutex_lock(&pool->lock);
    out->seg_used = pool->seg_alloc - pool->free.n;
    out->seg_total = pool->seg_limit;
    /* Counts are read without the bucket locks that order their updates, so
     * one segment may be caught a step behind another (an item counted gone
     * from its old segment before it is counted in its new one): sum them as
     * signed numbers and never report less than nothing. */
    uint64_t d = 0;
    int64_t items = 0, bytes = 0;
    for (uint32_t i = 0; i < pool->seg_cap; i++) {
        struct seg *g = seg_at(pool->seg_chunks, i);
        items += (int32_t)__atomic_load_n(&g->live_items, __ATOMIC_RELAXED);
        int64_t live = (int64_t)__atomic_load_n(&g->live_bytes, __ATOMIC_RELAXED);
        bytes += live;
        if (seg_get_state(g) == SEG_SEALED && live >= 0 && (uint64_t)live <= g->write_off)
            d += g->write_off - (uint64_t)live;
    }
    out->curr_items += items > 0 ? (uint64_t)items : 0;
    out->bytes += bytes > 0 ? (uint64_t)bytes : 0;
    out->dead_bytes = d;
    /* the pages of headers made, and of the directory's pointers named */
    uint64_t hdr = ((uint64_t)pool->seg_cap * sizeof(struct seg) + 4095) / 4096 * 4096;
    uint64_t dir = (((uint64_t)pool->seg_cap + SEG_CHUNK - 1) / SEG_CHUNK * sizeof(struct seg *) +
                    4095) / 4096 * 4096;
    out->hash_bytes += hdr + dir;
    pthread_mutex_unlock(&pool->lock);
}

void seg_note_cas(struct seg *seg, uint64_t cas)
{
    atomic_max64(&seg->max_cas, cas);
}
