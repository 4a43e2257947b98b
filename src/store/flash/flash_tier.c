/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier: records, writers, the writer thread, compaction
 * (flash_tier.h).
 *
 * Where the write runs: an item leaving RAM is copied into a writer's
 * buffer by the evicting path (a memcpy under locks it holds anyway), and
 * its slot is switched to the flash segment at once, so the RAM segment is
 * free to go; until the buffer reaches the disk a read of it copies the
 * bytes from the buffer (flash_tier_locate). A full buffer is queued for
 * the tier's own thread, which makes the one aligned pwrite: no request,
 * and no worker holding the pool lock, ever waits on the disk for a write.
 * Buffers are few (FLASH_WRITERS + 2 of ext_wbuf_size): when the disk is
 * slower than eviction, items are evicted as without a flash tier
 * (skipped_full) rather than memory growing.
 *
 * Lock order: a bucket lock, then ft->lock; the writer thread takes no
 * bucket lock while it holds ft->lock. */
#include "store/flash/flash_tier.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/log.h"
#include "store/flash/flash_gc.h"
#include "store/store_life.h"

#define CNT(ft, f, n) FLASH_CNT(ft, f, n)

static uint32_t round_up(uint32_t n, uint32_t a)
{
    return (n + a - 1) / a * a;
}

/* The compactor's pass after this long with nothing written
 * (flash_tier_pause_ns shortens it to ext_max_sleep); the spare buffers
 * back to the kernel, and compaction's writer sealed, after a second. */
#define WRITER_IDLE_NS 100000000ull
#define SPARES_IDLE_NS 1000000000ull

/* Devices of more segments than this keep one free for compaction: the
 * writers may not take it, so compaction, which rewrites under a segment
 * before it frees one, never has to drop one to write. */
#define FLASH_COMPACT_RESERVE_MIN 4

static uint32_t rec_reserve(const struct flash_tier *ft)
{
    return ft->nsegs > FLASH_COMPACT_RESERVE_MIN ? 1 : 0;
}

/* Free segments the compactor keeps under a write load, dropping if it
 * must: one for each writer to open and compaction's reserve, no more
 * (what is kept free holds no items), and under a page. */
static uint32_t flash_gc_room(const struct flash_tier *ft)
{
    uint32_t room = rec_reserve(ft) + FLASH_WRITERS;
    return room < ft->segs_per_page ? room : ft->segs_per_page;
}

static uint32_t max_bufs(void)
{
    return FLASH_WRITERS + 2;
}

/* A flash slot's offset is a byte's in its segment. */
_Static_assert(FLASH_SEG_MAX <= SLOT_MAX_OFF, "a flash segment larger than a slot addresses");

static void *writer_main(void *arg);
static void *gc_main(void *arg);
static unsigned flash_tier_compact(struct flash_tier *ft, bool need_room);

int flash_tier_open(struct flash_tier *ft, const struct flash_tier_options *opt, struct index *ix,
                    const struct store_life *life, char *why, size_t n)
{
    memset(ft, 0, sizeof *ft);
    ft->opt = *opt;
    ft->index = ix;
    ft->life = life;
    uint32_t seg = opt->seg_size;
    if (seg < FLASH_SEG_MIN || seg > FLASH_SEG_MAX || seg % FLASH_DEV_ALIGN ||
        opt->dev.page_size < seg || opt->dev.page_size % seg) {
        snprintf(why, n, "flash segment (ext_wbuf_size) must divide ext_page_size");
        return -EINVAL;
    }
    int rc = flash_dev_open(&ft->dev, &opt->dev, why, n);
    if (rc < 0)
        return rc;
    /* the offset bits a segment of this size never uses carry more of a
     * flash slot's tag (store_index.h, index_flash_tag) */
    unsigned need = 0;
    while ((1ull << need) < seg)
        need++;
    unsigned x = SLOT_OFF_BITS - need;
    ix->flash_xmask = slot_xtag_mask(x < INDEX_XTAG_BITS ? x : INDEX_XTAG_BITS);
    ft->segs_per_page = (uint32_t)(opt->dev.page_size / seg);
    uint64_t nsegs = (uint64_t)ft->dev.npages * ft->segs_per_page;
    uint64_t nvids = nsegs * FLASH_VIDS_PER_SEG;
    if (nvids > SLOT_FLASH_IDS)
        nvids = SLOT_FLASH_IDS;
    if (nsegs < 2 || nsegs > nvids) {
        snprintf(why, n, "flash tier: %llu segments (2 to %u allowed)", (unsigned long long)nsegs,
                 (unsigned)SLOT_FLASH_IDS);
        flash_dev_close(&ft->dev);
        return -EINVAL;
    }
    ft->nsegs = (uint32_t)nsegs;
    ft->nvids = (uint32_t)nvids;
    ft->recs = calloc(ft->nsegs, sizeof *ft->recs);
    ft->vmap = calloc(ft->nvids, sizeof *ft->vmap);
    ft->moves = calloc(FLASH_MOVES, sizeof *ft->moves);
    if (!ft->recs || !ft->vmap || !ft->moves || flash_tier_cls_init(ft) < 0) {
        free(ft->recs);
        free(ft->vmap);
        free(ft->moves);
        flash_tier_cls_free(ft);
        flash_dev_close(&ft->dev);
        snprintf(why, n, "flash tier: out of memory");
        return -ENOMEM;
    }
    ft->nfree = ft->nsegs;
    ft->gc_victim = -1;
    for (int i = 0; i < FLASH_WRITERS; i++)
        ft->w_seg[i] = -1;
    /* A store's id in every segment header: bytes another store (or an
     * earlier run) left in the file never pass for ours. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed[3] = {(uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec, (uint64_t)getpid()};
    ft->instance = XXH3_64bits(seed, sizeof seed) | 1;
    ft->seq_next = 1;
    if (opt->keep) {
        /* the keep's ids continue: its segments' items keep their sums */
        struct fk_hdr *kh = opt->keep->hdr;
        if (kh->instance)
            ft->instance = kh->instance;
        else
            __atomic_store_n(&kh->instance, ft->instance, __ATOMIC_RELEASE);
        ft->seq_next = kh->seq_next ? kh->seq_next : 1;
    }
    uint32_t pages = ft->dev.npages;
    /* memcached's defaults: a hundredth of the pages, at least one */
    if (!ft->opt.compact_under)
        ft->opt.compact_under = pages / 100 ? pages / 100 : 1;
    if (!ft->opt.drop_under)
        ft->opt.drop_under = ft->opt.compact_under;
    pthread_mutex_init(&ft->lock, NULL);
    pthread_mutex_init(&ft->compact_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ft->cond, &ca);
    pthread_cond_init(&ft->gc_cond, &ca);
    pthread_condattr_destroy(&ca);
    int err = pthread_create(&ft->thread, NULL, writer_main, ft);
    if (!err)
        ft->thread_on = true;
    if (!err && !(err = pthread_create(&ft->gc_thread, NULL, gc_main, ft)))
        ft->gc_on = true;
    if (err) {
        snprintf(why, n, "flash writer thread: %s", strerror(err));
        flash_tier_close(ft);
        return -err;
    }
    return 0;
}

/* The writer and compactor threads stopped and gone. */
static void threads_stop(struct flash_tier *ft)
{
    if (ft->thread_on || ft->gc_on) {
        pthread_mutex_lock(&ft->lock);
        ft->stopping = true;
        pthread_cond_broadcast(&ft->cond);
        pthread_cond_broadcast(&ft->gc_cond);
        pthread_mutex_unlock(&ft->lock);
    }
    if (ft->gc_on)
        pthread_join(ft->gc_thread, NULL);
    if (ft->thread_on)
        pthread_join(ft->thread, NULL);
    ft->thread_on = ft->gc_on = false;
}

void flash_tier_close(struct flash_tier *ft)
{
    threads_stop(ft);
    for (uint32_t i = 0; ft->recs && i < ft->nsegs; i++)
        free(ft->recs[i].buf);
    for (uint32_t i = 0; i < ft->nspare; i++)
        free(ft->spare[i]);
    free(ft->recs);
    free(ft->vmap);
    free(ft->moves);
    flash_tier_cls_free(ft);
    ft->recs = NULL;
    ft->vmap = NULL;
    ft->moves = NULL;
    flash_dev_close(&ft->dev);
    pthread_cond_destroy(&ft->cond);
    pthread_cond_destroy(&ft->gc_cond);
    pthread_mutex_destroy(&ft->lock);
    pthread_mutex_destroy(&ft->compact_lock);
}

/* The ext_* values that `extstore` may change, as they are now. */
static struct flash_tier_options tuned(const struct flash_tier *ft)
{
    struct flash_tier_options o = ft->opt;
    if (!ft->opt.tuning.read)
        return o;
    struct flash_tuning t;
    flash_tuning_get(&ft->opt.tuning, &t);
    o.item_size = t.item_size;
    o.item_age = t.item_age;
    o.low_ttl = t.low_ttl;
    o.recache_rate = t.recache_rate;
    o.compact_under = t.compact_under; /* the settings hold the start's default */
    o.drop_under = t.drop_under ? t.drop_under : ft->opt.drop_under;
    o.max_frag = t.max_frag;
    o.drop_unread = t.drop_unread;
    o.max_sleep = t.max_sleep;
    return o;
}

/* --- records (ft->lock held) --- */

/* ext_compact_under and ext_drop_under count free pages: a page's worth
 * of free segments to a page, so n pages are free while nfree is at least
 * n pages' worth of segments. */
static uint32_t pages_segs(const struct flash_tier *ft, uint32_t pages)
{
    uint64_t n = (uint64_t)pages * ft->segs_per_page;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Free segments under which the compactor works (flash_gc_under) */
static uint32_t gc_under(const struct flash_tier *ft)
{
    return flash_gc_under(tuned(ft).compact_under, ft->segs_per_page, flash_gc_room(ft));
}

/* Free segments short: the compactor's turn (ft->lock held). */
static void gc_kick_if_short(struct flash_tier *ft)
{
    if (ft->nfree < gc_under(ft)) {
        ft->gc_kick = true;
        pthread_cond_signal(&ft->gc_cond);
    }
}

/* A record's write buffer is done with (written, or its segment gone):
 * kept for the next segment a writer opens (lock held). */
static void rec_put_buf(struct flash_tier *ft, struct flash_rec *r)
{
    if (ft->nspare < max_bufs())
        ft->spare[ft->nspare++] = r->buf;
    else
        free(r->buf);
    r->buf = NULL;
}

/* A record's segment goes: its slots read as misses from now on. */
static void rec_free(struct flash_tier *ft, struct flash_rec *r)
{
    /* slots naming it stay until met: the index's growth leaves them out */
    if (r->live_items)
        index_stale_add(ft->index, r->live_items);
    if (ft->opt.keep)
        flash_keep_free(ft->opt.keep, (uint32_t)(r - ft->recs));
    if (ft->vmap[r->vid] == (uint32_t)(r - ft->recs) + 1)
        ft->vmap[r->vid] = 0;
    if (r->buf)
        rec_put_buf(ft, r);
    r->state = FSEG_FREE;
    r->live_items = r->nitems = r->nbytes = 0;
    ft->nfree++;
}

/* A written segment dropped to make room (counted as memcached's page
 * evictions). */
static bool rec_drop(struct flash_tier *ft, struct flash_rec *r)
{
    if (r->live_items) {
        CNT(ft, page_evictions, 1);
        CNT(ft, objects_evicted, r->live_items);
        CNT(ft, bytes_evicted, flash_gc_live_bytes(r));
    } else {
        CNT(ft, page_reclaims, 1);
    }
    rec_free(ft, r);
    return true;
}

/* The one with the least live share, of any writer: the fewest items lost
 * for a segment freed. Not the one compaction is emptying: that one is
 * about to be freed with its live items kept, and dropping it under the
 * compactor's read would lose them. */
static bool rec_drop_least(struct flash_tier *ft)
{
    int32_t n = flash_gc_least_live(ft->recs, ft->nsegs, true, ft->gc_victim);
    return n >= 0 && rec_drop(ft, &ft->recs[n]);
}

/* The writer thread, idle a second: the spare buffers' pages go back to the
 * kernel (lock held). Five buffers of ext_wbuf_size are what a write load
 * needs; at rest the open writers' are, and a spare taken again is
 * faulted in page by page as items are copied into it. */
static void spares_release(struct flash_tier *ft)
{
    for (uint32_t i = ft->ncold; i < ft->nspare; i++)
        madvise(ft->spare[i], ft->opt.seg_size, MADV_DONTNEED);
    ft->ncold = ft->nspare;
}

/* Open a segment for writer wi; false when neither a segment nor a buffer
 * can be had. */
static bool writer_open(struct flash_tier *ft, int wi, uint64_t cas_base)
{
    char *buf = NULL;
    if (ft->nspare) {
        buf = ft->spare[--ft->nspare];
        if (ft->ncold > ft->nspare)
            ft->ncold = ft->nspare;
    } else if (ft->nbufs < max_bufs() &&
               (buf = aligned_alloc(FLASH_DEV_ALIGN, ft->opt.seg_size)) != NULL)
        ft->nbufs++;
    if (!buf)
        return false;
    /* A full device, the compactor behind: the writers drop the least live
     * segments themselves (memory only), but leave compaction its segment
     * (rec_reserve): it never drops one to write, so a drop for it could
     * not take the very segment it is emptying. */
    uint32_t reserve = rec_reserve(ft);
    if (wi != FLASH_W_COMPACT)
        while (ft->nfree <= reserve && rec_drop_least(ft))
            ;
    if (!ft->nfree) {
        ft->spare[ft->nspare++] = buf;
        return false;
    }
    uint32_t n = 0;
    while (ft->recs[n].state != FSEG_FREE)
        n++;
    struct flash_rec *r = &ft->recs[n];
    uint64_t seq = ft->seq_next++;
    uint32_t vid = (uint32_t)(seq % ft->nvids);
    if (ft->vmap[vid]) {
        /* the id came round: its old holder's slots go stale, and so it
         * goes (a restart must not link it again) */
        struct flash_rec *old = &ft->recs[ft->vmap[vid] - 1];
        ft->vmap[vid] = 0;
        if (old->state == FSEG_DISK) {
            CNT(ft, objects_evicted, old->live_items);
            rec_free(ft, old);
        }
    }
    if (ft->opt.keep)
        flash_keep_open(ft->opt.keep, n, seq, cas_base, (uint32_t)wi);
    flash_tier_cls_reset(ft, n);
    *r = (struct flash_rec){.vid = vid,
                            .seq = seq,
                            .cas_base = cas_base,
                            .state = FSEG_FILLING,
                            .bucket = (uint8_t)wi,
                            .buf = buf,
                            .nbytes = FLASH_HDR_LEN};
    ft->vmap[vid] = n + 1;
    ft->nfree--;
    flash_writer_init(&ft->w[wi], buf, ft->opt.seg_size, seq, ft->instance, cas_base);
    ft->w_seg[wi] = (int32_t)n;
    CNT(ft, page_allocs, 1);
    return true;
}

/* Writer wi is full (or done): finish it and queue it for the thread. */
static void writer_seal(struct flash_tier *ft, int wi)
{
    int32_t n = ft->w_seg[wi];
    if (n < 0)
        return;
    struct flash_rec *r = &ft->recs[n];
    if (!ft->w[wi].hdr.nitems) {
        /* compaction's, opened for an item that had died: nothing to write */
        ft->w_seg[wi] = -1;
        rec_free(ft, r);
        return;
    }
    flash_writer_finish(&ft->w[wi]);
    r->nbytes = ft->w[wi].used;
    r->max_exptime = ft->w[wi].hdr.max_exptime;
    r->state = FSEG_WRITING;
    r->qnext = 0;
    if (ft->q_tail)
        ft->recs[ft->q_tail - 1].qnext = (uint32_t)n + 1;
    else
        ft->q_head = (uint32_t)n + 1;
    ft->q_tail = (uint32_t)n + 1;
    ft->w_seg[wi] = -1;
    pthread_cond_signal(&ft->cond);
}

/* Append a RAM-format item (cas_base and tbase its segment's) to writer
 * wi; its new slot, or 0 (*full when no segment or buffer could be had). */
static uint64_t writer_add(struct flash_tier *ft, int wi, const char *p, uint64_t cas_base,
                           rel_time_t tbase, uint64_t cas, uint64_t ftag, uint32_t nvalue,
                           bool *full)
{
    struct item_hdr h;
    item_decode(p, &h);
    /* a kept tier has one liveness bit per FLASH_KEEP_UNIT bytes: a
     * smaller item stays off flash */
    if (ft->opt.keep && item_total(&h) < FLASH_KEEP_UNIT)
        return 0;
    for (int tries = 0; tries < 2; tries++) {
        if (ft->w_seg[wi] < 0 && !writer_open(ft, wi, cas)) {
            *full = true;
            return 0;
        }
        uint32_t off;
        int rc = flash_writer_add_ram(&ft->w[wi], p, cas_base, tbase, &off);
        if (rc == FLASH_OK) {
            struct flash_rec *r = &ft->recs[ft->w_seg[wi]];
            uint32_t len = ft->w[wi].used - off;
            r->nitems++;
            r->live_items++;
            flash_tier_cls_note(ft, (uint32_t)ft->w_seg[wi], h.nkey, item_get_u32(p, h.flags_off));
            if (len > r->max_item)
                r->max_item = len;
            r->nbytes = ft->w[wi].used;
            CNT(ft, objects_written, 1);
            CNT(ft, bytes_written, len);
            /* counted once on the device, as its bytes are: a rewrite
             * is what write amplification counts on top */
            if (wi != FLASH_W_COMPACT)
                r->moved += nvalue;
            else
                ft->gc_credit -= len;
            /* reachable once the caller puts the slot in: set first */
            if (ft->opt.keep)
                flash_keep_set(ft->opt.keep, (uint32_t)ft->w_seg[wi], off);
            return slot_make_flash(ftag, FLASH_SEG_BASE + r->vid, off);
        }
        if (rc != FLASH_E_FULL || ft->w[wi].hdr.nitems == 0)
            return 0; /* larger than a whole segment */
        writer_seal(ft, wi);
    }
    return 0;
}

uint64_t flash_tier_take(struct flash_tier *ft, const char *p, const struct item_hdr *h,
                         uint64_t ram_cas_base, rel_time_t ram_tbase, uint64_t ftag, rel_time_t now,
                         enum flash_take_why why, bool *full)
{
    /* memcached's rules: a value of at least ext_item_size (its nbytes,
     * with the "\r\n") and not about to expire anyway; idle at least
     * ext_item_age while memory is free (its storage write thread takes
     * any age once a class is short of free chunks: here, at eviction). */
    struct flash_tier_options o = tuned(ft);
    if ((uint64_t)h->nvalue + 2 < o.item_size)
        return 0;
    rel_time_t atime = item_get_st(p, h, ram_tbase) & ~ITEM_S_MASK;
    if (why == FLASH_TAKE_IDLE &&
        (o.item_age == UINT32_MAX || atime > now || now - atime < o.item_age))
        return 0;
    rel_time_t exp = item_get_u32(p, h->exp_off);
    if (exp != REL_TIME_NEVER && exp <= now)
        return 0;
    /* ext_low_ttl: short TTLs go to segments of their own, which then
     * expire whole */
    int wi = exp != REL_TIME_NEVER && exp - now < o.low_ttl ? FLASH_W_LOWTTL : FLASH_W_NORMAL;
    uint64_t cas = item_get_cas(p, h, ram_cas_base);
    bool no_room = false;
    pthread_mutex_lock(&ft->lock);
    uint64_t sl = writer_add(ft, wi, p, ram_cas_base, ram_tbase, cas, ftag, h->nvalue, &no_room);
    pthread_mutex_unlock(&ft->lock);
    if (no_room && why == FLASH_TAKE_EVICT)
        CNT(ft, skipped_full, 1);
    if (no_room && full)
        *full = true;
    return sl;
}

void flash_tier_idle_rules(struct flash_tier *ft, uint32_t *item_size, uint32_t *item_age)
{
    struct flash_tier_options o = tuned(ft);
    *item_size = o.item_size;
    *item_age = o.item_age;
}

uint64_t flash_tier_pause_ns(struct flash_tier *ft, uint64_t own_ns)
{
    uint64_t max = (uint64_t)tuned(ft).max_sleep * 1000;
    uint64_t ns = max < own_ns ? max : own_ns;
    return ns > FLASH_PAUSE_MIN_NS ? ns : FLASH_PAUSE_MIN_NS;
}

/* --- slots --- */

/* The record a flash slot names, or NULL (ft->lock held). */
static struct flash_rec *rec_of(struct flash_tier *ft, uint64_t slot)
{
    uint32_t v = flash_slot_vid(slot);
    if (v >= ft->nvids || !ft->vmap[v])
        return NULL;
    return &ft->recs[ft->vmap[v] - 1];
}

void flash_tier_forget(struct flash_tier *ft, uint64_t slot)
{
    pthread_mutex_lock(&ft->lock);
    struct flash_rec *r = rec_of(ft, slot);
    /* dead before gone: the caller acknowledges the drop after this */
    if (r && ft->opt.keep)
        flash_keep_clear(ft->opt.keep, (uint32_t)(r - ft->recs), slot_flash_off(ft->index, slot));
    if (r && r->live_items) {
        r->live_items--;
    } else {
        CNT(ft, slots_dropped, 1);
        index_stale_add(ft->index, -1);
    }
    pthread_mutex_unlock(&ft->lock);
}

bool flash_tier_stale(struct flash_tier *ft, uint64_t slot)
{
    pthread_mutex_lock(&ft->lock);
    bool gone = !rec_of(ft, slot);
    if (gone) {
        CNT(ft, slots_dropped, 1);
        index_stale_add(ft->index, -1);
    }
    pthread_mutex_unlock(&ft->lock);
    return gone;
}

void flash_tier_clear(struct flash_tier *ft, uint64_t *b, uint64_t *slot)
{
    uint64_t sl = slot_load(slot);
    index_clear_slot(ft->index, b, slot);
    flash_tier_forget(ft, sl);
}

/* flash_tier_drop_tag in one bucket's chain */
static unsigned drop_tag_in(struct flash_tier *ft, uint64_t *b, uint64_t ftag, const uint64_t *keep)
{
    unsigned n = 0;
    for (uint64_t *cur = b; cur; cur = index_next(ft->index, cur)) {
        for (int i = 0; i < INDEX_SLOTS; i++) {
            uint64_t sl = slot_load(index_slot(cur, i));
            if (!sl || index_slot(cur, i) == keep || !slot_is_flash(sl) ||
                slot_flash_tag(ft->index, sl) != ftag)
                continue;
            flash_tier_clear(ft, b, index_slot(cur, i));
            n++;
            /* the chain may have lost a bucket: start over */
            cur = b;
            i = -1;
        }
    }
    return n;
}

unsigned flash_tier_drop_tag(struct flash_tier *ft, const struct index_pair *p, uint64_t ftag,
                             const uint64_t *keep)
{
    unsigned n = drop_tag_in(ft, p->b[0], ftag, keep);
    if (p->b[1])
        n += drop_tag_in(ft, p->b[1], ftag, keep);
    /* another key's copy among them is a value the cache forgot: told */
    if (n)
        CNT(ft, tag_dropped, n);
    return n;
}

enum flash_where flash_tier_locate(struct flash_tier *ft, uint64_t slot, struct flash_loc *loc,
                                   char *(*take)(void *arg, uint32_t len), void *arg)
{
    enum flash_where at = FLASH_AT_NONE;
    pthread_mutex_lock(&ft->lock);
    struct flash_rec *r = rec_of(ft, slot);
    uint32_t off = slot_flash_off(ft->index, slot);
    if (r && r->state != FSEG_FREE && off >= FLASH_HDR_LEN && off < r->nbytes) {
        uint32_t n = (uint32_t)(r - ft->recs);
        *loc = (struct flash_loc){
            .page = n / ft->segs_per_page,
            .page_off = (uint64_t)(n % ft->segs_per_page) * ft->opt.seg_size,
            .seg_len = r->nbytes,
            .max_item = r->max_item,
            .seq = r->seq,
            .seed = flash_seg_seed(r->seq, ft->instance),
            .cas_base = r->cas_base,
        };
        if (r->state == FSEG_DISK) {
            at = FLASH_AT_DISK;
        } else {
            /* the item alone: its header was written here, by us */
            struct item_hdr h;
            item_decode(r->buf + off, &h);
            uint32_t len = r->nbytes - off;
            if (item_total(&h) < len)
                len = item_total(&h);
            char *out = take(arg, len);
            if (out)
                memcpy(out, r->buf + off, len);
            at = FLASH_AT_BUF;
        }
        r->reads++;
    }
    pthread_mutex_unlock(&ft->lock);
    return at;
}

/* The FLASH_MOVE_WAYS moves a slot's hash picks, newest first. */
static struct flash_move *move_set(struct flash_tier *ft, uint64_t slot)
{
    uint64_t h = (slot_id(slot) * 0x9e3779b97f4a7c15ull) >> 40;
    return &ft->moves[(h & (FLASH_MOVES / FLASH_MOVE_WAYS - 1)) * FLASH_MOVE_WAYS];
}

/* ft->lock held */
static void move_note(struct flash_tier *ft, uint64_t from, uint64_t to)
{
    struct flash_move *m = move_set(ft, from);
    memmove(m + 1, m, (FLASH_MOVE_WAYS - 1) * sizeof *m);
    m[0] = (struct flash_move){.from = slot_id(from), .to = slot_id(to)};
}

uint64_t flash_tier_moved(struct flash_tier *ft, uint64_t slot)
{
    uint64_t to = 0;
    pthread_mutex_lock(&ft->lock);
    /* a copy compacted again meanwhile: a few hops at most */
    for (int hop = 0; hop < 4; hop++) {
        const struct flash_move *m = move_set(ft, slot);
        uint64_t from = slot_id(slot);
        int k = 0;
        while (k < (int)FLASH_MOVE_WAYS && m[k].from != from)
            k++;
        if (k == (int)FLASH_MOVE_WAYS)
            break;
        slot = to = m[k].to;
    }
    pthread_mutex_unlock(&ft->lock);
    return to;
}

bool flash_tier_still(struct flash_tier *ft, uint64_t slot, uint64_t seq)
{
    pthread_mutex_lock(&ft->lock);
    struct flash_rec *r = rec_of(ft, slot);
    bool ok = r && r->seq == seq && r->state != FSEG_FREE;
    pthread_mutex_unlock(&ft->lock);
    return ok;
}

uint32_t flash_tier_recache_rate(struct flash_tier *ft)
{
    return tuned(ft).recache_rate;
}

bool flash_tier_relive(struct flash_tier *ft, uint64_t slot, uint64_t seq)
{
    pthread_mutex_lock(&ft->lock);
    struct flash_rec *r = rec_of(ft, slot);
    /* Not into the segment compaction is emptying: it may have passed
     * the item by (dead while lent), and frees the segment when done. */
    bool ok =
        r && r->seq == seq && r->state != FSEG_FREE && (int32_t)(r - ft->recs) != ft->gc_victim;
    if (ok) {
        r->live_items++;
        /* live again before reachable again: the lent copy's take-over
         * cleared its bit (flash_tier_forget), and a restart must find it */
        if (ft->opt.keep)
            flash_keep_set(ft->opt.keep, (uint32_t)(r - ft->recs), slot_flash_off(ft->index, slot));
    }
    pthread_mutex_unlock(&ft->lock);
    return ok;
}

/* --- the writer thread --- */

/* Write up to max queued segments out, one at a time (ft->lock held on
 * entry and exit, dropped around each write); how many were written. */
static unsigned write_queued(struct flash_tier *ft, unsigned max)
{
    unsigned wrote = 0;
    while (ft->q_head && wrote < max) {
        uint32_t n = ft->q_head - 1;
        struct flash_rec *r = &ft->recs[n];
        ft->q_head = r->qnext;
        if (!ft->q_head)
            ft->q_tail = 0;
        uint32_t len = round_up(r->nbytes, FLASH_DEV_ALIGN);
        uint32_t page = n / ft->segs_per_page;
        uint64_t off = (uint64_t)(n % ft->segs_per_page) * ft->opt.seg_size;
        const char *buf = r->buf;
        pthread_mutex_unlock(&ft->lock);
        int rc = flash_dev_write(&ft->dev, page, off, buf, len);
        pthread_mutex_lock(&ft->lock);
        if (rc == 0) {
            /* on the device (a kill -9 leaves the page cache's copy to
             * the kernel): only now may a restart read it */
            if (ft->opt.keep)
                flash_keep_disk(ft->opt.keep, n, r->nbytes, r->nitems, r->max_exptime);
            r->state = FSEG_DISK;
            CNT(ft, value_bytes_moved, r->moved);
            /* what the other writers give the device earns compaction
             * its share of rewrites (flash_gc.h) */
            if (r->bucket != FLASH_W_COMPACT)
                ft->gc_credit += (int64_t)len * FLASH_GC_BUDGET_NUM / FLASH_GC_BUDGET_DEN;
            wrote++;
            rec_put_buf(ft, r);
        } else {
            /* Its items read as misses from now on: never a wrong value.
             * One line a second at most: a failing disk fails them all. */
            static time_t logged;
            time_t now = time(NULL);
            if (now != logged && (logged = now))
                log_error("nodelay: flash write of %u bytes to page %u failed: %s; %u items lost",
                          len, page, strerror(-rc), r->live_items);
            CNT(ft, write_errors, 1);
            CNT(ft, objects_evicted, r->live_items);
            rec_free(ft, r);
        }
    }
    return wrote;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec deadline(uint64_t wait_ns)
{
    uint64_t t = mono_ns() + wait_ns;
    return (struct timespec){.tv_sec = (time_t)(t / 1000000000u),
                             .tv_nsec = (long)(t % 1000000000u)};
}

static void *writer_main(void *arg)
{
    struct flash_tier *ft = arg;
    uint64_t busy = mono_ns(); /* when a wait last ended with work */
    pthread_mutex_lock(&ft->lock);
    while (!ft->stopping) {
        /* a segment at a time: each written with free pages short is
         * the compactor's turn, not the last of a queue that a slow
         * device let grow */
        unsigned wrote = write_queued(ft, 1);
        if (wrote) {
            ft->wrote_ns = mono_ns();
            gc_kick_if_short(ft);
        }
        if (ft->stopping)
            break;
        struct timespec until = deadline(SPARES_IDLE_NS);
        if (!ft->q_head && pthread_cond_timedwait(&ft->cond, &ft->lock, &until) == ETIMEDOUT &&
            !ft->q_head) {
            /* a second with nothing to write: not between two segments
             * of a write load, whose spares would be faulted in again */
            if (mono_ns() - busy >= SPARES_IDLE_NS)
                spares_release(ft);
        } else {
            busy = mono_ns();
        }
    }
    pthread_mutex_unlock(&ft->lock);
    return NULL;
}

/* The compactor thread. Kicked by the writer thread when segments go out
 * with free pages short, it frees a victim at a time while they stay
 * short (flash_gc_choose, room wanted: a victim past the budget is
 * dropped), so a writer needing a segment finds one rather than dropping
 * one itself; its segment reads hold up no write. Else, after 100 ms (or
 * ext_max_sleep if shorter) with nothing written, a pass: rescues only. */
static void *gc_main(void *arg)
{
    struct flash_tier *ft = arg;
    pthread_mutex_lock(&ft->lock);
    while (!ft->stopping) {
        if (ft->gc_kick) {
            ft->gc_kick = false;
            unsigned did = 1;
            while (did && !ft->stopping && ft->nfree < gc_under(ft)) {
                pthread_mutex_unlock(&ft->lock);
                pthread_mutex_lock(&ft->compact_lock);
                did = flash_tier_compact(ft, true);
                pthread_mutex_unlock(&ft->compact_lock);
                pthread_mutex_lock(&ft->lock);
            }
            continue;
        }
        uint64_t wait = flash_tier_pause_ns(ft, WRITER_IDLE_NS);
        struct timespec until = deadline(wait);
        if (pthread_cond_timedwait(&ft->gc_cond, &ft->lock, &until) == ETIMEDOUT && !ft->gc_kick &&
            !ft->stopping && mono_ns() - ft->wrote_ns >= wait) {
            pthread_mutex_unlock(&ft->lock);
            flash_tier_maintain(ft);
            pthread_mutex_lock(&ft->lock);
        }
    }
    pthread_mutex_unlock(&ft->lock);
    return NULL;
}

/* --- compaction --- */

/* The segment to compact next and how (ft->lock held): flash_gc_choose,
 * after freeing every written segment whose items are all gone or whose
 * latest expiry has passed. -1 when none. */
static int32_t compact_pick(struct flash_tier *ft, bool need_room, bool *drop_unread,
                            enum flash_gc_act *act)
{
    rel_time_t now = clock_now();
    struct flash_tier_options o = tuned(ft);
    for (uint32_t i = 0; i < ft->nsegs; i++) {
        struct flash_rec *r = &ft->recs[i];
        if (r->state != FSEG_DISK)
            continue;
        bool expired = r->max_exptime != REL_TIME_NEVER && r->max_exptime <= now;
        if (!r->live_items || expired) {
            CNT(ft, page_reclaims, 1);
            rec_free(ft, r);
        }
    }
    struct flash_gc_rule g = {.free_segs = ft->nfree,
                              .compact_under = gc_under(ft),
                              .drop_under = pages_segs(ft, o.drop_under),
                              .max_frag = o.max_frag,
                              .drop_unread = o.drop_unread,
                              .need_room = need_room && ft->nfree < flash_gc_room(ft),
                              .credit = ft->gc_credit};
    int32_t victim;
    *act = flash_gc_choose(ft->recs, ft->nsegs, &g, &victim, drop_unread);
    return *act == FLASH_GC_NONE ? -1 : victim;
}

uint64_t *flash_tier_item_slot(struct flash_tier *ft, uint32_t vid, const struct flash_item *fi,
                               uint64_t cas_base, struct index_pair *keys, uint64_t **chain,
                               enum item_life *life)
{
    uint64_t hv = XXH3_64bits(fi->key, fi->h.nkey);
    uint64_t want = slot_make_flash(index_flash_tag(ft->index, hv), FLASH_SEG_BASE + vid, fi->off);
    /* a flash slot may be in either of its key's buckets */
    index_lock_key(ft->index, hv, keys);
    uint64_t *slot = index_pair_find(ft->index, keys, want, chain);
    if (slot)
        *life = life_of_item(ft->life, fi->p, &fi->h, cas_base, 0, clock_now());
    return slot;
}

/* One item of a segment being compacted: rewritten if its slot still
 * names it, dropped by the ext_* rules, else left (it is dead). False
 * when no segment or buffer could be had for it: it stays where it is,
 * and so does its segment, for a later pass. */
static bool compact_item(struct flash_tier *ft, uint32_t vid, const struct flash_item *fi,
                         bool drop_unread, uint64_t cas_base)
{
    struct index_pair keys;
    uint64_t *b = NULL;
    enum item_life life = ITEM_LIVE;
    uint64_t *slot = flash_tier_item_slot(ft, vid, fi, cas_base, &keys, &b, &life);
    if (slot) {
        uint64_t want = slot_load(slot) & ~SLOT_FREQ;
        /* read before it went, or since: the slot counts reads from flash
         * (store_flash.c), two of them as memcached's header goes ACTIVE
         * and leaves the COLD LRU that drop_unread drops from */
        bool unread = !(fi->atime & ITEM_S_FETCHED) && slot_freq(slot_load(slot)) < 2;
        if (life != ITEM_LIVE) {
            flash_tier_clear(ft, b, slot);
        } else if (drop_unread && unread) {
            flash_tier_clear(ft, b, slot);
            CNT(ft, compact_skipped, 1);
        } else {
            pthread_mutex_lock(&ft->lock);
            bool no_room = false;
            uint64_t ns = writer_add(ft, FLASH_W_COMPACT, fi->p, cas_base, 0, fi->cas,
                                     slot_flash_tag(ft->index, want), fi->h.nvalue, &no_room);
            if (ns)
                move_note(ft, want, ns);
            pthread_mutex_unlock(&ft->lock);
            if (ns) {
                /* in the same bucket: its place and its reads stay */
                slot_store(slot, ns | (slot_load(slot) & (SLOT_FREQ | SLOT_PLACE)));
                CNT(ft, compact_rescues, 1);
                flash_tier_forget(ft, want);
            } else if (no_room) {
                index_unlock_pair(&keys);
                return false;
            } else {
                flash_tier_clear(ft, b, slot);
                CNT(ft, compact_lost, 1);
            }
        }
    }
    index_unlock_pair(&keys);
    return true;
}

/* Before compaction copies an item of `need` bytes and CAS `cas` (no
 * bucket lock held): room in its writer, or a buffer to open the next one
 * with, writing out a queued segment if that is what holds them all
 * (ft->lock held). One, not the queue: the writers refill it as fast as
 * a slow device empties it, and the victim's items die meanwhile. The
 * next one is opened under the same hold, so a writer cannot take the
 * buffer that write freed. */
static void compact_room(struct flash_tier *ft, uint32_t need, uint64_t cas)
{
    int32_t n = ft->w_seg[FLASH_W_COMPACT];
    if (n >= 0 && ft->w[FLASH_W_COMPACT].size - ft->w[FLASH_W_COMPACT].used >= need)
        return;
    writer_seal(ft, FLASH_W_COMPACT);
    if (!ft->nspare && ft->nbufs >= max_bufs() && write_queued(ft, 1))
        writer_open(ft, FLASH_W_COMPACT, cas);
}

unsigned flash_tier_maintain(struct flash_tier *ft)
{
    /* one compaction at a time (the writer thread's, a test's) */
    pthread_mutex_lock(&ft->compact_lock);
    unsigned freed = flash_tier_compact(ft, false);
    pthread_mutex_unlock(&ft->compact_lock);
    return freed;
}

/* One victim (compact_lock held); need_room: the writers are writing, and
 * a victim past the budget or ext_max_frag is dropped rather than kept. */
static unsigned flash_tier_compact(struct flash_tier *ft, bool need_room)
{
    pthread_mutex_lock(&ft->lock);
    bool drop_unread;
    enum flash_gc_act act;
    int32_t n = compact_pick(ft, need_room, &drop_unread, &act);
    if (n >= 0 && act == FLASH_GC_DROP) {
        rec_drop(ft, &ft->recs[n]);
        pthread_mutex_unlock(&ft->lock);
        return 1;
    }
    if (n < 0) {
        /* nothing more to compact and nothing written for a second: what
         * it rewrote goes to the device (under a write load it stays open
         * for the next victims: a part-filled segment holds no more) */
        if (!need_room && mono_ns() - ft->wrote_ns >= SPARES_IDLE_NS)
            writer_seal(ft, FLASH_W_COMPACT);
        pthread_mutex_unlock(&ft->lock);
        return 0;
    }
    struct flash_rec *r = &ft->recs[n];
    struct flash_rec snap = *r;
    ft->gc_victim = n;
    pthread_mutex_unlock(&ft->lock);

    uint32_t len = round_up(snap.nbytes, FLASH_DEV_ALIGN);
    char *buf = aligned_alloc(FLASH_DEV_ALIGN, len);
    if (!buf) {
        pthread_mutex_lock(&ft->lock);
        ft->gc_victim = -1;
        pthread_mutex_unlock(&ft->lock);
        return 0;
    }
    uint32_t page = (uint32_t)n / ft->segs_per_page;
    uint64_t off = (uint64_t)((uint32_t)n % ft->segs_per_page) * ft->opt.seg_size;
    int rc = flash_dev_read(&ft->dev, page, off, buf, len);
    struct flash_seg_hdr hdr;
    bool stalled = false;
    if (rc < 0 || flash_seg_parse_hdr(buf, len, ft->instance, &hdr) != FLASH_OK ||
        hdr.seq != snap.seq) {
        if (rc < 0)
            log_error("nodelay: flash read of page %u for compaction failed: %s", page,
                      strerror(-rc));
        CNT(ft, read_errors, 1);
        CNT(ft, compact_lost, snap.live_items);
    } else {
        struct flash_iter it;
        struct flash_item fi;
        flash_iter_init(&it, buf, &hdr);
        int k;
        while ((k = flash_iter_next(&it, &fi)) == 1) {
            pthread_mutex_lock(&ft->lock);
            compact_room(ft, fi.len + ITEM_HDR_MAX, fi.cas);
            pthread_mutex_unlock(&ft->lock);
            if (!compact_item(ft, snap.vid, &fi, drop_unread, hdr.cas_base)) {
                stalled = true;
                break;
            }
        }
        /* a damaged item each (skipped), and the rest of a walk cut short */
        CNT(ft, badcrc_from_extstore, it.damaged + (k < 0));
    }
    free(buf);
    pthread_mutex_lock(&ft->lock);
    ft->gc_victim = -1;
    /* What compaction rewrote is in its writer's buffer (read from there
     * until written), so the segment it came from can go now; the writer
     * stays open for the next pass, so a run of passes packs their live
     * items into whole segments, not a part-filled one each. */
    if (!stalled && r->seq == snap.seq && r->state == FSEG_DISK) {
        CNT(ft, page_reclaims, 1);
        rec_free(ft, r);
    }
    pthread_mutex_unlock(&ft->lock);
    return stalled ? 0 : 1;
}

/* --- restarts (-e) --- */

void flash_tier_stop(struct flash_tier *ft, bool clean)
{
    if (!ft->opt.keep || !ft->recs)
        return;
    /* No thread touches the record from here: the writer thread's write
     * under way (its lock let go) or a compaction would change it after
     * its clean sum, and the next start would discard every flash item. */
    threads_stop(ft);
    /* what the writers hold goes to the device, for the next start */
    pthread_mutex_lock(&ft->compact_lock);
    pthread_mutex_lock(&ft->lock);
    for (int wi = 0; wi < FLASH_WRITERS; wi++) {
        int32_t n = ft->w_seg[wi];
        if (n < 0)
            continue;
        if (ft->w[wi].hdr.nitems) {
            writer_seal(ft, wi);
        } else {
            ft->w_seg[wi] = -1;
            rec_free(ft, &ft->recs[n]);
        }
    }
    write_queued(ft, UINT_MAX);
    pthread_mutex_unlock(&ft->lock);
    pthread_mutex_unlock(&ft->compact_lock);
    if (clean)
        flash_keep_close_clean(ft->opt.keep);
}
