/* SPDX-License-Identifier: BSD-3-Clause */
/* The store's operations: set-up and teardown, worker contexts, get, touch,
 * delete, flush, run-time settings, stats. Writes are in store_write.c,
 * incr/decr in store_arith.c, the housekeeper and the crawler in
 * store_crawl.c, memcached's views in store_compat.c. */
#include "store/store_core.h"
#include "store/store_link.h"
#include "store/store_classes.h"
#include "store/store_ghost.h"
#include "store/store_life.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_lookup.h"
#include "store/store_find.h"
#include "store/store_seg.h"
#include "store/store_upload.h"
#include "store/store_write.h"
#include "store/persist/persist.h"
#include "store/persist/restore.h"
#include "store/seg_counts.h"
#include "store/store_crawl.h"
#include "store/store_flash_ctl.h"
#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#define STORE_SEG_MIN (1u << 20)
#define STORE_ITEM_MAX_LIMIT (128u << 20)

/* ---- life cycle -------------------------------------------------------- */

static uint64_t store_rehash(void *arg, uint64_t slot)
{
    struct store *s = arg;
    const char *p = seg_item(&s->pool, slot);
    struct item_hdr h;
    item_decode(p, &h);
    return XXH3_64bits(p + h.hlen, h.nkey);
}

static bool store_forget(void *arg, uint64_t slot)
{
    return store_flash_forget(arg, slot);
}

static bool store_stale(void *arg, uint64_t slot)
{
    struct store *s = arg;
    return flash_tier_stale(s->flash, slot);
}

/* The segments' eviction hook: a key evicted unread goes to the ghost. */
static void store_evicted_unread(void *arg, uint64_t hv, bool from_main)
{
    ghost_add(arg, hv, from_main);
}

/* Open segments are never evicted: more writers than half the segments a
 * limit allows could hold them all open, leaving eviction nothing to free
 * (a write would fail where memcached evicts). Past that they share half
 * as many open sets as there are segments; 0: each its own. */
static uint32_t store_sets_for(const struct store *s, uint32_t seg_limit)
{
    uint32_t n = seg_limit / 2 ? seg_limit / 2 : 1;
    return s->opt.writers > n ? n : 0;
}

/* One shared set per writer, whether the limit at start uses them or not:
 * cache_memlimit may lower it to where writers must share (never more sets
 * than writers, by store_sets_for). */
static int store_share_sets(struct store *s)
{
    if (s->opt.writers > 1) {
        s->shared_sets = calloc(s->opt.writers, sizeof(*s->shared_sets));
        if (!s->shared_sets)
            return -1;
        for (uint32_t i = 0; i < s->opt.writers; i++) {
            s->shared_sets[i].shared = true;
            pthread_mutex_init(&s->shared_sets[i].lock, NULL);
        }
        s->nshared_sets = s->opt.writers;
    }
    s->nsets = store_sets_for(s, s->pool.seg_limit);
    s->sets_limit = s->pool.seg_limit;
    return 0;
}

int store_create(struct store **out, const struct store_options *opt)
{
    *out = NULL;
    if (opt->item_size_max > STORE_ITEM_MAX_LIMIT || opt->item_size_max < 1024)
        return -1;
    struct store *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->opt = *opt;
    s->pool.opt = &s->opt;
    /* memcached 1.6.45's counter starts at 1: the first CAS it gives is 2
     * (1.6.18's was 1). A restore (-e) sets it from the file instead. */
    s->cas_next = 1;
    size_t seg = STORE_SEG_MIN;
    while (seg < opt->item_size_max)
        seg <<= 1;
    s->pool.seg_size = seg;
    while ((s->pool.seg_size >> s->pool.off_shift) > SLOT_MAX_OFF)
        s->pool.off_shift++;
    size_t nsegs = seg_limit_for(&s->pool, opt->mem_limit);
    s->pool.seg_limit = nsegs > SLOT_MAX_SEGS ? 0 : (uint32_t)nsegs;
    if (s->pool.seg_limit < 1) {
        free(s);
        return -1;
    }
    s->pool.mem_limit = opt->mem_limit;
    s->pool.open_max = seg_open_max_for(s->pool.seg_limit);
    s->temp_ttl = opt->temp_lru ? (int64_t)opt->temporary_ttl : -1;
    s->lru_flat = opt->lru_flat;
    s->up.limit = opt->upload_limit
                          ? opt->upload_limit
                          : store_upload_default_limit(opt->mem_limit, opt->item_size_max);

    /* -o hashpower is memcached's (default 16): index_level_for says how
     * our buckets follow its contract. The index grows on its own from there. */
    unsigned level = opt->hashpower ? opt->hashpower : 16;
    unsigned keep = 0; /* the level reported at least: a restart's */
    uint64_t size_for = 0; /* items the table is sized for: a restore's */
    unsigned flash_level = 0; /* a flash tier's table opens at this level at least */
    if (opt->memory_file) {
        struct pm_settings want = {.mem_limit = opt->mem_limit,
                                   .item_size_max = opt->item_size_max,
                                   .seg_size = s->pool.seg_size,
                                   .nsegs = s->pool.seg_limit,
                                   .cas_enabled = opt->cas_enabled,
                                   .off_shift = s->pool.off_shift};
        uint64_t shape;
        if (opt->flash.nfiles)
            want.flash_len = store_flash_keep_len(&opt->flash, &shape);
        if (persist_open(&want, opt->memory_file, &s->pm) != 0) {
            free(s);
            return -1;
        }
        s->pm->index = &s->index;
        s->pm->life = &s->life;
        s->pm->cas_next = &s->cas_next;
        /* A restore inserts every item at once: size the index for them
         * now, as growth would have (index_presize: 2^L + s buckets, which
         * the restore fills in their own shape), rather than grow it step
         * by step. */
        uint64_t hint = s->pm->start >= PM_START_CLEAN && s->pm->start <= PM_START_CRASH
                            ? s->pm->hdr->items
                            : 0;
        /* The file's word only as far as -m makes it plausible (a damaged
         * header must not size the index beyond what -m can hold): an item
         * takes 12 bytes at least. */
        uint64_t most = opt->mem_limit / 12;
        unsigned cap = index_level_for(level, most);
        size_for = hint < most ? hint : most;
        /* memcached's restart keeps its hash power (its restart.t checks):
         * the level reported stays, while the table is the items' size */
        unsigned was = s->pm->hdr->index_level;
        if (hint && was <= cap)
            keep = was;
    }
    if (opt->flash.nfiles) {
        /* Ids from FLASH_SEG_BASE up name flash segments. */
        if (s->pool.seg_limit >= FLASH_SEG_BASE) {
            log_error("nodelay: -m too large for a flash tier");
            if (s->pm)
                persist_close(s->pm, false);
            free(s);
            return -1;
        }
        /* A growth of the index cannot rehash a flash item (its key is on
         * flash): its slot's place moves it through a growth to at most
         * 2^INDEX_PLACE_BITS times the buckets the table had when the
         * tier opened, and past that a growth drops it, counted
         * (index_place_from_here). So the table opens at a fraction of
         * what the flash can hold of its smallest items (ext_item_size
         * of value, the header that takes and a 1-byte key; flash_want)
         * and grows with the items, at its split load whatever their
         * size: a table that 2^INDEX_PLACE_BITS times over holds twice
         * flash_want, between an eighth and a quarter of it. The level
         * to spare is for what flash_want does not count: RAM's items
         * smaller than a flash item's, and -m's own counted as flash's.
         * A write drops the flash slots under its key's flash tag in its
         * two buckets (one flash candidate per flash tag), which in a
         * table that dense forgets another key's flash copy about once
         * in 2,200 writes (14.8 entries a key's pair, 2^15 flash tags:
         * index_flash_tag; docs/store-flash.md "RAM per flash item"). */
        uint64_t bytes = 0;
        for (int i = 0; i < opt->flash.nfiles; i++)
            bytes += opt->flash.sizes[i];
        uint32_t v = opt->flash.item_size > 64 ? opt->flash.item_size : 64;
        uint64_t per = item_hdr_len(0, v) + 1 + v;
        uint64_t flash_want = bytes / per + opt->mem_limit / per;
        /* the power of two at or below a quarter's buckets: above an
         * eighth's, so 2^INDEX_PLACE_BITS times it holds 2 x flash_want;
         * opened at 2^24 buckets (1 GiB) at most, which reach 2^28 */
        uint64_t open = flash_want / 4, most = ((uint64_t)INDEX_SPLIT_TENTHS << 24) / 10;
        flash_level = index_level_to_hold(level, open < most ? open : most);
    }
    /* the table: the power of two at or below the buckets size_for
     * needs, index_presize adds the rest; the level reported: memcached's
     * for half of size_for at least, whatever the table's size */
    unsigned view = index_level_for(level, size_for / 2);
    if (view > keep)
        keep = view;
    level = index_level_to_hold(level, size_for);
    if (flash_level > level)
        level = flash_level;
    if (index_init(&s->index, level, store_rehash, s) != 0) {
        if (s->pm)
            persist_close(s->pm, false);
        free(s);
        return -1;
    }
    index_keep_level(&s->index, keep);
    if (index_presize(&s->index, size_for) != 0) {
        log_error("nodelay: cannot size the index for %llu items", (unsigned long long)size_for);
        index_release(&s->index);
        if (s->pm)
            persist_close(s->pm, false);
        free(s);
        return -1;
    }
    /* before the segments and the flash tier, which count items by class */
    classes_init(&s->classes, opt);
    s->pool.index = &s->index;
    s->pool.life = &s->life;
    s->pool.classes = &s->classes;
    s->pool.cas_next = &s->cas_next;
    s->pool.pm = s->pm;
    s->pool.hooks = (struct seg_hooks){.evicted_unread = store_evicted_unread, .arg = &s->ghost};
    if (seg_pool_init(&s->pool) != 0) {
        index_release(&s->index);
        if (s->pm)
            persist_close(s->pm, false);
        free(s);
        return -1;
    }
    if (opt->flash.nfiles) {
        char why[512] = "";
        if (store_flash_open(s, why, sizeof why) < 0) {
            log_error("nodelay: %s", why);
            seg_pool_release(&s->pool);
            index_release(&s->index);
            if (s->pm)
                persist_close(s->pm, false);
            free(s);
            return -1;
        }
        s->index.forget = store_forget;
        s->index.stale = store_stale;
    }
    ghost_init(&s->ghost, opt->mem_limit);
    pthread_mutex_init(&s->ctx_lock, NULL);
    pthread_mutex_init(&s->life.flush_lock, NULL);
    store_upload_init(&s->up);
    pthread_mutex_init(&s->hk.lock, NULL);
    pthread_cond_init(&s->hk.cond, NULL);
    s->hk.ctx = store_share_sets(s) == 0 ? store_ctx_create(s) : NULL;
    if (!s->hk.ctx) {
        store_destroy(&s);
        return -1;
    }
    if (s->pm)
        restore_run(s);
    /* flash slots are made from here on: a growth moves them from this
     * level on (index_place_from_here) */
    if (s->flash)
        index_place_from_here(&s->index);
    if (s->pm && s->flash)
        restore_flash(s);
    if (opt->background) {
        if (pthread_create(&s->hk.thread, NULL, store_housekeeper, s) == 0)
            s->hk.running = true;
    }
    *out = s;
    return 0;
}

void store_destroy(struct store **sp)
{
    struct store *s = *sp;
    if (!s)
        return;
    if (s->hk.running) {
        pthread_mutex_lock(&s->hk.lock);
        s->hk.stop = true;
        pthread_cond_signal(&s->hk.cond);
        pthread_mutex_unlock(&s->hk.lock);
        pthread_join(s->hk.thread, NULL);
    }
    /* The flash tier's threads stop first: nothing posts to a worker's
     * completion queue after this. */
    store_flash_close(s);
    if (s->hk.ctx)
        store_ctx_destroy(&s->hk.ctx);
    while (s->ctxs) {
        struct store_ctx *c = s->ctxs;
        store_ctx_destroy(&c);
    }
    /* Every thread is gone and every open segment sealed: with -e the
     * file is now consistent, and is marked clean for the next start
     * (after the pool, whose segments may live in it). */
    seg_pool_release(&s->pool);
    if (s->pm)
        persist_close(s->pm, true);
    index_release(&s->index);
    ghost_release(&s->ghost);
    for (uint32_t i = 0; i < s->nshared_sets; i++)
        pthread_mutex_destroy(&s->shared_sets[i].lock);
    free(s->shared_sets);
    pthread_mutex_destroy(&s->ctx_lock);
    pthread_mutex_destroy(&s->life.flush_lock);
    pthread_mutex_destroy(&s->hk.lock);
    store_upload_release(&s->up);
    pthread_cond_destroy(&s->hk.cond);
    free(s);
    *sp = NULL;
}

struct store *store_ctx_store(struct store_ctx *ctx)
{
    return ctx->store;
}

struct store_ctx *store_ctx_create(struct store *s)
{
    struct store_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->store = s;
    c->seg = (struct seg_ctx){.pool = &s->pool, .cnt = &c->cnt, .cls = c->cls};
    if (store_flash_ctx_init(c) != 0) {
        free(c);
        return NULL;
    }
    pthread_mutex_lock(&s->ctx_lock);
    c->set_ix = s->next_set++;
    c->seg.at = store_set_of(s, c);
    c->seg.at->users++;
    c->sets_epoch = s->sets_epoch;
    c->next = s->ctxs;
    if (s->ctxs)
        s->ctxs->prev = c;
    s->ctxs = c;
    pthread_mutex_unlock(&s->ctx_lock);
    return c;
}

void store_ctx_destroy(struct store_ctx **cp)
{
    struct store_ctx *c = *cp;
    if (!c)
        return;
    struct store *s = c->store;
    struct seg_open_set *at = c->seg.at;
    pthread_mutex_lock(&s->ctx_lock);
    bool last = --at->users == 0;
    pthread_mutex_unlock(&s->ctx_lock);
    if (last) /* a shared set's segments stay open for its other writers */
        store_set_seal(c, at);
    pthread_mutex_lock(&s->ctx_lock);
#define STORE_CTX_FOLD(n) s->gone.n += __atomic_load_n(&c->cnt.n, __ATOMIC_RELAXED);
    STORE_COUNTERS(STORE_CTX_FOLD)
#undef STORE_CTX_FOLD
    for (unsigned k = 0; k < STORE_CLASSES; k++)
        store_cls_fold(&s->gone_cls[k], &c->cls[k]);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->ctxs = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&s->ctx_lock);
    store_flash_ctx_release(c);
    free(c);
    *cp = NULL;
}

/* ---- reads ------------------------------------------------------------- */

void store_pin_release(struct store_pin *pin)
{
    if (pin && store_flash_pin_is(pin))
        store_flash_buf_unpin(pin);
    else if (pin)
        seg_unpin((struct seg *)pin);
}

bool store_pin_keep(struct store_pin *pin, bool must)
{
    /* a flash read's buffer is no cache segment: eviction never waits
     * for it, and the connection owes its bytes (client_mem_limit) */
    if (store_flash_pin_is(pin))
        return true;
    return seg_keep((struct seg *)pin, must);
}

void store_pin_release_kept(struct store_pin *pin)
{
    if (store_flash_pin_is(pin))
        store_flash_buf_unpin(pin);
    else
        seg_unkeep((struct seg *)pin);
}

static enum store_status store_vivify(struct store_ctx *ctx, const char *key, size_t nkey,
                                      const struct store_get_req *req, struct store_item *out);

#if defined(__SANITIZE_THREAD__)
#define STORE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STORE_TSAN 1
#endif
#endif

/* A run's misses overlap instead of queueing one behind the other: every
 * key is hashed and its bucket starts loading at once; an item starts
 * loading once its bucket has had time to arrive, STORE_PREFETCH_LEAD
 * lookups ahead of its own (its bucket's slots read unlocked: a slot may be
 * changing, so what it points to is only a guess); the lookup (store_get,
 * locked and exact) then finds bucket and item in cache. Under
 * ThreadSanitizer the item step is left out: its unlocked reads of slots
 * and segment pointers are races by design (a wrong guess costs one wasted
 * prefetch), and TSan would rightly name them. */
/* Bytes of each matching item prefetched (from its start): a hit reads its
 * header, key and value, and a 100-byte value ends in its third line. */
#define STORE_PREFETCH_ITEM_BYTES 192

#ifndef STORE_TSAN
/* The items of tag in bucket b (and the next line of its chain); whether
 * one was started. */
static inline __attribute__((always_inline)) bool
store_prefetch_bucket(struct store *s, const uint64_t *b, uint32_t tag)
{
    bool some = false;
    /* a full bucket's chain: its next line is wanted too */
    index_prefetch_next(&s->index, b);
    for (unsigned m = index_match(b, tag); m; m &= m - 1, m &= m - 1) {
        uint64_t sl = __atomic_load_n(&b[__builtin_ctz(m) >> 1], __ATOMIC_RELAXED);
        if (!sl || slot_tag(sl) != tag || slot_is_flash(sl))
            continue;
        uint32_t id = slot_seg(sl);
        struct seg *chunk = __atomic_load_n(&s->pool.seg_chunks[id / SEG_CHUNK], __ATOMIC_ACQUIRE);
        if (!chunk)
            continue;
        const char *data = __atomic_load_n(&chunk[id % SEG_CHUNK].data, __ATOMIC_RELAXED);
        if (!data)
            continue;
        const char *p = data + ((size_t)slot_off(sl) << s->pool.off_shift);
        for (unsigned o = 0; o < STORE_PREFETCH_ITEM_BYTES; o += 64)
            __builtin_prefetch(p + o, 1);
        some = true;
    }
    return some;
}
#endif

static inline void store_prefetch_item(struct store *s, const struct store_prefetch_run *r,
                                       uint32_t i)
{
#ifndef STORE_TSAN
    /* A tag in the first bucket is the key's item but for one chance in
     * some 300 (7 slots, 11-bit tags), and the lookup looks no further
     * then: the second bucket's slots are not read. */
    if (!store_prefetch_bucket(s, r->bucket[i][0], r->tag[i]) &&
        r->bucket[i][1] != r->bucket[i][0])
        store_prefetch_bucket(s, r->bucket[i][1], r->tag[i]);
#else
    (void)s;
    (void)r;
    (void)i;
#endif
}

void store_prefetch_buckets(struct store_ctx *ctx, struct store_prefetch_run *r,
                            struct store_keyref *keys, size_t n)
{
    struct store *s = ctx->store;
    if (n > STORE_PREFETCH_MAX)
        n = STORE_PREFETCH_MAX;
    for (size_t i = 0; i < n; i++) {
        struct store_key k = store_key_of(keys[i].key, keys[i].nkey);
        if (keys[i].hv)
            *keys[i].hv = k.hv;
        r->tag[i] = k.tag;
        r->bucket[i][0] = index_prefetch(&s->index, k.hv, &r->bucket[i][1]);
    }
    r->n = (uint32_t)n;
    r->next = 0;
}

void store_prefetch_start(struct store_ctx *ctx, struct store_prefetch_run *r,
                          struct store_keyref *keys, size_t n)
{
    store_prefetch_buckets(ctx, r, keys, n);
    /* The first items have nothing to hide their buckets' wait behind. */
    for (; r->next < r->n && r->next < STORE_PREFETCH_LEAD; r->next++)
        store_prefetch_item(ctx->store, r, r->next);
}

void store_prefetch_next(struct store_ctx *ctx, struct store_prefetch_run *r)
{
    if (r->next < r->n)
        store_prefetch_item(ctx->store, r, r->next++);
}

void store_prefetch(struct store_ctx *ctx, struct store_keyref *keys, size_t n)
{
    struct store_prefetch_run r;
    store_prefetch_start(ctx, &r, keys, n);
    while (r.next < r.n)
        store_prefetch_next(ctx, &r);
}

/* A hit on a flash item served from its read's buffer (store_found.flash:
 * a read that changes nothing, the item left on flash), as store_get hands
 * out a RAM item's: copied for req->copy, else pinned by a reference on
 * the buffer. As a lent RAM copy's was, its LRU is HOT. */
static enum store_status store_get_flash(struct store *s, const struct store_found *f,
                                         const struct store_get_req *req, struct store_item *out)
{
    const struct flash_item *fi = f->flash;
    out->key = fi->key;
    out->value = fi->value;
    out->nvalue = fi->h.nvalue;
    out->nkey = fi->h.nkey;
    out->flags = fi->flags;
    out->cas = fi->cas;
    out->exptime = fi->exptime;
    out->exptime_before = fi->exptime;
    out->last_access = fi->atime & ~ITEM_S_MASK;
    out->fetched = fi->atime & ITEM_S_FETCHED;
    out->stale = fi->atime & ITEM_S_STALE;
    out->win_sent = fi->atime & ITEM_S_TOKEN;
    /* its RAM header's, as memcached's me reports it */
    out->class_id = classes_id(&s->classes, classes_ext_hdr_size(&s->classes, fi->h.nkey, fi->flags));
    out->lru = STORE_LRU_HOT;
    if (req->want_value && req->copy && fi->h.nvalue <= req->copy_max) {
        req->copy(req->copy_arg, out);
        out->key = out->value = NULL;
    } else if (req->want_value) {
        out->pin = store_flash_buf_pin(f->flash_buf);
    } else {
        out->key = out->value = NULL;
    }
    return STORE_OK;
}

enum store_status store_get(struct store_ctx *ctx, const char *key, size_t nkey,
                            const struct store_get_req *req, struct store_item *out)
{
    static const struct store_get_req plain;
    struct store *s = ctx->store;
    if (!req)
        req = &plain;
    memset(out, 0, sizeof(*out));
    if (nkey == 0 || nkey > STORE_KEY_MAX)
        return STORE_MISS;
    struct store_key k = req->hashed ? store_key_hashed(key, nkey, req->hv) : store_key_of(key, nkey);
    /* Pinned in the lookup (or just after it, a value too long to copy),
     * so nothing below is applied twice: a lookup that has to look again
     * does so before anything changes. */
    bool copy_some = req->want_value && req->copy;
    enum store_look how = req->want_value && !copy_some ? STORE_LOOK_PIN : STORE_LOOK_FIND;
    /* a flash item not recached is served from its read, as memcached's,
     * when the read changes nothing in it */
    enum store_look flash = (!req->touch && !req->recache ? STORE_LOOK_FLASH_BUF : 0) |
                            (req->no_update ? STORE_LOOK_NO_BUMP : 0) |
                            (req->stale_wins ? STORE_LOOK_WINS : 0) |
                            (req->want_value ? 0 : STORE_LOOK_NO_VALUE);
    for (;;) {
        struct store_found f;
        if (!store_lookup_at(ctx, &k, how | flash, false, &f)) {
            store_found_unlock(&f);
            if (f.flash)
                return store_get_flash(s, &f, req, out);
            enum store_miss miss = f.gone == ITEM_FLUSHED   ? STORE_MISS_FLUSHED
                                   : f.gone == ITEM_EXPIRED ? STORE_MISS_EXPIRED
                                                            : STORE_MISS_ABSENT;
            enum store_status st = STORE_MISS;
            if (req->vivify)
                st = store_vivify(ctx, key, nkey, req, out);
            out->miss = miss;
            return st;
        }
        bool copied = copy_some && f.h.nvalue <= req->copy_max;
        bool pinned = how & STORE_LOOK_PIN;
        if (copy_some && !copied) {
            /* as store_lookup pins: not while eviction compacts it */
            if (!seg_try_pin(f.seg)) {
                store_found_unlock(&f);
                seg_wait_compacted(f.seg);
                continue;
            }
            pinned = true;
        }
        rel_time_t now = f.now;
        if (req->touch && req->exptime != REL_TIME_NEVER && !f.h.exp_off) {
            store_found_unlock(&f);
            if (pinned)
                seg_unpin(f.seg);
            enum store_status st = store_widen(ctx, &k, ITEM_L_EXP, 0);
            if (st == STORE_NO_MEMORY)
                return st;
            continue;
        }
        uint32_t st0 = item_get_st(f.p, &f.h, f.seg->tbase), st = st0;
        store_fill_item_st(&s->classes, &f, st0, out);
        out->exptime_before = out->exptime;
        if (req->touch) {
            if (f.h.exp_off) {
                item_put_u32(f.p, f.h.exp_off, req->exptime);
                seg_note_exptime(f.seg, req->exptime);
            }
            out->exptime = req->exptime;
        }
        bool token = st & ITEM_S_TOKEN;
        bool won = false;
        rel_time_t judged = req->recache_before_touch ? out->exptime_before : out->exptime;
        if (req->recache && !token && judged != REL_TIME_NEVER && judged < now + req->recache_below)
            won = true;
        if ((st & ITEM_S_STALE) && !token && req->stale_wins)
            won = true;
        out->win_sent = token;
        out->won = won;
        if (won)
            st |= ITEM_S_TOKEN;
        /* A hit writes only what changes: the access bits until they
         * saturate, the access time once a second. Most hits then write no
         * line other threads read (the bucket's lock word and the segment's
         * pin count excepted). */
        if (!req->no_update) {
            slot_hit_at(f.slot);
            /* memcached marks the first fetch and bumps the time on later
             * ones (as the item's clock holds it: never back) */
            if (st & ITEM_S_FETCHED)
                st = item_st_held(f.h.layout, (st & ITEM_S_MASK) | now, f.seg->tbase);
            else
                st |= ITEM_S_FETCHED;
        }
        if (st != st0)
            item_put_st(f.p, &f.h, f.seg->tbase, st);
        if (copied) {
            /* Under the bucket lock the item cannot move or go: eviction
             * and compaction take that lock for each item they touch. */
            req->copy(req->copy_arg, out);
            out->key = out->value = NULL;
        } else if (req->want_value) {
            out->pin = (struct store_pin *)f.seg;
        } else {
            out->key = out->value = NULL;
        }
        store_found_unlock(&f);
        return STORE_OK;
    }
}

/* mg N on a miss: create an empty item holding the win token, counted as
 * fetched, as 1.6.45 counts it (`me` says fetch=yes, a later `mg h` h1). */
static enum store_status store_vivify(struct store_ctx *ctx, const char *key, size_t nkey,
                                      const struct store_get_req *req, struct store_item *out)
{
    struct store *s = ctx->store;
    for (int tries = 0; tries < 8; tries++) {
        struct store_set_req sr = {
            .mode = STORE_MODE_ADD,
            .exptime = req->vivify_exptime,
            .cas_new = req->cas_new,
            .cas_given = req->cas_given,
        };
        uint64_t cas = 0;
        struct store_reservation r;
        enum store_status st = store_reserve_for(ctx, key, nkey, 0, 0, sr.exptime, &r);
        if (st != STORE_OK)
            return STORE_MISS;
        st = store_commit_ex(ctx, &r, &sr, ITEM_S_TOKEN | ITEM_S_FETCHED, 0, &cas);
        if (st == STORE_OK) {
            memset(out, 0, sizeof(*out));
            out->nkey = (uint8_t)nkey;
            out->cas = cas;
            out->exptime = req->vivify_exptime;
            out->last_access = clock_now();
            out->won = true;
            out->class_id = classes_id(&s->classes, item_mc_size(nkey, 0, 0, s->opt.cas_enabled));
            return STORE_MISS;
        }
        if (st != STORE_NOT_STORED)
            return STORE_MISS;
        /* Someone else created it meanwhile: read theirs. */
        struct store_get_req again = *req;
        again.vivify = false;
        st = store_get(ctx, key, nkey, &again, out);
        if (st == STORE_OK)
            return st;
    }
    return STORE_MISS;
}

enum store_status store_touch(struct store_ctx *ctx, const char *key, size_t nkey,
                              rel_time_t exptime)
{
    struct store_get_req req = {.touch = true, .exptime = exptime};
    struct store_item it;
    return store_get(ctx, key, nkey, &req, &it);
}

/* ---- delete ------------------------------------------------------------ */

enum store_status store_delete(struct store_ctx *ctx, const char *key, size_t nkey,
                               const struct store_delete_req *req)
{
    static const struct store_delete_req plain;
    struct store *s = ctx->store;
    if (!req)
        req = &plain;
    if (nkey == 0 || nkey > STORE_KEY_MAX)
        return STORE_MISS;
    struct store_key k = store_key_of(key, nkey);
    /* A plain delete of an item on flash drops it there, as memcached's
     * unlinks its header item: no read of its value into RAM first. */
    bool keep = !req->cas_compare && !req->drop_value && !req->invalidate;
    for (;;) {
        struct store_found f;
        /* not a fetch: a delete whose CAS differs leaves it unread */
        if (!store_lookup(ctx, &k,
                          STORE_LOOK_NO_BUMP | STORE_LOOK_NO_VALUE |
                              (keep ? STORE_LOOK_KEEP_FLASH : STORE_LOOK_FIND),
                          &f)) {
            /* not in RAM: a flash copy (a delete not probed first) goes
             * too, as any write drops one (store_link) */
            if (s->flash)
                flash_tier_drop_tag(s->flash, &f.keys, index_flash_tag(&s->index, k.hv), NULL);
            store_found_unlock(&f);
            if (f.on_flash)
                return STORE_OK;
            if (req->miss_out)
                *req->miss_out = f.gone == ITEM_FLUSHED   ? STORE_MISS_FLUSHED
                                 : f.gone == ITEM_EXPIRED ? STORE_MISS_EXPIRED
                                                          : STORE_MISS_ABSENT;
            return STORE_MISS;
        }
        uint64_t cas = item_get_cas(f.p, &f.h, f.seg->cas_base);
        if (req->cas_compare && req->cas_compare != cas) {
            store_found_unlock(&f);
            return STORE_EXISTS;
        }
        if (req->class_out)
            *req->class_out = classes_item(&s->classes, f.p, &f.h).cls;
        if (req->size_out)
            *req->size_out = f.h.nvalue;
        if (req->drop_value) {
            /* md x: the item stays, empty, with md's flags (F, else 0) and
             * the same CAS. */
            uint64_t snap = slot_load(f.slot);
            store_found_unlock(&f);
            struct store_set_req sr = {
                .mode = STORE_MODE_SET,
                .flags = req->flags,
                .exptime = req->touch ? req->exptime : REL_TIME_NEVER,
                .cas_new = req->cas_given ? req->cas_new : cas,
                .cas_given = true,
            };
            /* memcached 1.6.45: the emptied item keeps its CAS (or takes
             * E's); invalidating it as well then gives it a new one. */
            if (req->invalidate && !req->cas_given) {
                sr.cas_new = 0;
                sr.cas_given = false;
            }
            struct store_reservation r;
            enum store_status st = store_reserve_for(ctx, key, nkey, 0, req->flags, sr.exptime, &r);
            if (st != STORE_OK)
                return st;
            st = store_commit_ex(ctx, &r, &sr, req->invalidate ? ITEM_S_STALE : 0, snap, NULL);
            if (st == STORE_EXISTS)
                continue; /* changed under us: start over */
            return st;
        }
        if (!req->invalidate) {
            store_unlink(s, &f);
            store_found_unlock(&f);
            return STORE_OK;
        }
        /* md I: mark stale, take the token back, new CAS, maybe new TTL. */
        uint64_t ncas = s->opt.cas_enabled
                            ? (req->cas_given ? req->cas_new
                                              : __atomic_load_n(&s->cas_next, __ATOMIC_RELAXED) + 1)
                            : 0;
        rel_time_t exp = req->touch ? req->exptime : item_get_u32(f.p, f.h.exp_off);
        uint8_t need = store_missing_layout(f.h.layout, 0, exp, s->opt.cas_enabled, ncas,
                                            f.seg->cas_base);
        if (need) {
            store_found_unlock(&f);
            enum store_status st = store_widen(ctx, &k, need, ncas);
            if (st != STORE_OK)
                return st;
            continue;
        }
        if (s->opt.cas_enabled && !req->cas_given)
            ncas = store_next_cas(s);
        if (!item_cas_fits(f.h.layout, ncas, f.seg->cas_base) && s->opt.cas_enabled) {
            store_found_unlock(&f);
            store_widen(ctx, &k, ITEM_L_CAS64, 0);
            continue;
        }
        if (req->touch && f.h.exp_off) {
            item_put_u32(f.p, f.h.exp_off, req->exptime);
            seg_note_exptime(f.seg, req->exptime);
        }
        uint32_t st = item_get_st(f.p, &f.h, f.seg->tbase);
        st = (st | ITEM_S_STALE) & ~ITEM_S_TOKEN;
        item_put_st(f.p, &f.h, f.seg->tbase, st);
        item_put_cas(f.p, &f.h, ncas, f.seg->cas_base);
        seg_note_cas(f.seg, ncas);
        store_found_unlock(&f);
        return STORE_OK;
    }
}

/* ---- flush ------------------------------------------------------------- */

/* memcached 1.6.45's do_item_flush_expired, run by an immediate flush_all:
 * every item accessed at or after oldest_live (the flush's second and the
 * one before) is unlinked there and then, uncounted (no reclaimed, no
 * expired_unfetched; a read of it is a plain miss, not get_flushed). The
 * access time alone cannot tell such an item stored just before the flush
 * from one stored just after it, and with -C there is no CAS to: this pass
 * leaves only the second kind. Older items are left to the lazy test and
 * the housekeeper, which count them. The whole index is read, but items are
 * looked at only in segments written since oldest_live (memcached walks its
 * LRU heads, newest first, until the first older item). */
static void store_flush_recent(struct store *s, rel_time_t ol)
{
    uint64_t nb = 0;
    uint64_t *b;
    index_walk_begin(&s->index); /* no entry may move past the walk */
    for (uint64_t i = 0; (b = index_lock_nth(&s->index, i, &nb)); i++) {
        for (uint64_t *cur = b; cur; cur = index_next(&s->index, cur)) {
            for (int j = 0; j < INDEX_SLOTS; j++) {
                uint64_t sl = slot_load(index_slot(cur, j));
                /* flash items: judged against the flush when read */
                if (!sl || slot_is_flash(sl))
                    continue;
                struct seg *seg = seg_of(&s->pool, slot_seg(sl));
                /* nothing linked there since: its items are older (but
                 * for a hit's bump, which memcached's walk may miss too) */
                if (__atomic_load_n(&seg->last_write, __ATOMIC_RELAXED) < ol)
                    continue;
                struct store_found f = {.chain = b,
                                        .slot = index_slot(cur, j),
                                        .p = seg_item(&s->pool, sl),
                                        .seg = seg};
                item_decode(f.p, &f.h);
                if ((item_get_st(f.p, &f.h, seg->tbase) & ~ITEM_S_MASK) < ol)
                    continue;
                store_unlink(s, &f);
                /* The chain may have lost a bucket: start this one over. */
                cur = b;
                j = -1;
            }
        }
        index_unlock(b);
    }
    index_walk_end(&s->index);
}

void store_flush(struct store *s, rel_time_t when)
{
    /* memcached 1.6.45's process_flush_all_command rule, to the second:
     * oldest_live is the second before the flush time, with or without
     * CAS (1.6.18 took the flush time itself under -C, which hid items
     * stored in the flush's second after it). */
    rel_time_t now = clock_now();
    rel_time_t ol = when - 1;
    pthread_mutex_lock(&s->life.flush_lock);
    uint64_t oc = __atomic_load_n(&s->life.oldest_cas, __ATOMIC_RELAXED);
    if (s->opt.cas_enabled && ol <= now)
        oc = store_next_cas(s);
    /* -e: in the file before any reader can see it, so an item seen
     * flushed never comes back after a kill. */
    if (s->pm)
        persist_flush(s->pm, ol, oc);
    /* oldest_cas first: a reader that sees the new oldest_live (acquire)
     * sees the CAS that goes with it. */
    __atomic_store_n(&s->life.oldest_cas, oc, __ATOMIC_RELAXED);
    __atomic_store_n(&s->life.oldest_live, ol, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->life.flush_lock);
    /* A time before the server started (flush_all at a unix time already
     * past) leaves oldest_live 0, which flushes nothing: 1.6.45's
     * item_is_flushed and life_of_item read 0 as no flush. */
    if (ol && ol <= now)
        store_flush_recent(s, ol);
    /* memcached's LRU maintainer reclaims flushed items within a fraction
     * of a second (`reclaimed`, `curr_items` drop): an immediate flush
     * wakes the housekeeper instead of waiting for its next tick. */
    if (s->hk.running && when <= now) {
        pthread_mutex_lock(&s->hk.lock);
        s->hk.kick = true;
        pthread_cond_signal(&s->hk.cond);
        pthread_mutex_unlock(&s->hk.lock);
    }
}

void store_set_lru_segmented(struct store *s, bool segmented)
{
    __atomic_store_n(&s->lru_flat, (uint8_t)!segmented, __ATOMIC_RELAXED);
}

void store_set_temporary_ttl(struct store *s, int ttl)
{
    __atomic_store_n(&s->temp_ttl, ttl < 0 ? (int64_t)-1 : (int64_t)ttl, __ATOMIC_RELAXED);
}

int store_set_mem_limit(struct store *s, size_t bytes)
{
    if (seg_set_limit(&s->pool, bytes) != 0)
        return -1;
    /* What follows the limit reads it again from the pool under ctx_lock,
     * so two changes at once end on the last one's limit. */
    pthread_mutex_lock(&s->ctx_lock);
    if (!s->opt.upload_limit) /* the default is an eighth of -m */
        store_upload_set_limit(
            &s->up, store_upload_default_limit(__atomic_load_n(&s->pool.mem_limit, __ATOMIC_RELAXED),
                                               s->opt.item_size_max));
    /* Open segments are sealed where the limit falls (they count against
     * its smaller budget and room) or the sets change, not where it only
     * rises: a sealed segment's unwritten end is memory no item uses. */
    uint32_t segs = __atomic_load_n(&s->pool.seg_limit, __ATOMIC_RELAXED);
    uint32_t n = store_sets_for(s, segs);
    if (n != s->nsets || segs < s->sets_limit)
        __atomic_store_n(&s->sets_epoch, s->sets_epoch + 1, __ATOMIC_RELEASE);
    s->nsets = n;
    s->sets_limit = segs;
    pthread_mutex_unlock(&s->ctx_lock);
    return 0;
}

/* ---- walk -------------------------------------------------------------- */

/* ---- stats ------------------------------------------------------------- */

void store_stats(struct store *s, struct store_stats *out)
{
    memset(out, 0, sizeof(*out));
    struct store_ctx_counters sum;
    pthread_mutex_lock(&s->ctx_lock);
    sum = s->gone;
    for (struct store_ctx *c = s->ctxs; c; c = c->next) {
#define STORE_CTX_SUM(n) sum.n += __atomic_load_n(&c->cnt.n, __ATOMIC_RELAXED);
        STORE_COUNTERS(STORE_CTX_SUM)
#undef STORE_CTX_SUM
    }
    pthread_mutex_unlock(&s->ctx_lock);
#define STORE_CTX_COPY(n) out->n = sum.n;
    STORE_COUNTERS(STORE_CTX_COPY)
#undef STORE_CTX_COPY
    out->upload_bytes = __atomic_load_n(&s->up.bytes, __ATOMIC_RELAXED);
    out->upload_limit = __atomic_load_n(&s->up.limit, __ATOMIC_RELAXED);
    out->limit_maxbytes = __atomic_load_n(&s->pool.mem_limit, __ATOMIC_RELAXED);
    out->hash_power_level = index_level(&s->index);
    out->hash_bytes = index_bytes(&s->index) +
                      (s->ghost.tab ? (s->ghost.mask + 1) * sizeof(*s->ghost.tab) : 0);
    out->hash_is_expanding = index_expanding(&s->index);
    out->seg_size = s->pool.seg_size;
    out->lru_crawler_running = __atomic_load_n(&s->hk.crawl_running, __ATOMIC_ACQUIRE);
    out->initial_malloced = s->opt.initial_malloced;
    if (s->pm) {
        out->restore_mode = s->pm->start;
        out->restored_items = s->pm->restored_items;
        out->restore_discarded_expired = s->pm->discarded_expired;
        out->restore_discarded_corrupt = s->pm->discarded_corrupt;
        out->restore_ms = s->pm->restore_us / 1000;
        out->restore_cpu_ms = s->pm->restore_cpu_us / 1000;
    }
    seg_counts(&s->pool, out); /* curr_items, bytes, segments, the segment table */
    store_flash_stats(s, out);
}
