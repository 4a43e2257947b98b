/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash half of lru_crawler metadump / mgdump (store_compat.h): the
 * tier's segments walked in order, each read a part at a time into one
 * buffer (FLASH_SCAN_PART, or an item's length when one is longer), by
 * the worker's own asynchronous reads (flash_dev_submit, completing on
 * its thread), or copied from a writer's buffer for a segment not on the
 * device yet. Each item read is judged as compaction judges it
 * (flash_scan_live). A part's items are whole: one that runs past the
 * part is read again from its start with the next part. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "store/flash/flash_scan.h"
#include "store/store_compat.h"
#include "store/store_core.h"
#include "store/store_flash_ctl.h"

/* Bytes a part reads: a few items of the sizes that go to flash, so the
 * walk makes one read per few dozen lines and holds this much at most
 * (an item longer than it: the item's length). */
#define FLASH_SCAN_PART (64u * 1024u)

struct store_flash_scan {
    struct store_ctx *ctx;
    struct store_flash_wait *w;
    struct flash_read r;
    struct flash_scan_pos pos;
    struct flash_scan_seg sg; /* the segment being read */
    char *buf;
    uint32_t cap;
    uint32_t from, len; /* buf holds the segment's bytes [from, from + len) */
    uint32_t want;      /* the next part takes at least this from pos.off */
    bool have;          /* a part is in */
    bool inflight, orphan, over, failed;
};

static uint32_t align_up(uint64_t n)
{
    return (uint32_t)((n + FLASH_DEV_ALIGN - 1) & ~(uint64_t)(FLASH_DEV_ALIGN - 1));
}

struct store_flash_scan *store_flash_scan_create(struct store_ctx *ctx, struct store_flash_wait *w)
{
    if (!ctx->store->flash || !w)
        return NULL;
    struct store_flash_scan *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->ctx = ctx;
    sc->w = w;
    sc->pos.off = FLASH_HDR_LEN;
    return sc;
}

static void scan_free(struct store_flash_scan *sc)
{
    free(sc->buf);
    free(sc);
}

void store_flash_scan_destroy(struct store_flash_scan *sc)
{
    if (!sc)
        return;
    if (sc->inflight)
        sc->orphan = true; /* its completion frees it: the device writes buf */
    else
        scan_free(sc);
}

/* A read failed: the dump ends (read_errors, one log line a second). */
static void scan_failed(struct store_flash_scan *sc, uint32_t page, int err)
{
    struct flash_tier *ft = sc->ctx->store->flash;
    static rel_time_t logged;
    rel_time_t now = clock_now();
    if (err != -ECANCELED && __atomic_exchange_n(&logged, now, __ATOMIC_RELAXED) != now)
        log_error("nodelay: flash read of page %u for a dump failed: %s (the dump ends there; "
                  "read_errors counts it)",
                  page, strerror(-err));
    FLASH_CNT(ft, read_errors, 1);
    sc->failed = true;
}

/* On the worker's thread (store_flash_drain). */
static void scan_read_done(struct flash_read *r)
{
    struct store_flash_scan *sc = r->arg;
    struct store_flash_wait *w = sc->w;
    sc->ctx->flash_inflight--;
    sc->inflight = false;
    if (sc->orphan)
        scan_free(sc);
    else if (r->result < 0)
        scan_failed(sc, r->page, r->result);
    else
        sc->have = true;
    store_flash_wait_release(w);
}

/* Room for len bytes (aligned for O_DIRECT); false out of memory. */
static bool scan_room(struct store_flash_scan *sc, uint32_t len)
{
    if (len <= sc->cap)
        return true;
    char *b = aligned_alloc(FLASH_DEV_ALIGN, len);
    if (!b)
        return false;
    free(sc->buf);
    sc->buf = b;
    sc->cap = len;
    return true;
}

enum store_probe store_flash_scan_probe(struct store_flash_scan *sc)
{
    if (!sc || sc->have || sc->over || sc->failed)
        return STORE_PROBE_READY;
    if (sc->inflight)
        return STORE_PROBE_WAIT;
    struct flash_tier *ft = sc->ctx->store->flash;
    uint32_t want = sc->want > FLASH_SCAN_PART ? sc->want : FLASH_SCAN_PART;
    if (!scan_room(sc, align_up((uint64_t)want + FLASH_DEV_ALIGN))) {
        scan_failed(sc, 0, -ENOMEM);
        return STORE_PROBE_READY;
    }
    uint32_t copied = 0;
    enum flash_where at = flash_scan_next(ft, &sc->pos, &sc->sg, sc->buf, sc->cap, &copied);
    if (at == FLASH_AT_NONE) {
        sc->over = true;
        return STORE_PROBE_READY;
    }
    if (at == FLASH_AT_BUF) {
        sc->from = sc->pos.off;
        sc->len = copied;
        sc->have = true;
        return STORE_PROBE_READY;
    }
    /* whole blocks around [off, off + want), within the segment's items */
    uint32_t from = sc->pos.off & ~(FLASH_DEV_ALIGN - 1);
    uint32_t to = align_up((uint64_t)sc->pos.off + want);
    if (to > align_up(sc->sg.nbytes))
        to = align_up(sc->sg.nbytes);
    sc->from = from;
    sc->len = to - from;
    sc->r = (struct flash_read){
        .page = sc->sg.page,
        .off = sc->sg.page_off + from,
        .len = sc->len,
        .buf = sc->buf,
        .done = scan_read_done,
        .arg = sc,
    };
    int rc = flash_dev_submit(&ft->dev, sc->ctx->flash_cq, &sc->r);
    if (rc < 0) {
        scan_failed(sc, sc->sg.page, rc);
        return STORE_PROBE_READY;
    }
    sc->ctx->flash_inflight++;
    sc->inflight = true;
    store_flash_wait_hold(sc->w);
    return STORE_PROBE_WAIT;
}

/* The walk goes on at the next segment. */
static void scan_next_seg(struct store_flash_scan *sc)
{
    sc->pos = (struct flash_scan_pos){.n = sc->sg.n + 1, .off = FLASH_HDR_LEN};
    sc->have = false;
    sc->want = 0;
}

/* The item is live: what the walk's fn sees of it. */
static void scan_visit(struct store_flash_scan *sc, const struct flash_item *fi, unsigned freq,
                       store_flash_walk_fn fn, void *arg)
{
    const struct store *s = sc->ctx->store;
    struct store_item it;
    memset(&it, 0, sizeof it);
    it.key = fi->key;
    it.nkey = fi->h.nkey;
    it.value = fi->value;
    it.nvalue = fi->h.nvalue;
    it.flags = fi->flags;
    it.cas = fi->cas;
    it.exptime = fi->exptime;
    it.last_access = fi->atime & ~ITEM_S_MASK;
    /* fetched before it went, or read from flash since (memcached bumps
     * the header it keeps in RAM) */
    it.fetched = (fi->atime & ITEM_S_FETCHED) || freq;
    it.stale = fi->atime & ITEM_S_STALE;
    /* the class of the header memcached keeps in RAM for it */
    it.class_id = classes_id(&s->classes, classes_ext_hdr_size(&s->classes, fi->h.nkey, fi->flags));
    fn(&it, sc->sg.n, fi->off, arg);
}

enum store_scan store_flash_scan_walk(struct store_flash_scan *sc, size_t max,
                                      store_flash_walk_fn fn, void *arg)
{
    if (!sc || sc->over || sc->failed)
        return STORE_SCAN_END;
    struct flash_tier *ft = sc->ctx->store->flash;
    for (size_t seen = 0; seen < max; seen++) {
        if (!sc->have)
            return STORE_SCAN_READ;
        uint32_t off = sc->pos.off, end = sc->from + sc->len;
        if (off >= sc->sg.nbytes) {
            scan_next_seg(sc);
            continue;
        }
        if (off < sc->from || off >= end) {
            sc->have = false;
            sc->want = 0;
            continue;
        }
        /* only the segment's items, as it was found, are trusted */
        uint32_t avail = (end < sc->sg.nbytes ? end : sc->sg.nbytes) - off;
        const char *p = sc->buf + (off - sc->from);
        uint32_t len = 0;
        int rc = flash_item_span(p, avail, &len);
        bool past =
            rc == FLASH_E_SHORT || (rc == FLASH_OK && len > avail && len <= sc->sg.nbytes - off);
        if (past && end < sc->sg.nbytes) {
            /* it runs past the part (within the segment's items, so a
             * damaged length asks for no more than those): the next part
             * starts with it */
            sc->have = false;
            sc->want = rc == FLASH_OK ? len : ITEM_HDR_MAX;
            continue;
        }
        struct flash_item fi;
        if (rc != FLASH_OK || flash_item_parse(p, avail, sc->sg.seed, sc->sg.cas_base, &fi)) {
            /* Another write's bytes (the segment dropped and written
             * again since it was found) or a damaged item: the rest of
             * the segment cannot be walked. Only damage is counted. */
            if (flash_tier_still(ft, slot_make(0, FLASH_SEG_BASE + sc->sg.vid, 0), sc->sg.seq))
                FLASH_CNT(ft, badcrc_from_extstore, 1);
            scan_next_seg(sc);
            continue;
        }
        fi.off = off;
        sc->pos.off = off + fi.len;
        unsigned freq = 0;
        if (flash_scan_live(ft, &sc->sg, &fi, &freq))
            scan_visit(sc, &fi, freq, fn, arg);
    }
    return STORE_SCAN_MORE;
}
