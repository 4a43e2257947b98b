/* SPDX-License-Identifier: BSD-3-Clause */
/* The waiting side of the flash tier (store_flash.h), and the tier's place
 * in the store (store_flash_ctl.h). With no flash tier configured every
 * probe is READY and nothing is ever submitted.
 *
 * How a read is served: a probe that finds the key's bucket holding a
 * flash slot with its tag (never its key in RAM) reads the item: from the
 * writer's buffer at once when it is not on the device yet, else by a read
 * started on the worker's own ring (io_uring) or, where it has none,
 * submitted to the device's pool; either completes on the worker's thread.
 * The completion (store_flash_drain, the worker's thread) checks the item
 * against its segment's seed, the key, expiry and flush, and keeps it.
 * The request then runs again from its start; its lookup of the key
 * (store_lookup_write's flash_refill hook) either serves a read that
 * changes nothing from the read's buffer, when memcached's recache rule
 * leaves the item on flash (the reply holds a reference on the buffer
 * until it is written), or copies the item back into RAM with the same
 * CAS, flags, expiry, status bits and access time, in place of the flash
 * slot only if that slot is still the key's (a write or a delete
 * meanwhile wins), and every existing path (gets, meta flags, arith,
 * touch, append, deletes) finds it there. A read that fails, or an item whose check fails,
 * is a miss and its slot is cleared. The wait set remembers each key it
 * read, so a probe run again is READY whatever came of the read. */
#include "store/store_flash.h"
#include "store/store_flash_ctl.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "base/log.h"
#include "store/persist/persist.h"
#include "store/store_core.h"
#include "store/store_lookup.h"
#include "store/store_write.h"

/* A first read takes the item's block and, after its start, its
 * segment's largest item or this much, the lesser: an item up to that is
 * read whole by it (values up to 16 KiB: one read a hit, where 8 KiB took
 * 1.4), a longer one takes a second read once its header says its length;
 * a segment of small items is read no more than they need. */
#define FLASH_FIRST_READ 16384u

/* A read's bytes, shared by its wait entry and the replies that send a
 * value from them (a store_pin with bit 0 set names one: a segment's is
 * aligned), freed by the last of them. The count follows the bytes, which
 * keep the alignment a direct read needs. */
struct flash_buf {
    char *base;
    size_t size; /* bytes at base */
    unsigned refs;
};

static struct flash_buf *buf_new(size_t len, size_t align)
{
    size_t at = (len + 15) & ~(size_t)15;
    void *p;
    if (posix_memalign(&p, align, at + sizeof(struct flash_buf)) != 0)
        return NULL;
    struct flash_buf *b = (struct flash_buf *)((char *)p + at);
    b->base = p;
    b->size = len;
    b->refs = 1;
    return b;
}

static void buf_unref(struct flash_buf *b)
{
    if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
        free(b->base);
}

struct store_pin *store_flash_buf_pin(void *buf)
{
    struct flash_buf *b = buf;
    __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
    return (struct store_pin *)((uintptr_t)b | 1);
}

bool store_flash_pin_is(const struct store_pin *pin)
{
    return (uintptr_t)pin & 1;
}

void store_flash_buf_unpin(struct store_pin *pin)
{
    buf_unref((struct flash_buf *)((uintptr_t)pin & ~(uintptr_t)1));
}

struct flash_pend {
    struct store_flash_wait *w;
    struct store_ctx *ctx;
    struct flash_pend *next;
    struct flash_read r;
    struct flash_loc loc;
    uint64_t hv, slot;
    struct flash_buf *fb; /* buf's count */
    char *buf;
    uint32_t skip; /* the item's first byte in buf */
    uint32_t len;  /* bytes of buf read (or copied) */
    bool reread;   /* the second read was made */
    bool done;
    bool ok;              /* fi is the key's item, checked: a lookup puts it in RAM */
    bool left;            /* a lookup left it on flash (STORE_LOOK_KEEP_FLASH) */
    bool lent;            /* served from a RAM copy that goes back to flash */
    bool from_buf;        /* served from buf (not recached), this request */
    bool served;          /* a lookup of this request was given it */
    bool looked;          /* a lookup of this request asked for it */
    uint8_t miss;         /* PEND_MISS_*: what a lookup for the value counts */
    uint8_t resets;       /* requests done since it was read, unused */
    uint64_t fslot;       /* the flash slot as served (its read count bumped) */
    uint64_t ram_slot;    /* when lent: the RAM copy's slot (store_flash_relinked) */
    struct flash_item fi; /* when ok: pointers into buf */
    uint8_t nkey;
    char key[STORE_KEY_MAX];
};

/* A read whose item turned out gone or bad is a miss_from_extstore (and
 * a badcrc_from_extstore) only for a lookup that reads the value:
 * memcached reads flash for no other request, and counts when that read
 * completes. Reads that only stand in for its header in RAM (the key's
 * existence for delete, touch, mg without v, append; a tag shared with
 * another key; an item flushed or expired, which memcached finds so in
 * RAM) count nothing. */
enum { PEND_MISS_NONE, PEND_MISS, PEND_MISS_BADCRC };

static void pend_miss(struct flash_pend *e, uint8_t why)
{
    e->miss = why;
}

struct store_flash_wait {
    void (*wake)(void *arg);
    void *arg;
    unsigned pending;
    unsigned recache_counter; /* memcached's per connection: one in ext_recache_rate */
    bool dying;
    struct flash_pend *list;
};

struct store_flash_wait *store_flash_wait_create(void (*wake)(void *arg), void *arg)
{
    struct store_flash_wait *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->wake = wake;
    w->arg = arg;
    return w;
}

static void pend_free(struct flash_pend *e)
{
    buf_unref(e->fb);
    free(e);
}

/* Drop the completed entries; pending ones stay until their read ends. */
static void wait_drop_done(struct store_flash_wait *w)
{
    struct flash_pend **pp = &w->list;
    while (*pp) {
        struct flash_pend *e = *pp;
        if (e->done) {
            *pp = e->next;
            pend_free(e);
        } else {
            pp = &e->next;
        }
    }
}

void store_flash_wait_destroy(struct store_flash_wait *w)
{
    if (!w)
        return;
    wait_drop_done(w);
    if (w->pending)
        w->dying = true; /* the last completion frees it */
    else
        free(w);
}

static void pend_give_back(struct store_ctx *ctx, struct flash_pend *e);

/* A lent copy the request touched (gat, touch, mg T) or marked (md I, a
 * win token, their new CAS): memcached changes only the header it keeps
 * in RAM, the item stays on extstore (an append is still refused, me
 * reports the header's class). Here those are in the flash copy, so the
 * RAM copy is written to flash anew and its slot takes the copy's place;
 * the old flash copy is dead (it was so while lent). If it does not
 * qualify any more (expired, ext_item_size raised) or no writer buffer
 * is free, it stays in RAM.
 * f: the copy, found; keys: both its buckets, locked. */
static bool pend_touched_back(struct store *s, struct flash_pend *e, const struct store_key *k,
                              struct store_found *f, const struct index_pair *keys)
{
    uint64_t ns = flash_tier_take(s->flash, f->p, &f->h, f->seg->cas_base, f->seg->tbase,
                                  index_flash_tag(&s->index, k->hv), f->now, FLASH_TAKE_BACK, NULL);
    if (!ns)
        return false;
    if (s->pm)
        item_set_dead(f->p);
    struct store_cls_of c = classes_item(&s->classes, f->p, &f->h);
    seg_note_gone(f->seg, item_total(&f->h), &c);
    /* its reads so far go with it, as memcached's header keeps them */
    slot_store(f->slot, index_flash_place(&s->index, k->hv, f->chain, ns) | slot_freq(e->fslot));
    flash_tier_drop_tag(s->flash, keys, slot_flash_tag(&s->index, ns), f->slot);
    e->ok = false; /* its read is of the old copy: a later request reads anew */
    return true;
}

/* Requests an unused read is kept for: those probed ahead of one that
 * waited (text_flash.c, bin_process.c: 32 at most), and the one after. */
#define FLASH_KEEP_RESETS 34

void store_flash_wait_reset(struct store_flash_wait *w)
{
    /* Items the request was served from RAM copies of go back to flash;
     * those served from their reads' buffers go (a reply may hold the
     * buffer still). Reads no lookup of the request used (probed ahead
     * for the requests after it) stay for them, a few requests at most;
     * the rest go. */
    struct flash_pend **pp = &w->list;
    while (*pp) {
        struct flash_pend *e = *pp;
        if (e->lent)
            pend_give_back(e->ctx, e);
        bool unused = e->ok || (e->miss && !e->looked);
        e->looked = false;
        if (e->done && (!unused || e->left || e->from_buf || ++e->resets > FLASH_KEEP_RESETS)) {
            *pp = e->next;
            pend_free(e);
        } else {
            pp = &e->next;
        }
    }
}

void store_flash_wait_abort(struct store_flash_wait *w, struct store_ctx *ctx)
{
    for (struct flash_pend *e = w->list; e; e = e->next)
        if (e->served) {
            e->served = false;
            FLASH_CNT(ctx->store->flash, get_aborted_extstore, 1);
        }
}

bool store_flash_wait_held(const struct store_flash_wait *w)
{
    return w->list != NULL;
}

unsigned store_flash_pending(const struct store_flash_wait *w)
{
    return w->pending;
}

void store_flash_attach(struct store_ctx *ctx, struct store_flash_wait *w)
{
    ctx->flash_wait = w;
}

bool store_flash_on(const struct store_ctx *ctx)
{
    return ctx->store->flash != NULL;
}

int store_flash_fd(struct store_ctx *ctx)
{
    return ctx->flash_cq ? ctx->flash_cq->fd : -1;
}

void store_flash_drain(struct store_ctx *ctx)
{
    if (ctx->flash_cq)
        flash_cq_drain(ctx->flash_cq);
}

void store_flash_use_ring(struct store_ctx *ctx, const struct store_flash_ring *ring)
{
    if (ctx->flash_cq)
        ctx->flash_cq->ring = *ring;
}

void store_flash_ring_done(struct flash_read *r, int res)
{
    flash_read_complete(r, res);
}

unsigned store_flash_ring_pending(const struct store_ctx *ctx)
{
    return ctx->flash_cq ? ctx->flash_cq->ring_inflight : 0;
}

/* --- one key's read --- */

static struct flash_pend *wait_find(struct store_flash_wait *w, const struct store_key *k)
{
    for (struct flash_pend *e = w->list; e; e = e->next)
        if (e->nkey == k->nkey && memcmp(e->key, k->key, k->nkey) == 0)
            return e;
    return NULL;
}

/* The slot in the key's locked buckets that is `slot`, or NULL: a flash
 * slot may be in either. */
static uint64_t *bucket_slot(struct store *s, const struct index_pair *keys, uint64_t slot)
{
    uint64_t *chain;
    return index_pair_find(&s->index, keys, slot, &chain);
}

/* Clear the key's flash slot if it is still e->slot (a miss found it
 * gone or bad). */
static void pend_clear_slot(struct store_ctx *ctx, const struct flash_pend *e)
{
    struct store *s = ctx->store;
    struct index_pair keys;
    index_lock_key(&s->index, e->hv, &keys);
    uint64_t *b;
    uint64_t *sl = index_pair_find(&s->index, &keys, e->slot, &b);
    if (sl) {
        flash_tier_clear(s->flash, b, sl);
        FLASH_CNT(s->flash, slots_dropped, 1);
    }
    index_unlock_pair(&keys);
}

/* The item read, checked: copied back into RAM in place of its flash slot
 * (store_commit_ex with that slot expected), with its own access time and
 * status bits: reading it back is not an access, the request's own is.
 * fetch: the request reads the value, the one memcached reads flash for
 * and counts (get_extstore, its bytes, get_oom_extstore). */
static void pend_recache(struct store_ctx *ctx, struct flash_pend *e, bool fetch)
{
    struct store *s = ctx->store;
    const struct flash_item *fi = &e->fi;
    e->ok = false; /* once: the commit's own lookup must not come back here */
    struct store_reservation res;
    /* its time predates the open segments' clocks: in full from the start */
    enum store_status st = store_reserve_with(ctx, e->key, e->nkey, fi->h.nvalue, fi->flags,
                                              fi->exptime, ITEM_L_AT32, &res);
    if (st == STORE_OK) {
        memcpy(res.value, fi->value, fi->h.nvalue);
        struct store_set_req req = {
            .mode = STORE_MODE_SET,
            .flags = fi->flags,
            .exptime = fi->exptime,
            .cas_new = fi->cas,
            .cas_given = true,
        };
        st = store_commit_ex(ctx, &res, &req, fi->atime, e->slot, NULL);
    }
    if (st == STORE_OK && e->lent) {
        /* The copy is this slot's item while only marked or touched in
         * place: a write links another (a new item, whatever its value).
         * Found with another CAS, another session wrote it meanwhile. */
        struct store_key k = store_key_of(e->key, e->nkey);
        struct store_found f;
        bool ours = store_lookup(ctx, &k, STORE_LOOK_FIND, &f) &&
                    item_get_cas(f.p, &f.h, f.seg->cas_base) == fi->cas;
        e->ram_slot = ours ? slot_load(f.slot) : 0;
        store_found_unlock(&f);
    }
    if (st == STORE_OK && !e->lent)
        FLASH_CNT(s->flash, recache_from_extstore, 1);
    if (st == STORE_OK && fetch) {
        FLASH_CNT(s->flash, get_extstore, 1);
        FLASH_CNT(s->flash, objects_read, 1);
        FLASH_CNT(s->flash, bytes_read, fi->len);
    } else if (fetch && (st == STORE_NO_MEMORY || st == STORE_TOO_LARGE)) {
        FLASH_CNT(s->flash, get_oom_extstore, 1);
    }
    /* STORE_EXISTS: the key was written or deleted meanwhile; that wins */
    if (st != STORE_OK)
        e->lent = false;
}

/* The request is done with the RAM copy of a flash item it was lent
 * (pend_refill): the flash slot takes the copy's place again, as memcached
 * serves a read it does not recache from a buffer it then frees. Only if
 * the copy is still the key's item as it was put there (a write or delete
 * since wins: nothing was recached) and the flash segment
 * still that write. The flash slot takes the copy's slot, in whichever of
 * the key's buckets that is. A copy only touched or marked (its expiry,
 * CAS, stale or token mark changed) goes to flash anew
 * (pend_touched_back). */
static void pend_give_back(struct store_ctx *ctx, struct flash_pend *e)
{
    struct store *s = ctx->store;
    const struct flash_item *fi = &e->fi;
    e->lent = false;
    struct store_key k = store_key_of(e->key, e->nkey);
    struct store_found f;
    bool back = false, ours = false;
    if (store_lookup(ctx, &k, STORE_LOOK_FIND, &f)) {
        /* Found in its first bucket, the lookup locked that one alone:
         * the other too, as the flash slot made here drops the other
         * flash slots under its tag in both (cold_item's way: when it is
         * busy at a lower address, the copy stays in RAM). */
        struct index_pair keys = f.keys;
        uint64_t *other = keys.b[1] ? NULL : index_lock_other_of(&s->index, k.hv, keys.b[0]);
        if (other && other != keys.b[0])
            keys.b[1] = other;
        /* the lent copy, in its slot (a write since linked another item,
         * even of the same value and flags, which memcached keeps in RAM),
         * its value and flags as read */
        ours = e->ram_slot && slot_same(slot_load(f.slot), e->ram_slot) &&
               item_get_u32(f.p, f.h.flags_off) == fi->flags && f.h.nvalue == fi->h.nvalue &&
               memcmp(f.p + f.h.hlen + f.h.nkey, fi->value, fi->h.nvalue) == 0;
        bool kept = ours && (f.keys.b[1] || other);
        uint32_t marks = ITEM_S_STALE | ITEM_S_TOKEN;
        bool same = kept && item_get_cas(f.p, &f.h, f.seg->cas_base) == fi->cas &&
                    item_get_u32(f.p, f.h.exp_off) == fi->exptime &&
                    !((item_get_st(f.p, &f.h, f.seg->tbase) ^ fi->atime) & marks);
        if (kept && !same) {
            back = pend_touched_back(s, e, &k, &f, &keys);
        } else if (same && flash_tier_relive(s->flash, e->fslot, e->loc.seq)) {
            if (s->pm)
                item_set_dead(f.p);
            struct store_cls_of c = classes_item(&s->classes, f.p, &f.h);
            seg_note_gone(f.seg, item_total(&f.h), &c);
            slot_store(f.slot, index_flash_place(&s->index, k.hv, f.chain, e->fslot));
            /* the key's one flash candidate again (flash_tier.h) */
            flash_tier_drop_tag(s->flash, &keys, slot_flash_tag(&s->index, e->fslot), f.slot);
            back = true;
        }
        if (other && other != keys.b[0])
            index_unlock(other);
    }
    store_found_unlock(&f);
    /* it stays in RAM: recached after all; replaced or deleted by the
     * request (or another session), nothing was recached, as memcached
     * writes over its header */
    if (ours && !back)
        FLASH_CNT(s->flash, recache_from_extstore, 1);
}

/* Judge the bytes of e (read or copied): a miss, a second read needed
 * (true), or the item kept (e->ok) for the request's lookups to recache
 * (pend_refill): recached now, it could be pushed out of RAM again by the
 * request's other keys' before the request runs again. */
static bool pend_judge(struct flash_pend *e)
{
    struct store_ctx *ctx = e->ctx;
    struct store *s = ctx->store;
    struct flash_tier *ft = s->flash;
    const char *p = e->buf + e->skip;
    uint32_t avail = e->len - e->skip;
    /* Its whole length first: the header's lengths, bounded by its
     * segment, say whether the rest must be read. */
    if (avail >= ITEM_HDR_MAX && !e->reread) {
        struct item_hdr h;
        item_decode(p, &h);
        uint64_t total = item_total(&h);
        uint32_t off = slot_flash_off(&s->index, e->slot);
        if (total > avail && off + total <= e->loc.seg_len)
            return true;
    }
    struct flash_item fi;
    int rc = flash_item_parse(p, avail, e->loc.seed, e->loc.cas_base, &fi);
    if (rc != FLASH_OK) {
        pend_miss(e, PEND_MISS_BADCRC);
        pend_clear_slot(ctx, e);
        return false;
    }
    if (fi.h.nkey != e->nkey || memcmp(fi.key, e->key, e->nkey) != 0) {
        /* another key's item under the same tag: a miss for this one,
         * whose header memcached would not have had */
        return false;
    }
    if (!flash_tier_still(ft, e->slot, e->loc.seq)) {
        /* Its segment was freed after the read began: when compaction
         * moved the item first, the bytes read are its own (their sum
         * carries that write's seed) and its slot now names the copy. */
        uint64_t moved = flash_tier_moved(ft, e->slot);
        if (!moved) {
            pend_miss(e, PEND_MISS);
            pend_clear_slot(ctx, e);
            return false;
        }
        e->slot = moved;
    }
    if (life_of_item(&s->life, fi.p, &fi.h, e->loc.cas_base, 0, clock_now()) != ITEM_LIVE) {
        pend_clear_slot(ctx, e);
        return false;
    }
    e->fi = fi;
    e->ok = true;
    return false;
}

/* A read's buffer is the blocks around its item, FLASH_FIRST_READ at
 * least, while a reply that keeps it (store_pin_keep) counts only the
 * value against what its connection may owe. An item under half of its
 * buffer moves to one of its own size first (a copy of a few KiB at most),
 * so a reply holds at most about twice what it counts. Out of memory, the
 * read's buffer serves. */
static void pend_tighten(struct flash_pend *e)
{
    uint32_t len = e->fi.len;
    if (e->fb->size <= 2 * (size_t)len)
        return;
    struct flash_buf *fb = buf_new(len, 16);
    if (!fb)
        return;
    const char *from = e->fi.p;
    memcpy(fb->base, from, len);
    e->fi.key = fb->base + (e->fi.key - from);
    e->fi.value = fb->base + (e->fi.value - from);
    e->fi.p = fb->base;
    buf_unref(e->fb);
    e->fb = fb;
    e->buf = fb->base;
    e->skip = 0;
    e->len = len;
}

/* The flash slot under k's flash tag in its locked buckets, or 0: the
 * key's one flash candidate (store_flash_probe). */
static uint64_t keys_flash_slot(struct store *s, const struct index_pair *keys,
                                const struct store_key *k)
{
    uint64_t ftag = index_flash_tag(&s->index, k->hv);
    for (int c = 0; c < 2 && keys->b[c]; c++)
        for (uint64_t *cur = keys->b[c]; cur; cur = index_next(&s->index, cur))
            for (unsigned m = index_match(cur, k->tag); m; m &= m - 1, m &= m - 1) {
                uint64_t sl = slot_load(&cur[__builtin_ctz(m) >> 1]);
                if (slot_is_flash(sl) && slot_flash_tag(&s->index, sl) == ftag)
                    return sl;
            }
    return 0;
}

/* Serve e from its read's buffer (pend_refill). */
static enum flash_refill pend_serve(struct flash_pend *e, struct store_found *f)
{
    if (!e->from_buf)
        pend_tighten(e);
    e->from_buf = true;
    f->flash = &e->fi;
    f->flash_buf = e->fb;
    return FLASH_SERVED;
}

/* store_lookup_write's hook (ctx->flash_refill), on a miss with the key's
 * buckets locked: when the wait set read the key's item and its flash slot
 * is still the key's (no write or delete since: those clear it), serve it
 * from the read's buffer (STORE_LOOK_FLASH_BUF, not recached, nothing to
 * change in it) and return FLASH_SERVED, or put it in RAM, unlock them and
 * return FLASH_REFILLED (the lookup looks again); with
 * STORE_LOOK_KEEP_FLASH, leave it on flash (nor recached when the request
 * is done) and return FLASH_LEFT; else FLASH_NONE. They stay locked but
 * when refilled. A flash slot may be in either of the key's buckets. */
static enum flash_refill pend_refill(struct store_ctx *ctx, const struct store_key *k,
                                     struct store_found *f, unsigned how)
{
    struct store_flash_wait *w = ctx->flash_wait;
    struct flash_pend *e = w ? wait_find(w, k) : NULL;
    if (!e)
        return f->gone == ITEM_LIVE && !(how & STORE_LOOK_REPLACES) &&
                       keys_flash_slot(ctx->store, &f->keys, k)
                   ? FLASH_UNREAD
                   : FLASH_NONE;
    e->looked = true;
    bool fetch = !(how & STORE_LOOK_NO_VALUE);
    if (e->miss && fetch) {
        struct flash_tier *ft = ctx->store->flash;
        FLASH_CNT(ft, miss_from_extstore, 1);
        if (e->miss == PEND_MISS_BADCRC)
            FLASH_CNT(ft, badcrc_from_extstore, 1);
        e->miss = PEND_MISS_NONE; /* once, as the read was one */
    }
    if (!e->ok)
        return FLASH_NONE;
    const struct index_pair *keys = &f->keys;
    /* A stale item's first mg wins its token: a change, so in RAM. */
    uint32_t st = e->fi.atime & ITEM_S_MASK;
    bool buf_ok = (how & STORE_LOOK_FLASH_BUF) &&
                  !((how & STORE_LOOK_WINS) && (st & ITEM_S_STALE) && !(st & ITEM_S_TOKEN));
    if (!bucket_slot(ctx->store, keys, e->slot)) {
        /* compaction moved the item since it was read (the bytes are the
         * same), or it was dropped or deleted: a miss, not counted, as
         * memcached's lookup finds no header then and reads nothing */
        uint64_t moved = flash_tier_moved(ctx->store->flash, e->slot);
        if (!moved || !bucket_slot(ctx->store, keys, moved)) {
            e->ok = false;
            return FLASH_NONE;
        }
        e->slot = moved;
    }
    /* A flush_all (or its expiry) since the read was judged, as when the
     * read was made ahead of the flush in the same pipeline: a miss, as
     * memcached's lookup of its header finds it flushed. */
    enum item_life life =
        life_of_item(&ctx->store->life, e->fi.p, &e->fi.h, e->loc.cas_base, 0, clock_now());
    if (life != ITEM_LIVE) {
        e->ok = false;
        f->gone = life;
        return FLASH_NONE;
    }
    /* the key again in the request (get k k), its slot still the key's:
     * another session's delete or write since the first wins */
    if (e->from_buf && buf_ok)
        return pend_serve(e, f);
    if (how & STORE_LOOK_KEEP_FLASH) {
        e->left = true;
        f->flash = &e->fi;
        return FLASH_LEFT;
    }
    /* memcached recaches an item read from flash only when it was read
     * before since it went there (its header FETCHED, now ACTIVE), one
     * such read in ext_recache_rate on the connection, and only by a
     * request that reads the value (memcached reads flash for no other).
     * The slot's read count is the header's bits, left alone by a read
     * that does not bump. Otherwise a read is served from the buffer, as
     * memcached's, and any other request is lent a RAM copy that goes
     * back to flash when it is done (store_flash_wait_reset). */
    e->served = true;
    uint64_t *sl = bucket_slot(ctx->store, keys, e->slot);
    /* read on flash before this request: fetched, as memcached's header
     * says (mg h, me fetch=) */
    if (slot_freq(slot_load(sl)) > 0)
        e->fi.atime |= ITEM_S_FETCHED;
    if (!(how & STORE_LOOK_NO_BUMP))
        slot_hit_at(sl);
    uint32_t rate = flash_tier_recache_rate(ctx->store->flash);
    bool recache =
        rate && fetch && slot_freq(slot_load(sl)) >= 2 && w->recache_counter++ % rate == 0;
    if (!recache && buf_ok) {
        struct flash_tier *ft = ctx->store->flash;
        if (fetch) {
            FLASH_CNT(ft, get_extstore, 1);
            FLASH_CNT(ft, objects_read, 1);
            FLASH_CNT(ft, bytes_read, e->fi.len);
        }
        return pend_serve(e, f);
    }
    e->lent = !recache;
    e->fslot = slot_load(sl);
    index_unlock_pair(keys);
    pend_recache(ctx, e, fetch);
    return FLASH_REFILLED;
}

void store_flash_wait_hold(struct store_flash_wait *w)
{
    w->pending++;
}

void store_flash_wait_release(struct store_flash_wait *w)
{
    if (--w->pending)
        return;
    if (w->dying) {
        wait_drop_done(w);
        free(w);
        return;
    }
    w->wake(w->arg);
}

static void pend_done(struct flash_pend *e)
{
    e->done = true;
    store_flash_wait_release(e->w);
}

static int pend_submit(struct flash_pend *e, uint32_t want);

/* A read came back (on the worker's thread, from store_flash_drain). */
static void pend_read_done(struct flash_read *r)
{
    struct flash_pend *e = r->arg;
    struct flash_tier *ft = e->ctx->store->flash;
    e->ctx->flash_inflight--;
    struct store_flash_wait *w = e->w;
    if (w->dying) {
        FLASH_CNT(ft, get_aborted_extstore, 1);
        e->done = true;
        if (--w->pending == 0) {
            wait_drop_done(w); /* e too */
            free(w);
        }
        return;
    }
    if (r->result < 0) {
        /* one line a second at most: a failing device fails every read */
        static rel_time_t logged;
        rel_time_t now = clock_now();
        if (r->result != -ECANCELED && __atomic_exchange_n(&logged, now, __ATOMIC_RELAXED) != now)
            log_error("nodelay: flash read of page %u failed: %s (each such read is a miss; "
                      "read_errors counts them)",
                      r->page, strerror(-r->result));
        FLASH_CNT(ft, read_errors, 1);
        pend_miss(e, PEND_MISS);
        pend_clear_slot(e->ctx, e);
        pend_done(e);
        return;
    }
    e->len = (uint32_t)r->result;
    if (pend_judge(e)) {
        struct item_hdr h;
        item_decode(e->buf + e->skip, &h);
        e->reread = true;
        if (pend_submit(e, item_total(&h)) == 0)
            return;
        FLASH_CNT(ft, read_errors, 1);
        pend_miss(e, PEND_MISS);
    }
    pend_done(e);
}

/* Read `want` bytes from the item's start (rounded out to whole blocks,
 * within its segment). 0, or -errno: no read is owed then. */
static int pend_submit(struct flash_pend *e, uint32_t want)
{
    struct flash_tier *ft = e->ctx->store->flash;
    uint64_t start = e->loc.page_off + slot_flash_off(&e->ctx->store->index, e->slot);
    uint64_t from = start & ~(uint64_t)(FLASH_DEV_ALIGN - 1);
    uint64_t seg_end = e->loc.page_off + e->loc.seg_len;
    uint64_t to = start + want < seg_end ? start + want : seg_end;
    to = (to + FLASH_DEV_ALIGN - 1) & ~(uint64_t)(FLASH_DEV_ALIGN - 1);
    uint32_t len = (uint32_t)(to - from);
    buf_unref(e->fb);
    e->fb = buf_new(len, FLASH_DEV_ALIGN);
    e->buf = e->fb ? e->fb->base : NULL;
    if (!e->buf)
        return -ENOMEM;
    e->skip = (uint32_t)(start - from);
    e->r = (struct flash_read){
        .page = e->loc.page,
        .off = from,
        .len = len,
        .buf = e->buf,
        .done = pend_read_done,
        .arg = e,
    };
    int rc = flash_dev_submit(&ft->dev, e->ctx->flash_cq, &e->r);
    if (rc == 0)
        e->ctx->flash_inflight++;
    return rc;
}

/* flash_tier_locate's take: a buffered item's bytes go straight into the
 * read's buffer, of the item's size, kept as long as the item (a reply may
 * hold them). */
static char *pend_take(void *arg, uint32_t len)
{
    struct flash_pend *e = arg;
    e->fb = buf_new(len, 16);
    if (!e->fb)
        return NULL;
    e->buf = e->fb->base;
    e->len = len;
    e->reread = true;
    return e->buf;
}

/* store_flash_probe's read of a key the set holds nothing for. wait:
 * a read from the device may be started (STORE_PROBE_WAIT); without, an
 * item not in a writer's buffer is left unread and WAIT returned with
 * nothing kept. */
static enum store_probe probe_read(struct store_ctx *ctx, struct store_flash_wait *w,
                                   const struct store_key *k, bool wait)
{
    struct store *s = ctx->store;
    struct flash_tier *ft = s->flash;
    /* The key's buckets: its item in RAM (in either), or its flash
     * candidate (in either: a flash slot under its flash tag in either may
     * be another key's, whose read's key check makes it a miss; one whose
     * further tag bits differ is not read at all). Making a flash slot
     * drops the others under its flash tag in its key's two buckets, so
     * there is one: a key under the same tag in one of this key's
     * buckets has the same other bucket (index_hash2 flips bits by the
     * tag), but where the shared one is unsplit and hash bit L parts
     * their others; then the first bucket's is read. */
    uint64_t fsl = 0, ftag = index_flash_tag(&s->index, k->hv);
    struct index_pair kb;
    index_lock_key(&s->index, k->hv, &kb);
    for (int c = 0; c < 2 && kb.b[c]; c++) {
        for (uint64_t *cur = kb.b[c]; cur; cur = index_next(&s->index, cur)) {
            for (unsigned m = index_match(cur, k->tag); m; m &= m - 1, m &= m - 1) {
                uint64_t sl = slot_load(&cur[__builtin_ctz(m) >> 1]);
                if (slot_is_flash(sl)) {
                    if (!fsl && slot_flash_tag(&s->index, sl) == ftag)
                        fsl = sl;
                    continue;
                }
                const char *p = seg_item(&s->pool, sl);
                struct item_hdr h;
                item_decode(p, &h);
                if (h.nkey == k->nkey && memcmp(p + h.hlen, k->key, k->nkey) == 0) {
                    index_unlock_pair(&kb);
                    return STORE_PROBE_READY;
                }
            }
        }
    }
    index_unlock_pair(&kb);
    if (!fsl)
        return STORE_PROBE_READY;

    struct flash_pend *e = calloc(1, sizeof *e);
    if (!e)
        return STORE_PROBE_READY; /* a miss, as memcached's get_oom_extstore */
    e->w = w;
    e->ctx = ctx;
    e->hv = k->hv;
    e->slot = fsl;
    e->nkey = (uint8_t)k->nkey;
    memcpy(e->key, k->key, k->nkey);
    e->next = w->list;
    w->list = e;
    w->pending++;

    enum flash_where at = FLASH_AT_NONE;
    for (int hop = 0; hop < 2; hop++) {
        at = flash_tier_locate(ft, e->slot, &e->loc, pend_take, e);
        /* its segment freed since the probe saw it: compaction may have
         * moved the item first */
        uint64_t moved = at == FLASH_AT_NONE ? flash_tier_moved(ft, e->slot) : 0;
        if (!moved)
            break;
        e->slot = moved;
    }
    if (!wait && at == FLASH_AT_DISK) {
        w->list = e->next; /* e is the first: nothing since */
        w->pending--;
        pend_free(e);
        return STORE_PROBE_WAIT;
    }
    if (at == FLASH_AT_BUF) {
        /* not on the device yet: its bytes were copied into e's buffer
         * (none out of memory: a miss) */
        if (e->fb)
            pend_judge(e);
        pend_done(e);
        return STORE_PROBE_READY;
    }
    if (at == FLASH_AT_NONE) {
        /* its page evicted since the slot was made: memcached's read of it
         * fails so */
        pend_miss(e, PEND_MISS);
        pend_clear_slot(ctx, e);
        pend_done(e);
        return STORE_PROBE_READY;
    }
    uint32_t want = e->loc.max_item ? e->loc.max_item : FLASH_FIRST_READ;
    int rc = pend_submit(e, want < FLASH_FIRST_READ ? want : FLASH_FIRST_READ);
    if (rc < 0) {
        FLASH_CNT(ft, read_errors, 1);
        pend_miss(e, PEND_MISS);
        pend_done(e);
        return STORE_PROBE_READY;
    }
    return STORE_PROBE_WAIT;
}

enum store_probe store_flash_probe(struct store_ctx *ctx, struct store_flash_wait *w,
                                   const struct store_key *k)
{
    if (!ctx->store->flash || k->nkey == 0 || k->nkey > STORE_KEY_MAX)
        return STORE_PROBE_READY;
    struct flash_pend *had = wait_find(w, k);
    if (had)
        return had->done ? STORE_PROBE_READY : STORE_PROBE_WAIT;
    return probe_read(ctx, w, k, true);
}

/* ctx->flash_reread (store_core.h), for a key the set holds nothing for
 * (pend_refill says FLASH_UNREAD only then). */
static bool pend_reread(struct store_ctx *ctx, const struct store_key *k)
{
    struct store_flash_wait *w = ctx->flash_wait;
    if (!w || wait_find(w, k))
        return false;
    if (probe_read(ctx, w, k, false) != STORE_PROBE_READY)
        return false;
    struct flash_pend *e = wait_find(w, k);
    return e && e->ok;
}

/* --- the tier in the store --- */

static uint64_t flash_pages(const struct store_flash_options *o)
{
    uint64_t pages = 0;
    for (int i = 0; i < o->nfiles && i < STORE_FLASH_FILES_MAX; i++)
        pages += o->sizes[i] / o->page_size;
    return pages;
}

static uint32_t flash_seg_size(const struct store_flash_options *o)
{
    if (!o->nfiles)
        return 0;
    return flash_tier_seg_size(o->page_size, o->wbuf_size, flash_pages(o));
}

/* The device's flash segments, as flash_dev_open and flash_tier_open
 * count them; 0 when they would refuse the shape. */
static uint32_t keep_nsegs(const struct store_flash_options *o)
{
    uint32_t seg = flash_seg_size(o);
    return seg ? (uint32_t)(flash_pages(o) * (o->page_size / seg)) : 0;
}

size_t store_flash_keep_len(const struct store_flash_options *o, uint64_t *shape)
{
    uint32_t nsegs = keep_nsegs(o);
    *shape = 0;
    if (!nsegs)
        return 0;
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, &o->page_size, sizeof o->page_size);
    XXH3_64bits_update(&st, &o->wbuf_size, sizeof o->wbuf_size);
    for (int i = 0; i < o->nfiles && i < STORE_FLASH_FILES_MAX; i++) {
        XXH3_64bits_update(&st, o->paths[i], strlen(o->paths[i]) + 1);
        XXH3_64bits_update(&st, &o->sizes[i], sizeof o->sizes[i]);
    }
    *shape = XXH3_64bits_digest(&st);
    return flash_keep_len(nsegs, flash_seg_size(o));
}

int store_flash_open(struct store *s, char *why, size_t n)
{
    const struct store_flash_options *o = &s->opt.flash;
    if (!o->nfiles)
        return 0;
    uint32_t seg = flash_seg_size(o);
    if (seg && seg != o->wbuf_size)
        log_info("flash tier: %llu pages hold more segments of ext_wbuf_size than the index "
                 "names; writing segments of %u bytes",
                 (unsigned long long)flash_pages(o), seg);
    struct flash_tier_options fo = {
        .seg_size = seg ? seg : o->wbuf_size, /* 0: flash_tier_open says why */
        .item_size = o->item_size,
        .item_age = o->item_age,
        .low_ttl = o->low_ttl,
        .recache_rate = o->recache_rate,
        .compact_under = o->compact_under,
        .drop_under = o->drop_under,
        .max_frag = o->max_frag,
        .drop_unread = o->drop_unread,
        .max_sleep = o->max_sleep,
        .tuning = o->tuning,
        .classes = &s->classes,
    };
    fo.dev.nfiles = o->nfiles;
    for (int i = 0; i < o->nfiles && i < FLASH_DEV_FILES_MAX; i++)
        fo.dev.files[i] = (struct flash_dev_file_opt){.path = o->paths[i], .size = o->sizes[i]};
    fo.dev.page_size = o->page_size;
    fo.dev.threads = o->threads > 0 ? o->threads : 1;
    fo.dev.io_depth = o->io_depth;
    if (s->pm && s->pm->flash_mem) {
        /* -e: the record of which flash items are live, in the file */
        uint64_t shape;
        size_t len = store_flash_keep_len(o, &shape);
        const char *no = NULL;
        enum fk_attach at =
            flash_keep_attach(&s->flash_keep, s->pm->flash_mem, s->pm->flash_len, keep_nsegs(o),
                              flash_seg_size(o), shape, s->pm->start == PM_START_CLEAN, &no);
        if (at == FK_DISCARDED)
            log_error("-e %s: %s; discarding the flash tier's items", s->opt.memory_file, no);
        /* the file is sized for it (persist_open): a record of another
         * length is never written */
        s->flash_kept = at == FK_KEPT && len == s->pm->flash_len;
        if (len == s->pm->flash_len)
            fo.keep = &s->flash_keep;
    }
    struct flash_tier *ft = calloc(1, sizeof *ft);
    if (!ft) {
        snprintf(why, n, "flash tier: out of memory");
        return -ENOMEM;
    }
    int rc = flash_tier_open(ft, &fo, &s->index, &s->life, why, n);
    if (rc < 0) {
        free(ft);
        return rc;
    }
    s->flash = ft;
    s->pool.flash = ft;
    return 0;
}

void store_flash_close(struct store *s)
{
    if (!s->flash)
        return;
    /* only the store's own stop comes here: with -e a graceful one */
    flash_tier_stop(s->flash, true);
    flash_tier_close(s->flash);
    free(s->flash);
    s->flash = NULL;
    s->pool.flash = NULL;
}

/* store_ctx.flash_relinked */
static void pend_relinked(struct store_ctx *ctx, const struct store_key *k, uint64_t from,
                          uint64_t to)
{
    struct flash_pend *e = ctx->flash_wait ? wait_find(ctx->flash_wait, k) : NULL;
    if (e && e->lent && slot_same(e->ram_slot, from))
        e->ram_slot = to;
}

int store_flash_ctx_init(struct store_ctx *ctx)
{
    if (!ctx->store->flash)
        return 0;
    struct flash_cq *cq = calloc(1, sizeof *cq);
    if (!cq || flash_cq_init(cq) < 0) {
        free(cq);
        return -1;
    }
    ctx->flash_cq = cq;
    ctx->flash_refill = pend_refill;
    ctx->flash_relinked = pend_relinked;
    ctx->flash_reread = pend_reread;
    return 0;
}

void store_flash_ctx_release(struct store_ctx *ctx)
{
    if (!ctx->flash_cq)
        return;
    /* Reads still with the pool post to this queue: wait for them (a
     * read takes milliseconds; bounded, then the queue is kept rather
     * than freed under them). Their sessions are gone: each entry frees
     * itself and its wait set. Reads on the worker's ring are its to reap
     * (store_flash_ring_pending); any left are the kernel's still. */
    struct flash_cq *cq = ctx->flash_cq;
    for (int n = 0; ctx->flash_inflight > cq->ring_inflight && n < 3000; n++) {
        struct pollfd p = {.fd = ctx->flash_cq->fd, .events = POLLIN};
        poll(&p, 1, 10);
        flash_cq_drain(ctx->flash_cq);
    }
    if (ctx->flash_inflight) {
        log_error("nodelay: %u flash reads did not complete; their queue is left",
                  ctx->flash_inflight);
        return;
    }
    flash_cq_destroy(ctx->flash_cq);
    free(ctx->flash_cq);
    ctx->flash_cq = NULL;
}

bool store_flash_forget(struct store *s, uint64_t slot)
{
    if (!slot_is_flash(slot) || !s->flash)
        return false;
    FLASH_CNT(s->flash, index_dropped, 1);
    flash_tier_forget(s->flash, slot);
    return true;
}
