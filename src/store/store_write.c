/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes: reserve -> fill -> commit, by memcached's do_store_item rules.
 *
 * A reservation is space at the end of the worker's open segment with a
 * header already laid out; the segment stays pinned until commit or abort.
 * A commit needing fields the reserved layout lacks (flags, expiry, a CAS
 * too far from the segment's base), or whose segment was evicted meanwhile,
 * moves the value to a fresh reservation first: rare, and never visible.
 * Values are never changed once linked, so pinned readers are never racing
 * a writer: every change is a new item replacing the slot.
 */
#include "store/store_write.h"
#include "store/store_core.h"
#include "store/store_link.h"
#include "store/store_classes.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_lookup.h"
#include "store/store_seg.h"
#include "store/store_upload.h"
#include "store/persist/persist.h"
#include "store/flash/flash_tier.h"

#include <string.h>

/* A write of `bytes` into the store: once -m is all in use it owes that
 * much eviction, paid every SEG_PAY_BYTES (seg_pay). */
static inline void store_owe(struct store_ctx *ctx, size_t bytes)
{
    if (!__atomic_load_n(&ctx->store->pool.evict_pace, __ATOMIC_RELAXED))
        return;
    ctx->seg.evict_debt += (uint32_t)bytes;
    if (ctx->seg.evict_debt >= SEG_PAY_BYTES)
        seg_pay(&ctx->seg);
}

/* Whether req names the CAS to give (else the counter's next). */
static inline bool set_cas_given(const struct store_set_req *req)
{
    return req->cas_new || req->cas_given;
}

static size_t store_align(struct store *s, size_t n)
{
    size_t a = (size_t)1 << s->pool.off_shift;
    return (n + a - 1) & ~(a - 1);
}

/* CAS numbers other workers may take between a reservation and its commit,
 * for the 2-byte delta to still fit (store_reserve_raw). */
#define STORE_CAS16_SLACK 4096

/* store_reserve_raw's append to the open segment of `at` (its lock held
 * when shared). */
static enum store_status store_reserve_at(struct store_ctx *ctx, struct seg_open_set *at,
                                          size_t size, const char *key, size_t nkey,
                                          size_t nvalue, uint8_t layout, unsigned g,
                                          uint64_t cas_hint, struct store_reservation *res)
{
    struct store *s = ctx->store;
    struct seg *seg = at->open[g];
    if (!seg && g != STORE_GROUP_TEMP &&
        __atomic_load_n(&s->pool.open_segs, __ATOMIC_RELAXED) >=
            __atomic_load_n(&s->pool.open_max, __ATOMIC_RELAXED)) {
        /* Open segments are partly empty memory: past the budget a new TTL
         * group shares this worker's nearest open one instead (never the
         * temporary group's, whose segments eviction spares). */
        for (unsigned d = 1; d < STORE_TTL_GROUPS && !seg; d++) {
            if (g >= d && at->open[g - d])
                seg = at->open[g -= d];
            else if (g + d < STORE_TTL_GROUPS && at->open[g + d])
                seg = at->open[g += d];
        }
    }
    /* A spent open segment (nothing in it wanted) is made empty in place:
     * its room is reused, not a new segment's. */
    if (seg && seg_spent(seg, s->pool.seg_size))
        seg_recycle(&ctx->seg, seg);
    if (!seg || seg->write_off + size > s->pool.seg_size) {
        seg = seg_open(&ctx->seg, g);
        /* Never write past a segment's end (seg_open hands out empty
         * segments; this guards that promise, see test_store_compact). */
        if (!seg || seg->write_off + size > s->pool.seg_size)
            return STORE_NO_MEMORY;
    }
    if (!(layout & ITEM_L_AT32) && clock_now() - seg->tbase >= ITEM_AT_SECS - 60) {
        /* The segment's clock no longer holds a second: the full time, or
         * the commit would move the item for it (a minute's slack). */
        size_t wide = size - item_hdr_len(layout, (uint32_t)nvalue) +
                      item_hdr_len(layout | ITEM_L_AT32, (uint32_t)nvalue);
        if (seg->write_off + wide <= s->pool.seg_size) {
            layout |= ITEM_L_AT32;
            size = wide;
        }
    }
    if ((layout & ITEM_L_CASW) == ITEM_L_CAS32) {
        /* A 2-byte CAS delta when the CAS the commit takes will likely fit
         * it: the hint when the caller knows that CAS (a client's E, a
         * kept CAS), else the counter's next with room for other workers.
         * Narrowing past a known CAS would make the commit relocate again
         * into the same width, for ever. */
        uint64_t soon = cas_hint ? cas_hint
                                 : __atomic_load_n(&s->cas_next, __ATOMIC_RELAXED) +
                                       STORE_CAS16_SLACK;
        if (soon >= seg->cas_base && soon - seg->cas_base <= UINT16_MAX) {
            layout |= ITEM_L_CAS16;
            size -= 2;
        }
    }
    uint32_t off = seg->write_off;
    char *p = seg->data + off;
    uint32_t hlen = item_init(p, layout, key, (uint8_t)nkey, (uint32_t)nvalue);
    seg->write_off = (uint32_t)store_align(s, off + size);
    if (s->pm) /* after the header: a restore walks only laid-out items */
        pm_store32(&pm_seg(s->pm, seg->id)->write_off, seg->write_off);
    __atomic_fetch_add(&seg->refcount, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&seg->reserving, 1, __ATOMIC_RELAXED);
    ctx->seg.reserving++;
    res->value = p + hlen + nkey;
    res->nvalue = (uint32_t)nvalue;
    res->seg = seg;
    res->item = p;
    res->gen = __atomic_load_n(&seg->gen, __ATOMIC_ACQUIRE);
    res->group = (uint8_t)g;
    return STORE_OK;
}

static void store_set_seal_locked(struct store_ctx *c, struct seg_open_set *set)
{
    for (unsigned g = 0; g < STORE_GROUPS; g++)
        if (set->open[g]) {
            seg_close(&c->seg, set->open[g]);
            set->open[g] = NULL;
        }
}

void store_set_seal(struct store_ctx *c, struct seg_open_set *set)
{
    seg_open_set_lock(set);
    store_set_seal_locked(c, set);
    seg_open_set_unlock(set);
}

/* Seal set's open segments, once per limit change (epoch, newer than
 * the set's: a follower of an older change that comes late leaves it
 * be): a lowered limit's budget of open segments, and the room eviction
 * needs, count from here, and an idle group's or worker's open segment
 * would hold its memory for as long as nothing is written there. And
 * whenever a writer leaves a set that nothing will write again (left): a
 * sharer that had not yet followed the change may have opened one since. */
static void store_set_close(struct store_ctx *c, struct seg_open_set *set, uint32_t epoch,
                            bool left)
{
    seg_open_set_lock(set);
    bool newer = (int32_t)(epoch - set->epoch) > 0;
    if (newer)
        set->epoch = epoch;
    if (left || newer)
        store_set_seal_locked(c, set);
    seg_open_set_unlock(set);
}

static void store_ctx_follow_limit_slow(struct store_ctx *c)
{
    struct store *s = c->store;
    pthread_mutex_lock(&s->ctx_lock);
    uint32_t epoch = s->sets_epoch;
    struct seg_open_set *from = c->seg.at, *to = store_set_of(s, c);
    bool left = false;
    if (to != from) {
        /* its own set, one no ctx takes now, or one whose last user this
         * is (the housekeeper's ctx, which never follows, may still count) */
        left = --from->users == 0 || !from->shared ||
               (uint32_t)(from - s->shared_sets) >= s->nsets;
        to->users++;
    }
    c->sets_epoch = epoch;
    pthread_mutex_unlock(&s->ctx_lock);
    /* The set it leaves too: a shared set's other writers may not write
     * again for a while, and its own set has no other writer. */
    store_set_close(c, from, epoch, left);
    if (to != from)
        store_set_close(c, to, epoch, false);
    c->seg.at = to;
}

/* The check every reservation makes: whether a limit change since ctx
 * last followed one may give it another open set. */
static inline void store_ctx_follow_limit_fast(struct store_ctx *ctx)
{
    if (__builtin_expect(ctx->sets_epoch != __atomic_load_n(&ctx->store->sets_epoch,
                                                            __ATOMIC_ACQUIRE),
                         0))
        store_ctx_follow_limit_slow(ctx);
}

void store_ctx_follow_limit(struct store_ctx *c)
{
    store_ctx_follow_limit_fast(c);
}

enum store_status store_reserve_raw(struct store_ctx *ctx, const char *key, size_t nkey,
                                    size_t nvalue, uint8_t layout, unsigned g, uint64_t cas_hint,
                                    struct store_reservation *res)
{
    struct store *s = ctx->store;
    *res = (struct store_reservation){0};
    if (s->pm)
        layout |= ITEM_L_SUM;
    size_t size = item_hdr_len(layout, (uint32_t)nvalue) + nkey + nvalue;
    if (size > s->pool.seg_size)
        return STORE_TOO_LARGE;
    store_owe(ctx, size);
    store_ctx_follow_limit_fast(ctx);
    struct seg_open_set *at = ctx->seg.at;
    seg_open_set_lock(at);
    enum store_status st = store_reserve_at(ctx, at, size, key, nkey, nvalue, layout, g, cas_hint, res);
    seg_open_set_unlock(at);
    return st;
}

enum store_status store_reserve(struct store_ctx *ctx, const char *key, size_t nkey,
                                size_t nvalue, struct store_reservation *res)
{
    struct store *s = ctx->store;
    enum store_status st = store_check_size(s, nkey, nvalue, 0);
    if (st != STORE_OK)
        return st;
    /* Flags and expiry are not known yet: make room for both. */
    uint8_t layout = ITEM_L_FLAGS | ITEM_L_EXP | (s->opt.cas_enabled ? ITEM_L_CAS32 : 0);
    /* expiry unknown: never guess the temporary group, which eviction spares */
    unsigned g = ctx->last_group == STORE_GROUP_TEMP ? 0 : ctx->last_group;
    return store_reserve_raw(ctx, key, nkey, nvalue, layout, g, 0, res);
}

enum store_status store_reserve_for(struct store_ctx *ctx, const char *key, size_t nkey,
                                    size_t nvalue, uint32_t flags, rel_time_t exptime,
                                    struct store_reservation *res)
{
    return store_reserve_with(ctx, key, nkey, nvalue, flags, exptime, 0, res);
}

enum store_status store_reserve_with(struct store_ctx *ctx, const char *key, size_t nkey,
                                     size_t nvalue, uint32_t flags, rel_time_t exptime,
                                     uint8_t more, struct store_reservation *res)
{
    struct store *s = ctx->store;
    enum store_status st = store_check_size(s, nkey, nvalue, flags);
    if (st != STORE_OK)
        return st;
    uint8_t layout = (flags ? ITEM_L_FLAGS : 0) | (exptime != REL_TIME_NEVER ? ITEM_L_EXP : 0) |
                     (s->opt.cas_enabled ? ITEM_L_CAS32 : 0) | more;
    unsigned g = store_ttl_group(s, exptime, clock_now());
    ctx->last_group = (uint8_t)g;
    return store_reserve_raw(ctx, key, nkey, nvalue, layout, g, 0, res);
}

const char *store_reservation_key(const struct store_reservation *res, size_t *nkey)
{
    if (res->stage) { /* an upload, or one cut off for others: its key is staged */
        *nkey = res->nkey;
        return store_upload_key(res);
    }
    if (!res->item) { /* a cut upload whose stage could not keep its key */
        *nkey = 0;
        return "";
    }
    struct item_hdr h;
    item_decode(res->item, &h);
    *nkey = h.nkey;
    return (const char *)res->item + h.hlen;
}

unsigned store_reservation_class(const struct store_ctx *ctx, const struct store_reservation *res,
                                 uint32_t flags)
{
    size_t nkey;
    if (res->stage || res->cut) {
        nkey = res->nkey; /* an upload, or one cut off (its memory is gone) */
    } else if (res->item) {
        store_reservation_key(res, &nkey);
    } else {
        return 0; /* nothing reserved: no class */
    }
    return store_class_for(ctx, nkey, res->nvalue, flags);
}

/* store_abort, inlined into this file's commits, which end every
 * reservation they take. */
static inline void store_release(struct store_ctx *ctx, struct store_reservation *res)
{
    if (res->stage)
        store_upload_free(ctx, res);
    res->cut = false;
    if (res->seg) {
        __atomic_fetch_sub(&((struct seg *)res->seg)->reserving, 1, __ATOMIC_RELAXED);
        ctx->seg.reserving--;
        seg_unpin(res->seg);
    }
    res->seg = NULL;
    res->item = NULL;
}

void store_abort(struct store_ctx *ctx, struct store_reservation *res)
{
    store_release(ctx, res);
}

/* Move a reservation's key and value to fresh space with `layout`. */
static enum store_status store_relocate(struct store_ctx *ctx, struct store_reservation *res,
                                        uint8_t layout, uint64_t cas_hint)
{
    struct item_hdr h;
    item_decode(res->item, &h);
    struct store_reservation r;
    ctx->seg.self_pin = res->seg;
    enum store_status st = store_reserve_raw(ctx, res->item + h.hlen, h.nkey, h.nvalue, layout,
                                             res->group, cas_hint, &r);
    ctx->seg.self_pin = NULL;
    if (st == STORE_OK)
        memcpy(r.value, res->value, h.nvalue);
    store_release(ctx, res);
    if (st == STORE_OK)
        *res = r;
    return st;
}

/* When the reservation is still the last thing in the worker's open
 * segment and the committed fields need fewer header bytes than were
 * reserved (store_reserve cannot know flags and expiry), slide the key and
 * value down and give the bytes back. Only the owner appends to its open
 * segment, so nothing else can see these bytes yet; a shared set's others
 * could append behind them, so there it is not done. */
#define STORE_SHRINK_MAX 4096

static void store_shrink(struct store_ctx *ctx, struct store_reservation *res, uint8_t layout)
{
    struct store *s = ctx->store;
    struct seg *seg = res->seg;
    struct item_hdr h;
    item_decode(res->item, &h);
    uint8_t have = h.layout;
    layout |= have & ITEM_L_AT32; /* its time was found not to fit without */
    /* -e: a restore walks the segment up to its end, which this rewrites
     * under a half-moved item; the bytes saved are not worth that. */
    if (s->pm || layout == have || item_layout_merge(have, layout) != have ||
        h.nvalue > STORE_SHRINK_MAX || ctx->seg.at->shared || ctx->seg.at->open[res->group] != seg)
        return;
    uint32_t off = (uint32_t)((char *)res->item - seg->data);
    if (store_align(s, off + item_total(&h)) != seg->write_off)
        return;
    char *p = res->item;
    uint32_t hlen = item_hdr_len(layout, h.nvalue);
    char tmp[ITEM_HDR_MAX];
    /* New header in front of the key and value moved down. */
    memmove(p + hlen, p + h.hlen, (size_t)h.nkey + h.nvalue);
    item_init(tmp, layout, "", 0, h.nvalue);
    memcpy(p, tmp, 2);
    p[1] = (char)h.nkey;
    memcpy(p + 2, tmp + 2, hlen - 2);
    seg->write_off = (uint32_t)store_align(s, off + hlen + h.nkey + h.nvalue);
    res->value = p + hlen + h.nkey;
}

static bool store_gen_moved(const struct store_reservation *res)
{
    return __atomic_load_n(&((struct seg *)res->seg)->gen, __ATOMIC_ACQUIRE) != res->gen;
}

/* Write an item's fields once it is known they fit its layout. */
static void store_put_fields(char *p, const struct item_hdr *h, uint32_t status, uint32_t flags,
                             rel_time_t exptime, uint64_t cas, const struct seg *seg)
{
    uint64_t cas_base = seg->cas_base;
    item_put_st(p, h, seg->tbase, status);
    if (h->flags_off)
        item_put_u32(p, h->flags_off, flags);
    if (h->exp_off)
        item_put_u32(p, h->exp_off, exptime);
    item_put_cas(p, h, cas, cas_base);
}

/* A storage command's key is looked up with reclaim in memcached's flat LRU
 * mode (store_lookup_write): memcached allocated its item first, and that
 * allocation reclaimed the key's expired or flushed item at the LRU tail. */
static bool store_write_reclaims(struct store *s)
{
    return __atomic_load_n(&s->lru_flat, __ATOMIC_RELAXED);
}

/* store_commit_ex; reclaim: see store_lookup_write. */
static enum store_status store_commit_at(struct store_ctx *ctx, struct store_reservation *res,
                                         const struct store_set_req *req, uint32_t status,
                                         uint64_t expect_slot, bool reclaim, uint64_t *cas_out)
{
    struct store *s = ctx->store;
    bool cas_on = s->opt.cas_enabled;
    enum store_mode mode = req->mode;
    if (req->cas_compare && (mode == STORE_MODE_SET || mode == STORE_MODE_REPLACE))
        mode = STORE_MODE_CAS;

    struct item_hdr h;
    item_decode(res->item, &h);
    struct store_key k = store_key_of(res->item + h.hlen, h.nkey);
    /* Fields found needed beyond the request's own (a stale set keeps the
     * old TTL). They only add up, so the relocations below end; the CAS
     * width is not among them: it is worked out anew for each segment. */
    uint8_t extra = 0;

    if (cas_on || req->flags || req->exptime) {
        uint64_t peek =
            set_cas_given(req) ? req->cas_new : __atomic_load_n(&s->cas_next, __ATOMIC_RELAXED) + 1;
        store_shrink(ctx, res,
                     item_layout_for(req->flags, req->exptime, cas_on, peek,
                                     ((struct seg *)res->seg)->cas_base));
    } else {
        store_shrink(ctx, res, 0);
    }

    for (;;) {
        struct seg *seg = res->seg;
        item_decode(res->item, &h);
        k.key = res->item + h.hlen; /* store_shrink and store_relocate move it */
        uint64_t peek = !cas_on ? 0
                        : set_cas_given(req) ? req->cas_new
                                       : __atomic_load_n(&s->cas_next, __ATOMIC_RELAXED) + 1;
        uint8_t need = store_missing_layout(h.layout, req->flags, req->exptime, cas_on, peek,
                                            seg->cas_base) |
                       (extra & (uint8_t)~h.layout);
        if (need || store_gen_moved(res)) {
            /* The fields the request needs, and a CAS delta the fresh
             * reservation narrows as its segment allows. */
            uint8_t want = (req->flags ? ITEM_L_FLAGS : 0) |
                           (req->exptime != REL_TIME_NEVER ? ITEM_L_EXP : 0) | extra |
                           (cas_on ? ITEM_L_CAS32 : 0);
            enum store_status st =
                store_relocate(ctx, res, item_layout_merge(want, need), req->cas_new);
            if (st != STORE_OK)
                return st;
            continue;
        }
        /* -e: the checksum over key, value and the flags it will have, before
         * the bucket lock (the reservation is this thread's and its bytes
         * stay put while its segment's generation does, checked below). */
        uint32_t sum = s->pm ? item_sum_for(res->item, &h, req->flags) : 0;
        struct store_found f;
        /* an add finds a flash item there and leaves it, as memcached's
         * finds its header item: no read of the value into RAM for it;
         * nor is a write's look at it a fetch (a cas that fails leaves it
         * unread, as memcached's lookup without a bump) */
        bool found = store_lookup_write(
            ctx, &k,
            STORE_LOOK_NO_BUMP | STORE_LOOK_NO_VALUE |
                (mode == STORE_MODE_ADD ? STORE_LOOK_KEEP_FLASH : STORE_LOOK_FIND) |
                (mode == STORE_MODE_SET && !expect_slot ? STORE_LOOK_REPLACES : 0),
            reclaim, &f);
        rel_time_t now = f.now;
        if (store_gen_moved(res)) {
            store_found_unlock(&f);
            continue;
        }
        enum store_status refuse = STORE_OK;
        bool stale = false;
        uint64_t old_cas = found ? item_get_cas(f.p, &f.h, f.seg->cas_base) : 0;
        if (mode == STORE_MODE_CAS)
            res->cas_cls = found ? classes_item(&s->classes, f.p, &f.h).cls : 0;
        uint64_t *flash_slot = NULL, *flash_chain = NULL;
        if (expect_slot && slot_is_flash(expect_slot)) {
            /* a flash item read back (store_flash.c): only while its
             * flash slot, in either bucket (a miss holds both), is still
             * the key's */
            flash_slot = found ? NULL : index_pair_find(&s->index, &f.keys, expect_slot, &flash_chain);
            if (!flash_slot)
                refuse = STORE_EXISTS;
        } else if (expect_slot && (!found || !slot_same(slot_load(f.slot), expect_slot))) {
            refuse = STORE_EXISTS;
        } else if (mode == STORE_MODE_ADD && f.on_flash) {
            refuse = STORE_NOT_STORED;
        } else if (mode == STORE_MODE_ADD && found) {
            /* memcached bumps the existing item instead. */
            uint32_t st = item_get_st(f.p, &f.h, f.seg->tbase);
            if ((st & ~ITEM_S_MASK) + 60 < now)
                item_put_st(f.p, &f.h, f.seg->tbase, (st & ITEM_S_MASK) | now);
            slot_hit_at(f.slot);
            refuse = STORE_NOT_STORED;
        } else if (mode == STORE_MODE_REPLACE && !found) {
            refuse = STORE_NOT_STORED;
        } else if (mode == STORE_MODE_CAS) {
            uint64_t c = req->cas_compare;
            if (!found)
                refuse = STORE_MISS;
            else if (c != 0 && c == old_cas)
                ;
            else if (req->invalidate && c != 0 && c < old_cas)
                stale = true;
            else
                refuse = STORE_EXISTS;
        }
        if (refuse != STORE_OK) {
            store_found_unlock(&f);
            store_release(ctx, res);
            return refuse;
        }
        rel_time_t exptime = req->exptime;
        /* an access time given (a flash item read back) is kept */
        uint32_t st = status & ~ITEM_S_MASK ? status : (status & ITEM_S_MASK) | now;
        if (stale) {
            /* A stale set keeps the TTL, and the token if one was sent. */
            exptime = item_get_u32(f.p, f.h.exp_off);
            st |= ITEM_S_STALE | (item_get_status(f.p, &f.h) & ITEM_S_TOKEN);
        }
        uint64_t cas = !cas_on ? 0 : set_cas_given(req) ? req->cas_new : store_next_cas(s);
        uint8_t miss =
            store_missing_layout(h.layout, req->flags, exptime, cas_on, cas, seg->cas_base) |
            (item_at_fits(h.layout, st & ~ITEM_S_MASK, seg->tbase) ? 0 : ITEM_L_AT32);
        if (miss) {
            extra |= miss & (uint8_t)~ITEM_L_CASW;
            store_found_unlock(&f);
            continue;
        }
        store_put_fields(res->item, &h, st, req->flags, exptime, cas, seg);
        if (flash_slot)
            flash_tier_clear(s->flash, flash_chain, flash_slot);
        if (!store_link(s, &f, found, res, k.tag, k.hv, &sum)) {
            store_found_unlock(&f);
            store_release(ctx, res);
            return STORE_NO_MEMORY;
        }
        CTR_INC(ctx, total_items);
        store_found_unlock(&f);
        index_maintain(&s->index);
        store_release(ctx, res); /* drops the reservation's pin; the item stays linked */
        if (cas_out)
            *cas_out = cas;
        return STORE_OK;
    }
}

enum store_status store_commit_ex(struct store_ctx *ctx, struct store_reservation *res,
                                  const struct store_set_req *req, uint32_t status,
                                  uint64_t expect_slot, uint64_t *cas_out)
{
    return store_commit_at(ctx, res, req, status, expect_slot, false, cas_out);
}

/* append / prepend: a new item holding both parts replaces the old one. */
static enum store_status store_concat(struct store_ctx *ctx, struct store_reservation *res,
                                      const struct store_set_req *req, uint64_t *cas_out,
                                      uint32_t *size_out)
{
    struct store *s = ctx->store;
    bool cas_on = s->opt.cas_enabled;
    struct item_hdr h;
    item_decode(res->item, &h);
    const char *key = res->item + h.hlen;
    struct store_key k = store_key_of(key, h.nkey);
    uint8_t extra = 0;
    bool reclaim = store_write_reclaims(s);

    for (;;) {
        struct store_found f;
        if (!store_lookup_write(ctx, &k, STORE_LOOK_PIN | STORE_LOOK_KEEP_FLASH, reclaim, &f)) {
            store_found_unlock(&f);
            /* memcached refuses to append to an item whose value is on
             * extstore (after its CAS check: a CAS that differs is EXISTS);
             * read back by a get first, it is a RAM item again */
            if (f.on_flash && req->cas_compare && req->cas_compare != f.flash->cas) {
                res->cas_cls =
                    classes_id(&s->classes, classes_ext_hdr_size(&s->classes, h.nkey, f.flash->flags));
                store_release(ctx, res);
                return STORE_EXISTS;
            }
            if (!req->vivify || f.on_flash) {
                store_release(ctx, res);
                return STORE_NOT_STORED;
            }
            struct store_set_req sr = *req;
            sr.mode = STORE_MODE_ADD;
            sr.exptime = req->vivify_exptime;
            sr.cas_compare = 0;
            uint32_t n = res->nvalue;
            enum store_status st = store_commit_at(ctx, res, &sr, 0, 0, reclaim, cas_out);
            if (st == STORE_OK && size_out)
                *size_out = n;
            return st;
        }
        uint64_t old_cas = item_get_cas(f.p, &f.h, f.seg->cas_base);
        if (req->cas_compare)
            res->cas_cls = classes_item(&s->classes, f.p, &f.h).cls;
        if (req->cas_compare && req->cas_compare != old_cas) {
            store_found_unlock(&f);
            seg_unpin(f.seg);
            store_release(ctx, res);
            return STORE_EXISTS;
        }
        uint64_t snap = slot_load(f.slot);
        struct seg *oseg = f.seg;
        struct item_hdr oh = f.h;
        const char *op = f.p;
        uint32_t flags = item_get_u32(op, oh.flags_off);
        rel_time_t exp = item_get_u32(op, oh.exp_off);
        store_found_unlock(&f);

        size_t total = (size_t)oh.nvalue + res->nvalue;
        if (item_mc_size(h.nkey, total, flags, cas_on) > s->opt.item_size_max) {
            seg_unpin(oseg);
            store_release(ctx, res);
            return STORE_NOT_STORED;
        }
        uint8_t layout = item_layout_merge(
            (flags ? ITEM_L_FLAGS : 0) | (exp ? ITEM_L_EXP : 0) | (cas_on ? ITEM_L_CAS32 : 0),
            extra);
        struct store_reservation r;
        ctx->seg.self_pin = oseg;
        enum store_status st = store_reserve_raw(ctx, key, h.nkey, total, layout,
                                                 store_ttl_group(s, exp, clock_now()),
                                                 req->cas_new, &r);
        ctx->seg.self_pin = NULL;
        if (st != STORE_OK) {
            seg_unpin(oseg);
            store_release(ctx, res);
            return st;
        }
        const char *oval = op + oh.hlen + oh.nkey;
        if (req->mode == STORE_MODE_APPEND) {
            memcpy(r.value, oval, oh.nvalue);
            memcpy(r.value + oh.nvalue, res->value, res->nvalue);
        } else {
            memcpy(r.value, res->value, res->nvalue);
            memcpy(r.value + res->nvalue, oval, oh.nvalue);
        }
        seg_unpin(oseg);

        uint32_t sum = 0; /* -e: before the lock, as in store_commit_ex */
        if (s->pm) {
            struct item_hdr rh;
            item_decode(r.item, &rh);
            sum = item_sum_for(r.item, &rh, flags);
        }
        bool same = store_lookup_write(ctx, &k, STORE_LOOK_FIND, reclaim, &f) &&
                    slot_same(slot_load(f.slot), snap) && !store_gen_moved(&r);
        rel_time_t now = f.now;
        if (same) {
            struct item_hdr nh;
            item_decode(r.item, &nh);
            struct seg *ns = r.seg;
            exp = item_get_u32(f.p, f.h.exp_off); /* a touch may have moved it */
            uint64_t cas = !cas_on ? 0 : set_cas_given(req) ? req->cas_new : store_next_cas(s);
            extra = store_missing_layout(nh.layout, flags, exp, cas_on, cas, ns->cas_base) |
                    (item_at_fits(nh.layout, now, ns->tbase) ? 0 : ITEM_L_AT32);
            if (!extra) {
                store_put_fields(r.item, &nh, now, flags, exp, cas, ns);
                store_link(s, &f, true, &r, k.tag, k.hv, &sum);
                CTR_INC(ctx, total_items);
                store_found_unlock(&f);
                store_release(ctx, &r);
                store_release(ctx, res);
                if (cas_out)
                    *cas_out = cas;
                if (size_out)
                    *size_out = (uint32_t)total;
                return STORE_OK;
            }
        }
        store_found_unlock(&f);
        store_release(ctx, &r);
    }
}

/* Move a staged upload's value into segment memory (a plain reservation),
 * freeing the stage; on failure the reservation is consumed, and with
 * delete_on_fail the key's old value is deleted (store_set_req's
 * fail_deletes). */
static enum store_status store_upload_place(struct store_ctx *ctx, struct store_reservation *res,
                                     bool delete_on_fail)
{
    struct store_reservation up = *res;
    const char *key = up.value - up.nkey; /* staged right before the value */
    struct store_reservation r;
    enum store_status st =
        up.known ? store_reserve_for(ctx, key, up.nkey, up.nvalue, up.flags, up.exptime, &r)
                 : store_reserve(ctx, key, up.nkey, up.nvalue, &r);
    if (st == STORE_OK)
        memcpy(r.value, up.value, up.nvalue);
    else if (delete_on_fail)
        store_lookup_drop(ctx, key, up.nkey);
    store_upload_free(ctx, &up);
    *res = st == STORE_OK ? r : (struct store_reservation){0};
    return st;
}

static enum store_status store_commit_res(struct store_ctx *ctx, struct store_reservation *res,
                                          const struct store_set_req *req, uint64_t *cas_out,
                                          uint32_t *size_out)
{
    res->cas_cls = 0;
    if (res->cut) {
        /* cut off for others' room: a set fails as store_upload_place's */
        if (res->stage && req->fail_deletes)
            store_lookup_drop(ctx, store_upload_key(res), res->nkey);
        store_release(ctx, res);
        return STORE_NO_MEMORY;
    }
    if (res->stage) {
        enum store_status st = store_upload_place(ctx, res, req->fail_deletes);
        if (st != STORE_OK)
            return st;
    }
    if (req->mode == STORE_MODE_APPEND || req->mode == STORE_MODE_PREPEND)
        return store_concat(ctx, res, req, cas_out, size_out);
    uint32_t n = res->nvalue;
    enum store_status st = store_commit_at(ctx, res, req, 0, 0,
                                           store_write_reclaims(ctx->store), cas_out);
    if (st == STORE_OK && size_out)
        *size_out = n;
    return st;
}

enum store_status store_commit(struct store_ctx *ctx, struct store_reservation *res,
                               const struct store_set_req *req, uint64_t *cas_out,
                               uint32_t *size_out)
{
    /* Before the commit: an upload's placing replaces *res. */
    uint8_t cls = (uint8_t)store_reservation_class(ctx, res, req->flags);
    enum store_status st = store_commit_res(ctx, res, req, cas_out, size_out);
    res->cls = cls;
    return st;
}

enum store_status store_store(struct store_ctx *ctx, const char *key, size_t nkey,
                              const void *value, size_t nvalue,
                              const struct store_set_req *req, uint64_t *cas_out)
{
    struct store_reservation r;
    bool concat = req->mode == STORE_MODE_APPEND || req->mode == STORE_MODE_PREPEND;
    enum store_status st = concat ? store_reserve_for(ctx, key, nkey, nvalue, 0, 0, &r)
                                  : store_reserve_for(ctx, key, nkey, nvalue, req->flags,
                                                      req->exptime, &r);
    if (st != STORE_OK)
        return st;
    memcpy(r.value, value, nvalue);
    return store_commit(ctx, &r, req, cas_out, NULL);
}

enum store_status store_widen(struct store_ctx *ctx, const struct store_key *k, uint8_t layout,
                              uint64_t cas_hint)
{
    struct store *s = ctx->store;
    for (;;) {
        struct store_found f;
        if (!store_lookup(ctx, k, STORE_LOOK_PIN, &f)) {
            store_found_unlock(&f);
            return STORE_MISS;
        }
        uint64_t snap = slot_load(f.slot);
        uint8_t want = item_layout_merge(f.h.layout, layout);
        rel_time_t exp = item_get_u32(f.p, f.h.exp_off);
        /* under the lock: md I rewrites a CAS in place */
        uint64_t held_cas = cas_hint ? cas_hint : item_get_cas(f.p, &f.h, f.seg->cas_base);
        store_found_unlock(&f);

        struct store_reservation r;
        ctx->seg.self_pin = f.seg;
        enum store_status st = store_reserve_raw(ctx, k->key, k->nkey, f.h.nvalue, want,
                                                 store_ttl_group(s, exp, clock_now()), held_cas, &r);
        ctx->seg.self_pin = NULL;
        if (st == STORE_OK)
            memcpy(r.value, f.p + f.h.hlen + f.h.nkey, f.h.nvalue);
        seg_unpin(f.seg);
        if (st != STORE_OK)
            return st;

        struct store_found g;
        bool same = store_lookup(ctx, k, STORE_LOOK_FIND, &g) && slot_same(slot_load(g.slot), snap);
        struct seg *ns = r.seg;
        if (same && __atomic_load_n(&ns->gen, __ATOMIC_ACQUIRE) == r.gen) {
            uint64_t cas = item_get_cas(g.p, &g.h, g.seg->cas_base);
            struct item_hdr nh;
            item_decode(r.item, &nh);
            uint32_t at = item_get_st(g.p, &g.h, g.seg->tbase);
            bool at_fits = item_at_fits(nh.layout, at & ~ITEM_S_MASK, ns->tbase);
            if ((item_cas_fits(nh.layout, cas, ns->cas_base) || !nh.cas_off) && at_fits) {
                item_put_st(r.item, &nh, ns->tbase, at);
                if (nh.flags_off)
                    item_put_u32(r.item, nh.flags_off, item_get_u32(g.p, g.h.flags_off));
                if (nh.exp_off)
                    item_put_u32(r.item, nh.exp_off, item_get_u32(g.p, g.h.exp_off));
                item_put_cas(r.item, &nh, cas, ns->cas_base);
                uint64_t access = slot_load(g.slot) & SLOT_FREQ;
                store_link(s, &g, true, &r, k->tag, k->hv, NULL); /* rare: a touch or CAS that did not fit */
                slot_store(g.slot, slot_load(g.slot) | access);
                if (ctx->flash_relinked)
                    ctx->flash_relinked(ctx, k, snap, slot_load(g.slot));
                store_found_unlock(&g);
                store_release(ctx, &r); /* its pin; the item stays linked */
                return STORE_OK;
            }
            layout = item_layout_merge(layout, at_fits ? ITEM_L_CAS64 : ITEM_L_AT32);
        }
        store_found_unlock(&g);
        store_release(ctx, &r);
    }
}

