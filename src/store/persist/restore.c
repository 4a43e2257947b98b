/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* qsort_r */
/* The restore scan: rebuild the index and the segment lists from an -e file
 * at start, after a graceful stop (the file's checksums must all hold) or
 * after a crash (every item's own checksum must hold). docs/store.md
 * "Restarts" says why what is read here is exactly what clients last saw.
 *
 * Runs in store_create before any other thread exists, so it takes no pool
 * lock; it does take bucket locks, as the index functions expect.
 */
#include "store/persist/restore.h"
#include "store/persist/persist.h"
#include "store/persist/split.h"
#include "store/persist/restore_index.h"
#include "store/store_core.h"
#include "store/store_classes.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_life.h"
#include "store/store_seg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/log.h"

/* The segment's table entry is one the server can have written. Its
 * cas_base was the CAS counter when it was opened, at most a few CAS past
 * the ceiling (threads between taking a CAS and raising the ceiling). */
static bool restore_seg_sane(const struct store *s, const struct pm_seg *ps)
{
    if (ps->write_off > s->pool.seg_size || ps->cas_base > s->pm->hdr->cas_ceiling + PM_CAS_STEP)
        return false;
    if (ps->flags & PM_SEG_COMPACTING)
        return ps->compact_w <= ps->compact_off && ps->compact_off <= ps->write_off;
    return ps->flags == 0;
}

static void restore_discard(struct persist *pm)
{
    memset(pm->segs, 0, (size_t)pm->nsegs * sizeof(struct pm_seg));
    memset(pm->journal, 0, PM_JOURNAL_SLOTS * sizeof(struct pm_journal));
    pm->hdr->oldest_live = 0;
    pm->hdr->oldest_cas = 0;
}

/* A graceful stop's file that fails its checksums: its RAM part never
 * partly used. The flash tier's record has checks of its own
 * (store_flash_open): kept, its items are linked again (restore_flash). */
static void restore_damaged(struct store *s)
{
    struct persist *pm = s->pm;
    log_error("-e %s: the memory file fails its checksums after a graceful stop (damaged); %s",
              s->opt.memory_file,
              s->flash && s->flash_kept ? "discarding its RAM items and keeping the flash tier's"
                                        : "discarding it and starting empty");
    restore_discard(pm);
    pm->start = PM_START_DISCARDED;
}

/* The item a journal location names, or NULL if it names none. Only its
 * layout byte is read or written: an item in the last bytes of its
 * segment is named too, or its overwrite would keep two live items. */
static char *restore_loc(struct store *s, uint64_t loc)
{
    uint64_t seg = (loc >> 32) - 1, off = (uint32_t)loc;
    if ((loc >> 32) == 0 || seg >= s->pm->nsegs || off >= s->pool.seg_size)
        return NULL;
    char *p = pm_seg_data(s->pm, s->pool.seg_size, (uint32_t)seg) + off;
    return (p[0] & ITEM_L_SUM) ? p : NULL; /* every -e item has one */
}

/* An overwrite cut short by the crash: finish it. */
static void restore_journal(struct store *s)
{
    struct persist *pm = s->pm;
    for (uint32_t i = 0; i < PM_JOURNAL_SLOTS; i++) {
        struct pm_journal *j = &pm->journal[i];
        if (j->new_loc) {
            char *np = restore_loc(s, j->new_loc), *op = restore_loc(s, j->old_loc);
            /* committed, or since dead (which only a committed item becomes) */
            if (np && op && item_state(np))
                item_set_dead(op);
        }
        j->new_loc = j->old_loc = 0;
    }
}

/* Decode the header at p, with `avail` bytes to the end of what is
 * written; false when it is not a whole, plausible item. */
static bool restore_decode(const char *p, size_t avail, struct item_hdr *h)
{
    if (avail < 7)
        return false;
    const uint8_t *u = (const uint8_t *)p;
    uint8_t l = __atomic_load_n(&u[0], __ATOMIC_RELAXED); /* other walkers mark items dead */
    if (!(l & ITEM_L_SUM))
        return false;
    unsigned vlen = 0;
    while (vlen < 5 && (u[2 + vlen] & 0x80))
        vlen++;
    if (vlen == 5 || 2 + vlen + 1 > avail)
        return false;
    uint32_t need = item_hdr_len(l, 0) - 1 + vlen + 1;
    if (need > avail)
        return false;
    item_decode(p, h);
    return h->nkey >= 1 && h->nkey <= STORE_KEY_MAX && (uint64_t)item_total(h) <= avail;
}

/* The layout bits an item's header may carry (the rest are the state
 * bits), which index restore_hdrs as they index item_offs (item_offs_at). */
#define RESTORE_LAYOUTS 64
_Static_assert((ITEM_L_FLAGS | ITEM_L_EXP | ITEM_L_CAS32 | ITEM_L_CAS64 | ITEM_L_SUM) == 31 &&
                   (ITEM_L_AT32 | ITEM_L_STATE) == (uint8_t)~31,
               "restore_hdrs is indexed by the layout bits");

/* Each layout's decoded header for a value length under 128 (a one-byte
 * varint, the common case of small items), made by item_decode itself, so
 * item.c stays the one place that knows the layout; a plausible layout
 * (restore_decode's checks) has hlen != 0. */
static void restore_hdrs_init(struct item_hdr *tab)
{
    for (unsigned x = 0; x < RESTORE_LAYOUTS; x++) {
        uint8_t l = (uint8_t)((x & 31) | (x & 32 ? ITEM_L_AT32 : 0));
        char b[ITEM_HDR_MAX] = {(char)l, 1, 0};
        tab[x] = (struct item_hdr){0};
        if (l & ITEM_L_SUM)
            item_decode(b, &tab[x]);
    }
}

/* restore_decode, with the common case (a one-byte value length) read from
 * the table: the same checks, most of a small item's walk before. */
static inline bool restore_decode_fast(const struct item_hdr *tab, const char *p, uint8_t l,
                                       size_t avail, struct item_hdr *h)
{
    const uint8_t *u = (const uint8_t *)p;
    if (avail < 7 || (u[2] & 0x80))
        return restore_decode(p, avail, h);
    const struct item_hdr *t = &tab[item_offs_at(l)];
    if (!t->hlen || t->hlen > avail)
        return false;
    *h = *t;
    h->nkey = u[1];
    h->nvalue = u[2];
    return h->nkey >= 1 && h->nkey <= STORE_KEY_MAX && (uint64_t)item_total(h) <= avail;
}

/* One walking thread's state; the counters are summed after the join. On
 * lines of its own (SPLIT_LINE). */
struct restore_run {
    _Alignas(SPLIT_LINE) struct store *s;
    rel_time_t now;
    bool verify;        /* crash: check every item's checksum */
    bool clean;         /* graceful stop: check every segment's checksum */
    int *damaged;       /* (clean) a segment failed it: all threads stop */
    uint64_t max_cas;
    uint64_t dups;
    uint64_t restored, expired, corrupt;
    struct rix *rix;
    uint32_t bin;        /* this thread's filing in rix */
    bool flush_on;       /* the restored flush_all state can flush items */
    struct item_hdr hdrs[RESTORE_LAYOUTS]; /* restore_hdrs_init */
    const uint32_t *ids; /* segments to walk: ids[first], ids[first + step], ... */
    uint32_t n, first, step;
    uint64_t walk_cpu_us, index_cpu_us; /* CPU time of the two steps */
    size_t last_mc;      /* the class of the last item's size, */
    struct store_cls_of last_cls; /* since neighbours are often alike */
};

static struct store_cls_of restore_class(struct restore_run *r, const char *p,
                                         const struct item_hdr *h)
{
    size_t mc = item_mc_size(h->nkey, h->nvalue, item_get_u32(p, h->flags_off),
                             r->s->opt.cas_enabled);
    if (mc != r->last_mc) {
        r->last_mc = mc;
        r->last_cls = (struct store_cls_of){classes_id(&r->s->classes, mc), (uint32_t)mc};
    }
    return r->last_cls;
}

/* A committed, live item found in seg at off: counted in its segment and
 * binned for the index (restore_index.c links it, or hands it back to
 * restore_drop). Nothing else runs yet, and each segment is one thread's:
 * plain updates, published by the join. */
static void restore_item(struct restore_run *r, struct seg *seg, char *p,
                         const struct item_hdr *h, uint32_t off)
{
    struct store *s = r->s;
    uint64_t hv = XXH3_64bits(p + h->hlen, h->nkey);
    uint32_t size = item_total(h);
    uint64_t cas = item_get_cas(p, h, seg->cas_base);
    rel_time_t exp = item_get_u32(p, h->exp_off);
    seg->live_items++;
    seg->live_bytes += size;
    struct store_cls_of c = restore_class(r, p, h);
    seg->cls_items[c.cls]++;
    seg->cls_bytes[c.cls] += (int32_t)c.mc_size;
    if (exp == REL_TIME_NEVER)
        seg->max_exptime = SEG_EXP_NEVER;
    else {
        if (seg->max_exptime != SEG_EXP_NEVER && exp > seg->max_exptime)
            seg->max_exptime = exp;
        if (exp < seg->min_exptime)
            seg->min_exptime = exp;
    }
    if (cas > seg->max_cas)
        seg->max_cas = cas;
    /* Only a client's own CAS (ms E) lies past PM_CAS_MAX: not one the
     * counter must go on above, nor one to wrap it. */
    if (cas > r->max_cas && cas <= PM_CAS_MAX)
        r->max_cas = cas;
    r->restored++;
    rix_add(r->rix, r->bin, hv, seg->id, off >> s->pool.off_shift);
}

/* An item the index build did not link (already marked dead): take it
 * out of its segment's counts. Its CAS and expiry stay in the segment's
 * bounds, which only makes them looser. */
static void restore_drop(void *arg, uint64_t slot, bool dup)
{
    struct restore_run *r = arg;
    struct store *s = r->s;
    const char *p = seg_item(&s->pool, slot);
    struct item_hdr h;
    item_decode(p, &h);
    struct seg *seg = seg_of(&s->pool, slot_seg(slot));
    seg->live_items--;
    seg->live_bytes -= item_total(&h);
    struct store_cls_of c = classes_item(&s->classes, p, &h);
    seg->cls_items[c.cls]--;
    seg->cls_bytes[c.cls] -= (int32_t)c.mc_size;
    r->restored--;
    if (dup)
        r->dups++;
    else
        r->corrupt++;
}

/* Checks that need only the item itself; false when it is not restored. */
static bool restore_keep(struct store *s, struct restore_run *r, struct seg *seg, char *p,
                         const struct item_hdr *h)
{
    if (r->verify && item_sum(p, h) != item_get_u32(p, h->sum_off)) {
        r->corrupt++;
        item_set_dead(p);
        return false;
    }
    /* Without a flush in force or an expiry, an item is live: most are. */
    if ((r->flush_on || h->exp_off) &&
        life_of_item(&s->life, p, h, seg->cas_base, seg->tbase, r->now) != ITEM_LIVE) {
        r->expired++;
        item_set_dead(p);
        return false;
    }
    return true;
}

static void restore_walk(struct store *s, struct restore_run *r, struct seg *seg)
{
    size_t align = (size_t)1 << s->pool.off_shift;
    uint32_t end = seg->write_off;
    for (uint32_t x = 0; x < end;) {
        char *p = seg->data + x;
        uint8_t l = __atomic_load_n((const uint8_t *)p, __ATOMIC_ACQUIRE);
        if (!l) { /* compaction padding */
            x += (uint32_t)align;
            continue;
        }
        struct item_hdr h;
        if (!restore_decode_fast(r->hdrs, p, l, end - x, &h)) {
            /* Only damage gets here: what was laid out is whole (persist.h).
             * Nothing after it can be trusted to start an item. */
            r->corrupt++;
            seg->write_off = x;
            pm_store32(&pm_seg(s->pm, seg->id)->write_off, x);
            break;
        }
        if (item_state_live(l) && restore_keep(s, r, seg, p, &h))
            restore_item(r, seg, p, &h, x);
        x = (uint32_t)((x + item_total(&h) + align - 1) & ~(align - 1));
    }
}

static int restore_by_seq(const void *a, const void *b, void *arg)
{
    struct persist *pm = arg;
    uint64_t x = pm_seg(pm, *(const uint32_t *)a)->seq, y = pm_seg(pm, *(const uint32_t *)b)->seq;
    return x < y ? -1 : x > y;
}

/* Map the written part of a segment's file pages before the walk reads
 * them, in a tight run of faults rather than one every 64 KiB of the walk
 * (with two walkers beside the index's first touch, that took 4 GiB of
 * 100-byte values from 4.99 s of CPU to 3.78 s; docs/store.md "The restore
 * scan"): one read per RESTORE_MAP_STEP, each fault mapping the pages
 * around it (the kernel's fault-around, 64 KiB by default). That costs
 * about two thirds of MADV_POPULATE_READ, which takes each page through
 * get_user_pages: 1 GiB mapped in 72-80 ms of CPU against 111-122 ms
 * (one thread), and the restore's map step 100-115 ms against 146-159 ms
 * (both walkers, interleaved runs at load 6-7). A hint: without it the
 * walk faults the same pages in. */
#define RESTORE_MAP_STEP 65536u
static void restore_map(const struct seg *seg)
{
    const volatile char *d = seg->data;
    for (uint32_t o = 0; o < seg->write_off; o += RESTORE_MAP_STEP)
        (void)d[o];
}

static void *restore_thread(void *arg)
{
    struct restore_run *r = arg;
    struct store *s = r->s;
    rix_map(r->rix, r->bin, restore_drop, r);
    for (uint32_t k = r->first; k < r->n; k += r->step) {
        struct seg *seg = seg_of(&s->pool, r->ids[k]);
        restore_map(seg);
        /* After a graceful stop every segment's checksum must hold, or
         * nothing is used. Checked just before the walk reads the same
         * bytes, so that they are read from memory once. */
        if (r->clean) {
            if (__atomic_load_n(r->damaged, __ATOMIC_RELAXED))
                break;
            if (XXH3_64bits(seg->data, seg->write_off) != pm_seg(s->pm, seg->id)->sum) {
                __atomic_store_n(r->damaged, 1, __ATOMIC_RELAXED);
                break;
            }
        }
        restore_walk(s, r, seg);
    }
    rix_finish(r->rix, r->bin);
    return NULL;
}

/* CPU time of the process so far, all threads. */
static uint64_t restore_cpu_us(void)
{
    struct timespec c;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    return (uint64_t)c.tv_sec * 1000000u + (uint64_t)c.tv_nsec / 1000;
}

/* Walk the segments on up to SPLIT_THREADS threads, each segment one
 * thread's, binning what they find; then build the index from the bins
 * (restore_index.h says why in two steps). A key found in two segments
 * meets itself in the build. */
static void restore_parallel(struct restore_run *r, const uint32_t *ids, uint32_t n)
{
    struct restore_run runs[SPLIT_THREADS];
    struct rix x;
    uint32_t t = split_threads(n);
    uint64_t started = restore_cpu_us();
    if (rix_init(&x, r->s, t) != 0) {
        log_error("-e %s: out of memory for the restore; starting empty", r->s->opt.memory_file);
        t = 0; /* every segment is left with no live item: freed below */
    }
    r->flush_on = r->s->life.oldest_live && r->s->life.oldest_live <= r->now;
    restore_hdrs_init(r->hdrs);
    for (uint32_t i = 0; i < t; i++) {
        runs[i] = *r;
        runs[i].rix = &x;
        runs[i].bin = i;
        runs[i].ids = ids;
        runs[i].n = n;
        runs[i].first = i;
        runs[i].step = t;
    }
    if (t)
        split_run(restore_thread, (char *)runs, sizeof(runs[0]), t);
    for (uint32_t i = 0; i < t; i++) {
        if (runs[i].max_cas > r->max_cas)
            r->max_cas = runs[i].max_cas;
        r->restored += runs[i].restored;
        r->expired += runs[i].expired;
        r->corrupt += runs[i].corrupt;
    }
    if (t && *r->damaged) {
        /* Nothing is used: the table holds filed words, not buckets, and
         * every segment goes back to empty. */
        index_wipe(&r->s->index);
        for (uint32_t k = 0; k < n; k++)
            seg_of(&r->s->pool, ids[k])->live_items = 0;
        r->restored = r->expired = r->corrupt = 0;
    } else if (t) {
        uint64_t walked = restore_cpu_us();
        r->walk_cpu_us = walked - started;
        rix_fill(&x, t, restore_drop, r);
        r->index_cpu_us = restore_cpu_us() - walked;
    }
    if (t)
        rix_release(&x);
    index_load_done(&r->s->index);
}

/* Rebuild the segment lists and the index from the file; false (and
 * nothing restored) when a graceful stop's file fails its checks. */
static bool restore_segments(struct store *s, struct restore_run *r)
{
    struct persist *pm = s->pm;
    uint32_t *ids = malloc((size_t)pm->nsegs * sizeof(*ids));
    uint32_t n = 0;
    for (uint32_t i = 0; i < pm->nsegs; i++) {
        struct pm_seg *ps = pm_seg(pm, i);
        if (!ps->seq)
            continue;
        if (r->clean && (!restore_seg_sane(s, ps) || (ps->flags & PM_SEG_COMPACTING))) {
            free(ids); /* nothing is changed yet */
            return false;
        }
        if (!restore_seg_sane(s, ps) || !ids) {
            pm->discarded_corrupt++;
            ps->seq = 0;
            continue;
        }
        ids[n++] = i;
    }
    /* Oldest first, so eviction order survives the restart. */
    if (ids)
        qsort_r(ids, n, sizeof(*ids), restore_by_seq, pm);
    for (uint32_t k = 0; k < n; k++) {
        struct pm_seg *ps = pm_seg(pm, ids[k]);
        struct seg *seg = seg_of(&s->pool, ids[k]);
        if (ps->flags & PM_SEG_COMPACTING) {
            /* Cut short: the bytes between the two halves are neither. */
            memset(pm_seg_data(pm, s->pool.seg_size, ids[k]) + ps->compact_w, 0,
                   ps->compact_off - ps->compact_w);
            pm_store32(&ps->flags, 0);
        }
        /* seg_grow_cap listed every header as unused. */
        if (seg->prev)
            seg->prev->next = seg->next;
        else
            s->pool.unused.head = seg->next;
        if (seg->next)
            seg->next->prev = seg->prev;
        else
            s->pool.unused.tail = seg->prev;
        seg->prev = seg->next = NULL;
        s->pool.unused.n--;
        seg->data = pm_seg_data(pm, s->pool.seg_size, ids[k]);
        s->pool.seg_alloc++;
        seg->write_off = ps->write_off;
        seg->cas_base = ps->cas_base;
        seg->group = ps->group;
        seg->created = r->now;
        seg->tbase = ps->tbase;
        seg->last_write = r->now; /* its items' times are not looked at */
        seg->live_items = 0;
        seg->live_bytes = 0;
        memset(seg->cls_items, 0, sizeof(seg->cls_items));
        memset(seg->cls_bytes, 0, sizeof(seg->cls_bytes));
        seg->max_cas = 0;
        seg->max_exptime = 0;
        seg->min_exptime = SEG_EXP_NEVER;
    }
    restore_parallel(r, ids, n);
    for (uint32_t k = 0; k < n; k++) {
        struct seg *seg = seg_of(&s->pool, ids[k]);
        struct seg_list *to = &s->pool.fifo;
        /* stats slabs' pages: the classes of what it kept (its dead items'
         * classes are not known here) */
        seg->cls_held = 0;
        for (unsigned c = 1; c < STORE_CLASSES; c++)
            if (seg->cls_items[c] > 0)
                seg->cls_held |= (uint64_t)1 << c;
        if (seg->live_items == 0) {
            persist_seg_free(s->pm, seg);
            seg->state = SEG_FREE;
            to = &s->pool.free;
        } else if (seg->group == STORE_GROUP_TEMP) {
            seg->state = SEG_SEALED; /* temporary_ttl items keep their own queue */
            seg->queue = SEG_Q_TEMP;
            seg_set_lru(seg, STORE_LRU_TEMP);
            to = &s->pool.temp;
        } else {
            seg->state = SEG_SEALED;
            seg->queue = SEG_Q_MAIN;
            seg_set_lru(seg, STORE_LRU_WARM);
        }
        seg->next = NULL;
        seg->prev = to->tail;
        if (to->tail)
            to->tail->next = seg;
        else
            to->head = seg;
        to->tail = seg;
        to->n++;
    }
    free(ids);
    return !*r->damaged;
}

void restore_run(struct store *s)
{
    struct persist *pm = s->pm;
    struct pm_hdr *h = pm->hdr;
    struct timespec t0, t1, c0, c1;
    uint64_t walk_us = 0, index_us = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    bool restore = pm->start == PM_START_CLEAN || pm->start == PM_START_CRASH;
    /* After a graceful stop the run state and segment table must match
     * their checksum (each segment's own is checked by the walk). */
    if (pm->start == PM_START_CLEAN && h->stop_sum != persist_stop_sum(pm)) {
        restore_damaged(s);
        restore = false;
    }
    /* From here on the file is this run's: a kill even during the restore
     * leaves something the next start restores as after a crash. */
    pm_store32(&h->state, PM_RUNNING);
    if (restore) {
        /* The clock goes on from where it stood, plus the time spent down,
         * plus one: the two clocks tick on different second boundaries, so
         * the sum can be a second behind, and a clock behind the old one
         * would date new items at or before an immediate flush_all's
         * oldest_live (flushed as soon as written). TTLs may end a second
         * early; nothing stored before the stop can look newer. The
         * sum was worked out and checked at open (persist_run_check). */
        clock_resume((time_t)h->epoch, (rel_time_t)pm->resume.rel);
        s->life.oldest_live = pm->resume.oldest_live;
        s->life.oldest_cas = pm->resume.oldest_cas;
        int damaged = 0;
        struct restore_run r = {.s = s, .now = clock_now(),
                                .verify = pm->start == PM_START_CRASH,
                                .clean = pm->start == PM_START_CLEAN,
                                .damaged = &damaged};
        if (pm->start == PM_START_CRASH)
            restore_journal(s);
        if (!restore_segments(s, &r)) {
            restore_damaged(s);
            clock_setup(); /* a cold start's clock, as if the file were never read */
            s->life.oldest_live = 0;
            s->life.oldest_cas = 0;
            restore = false;
        }
        walk_us = r.walk_cpu_us;
        index_us = r.index_cpu_us;
        pm->restored_items = r.restored;
        pm->discarded_expired = r.expired;
        pm->discarded_corrupt += r.corrupt;
        uint64_t next = r.max_cas;
        if (h->cas_ceiling > next)
            next = h->cas_ceiling;
        if (s->life.oldest_cas > next)
            next = s->life.oldest_cas;
        if (restore) {
            s->cas_next = next;
            persist_cas(s->pm, next);
        }
    } else {
        restore_discard(pm);
    }
    h->epoch = (int64_t)clock_epoch();
    h->stop_sum = 0;
    persist_heartbeat(s->pm);
    /* both flush copies whole again (one may have failed its checksum) */
    persist_flush(s->pm, s->life.oldest_live, s->life.oldest_cas);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    uint64_t cpu_us = (uint64_t)(c1.tv_sec - c0.tv_sec) * 1000000u +
                      (uint64_t)((c1.tv_nsec - c0.tv_nsec) / 1000);
    pm->restore_cpu_us = cpu_us;
    pm->restore_us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000u +
                     (uint64_t)((t1.tv_nsec - t0.tv_nsec) / 1000);
    if (restore)
        log_info("-e %s: restored %llu items after a %s in %llu ms (%llu ms of CPU: walk %llu, "
                 "index %llu; %llu expired or flushed, %llu damaged, dropped)",
                 s->opt.memory_file, (unsigned long long)pm->restored_items,
                 pm->start == PM_START_CLEAN ? "graceful stop" : "crash",
                 (unsigned long long)(pm->restore_us / 1000),
                 (unsigned long long)(cpu_us / 1000), (unsigned long long)(walk_us / 1000),
                 (unsigned long long)(index_us / 1000),
                 (unsigned long long)pm->discarded_expired,
                 (unsigned long long)pm->discarded_corrupt);
}
