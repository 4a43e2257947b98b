/* Segments: allocation, the FIFO of sealed segments, eviction and expiry.
 *
 * Every byte of item data lives in a segment of seg_size bytes; -m allows
 * seg_limit of them. A worker appends to its own open segment per TTL group;
 * a full one is sealed onto the FIFO tail. When a worker needs a segment and
 * -m is used up, the oldest sealed segment is evicted whole: each item in it
 * that is still linked is either dropped or, if it was read since it was
 * written (the slot's access bit), copied forward into the reinsertion
 * segment with its bit cleared (second chance, as in CLOCK / S3-FIFO). New
 * items that are never read again (scans, one-hit wonders) leave at their
 * first pass; a copy-forward budget per victim guarantees progress.
 *
 * A segment whose items are all expired, flushed or overwritten is preferred
 * as a victim and costs no eviction; the housekeeper reclaims such segments
 * ahead of need.
 *
 * Pins: readers hold a segment's refcount while they send from it. Eviction
 * unlinks every item first (so no new pin can be taken), then the segment
 * waits in `draining` until its refcount drops to zero before reuse.
 *
 * Lock order: pool_lock, then bucket locks, then the index pool lock.
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

/* At most this share of a victim may be carried forward. */
#define SEG_RETAIN_NUM 3
#define SEG_RETAIN_DEN 4
/* Victim search looks this far into the FIFO for an all-dead segment. */
#define SEG_DEAD_SCAN 1024

static void list_push(struct seg_list *l, struct seg *s)
{
    s->next = NULL;
    s->prev = l->tail;
    if (l->tail)
        l->tail->next = s;
    else
        l->head = s;
    l->tail = s;
    l->n++;
}

static void list_remove(struct seg_list *l, struct seg *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        l->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        l->tail = s->prev;
    s->prev = s->next = NULL;
    l->n--;
}

int seg_pool_init(struct store *s)
{
    uint64_t cap = (uint64_t)s->seg_limit * 64;
    if (cap < 1024)
        cap = 1024;
    if (cap > SLOT_MAX_SEGS)
        cap = SLOT_MAX_SEGS;
    s->seg_cap = (uint32_t)cap;
    s->segs = calloc(s->seg_cap, sizeof(*s->segs));
    if (!s->segs)
        return -1;
    pthread_mutex_init(&s->pool_lock, NULL);
    for (uint32_t i = 0; i < s->seg_cap; i++) {
        s->segs[i].id = i;
        list_push(&s->unused, &s->segs[i]);
    }
    return 0;
}

void seg_pool_release(struct store *s)
{
    for (uint32_t i = 0; i < s->seg_cap; i++)
        if (s->segs[i].data)
            munmap(s->segs[i].data, s->seg_size);
    free(s->segs);
    s->segs = NULL;
    pthread_mutex_destroy(&s->pool_lock);
}

static void seg_unmap(struct store *s, struct seg *seg)
{
    munmap(seg->data, s->seg_size);
    seg->data = NULL;
    seg->state = SEG_UNUSED;
    s->seg_alloc--;
    list_push(&s->unused, seg);
}

static void seg_reset(struct store *s, struct seg *seg, unsigned group, uint64_t cas_base);

/* A segment with no items in use, or NULL (pool lock held). */
static struct seg *seg_take_free(struct store *s)
{
    for (struct seg *d = s->draining.head, *n; d; d = n) {
        n = d->next;
        if (__atomic_load_n(&d->refcount, __ATOMIC_ACQUIRE) == 0) {
            list_remove(&s->draining, d);
            d->state = SEG_FREE;
            list_push(&s->free, d);
        }
    }
    while (s->seg_alloc > s->seg_limit && s->free.head) {
        struct seg *f = s->free.head;
        list_remove(&s->free, f);
        seg_unmap(s, f);
    }
    if (s->free.head) {
        struct seg *f = s->free.head;
        list_remove(&s->free, f);
        return f;
    }
    if (s->seg_alloc < s->seg_limit && s->unused.head) {
        struct seg *u = s->unused.head;
        void *p = mmap(NULL, s->seg_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        list_remove(&s->unused, u);
        u->data = p;
        s->seg_alloc++;
        if (!s->spare && s->opt.evictions && s->seg_limit >= 3 &&
            s->seg_alloc == s->seg_limit) {
            /* The last segment -m allows is kept spare: eviction needs room
             * to carry live items forward before the victim is free. */
            u->state = SEG_FREE;
            s->spare = u;
            return NULL;
        }
        return u;
    }
    return NULL;
}

static void seg_reset(struct store *s, struct seg *seg, unsigned group, uint64_t cas_base)
{
    seg->write_off = 0;
    __atomic_store_n(&seg->live_items, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->live_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->max_exptime, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->max_cas, 0, __ATOMIC_RELAXED);
    seg->cas_base = cas_base;
    seg->created = clock_now();
    seg->group = (uint8_t)group;
    seg->state = SEG_OPEN;
    (void)s;
}

static void seg_seal(struct store *s, struct seg *seg)
{
    seg->state = SEG_SEALED;
    list_push(&s->fifo, seg);
}

/* Every item in it expired, flushed, overwritten or deleted. */
static bool seg_dead(struct store *s, struct seg *seg, rel_time_t now)
{
    if (__atomic_load_n(&seg->live_items, __ATOMIC_RELAXED) == 0)
        return true;
    uint32_t maxe = __atomic_load_n(&seg->max_exptime, __ATOMIC_RELAXED);
    if (maxe != SEG_EXP_NEVER && maxe <= now)
        return true;
    uint32_t ol = __atomic_load_n(&s->oldest_live, __ATOMIC_RELAXED);
    uint64_t oc = __atomic_load_n(&s->oldest_cas, __ATOMIC_RELAXED);
    if (ol && ol <= now && oc && s->opt.cas_enabled &&
        __atomic_load_n(&seg->max_cas, __ATOMIC_RELAXED) < oc)
        return true;
    return false;
}

/* Copy a live item into the reinsertion segment; its new slot, or 0 when
 * there is no room (pool lock and the item's bucket lock held). */
static uint64_t seg_carry(struct store *s, const char *p, const struct item_hdr *h,
                          uint64_t cas, uint32_t tag)
{
    struct seg *r = s->reinsert;
    uint8_t layout = h->layout & (ITEM_L_FLAGS | ITEM_L_EXP);
    uint64_t base = r ? r->cas_base : cas;
    if (h->cas_off)
        layout |= item_cas_fits(ITEM_L_CAS32, cas, base) ? ITEM_L_CAS32 : ITEM_L_CAS64;
    uint32_t size = item_hdr_len(layout, h->nvalue) + h->nkey + h->nvalue;
    size_t align = (size_t)1 << s->off_shift;
    if (!r || r->write_off + size > s->seg_size) {
        /* The full one stays where it is in the FIFO; the spare takes over
         * and the next victim to drain becomes the spare (seg_evict). */
        s->reinsert = NULL;
        r = s->spare;
        if (!r)
            return 0;
        s->spare = NULL;
        seg_reset(s, r, 0, cas);
        seg_seal(s, r); /* in the FIFO from now, at its age, still appended to */
        s->reinsert = r;
        base = cas;
        layout = (layout & ~(ITEM_L_CAS32 | ITEM_L_CAS64)) | (h->cas_off ? ITEM_L_CAS32 : 0);
        size = item_hdr_len(layout, h->nvalue) + h->nkey + h->nvalue;
    }
    uint32_t off = r->write_off;
    char *d = r->data + off;
    item_init(d, layout, p + h->hlen, h->nkey, h->nvalue);
    struct item_hdr nh;
    item_decode(d, &nh);
    item_put_u32(d, nh.atime_off, item_get_u32(p, h->atime_off));
    rel_time_t exp = item_get_u32(p, h->exp_off);
    if (nh.flags_off)
        item_put_u32(d, nh.flags_off, item_get_u32(p, h->flags_off));
    if (nh.exp_off)
        item_put_u32(d, nh.exp_off, exp);
    item_put_cas(d, &nh, cas, base);
    memcpy(d + nh.hlen + nh.nkey, p + h->hlen + h->nkey, h->nvalue);
    r->write_off = (uint32_t)((off + size + align - 1) & ~(align - 1));
    seg_note_item(r, size, exp, cas);
    return slot_make(tag, r->id, off >> s->off_shift);
}

/* Unlink or carry forward every item of a sealed segment (pool lock held). */
static void seg_evict(struct store_ctx *ctx, struct seg *v, bool retain)
{
    struct store *s = ctx->store;
    rel_time_t now = clock_now();
    size_t budget = retain ? s->seg_size * SEG_RETAIN_NUM / SEG_RETAIN_DEN : 0;
    size_t align = (size_t)1 << s->off_shift;
    bool any_evicted = false;

    if (v == s->reinsert)
        s->reinsert = NULL;
    list_remove(&s->fifo, v);
    v->state = SEG_DRAINING;
    /* A reservation still being filled in here sees this and relocates. */
    __atomic_fetch_add(&v->gen, 1, __ATOMIC_RELEASE);

    for (size_t off = 0; off < v->write_off;) {
        const char *p = v->data + off;
        struct item_hdr h;
        item_decode(p, &h);
        uint32_t size = item_total(&h);
        uint64_t hv = XXH3_64bits(p + h.hlen, h.nkey);
        uint32_t tag = index_tag(hv);
        uint64_t want = slot_make(tag, v->id, (uint32_t)(off >> s->off_shift));
        uint64_t *b = index_bucket(&s->index, hv);
        index_lock(b);
        uint64_t *slot = NULL;
        for (uint64_t *cur = b; cur && !slot; cur = index_next(&s->index, cur))
            for (int i = 1; i <= INDEX_SLOTS; i++)
                if (cur[i] && slot_same(cur[i], want)) {
                    slot = &cur[i];
                    break;
                }
        if (slot) {
            uint32_t status = item_get_u32(p, h.atime_off);
            bool fetched = status & ITEM_S_FETCHED;
            bool accessed = *slot & SLOT_ACCESS;
            enum item_life life = store_item_life(s, p, &h, v->cas_base, now);
            uint64_t moved = 0;
            if (life == ITEM_LIVE && accessed && budget >= size) {
                moved = seg_carry(s, p, &h, item_get_cas(p, &h, v->cas_base), tag);
                if (moved)
                    budget -= size;
            }
            if (moved) {
                *slot = moved;
                CTR_INC(ctx, items_reinserted);
            } else {
                index_clear_slot(&s->index, b, slot);
                if (life == ITEM_LIVE) {
                    any_evicted = true;
                    CTR_INC(ctx, evictions);
                    if (!fetched)
                        CTR_INC(ctx, evicted_unfetched);
                    if (accessed)
                        CTR_INC(ctx, evicted_active);
                } else {
                    CTR_INC(ctx, reclaimed);
                    if (life == ITEM_EXPIRED && !fetched)
                        CTR_INC(ctx, expired_unfetched);
                }
            }
            seg_note_gone(v, size);
        }
        index_unlock(b);
        off = (off + size + align - 1) & ~(align - 1);
    }
    if (any_evicted)
        CTR_INC(ctx, seg_evicted);
    else
        CTR_INC(ctx, seg_expired);
    if (!s->spare && s->opt.evictions && s->seg_alloc <= s->seg_limit &&
        s->seg_limit >= 3 && __atomic_load_n(&v->refcount, __ATOMIC_ACQUIRE) == 0) {
        v->state = SEG_FREE;
        s->spare = v;
        return;
    }
    list_push(&s->draining, v);
}

/* Make one segment's worth of room (pool lock held); false if impossible. */
static bool seg_evict_one(struct store_ctx *ctx)
{
    struct store *s = ctx->store;
    rel_time_t now = clock_now();
    unsigned scanned = 0;
    for (struct seg *c = s->fifo.head; c && scanned < SEG_DEAD_SCAN; c = c->next, scanned++) {
        if (seg_dead(s, c, now)) {
            seg_evict(ctx, c, false);
            return true;
        }
    }
    if (!s->opt.evictions || !s->fifo.head)
        return false;
    seg_evict(ctx, s->fifo.head, true);
    return true;
}

struct seg *seg_open(struct store_ctx *ctx, unsigned g)
{
    struct store *s = ctx->store;
    pthread_mutex_lock(&s->pool_lock);
    if (ctx->open[g]) {
        seg_seal(s, ctx->open[g]);
        ctx->open[g] = NULL;
        __atomic_fetch_sub(&s->open_segs, 1, __ATOMIC_RELAXED);
    }
    struct seg *seg;
    /* Each pass frees at least a quarter segment, so this ends. */
    while (!(seg = seg_take_free(s))) {
        if (!seg_evict_one(ctx))
            break;
    }
    if (seg) {
        seg_reset(s, seg, g, __atomic_load_n(&s->cas_next, __ATOMIC_RELAXED));
        ctx->open[g] = seg;
        __atomic_fetch_add(&s->open_segs, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&s->pool_lock);
    return seg;
}

void seg_close(struct store_ctx *ctx, struct seg *seg)
{
    struct store *s = ctx->store;
    pthread_mutex_lock(&s->pool_lock);
    __atomic_fetch_sub(&s->open_segs, 1, __ATOMIC_RELAXED);
    if (seg->write_off == 0 && __atomic_load_n(&seg->refcount, __ATOMIC_ACQUIRE) == 0) {
        seg->state = SEG_FREE;
        list_push(&s->free, seg);
    } else {
        seg_seal(s, seg);
    }
    pthread_mutex_unlock(&s->pool_lock);
}

void seg_unpin(struct seg *seg)
{
    __atomic_fetch_sub(&seg->refcount, 1, __ATOMIC_RELEASE);
}

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
}

void seg_note_item(struct seg *seg, uint32_t size, rel_time_t exptime, uint64_t cas)
{
    __atomic_fetch_add(&seg->live_items, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&seg->live_bytes, size, __ATOMIC_RELAXED);
    seg_note_exptime(seg, exptime);
    atomic_max64(&seg->max_cas, cas);
}

void seg_note_gone(struct seg *seg, uint32_t size)
{
    __atomic_fetch_sub(&seg->live_items, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&seg->live_bytes, size, __ATOMIC_RELAXED);
}

unsigned seg_reclaim_expired(struct store_ctx *ctx)
{
    struct store *s = ctx->store;
    unsigned n = 0;
    pthread_mutex_lock(&s->pool_lock);
    rel_time_t now = clock_now();
    for (struct seg *c = s->fifo.head, *next; c; c = next) {
        next = c->next;
        if (seg_dead(s, c, now)) {
            seg_evict(ctx, c, false);
            n++;
        }
    }
    /* Move drained segments to the free list and give back what a lowered
     * limit no longer allows. */
    struct seg *f = seg_take_free(s);
    if (f) {
        f->state = SEG_FREE;
        list_push(&s->free, f);
    }
    pthread_mutex_unlock(&s->pool_lock);
    return n;
}

int seg_set_limit(struct store *s, size_t bytes)
{
    size_t n = bytes / s->seg_size;
    if (n < 1 || n > s->seg_cap)
        return -1;
    pthread_mutex_lock(&s->pool_lock);
    s->seg_limit = (uint32_t)n;
    __atomic_store_n(&s->mem_limit, bytes, __ATOMIC_RELAXED);
    while (s->seg_alloc > s->seg_limit && s->free.head) {
        struct seg *f = s->free.head;
        list_remove(&s->free, f);
        seg_unmap(s, f);
    }
    pthread_mutex_unlock(&s->pool_lock);
    return 0;
}

void seg_counts(struct store *s, uint64_t *used, uint64_t *total, uint64_t *dead)
{
    pthread_mutex_lock(&s->pool_lock);
    *used = s->seg_alloc - s->free.n;
    *total = s->seg_limit;
    uint64_t d = 0;
    for (uint32_t i = 0; i < s->seg_cap; i++) {
        struct seg *g = &s->segs[i];
        if (g->state == SEG_SEALED)
            d += g->write_off - __atomic_load_n(&g->live_bytes, __ATOMIC_RELAXED);
    }
    *dead = d;
    pthread_mutex_unlock(&s->pool_lock);
}

void seg_note_cas(struct seg *seg, uint64_t cas)
{
    atomic_max64(&seg->max_cas, cas);
}
