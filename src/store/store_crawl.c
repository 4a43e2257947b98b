/* SPDX-License-Identifier: BSD-3-Clause */
/* The housekeeper thread and the index walks that reap dead items: its
 * own sweep for expired and flushed items, and memcached's
 * `lru_crawler crawl`. Both go bucket by bucket under one bucket lock at
 * a time (store_reap_bucket); they differ in which items they look at and
 * in the counters they bump, as memcached's LRU maintainer and its
 * crawler count apart. */
#include "store/store_crawl.h"
#include "store/store_cold.h"
#include "store/store_core.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_lookup.h"
#include "store/store_find.h"
#include "store/store_seg.h"
#include "store/persist/persist.h"
#include "store/store_life.h"
#include "store/store_classes.h"
#include "store/seg_counts.h"

#include <time.h>

#define STORE_FLUSH_RECLAIM_NS 100000000L /* 100 ms */
#define STORE_CRAWL_BUCKETS (1u << 20)
/* With the idle flush held up by full flash buffers, the housekeeper comes
 * back this soon rather than in a second: the writer thread frees one
 * every few milliseconds. */
#define STORE_COLD_RETRY_NS 10000000ull /* 10 ms */
/* The whole pass (store_housekeep) comes once a second, whatever shorter
 * waits the idle flush takes between two (store_hk_pause_ns). */
#define STORE_HK_PACE_NS 1000000000ull

/* Which items a walk reaps, and how it counts them. */
struct store_reap {
    uint64_t classes; /* the size classes it looks at (bit per class id) */
    bool crawler;     /* `lru_crawler crawl`: counts what it examines */
    bool flushing;    /* a flush_all took effect: any segment may hold dead items */
};

/* The life of the item in *slot as the walk judges it; ITEM_LIVE for one it
 * does not look at. *f and *cls describe the item. The housekeeper skips a
 * segment where nothing has expired yet without reading its items. */
static enum item_life store_reap_judge(struct store_ctx *ctx, const struct store_reap *r,
                                       uint64_t *b, uint64_t *slot, rel_time_t now,
                                       bool count, struct store_found *f, unsigned *cls)
{
    struct store *s = ctx->store;
    uint64_t sl = slot_load(slot);
    if (slot_is_flash(sl))
        return ITEM_LIVE; /* on flash: judged when read, or its segment expires whole */
    struct seg *seg = seg_of(&s->pool, slot_seg(sl));
    if (!r->crawler && !r->flushing && __atomic_load_n(&seg->min_exptime, __ATOMIC_RELAXED) > now)
        return ITEM_LIVE;
    *f = (struct store_found){.chain = b, .slot = slot, .p = seg_item(&s->pool, sl), .seg = seg};
    item_decode(f->p, &f->h);
    *cls = classes_item(&s->classes, f->p, &f->h).cls;
    if (!(r->classes >> *cls & 1))
        return ITEM_LIVE;
    if (count && r->crawler) {
        CTR_INC(ctx, crawler_items_checked);
        CLS_INC(&ctx->cls[*cls], crawler_items_checked);
    }
    return life_of_item(&s->life, f->p, &f->h, seg->cas_base, seg->tbase, now);
}

static void store_reap_one(struct store_ctx *ctx, const struct store_reap *r,
                           struct store_found *f, unsigned cls, enum item_life life)
{
    bool fetched = item_get_status(f->p, &f->h) & ITEM_S_FETCHED;
    struct store_cls_ctr *cc = &ctx->cls[cls];
    store_unlink(ctx->store, f);
    if (r->crawler) {
        CTR_INC(ctx, crawler_reclaimed);
        CLS_INC(cc, crawler_reclaimed);
    } else {
        CTR_INC(ctx, reclaimed);
        CLS_INC(cc, reclaimed);
    }
    /* memcached's lru_pull_tail counts a flushed item never fetched as
     * "expired unfetched"; its crawler does not */
    if (!fetched && (life == ITEM_EXPIRED || !r->crawler)) {
        CTR_INC(ctx, expired_unfetched);
        CLS_INC(cc, expired_unfetched);
    }
}

/* One bucket, b locked: the dead items the walk looks at are unlinked and
 * counted; returns how many were unlinked. Slots never move, but an unlink may free an
 * overflow bucket of the chain: the items are judged first (each counted
 * once), then the chain walked again from its head after each unlink. */
static size_t store_reap_bucket(struct store_ctx *ctx, const struct store_reap *r, uint64_t *b,
                                rel_time_t now)
{
    struct index *ix = &ctx->store->index;
    struct store_found f;
    unsigned cls;
    size_t dead = 0;
    for (uint64_t *cur = b; cur; cur = index_next(ix, cur))
        for (int j = 0; j < INDEX_SLOTS; j++)
            if (slot_load(index_slot(cur, j)))
                dead += store_reap_judge(ctx, r, b, index_slot(cur, j), now, true, &f, &cls) !=
                        ITEM_LIVE;
    size_t left = dead;
    for (uint64_t *cur = b; cur && left; cur = index_next(ix, cur)) {
        for (int j = 0; j < INDEX_SLOTS && left; j++) {
            if (!slot_load(index_slot(cur, j)))
                continue;
            enum item_life life =
                store_reap_judge(ctx, r, b, index_slot(cur, j), now, false, &f, &cls);
            if (life == ITEM_LIVE)
                continue;
            store_reap_one(ctx, r, &f, cls, life);
            left--;
            cur = b;
            j = -1;
        }
    }
    return dead - left; /* fewer only if a flush_all came between the passes */
}

size_t store_crawl(struct store_ctx *ctx, uint64_t max)
{
    struct store *s = ctx->store;
    rel_time_t now = clock_now();
    rel_time_t ol = __atomic_load_n(&s->life.oldest_live, __ATOMIC_RELAXED);
    struct store_reap r = {.classes = ~(uint64_t)0, .flushing = ol && ol <= now};
    size_t gone = 0;
    uint64_t nb = 0;
    for (uint64_t n = 0; n < max; n++) {
        uint64_t *b = index_lock_nth(&s->index, s->hk.crawl_cursor, &nb);
        if (!b) {
            s->hk.crawl_cursor = 0;
            if (nb == 0 || n >= nb)
                break;
            continue;
        }
        gone += store_reap_bucket(ctx, &r, b, now);
        index_unlock(b);
        s->hk.crawl_cursor++;
    }
    return gone;
}

/* The idle flush, up to max buckets from its cursor. */
static void store_hk_cold(struct store *s, uint64_t max)
{
    bool full = false;
    store_cold_pass(s, max, &full);
    s->hk.cold_more = full;
}

void store_housekeep(struct store *s)
{
    if (s->pm)
        persist_heartbeat(s->pm);
    seg_reclaim_expired(&s->hk.ctx->seg);
    /* Crawl only when something can have expired or been flushed: an idle
     * or TTL-less cache then costs the housekeeper nothing but this check.
     * Without memcached's LRU maintainer nothing reaps items one by one
     * (store.h, no_lru_maintainer). */
    rel_time_t now = clock_now();
    rel_time_t ol = __atomic_load_n(&s->life.oldest_live, __ATOMIC_RELAXED);
    if (!s->opt.no_lru_maintainer && ((ol && ol <= now) || seg_any_expiring(&s->pool, now)))
        store_crawl(s->hk.ctx, STORE_CRAWL_BUCKETS);
    store_hk_cold(s, STORE_CRAWL_BUCKETS);
    __atomic_add_fetch(&s->hk.whole_passes, 1, __ATOMIC_RELAXED);
}

/* memcached's LRU crawler over the classes asked for: the whole index
 * once, one bucket lock at a time. */
static void store_crawl_run(struct store_ctx *ctx, uint64_t classes)
{
    struct store *s = ctx->store;
    struct store_reap r = {.classes = classes, .crawler = true};
    uint64_t nb = 0, *b;
    for (uint64_t i = 0; (b = index_lock_nth(&s->index, i, &nb)); i++) {
        store_reap_bucket(ctx, &r, b, clock_now());
        index_unlock(b);
    }
}

/* The housekeeper's wait before its next idle flush: a second, 10 ms
 * while the idle flush waits for a write buffer; with the idle flush on,
 * no longer than ext_max_sleep, as memcached's storage write thread
 * sleeps. */
static uint64_t store_hk_pause_ns(struct store *s)
{
    uint64_t ns = s->hk.cold_more ? STORE_COLD_RETRY_NS : STORE_HK_PACE_NS;
    uint32_t item_size, item_age;
    if (!s->flash)
        return ns;
    flash_tier_idle_rules(s->flash, &item_size, &item_age);
    return item_age == UINT32_MAX ? ns : flash_tier_pause_ns(s->flash, ns);
}

static uint64_t store_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A wait shorter than the whole pass's second (ext_max_sleep, or the
 * retry at full buffers) is followed by the idle flush alone, over the
 * share of the second's bucket budget that the wait is; a whole pass on
 * each wake-up would walk the expiry crawl's million buckets as often. */
void *store_housekeeper(void *arg)
{
    struct store *s = arg;
    pthread_mutex_lock(&s->hk.lock);
    s->hk.whole_at = store_mono_ns();
    while (!s->hk.stop) {
        uint64_t pause = store_hk_pause_ns(s);
        uint64_t since = store_mono_ns() - s->hk.whole_at;
        uint64_t left = since < STORE_HK_PACE_NS ? STORE_HK_PACE_NS - since : 0;
        bool whole = left <= pause;
        if (whole)
            pause = left;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + pause;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        if (!s->hk.kick && !s->hk.crawl_classes)
            pthread_cond_timedwait(&s->hk.cond, &s->hk.lock, &ts);
        if (s->hk.stop)
            break;
        if (s->hk.crawl_classes) {
            /* `lru_crawler crawl`: run it now, then go on as usual */
            uint64_t classes = s->hk.crawl_classes;
            s->hk.crawl_classes = 0;
            s->hk.crawl_active = true;
            pthread_mutex_unlock(&s->hk.lock);
            store_crawl_run(s->hk.ctx, classes);
            pthread_mutex_lock(&s->hk.lock);
            s->hk.crawl_active = false;
            __atomic_store_n(&s->hk.crawl_running, false, __ATOMIC_RELEASE);
            if (s->hk.stop)
                break;
            whole = true;
        }
        if (s->hk.kick) {
            whole = true;
            /* An immediate flush_all: reclaim its items a moment after the
             * last one, as memcached's LRU maintainer does (reclaimed after
             * 0.2 s, not yet after 0.05 s), so a read right after a flush
             * still counts get_flushed, as there. */
            while (s->hk.kick && !s->hk.stop) {
                s->hk.kick = false;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += STORE_FLUSH_RECLAIM_NS;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                while (!s->hk.kick && !s->hk.stop &&
                       pthread_cond_timedwait(&s->hk.cond, &s->hk.lock, &ts) == 0)
                    ;
            }
            if (s->hk.stop)
                break;
        }
        pthread_mutex_unlock(&s->hk.lock);
        if (whole) {
            store_housekeep(s);
            s->hk.whole_at = store_mono_ns();
        } else {
            uint64_t max = STORE_CRAWL_BUCKETS * pause / STORE_HK_PACE_NS;
            store_hk_cold(s, max ? max : 1);
            __atomic_add_fetch(&s->hk.idle_passes, 1, __ATOMIC_RELAXED);
        }
        pthread_mutex_lock(&s->hk.lock);
    }
    pthread_mutex_unlock(&s->hk.lock);
    return NULL;
}

bool store_crawl_classes(struct store_ctx *ctx, uint64_t classes)
{
    struct store *s = ctx->store;
    classes &= ~(uint64_t)1; /* class ids start at 1 */
    if (!classes)
        return true;
    if (!s->hk.running) {
        CTR_INC(ctx, lru_crawler_starts);
        store_crawl_run(ctx, classes);
        return true;
    }
    /* While one runs, memcached answers BUSY. A crawl asked for but not
     * started yet takes these classes too: it examines them all after now,
     * which is what a crawl started now would do. */
    pthread_mutex_lock(&s->hk.lock);
    bool busy = s->hk.crawl_active;
    if (!busy) {
        s->hk.crawl_classes |= classes;
        __atomic_store_n(&s->hk.crawl_running, true, __ATOMIC_RELEASE);
        pthread_cond_signal(&s->hk.cond);
    }
    pthread_mutex_unlock(&s->hk.lock);
    if (!busy)
        CTR_INC(ctx, lru_crawler_starts);
    return !busy;
}

void store_note_crawler_start(struct store_ctx *ctx)
{
    CTR_INC(ctx, lru_crawler_starts);
}
