/* SPDX-License-Identifier: BSD-3-Clause */
/* cachesim: the look-aside request stream of `loadgen trace` (or of `loadgen
 * replay`'s Zipf, with its scan) replayed offline over eviction policies, at given item
 * counts, all values one size. Each line (batch) is its gets, then a set for
 * each key that missed, as the servers see it; the miss ratio is over the
 * accesses of the second half of the lines, as loadgen counts it.
 * Synthetic streams: --zipf S (with --scan N fresh keys), --loop N (a
 * cyclic pass over N keys, again and again), --zipf S --phases P (the
 * popularity moves P-1 times: each phase ranks the keys from an origin a
 * third of the key space further on).
 *
 * Policies (the item ones in policies.c and lfu.c):
 *   lru        one LRU list (memcached's segmented LRU behaves close to it here)
 *   s3fifo-seg S3-FIFO on whole segments as src/store/seg.c does it, small
 *              fixed at a tenth of the segments
 *              (docs/store-eviction.md "Eviction"): items appended to an open segment,
 *              sealed segments in small/main FIFOs, a victim walked item by
 *              item by its 2-bit read counter, kept items copied to main's
 *              open segment (at most 15/16 of a segment per victim:
 *              --seg-keep NUM/DEN; the server before kept at most 1/2), a
 *              direct-mapped ghost of 15-bit key fingerprints, one entry per
 *              256 B of -m (--ghost-per; --ghost-bits 0: whole key ids)
 *              (left out: eviction at the writers' pace, which holds about
 *              one segment less; all-dead segments taken first; TTL groups;
 *              items per segment is the server's item count over -m MB)
 *   s3fifo-seg-all  the same keeping every item its counter keeps (no cap of
 *              half a segment per victim)
 *   s3fifo-seg-ad  s3fifo-seg whose small share adapts (the server's policy
 *              now): keys that leave main unread go to the ghost too, tagged
 *              so (never over an entry from small); a key written again
 *              while in the ghost moves small's target by --ad-step items
 *              (0.5) times the other queue's ghost entries over its own
 *              (at least 1), up if it left small, down if it left main
 *              (ARC's rule), between one segment and 90 %; it starts at 10 %;
 *              a key back from main's ghost is readmitted (given its read)
 *              for a fixed subset of keys of --credit (2) times the share
 *              of items main's recent passes found read (0: every one)
 *   s3fifo     S3-FIFO over whole items (Yang et al., SOSP '23): small 10 %,
 *              main 90 %, ghost of main's size, 2-bit counters
 *   s3fifo-ad  s3fifo whose small share follows ghost hits as ARC's p does:
 *              a hit in small's ghost grows it, one in main's ghost shrinks it
 *   arc        ARC (Megiddo and Modha, FAST '03)
 *   wtinylfu   W-TinyLFU (Einziger et al., 2017): 1 % LRU window, SLRU main
 *              (20 % probation), admission by a 4-bit count-min sketch with
 *              periodic halving
 *   wtinylfu-ad  the same with the window sized by hill climbing on the hit
 *              ratio (as Caffeine does): every cap accesses, step the window
 *              on in the direction that last raised the hit ratio, else
 *              turn back; the step starts at 6.25 % of cap and shrinks 2 %
 *              a sample, restarting after a 5-point change
 *   lirs       LIRS (Jiang and Zhang, SIGMETRICS '02): keys whose last two
 *              accesses were close (LIR) held in 99 % of cap, the rest a
 *              1 % queue of resident HIR keys; the recency stack keeps
 *              non-resident keys until pruned (no bound)
 *   lfu        exact LFU, an upper bound for frequency-based policies
 *              (lfu.c): every access of every key counted for the whole
 *              stream, held or not; the held key with the fewest accesses
 *              (ties: the least recent) is the victim, and a missed key is
 *              admitted into a full cache only with at least the victim's
 *              count. On a stationary stream a key's count is all its
 *              history says of its rate, so no online policy does much
 *              better there
 *   lfu-gt     the same admitting only a count above the victim's (a loop
 *              is then held in part, as Bélády holds it; the traces and
 *              Zipf lose)
 *   belady     the offline optimum (evicts the key used farthest in the
 *              future; a key whose next use is farther than every cached
 *              key's is not admitted) */
#include "cachesim.h"
#include "../loadgen/tracefile.h"

#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* items held now: never above cap (checked under CACHESIM_DEBUG) */
static uint32_t held(const struct sim *s, int p);


/* S3-FIFO on segments, as the server does it; at most seg_keep_num /
 * seg_keep_den of a segment kept per victim (SEG_RETAIN_NUM/DEN in seg.c) */
static uint32_t seg_keep_num = 15, seg_keep_den = 16;
static double seg_ad_step = 0.5, seg_ad_start = 0.1;
static uint32_t ghost_per = 256; /* bytes of -m per ghost entry (store_ghost.c) */
/* fingerprint bits of a ghost entry (store_ghost.h); 0: the key id itself,
 * which no other key matches */
static uint32_t ghost_bits = 15;
/* A key back from main's ghost gets its read with probability credit_mul
 * times the share of items main's recent passes found read (seg.c's
 * SEG_CREDIT_MUL; 0: always, the policy before); recent: the last
 * SEG_CREDIT_WINDOW segments walked, halved past that. */
static double credit_mul = 2;

static uint32_t gfp_slot(struct sim *s, uint32_t id)
{
    return (uint32_t)(lg_mix(id, 77) % s->gsize);
}
/* what id's ghost entry holds: never 0 (empty); a hash independent of the
 * slot's, so keys sharing a slot match 1 time in 2^ghost_bits as the
 * server's do */
static uint32_t gfp_of(uint32_t id)
{
    if (!ghost_bits)
        return id + 1;
    uint32_t fp = (uint32_t)(lg_mix(id, 78) & ((1ull << ghost_bits) - 1));
    return fp ? fp : 1;
}
static uint32_t seg_take(struct sim *s);
static void seg_append(struct sim *s, uint32_t *open, uint32_t id, bool main_q);
static void seg_seal(struct sim *s, uint32_t seg, bool main_q)
{
    list_push(&s->sl, &s->sq[main_q ? 0 : 1], seg);
}
/* walks one victim; it ends free or as main's open segment */
static void seg_evict_one(struct sim *s)
{
    /* the writer's open segment counts as sealed in small (it is about to be) */
    uint32_t share = s->nseg / 10 ? s->nseg / 10 : 1;
    bool small = s->sq[1].n > 0 && (s->sq[1].n + 1 > share || s->sq[0].n == 0);
    if (s->adaptive)
        small = s->sq[1].n > 0 && ((double)(s->sq[1].n + 1) * s->seg_items > s->share || s->sq[0].n == 0);
    uint32_t v = list_pop(&s->sl, &s->sq[small ? 1 : 0]);
    if (v == NIL)
        return;
    uint32_t kept = 0, base = v * s->seg_items;
    uint32_t *tmp = s->kept, nk = 0;
    for (uint32_t i = 0; i < s->seg_n[v]; i++) {
        uint32_t id = s->seg_keys[base + i];
        if (s->loc[id] != base + i)
            continue; /* dead: overwritten */
        bool keep = small ? s->freq[id] >= 1 : s->freq[id] > 0;
        if (!small) {
            s->mwalk++;
            s->mread += keep;
        }
        if (keep && (s->keep_all || kept < (uint64_t)s->seg_items * seg_keep_num / seg_keep_den)) {
            if (small)
                s->freq[id] = 0;
            else
                s->freq[id]--;
            tmp[nk++] = id;
            kept++;
            continue;
        }
        s->loc[id] = NIL;
        s->n--;
        if (small && !keep) {
            if (s->gfp[gfp_slot(s, id)]) s->gn[s->gtag[gfp_slot(s, id)]]--;
            s->gfp[gfp_slot(s, id)] = gfp_of(id);
            s->gtag[gfp_slot(s, id)] = 1; s->gn[1]++;
        } else if (s->adaptive && !keep &&
                   !(s->gfp[gfp_slot(s, id)] && s->gtag[gfp_slot(s, id)] == 1)) {
            /* main's leavers never overwrite small's: those admit */
            if (s->gfp[gfp_slot(s, id)]) s->gn[s->gtag[gfp_slot(s, id)]]--;
            s->gfp[gfp_slot(s, id)] = gfp_of(id);
            s->gtag[gfp_slot(s, id)] = 2; s->gn[2]++;
        }
    }
    if (s->mwalk > 4.0 * s->seg_items) {
        s->mwalk /= 2;
        s->mread /= 2;
    }
    s->seg_n[v] = 0;
    s->freelist[s->nfree++] = v;
    for (uint32_t i = 0; i < nk; i++) {
        s->loc[tmp[i]] = NIL;
        s->n--;
        uint8_t f = s->freq[tmp[i]];
        seg_append(s, &s->mopen, tmp[i], true);
        s->freq[tmp[i]] = f;
    }
}
static uint32_t seg_take(struct sim *s)
{
    while (s->nfree == 0)
        seg_evict_one(s);
    return s->freelist[--s->nfree];
}
static void seg_append(struct sim *s, uint32_t *open, uint32_t id, bool main_q)
{
    if (*open == NIL || s->seg_n[*open] == s->seg_items) {
        if (*open != NIL)
            seg_seal(s, *open, main_q);
        *open = NIL;
        *open = seg_take(s);
    }
    uint32_t at = *open * s->seg_items + s->seg_n[*open]++;
    s->seg_keys[at] = id;
    s->loc[id] = at;
    s->freq[id] = 0;
    s->n++;
}
static bool seg_get(struct sim *s, uint32_t id)
{
    if (s->loc[id] == NIL)
        return false;
    if (s->freq[id] < 3)
        s->freq[id]++;
    return true;
}
static void seg_set(struct sim *s, uint32_t id)
{
    if (s->loc[id] != NIL) {
        s->loc[id] = NIL; /* a second set of the key: the old copy is dead */
        s->n--;
    }
    uint32_t slot = gfp_slot(s, id);
    bool ghost = s->gfp[slot] == gfp_of(id);
    if (ghost) {
        s->gfp[slot] = 0;
        if (s->adaptive) {
            /* ARC's rule: a key back from small's ghost says small is too
             * short; one back from main's ghost says main is */
            double lo = s->seg_items, hi = s->nseg * 0.9 * s->seg_items;
            s->gn[s->gtag[slot]]--;
            /* weighted as ARC weighs it: by the other ghost's size over
             * this one's, at least one */
            double a1 = s->gn[1] > 1 ? s->gn[1] : 1, a2 = s->gn[2] > 1 ? s->gn[2] : 1;
            double ws = a2 / a1 > 1 ? a2 / a1 : 1, wm = a1 / a2 > 1 ? a1 / a2 : 1;
            s->share += s->gtag[slot] == 1 ? seg_ad_step * ws : -seg_ad_step * wm;
            s->share = s->share < lo ? lo : s->share > hi ? hi : s->share;
        }
    }
    seg_append(s, &s->wopen, id, false);
    if (ghost) {
        /* back from main's ghost: readmitted while main's items are read
         * again (a fixed subset of keys, by hash, as seg.c does) */
        double credit = s->mwalk > 0 ? credit_mul * s->mread / s->mwalk : 1;
        bool read = !s->adaptive || s->gtag[slot] != 2 || credit_mul == 0 ||
                    (double)(lg_mix(id, 99) % 1024) < credit * 1024;
        s->freq[id] = read;
    }
}



/* Bélády: a max-heap of (next use, key) with stale entries skipped */
static void heap_push(struct sim *s, uint64_t k, uint32_t id)
{
    if (s->heap_n == s->heap_cap) {
        s->heap_cap = s->heap_cap ? s->heap_cap * 2 : 1 << 16;
        s->heap_k = realloc(s->heap_k, s->heap_cap * sizeof(*s->heap_k));
        s->heap_id = realloc(s->heap_id, s->heap_cap * sizeof(*s->heap_id));
        if (!s->heap_k || !s->heap_id)
            exit(1);
    }
    uint64_t i = s->heap_n++;
    while (i > 0) {
        uint64_t p = (i - 1) / 2;
        if (s->heap_k[p] >= k)
            break;
        s->heap_k[i] = s->heap_k[p];
        s->heap_id[i] = s->heap_id[p];
        i = p;
    }
    s->heap_k[i] = k;
    s->heap_id[i] = id;
}
static void heap_pop(struct sim *s)
{
    uint64_t k = s->heap_k[--s->heap_n];
    uint32_t id = s->heap_id[s->heap_n];
    uint64_t i = 0;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= s->heap_n)
            break;
        if (c + 1 < s->heap_n && s->heap_k[c + 1] > s->heap_k[c])
            c++;
        if (s->heap_k[c] <= k)
            break;
        s->heap_k[i] = s->heap_k[c];
        s->heap_id[i] = s->heap_id[c];
        i = c;
    }
    s->heap_k[i] = k;
    s->heap_id[i] = id;
}
/* the top, after dropping stale entries */
static bool heap_top(struct sim *s, uint64_t *k, uint32_t *id)
{
    while (s->heap_n) {
        uint32_t i = s->heap_id[0];
        if (s->cached[i] && s->want[i] == s->heap_k[0]) {
            *k = s->heap_k[0];
            *id = i;
            return true;
        }
        heap_pop(s);
    }
    return false;
}

enum pol { P_LRU, P_SEG, P_SEGALL, P_SEGAD, P_S3, P_S3AD, P_ARC, P_WT, P_WTAD, P_LIRS, P_LFU, P_LFUGT, P_OPT, P_N };
static const char *pol_names[P_N] = { "lru", "s3fifo-seg", "s3fifo-seg-all", "s3fifo-seg-ad", "s3fifo", "s3fifo-ad", "arc",
                                      "wtinylfu", "wtinylfu-ad", "lirs", "lfu", "lfu-gt", "belady" };

static uint32_t held(const struct sim *s, int p)
{
    switch (p) {
    case P_LRU: return s->q[0].n;
    case P_S3:
    case P_S3AD:
    case P_ARC: return s->q[0].n + s->q[1].n;
    case P_WT:
    case P_WTAD: return s->q[0].n + s->q[1].n + s->q[2].n;
    case P_LIRS: return s->nres;
    default: return s->n;
    }
}

/* Reuse-distance bands (--bands): an access's distance is the number of
 * distinct keys accessed since its key's last access (UINT32_MAX: first
 * access), as a share of the item count; each band's upper edge in
 * eighths of it. A policy's misses in a band say which reuses it loses. */
#define NBANDS 7
static const char *band_names[NBANDS] = { "first", "<c/2", "c/2-c", "c-1.5c", "1.5c-2c", "2c-4c", ">=4c" };
static const uint32_t band_top8[NBANDS - 2] = { 4, 8, 12, 16, 32 };
static unsigned band_of(uint32_t dist, uint32_t cap)
{
    if (dist == UINT32_MAX)
        return 0;
    for (unsigned b = 0; b < NBANDS - 2; b++)
        if ((uint64_t)dist * 8 < (uint64_t)cap * band_top8[b])
            return b + 1;
    return NBANDS - 1;
}

/* Each access's reuse distance, by a Fenwick tree over access positions
 * holding a mark at each key's latest access. */
static uint32_t *reuse_distances(const struct lg_trace *t)
{
    uint64_t n = t->nacc;
    uint32_t *dist = xcalloc(n ? n : 1, sizeof(uint32_t));
    uint32_t *fen = xcalloc(n + 1, sizeof(uint32_t));
    uint64_t *last = xcalloc(t->nkeys, sizeof(uint64_t));
    for (uint32_t k = 0; k < t->nkeys; k++)
        last[k] = UINT64_MAX;
    for (uint64_t a = 0; a < n; a++) {
        uint32_t id = t->acc[a];
        uint64_t p = last[id];
        if (p == UINT64_MAX) {
            dist[a] = UINT32_MAX;
        } else {
            /* marks in (p, a): prefix(a) - prefix(p + 1) */
            uint64_t c = 0;
            for (uint64_t i = a; i > 0; i -= i & -i)
                c += fen[i];
            for (uint64_t i = p + 1; i > 0; i -= i & -i)
                c -= fen[i];
            dist[a] = (uint32_t)c;
            for (uint64_t i = p + 1; i <= n; i += i & -i)
                fen[i]--;
        }
        for (uint64_t i = a + 1; i <= n; i += i & -i)
            fen[i]++;
        last[id] = a;
    }
    free(fen);
    free(last);
    return dist;
}

/* Replays t over one policy at cap items; returns the second-half miss
 * ratio, and with dist each band's share of the counted accesses and its
 * misses (band[b][0], band[b][1], as shares of all counted accesses). */
static double run(const struct lg_trace *t, enum pol p, uint32_t cap, uint32_t seg_items,
                  uint64_t mem_bytes, const uint64_t *nextuse, const uint8_t *counted,
                  const uint32_t *dist, double band[NBANDS][2])
{
    uint64_t bn[NBANDS][2] = { { 0 } };
    struct sim s = { .name = pol_names[p], .cap = cap, .nkeys = t->nkeys };
    lists_init(&s.l, t->nkeys);
    list_init(&s.q[0], 1);
    list_init(&s.q[1], 2);
    list_init(&s.q[2], 3);
    list_init(&s.arc_b2, 4);
    s.freq = xcalloc(t->nkeys, 1);
    if (p == P_S3 || p == P_S3AD) {
        s.p = cap * 0.1;
        s.adaptive = p == P_S3AD;
        for (int i = 0; i < 2; i++) {
            s.g[i].at = xcalloc(t->nkeys, sizeof(uint64_t));
            s.g[i].size = cap - (uint32_t)(cap * 0.1);
        }
        if (s.adaptive)
            s.g[0].size = s.g[1].size = cap;
    }
    if (p == P_WT || p == P_WTAD) {
        s.p = cap / 100 ? cap / 100 : 1;
        s.adaptive = p == P_WTAD;
        s.step = 0.0625 * cap;
        uint32_t w = 1;
        while (w < cap)
            w <<= 1;
        s.cms_mask = w - 1;
        s.cms = xcalloc(4ull * w, 1);
    }
    if (p == P_SEG || p == P_SEGALL || p == P_SEGAD) {
        s.keep_all = p == P_SEGALL;
        s.adaptive = p == P_SEGAD;
        s.kept = xcalloc(seg_items, sizeof(uint32_t));
        s.seg_items = seg_items;
        s.nseg = cap / seg_items;
        s.seg_keys = xcalloc((size_t)s.nseg * seg_items, sizeof(uint32_t));
        s.seg_n = xcalloc(s.nseg, sizeof(uint32_t));
        s.freelist = xcalloc(s.nseg, sizeof(uint32_t));
        for (uint32_t i = 0; i < s.nseg; i++)
            s.freelist[s.nfree++] = s.nseg - 1 - i;
        s.loc = xcalloc(t->nkeys, sizeof(uint32_t));
        memset(s.loc, 0xff, (size_t)t->nkeys * sizeof(uint32_t));
        lists_init(&s.sl, s.nseg);
        list_init(&s.sq[0], 1);
        list_init(&s.sq[1], 2);
        s.wopen = s.mopen = NIL;
        s.gsize = (uint32_t)(mem_bytes / ghost_per);
        if (s.gsize == 0)
            s.gsize = 1;
        s.gfp = xcalloc(s.gsize, sizeof(uint32_t));
        s.gtag = xcalloc(s.gsize, 1);
        s.share = seg_ad_start * s.nseg * seg_items;
    }
    if (p == P_LIRS) {
        lists_init(&s.lq, t->nkeys);
        s.st = xcalloc(t->nkeys, 1);
        s.llir = cap - (cap / 100 ? cap / 100 : 1);
    }
    if (p == P_LFU || p == P_LFUGT)
        lfu_init(&s, p == P_LFU);
    if (p == P_OPT) {
        s.want = xcalloc(t->nkeys, sizeof(uint64_t));
        s.cached = xcalloc(t->nkeys, 1);
    }
    uint64_t miss2 = 0, acc2 = 0;
    uint32_t half = t->nreq / 2;
    bool missed[256];
    for (uint32_t r = 0; r < t->nreq; r++) {
        uint64_t a0 = t->req_at[r], n = t->req_at[r + 1] - a0;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t id = t->acc[a0 + i];
            bool hit;
            switch (p) {
            case P_LRU: hit = lru_get(&s, id); break;
            case P_SEG:
            case P_SEGAD:
            case P_SEGALL: hit = seg_get(&s, id); break;
            case P_S3:
            case P_S3AD: hit = s3_get(&s, id); break;
            case P_ARC: hit = arc_get(&s, id); break;
            case P_WT:
            case P_WTAD: hit = wt_get(&s, id); break;
            case P_LIRS: hit = lirs_get(&s, id); break;
            case P_LFU:
            case P_LFUGT: hit = lfu_get(&s, id); break;
            default:
                hit = s.cached[id];
                if (hit) {
                    s.want[id] = nextuse[a0 + i];
                    heap_push(&s, s.want[id], id);
                }
                break;
            }
            missed[i] = !hit;
            if (counted ? counted[a0 + i] : r >= half) {
                acc2++;
                miss2 += !hit;
                if (dist) {
                    unsigned b = band_of(dist[a0 + i], cap);
                    bn[b][0]++;
                    bn[b][1] += !hit;
                }
            }
        }
        for (uint64_t i = 0; i < n; i++) {
            if (!missed[i])
                continue;
            uint32_t id = t->acc[a0 + i];
            switch (p) {
            case P_LRU: lru_set(&s, id); break;
            case P_SEG:
            case P_SEGAD:
            case P_SEGALL: seg_set(&s, id); break;
            case P_S3:
            case P_S3AD: s3_set(&s, id); break;
            case P_ARC: arc_set(&s, id); break;
            case P_WT:
            case P_WTAD: wt_set(&s, id); break;
            case P_LIRS: lirs_set(&s, id); break;
            case P_LFU:
            case P_LFUGT: lfu_set(&s, id); break;
            default: {
                if (s.cached[id])
                    break;
                /* the next use after this line */
                uint64_t nu = nextuse[a0 + i];
                while (nu < t->req_at[r + 1])
                    nu = nextuse[nu];
                uint64_t top;
                uint32_t v;
                if (s.n >= cap) {
                    if (!heap_top(&s, &top, &v) || top <= nu)
                        break; /* not admitted: used later than everything cached */
                    s.cached[v] = 0;
                    s.n--;
                    heap_pop(&s);
                }
                s.cached[id] = 1;
                s.n++;
                s.want[id] = nu;
                heap_push(&s, nu, id);
                break;
            }
            }
        }
        uint32_t h = held(&s, p);
        if (h > s.max_held)
            s.max_held = h;
    }
    if (getenv("CACHESIM_DEBUG"))
        fprintf(stderr, "%s cap %u: share %.0f p %.0f, queues %u %u %u, most held %u\n", s.name, cap, s.share, s.p,
                s.q[0].n, s.q[1].n, s.q[2].n, s.max_held);
    lists_free(&s.l);
    free(s.freq);
    free(s.g[0].at);
    free(s.g[1].at);
    free(s.cms);
    free(s.seg_keys);
    free(s.seg_n);
    free(s.freelist);
    free(s.loc);
    free(s.gfp);
    free(s.gtag);
    free(s.kept);
    if (p == P_SEG || p == P_SEGALL || p == P_SEGAD)
        lists_free(&s.sl);
    if (p == P_LIRS)
        lists_free(&s.lq);
    if (p == P_LFU || p == P_LFUGT)
        lfu_free(&s);
    free(s.st);
    free(s.want);
    free(s.cached);
    free(s.heap_k);
    free(s.heap_id);
    for (unsigned b = 0; dist && b < NBANDS; b++)
        for (int j = 0; j < 2; j++)
            band[b][j] = acc2 ? (double)bn[b][j] / (double)acc2 : 0;
    return acc2 ? (double)miss2 / (double)acc2 : 0;
}

/* The stream of `loadgen replay`: Zipf gets in batches, with `scan` fresh
 * keys spread evenly through it (never hit). As replay counts it, only the
 * second half of the Zipf gets is counted (*counted says which). */
static int zipf_trace(struct lg_trace *t, uint8_t **counted, uint32_t keys, double zs,
                      uint64_t requests, uint64_t scan, uint64_t seed, uint32_t batch,
                      uint32_t loop, uint32_t phases)
{
    struct lg_dist d;
    if (lg_dist_init(&d, keys, zs) != 0)
        return -1;
    uint64_t total = requests + scan, sdone = 0, zdone = 0;
    memset(t, 0, sizeof(*t));
    t->nreq = (uint32_t)((total + batch - 1) / batch);
    t->nacc = total;
    t->nkeys = keys + (uint32_t)scan;
    t->req_at = xcalloc(t->nreq + 1, sizeof(uint64_t));
    t->acc = xcalloc(total, sizeof(uint32_t));
    *counted = xcalloc(total, 1);
    struct lg_rng rng = { seed };
    for (uint64_t i = 0; i < total; i++) {
        if (i % batch == 0)
            t->req_at[i / batch] = i;
        bool is_scan = scan && (i + 1) * scan / total > i * scan / total;
        if (is_scan) {
            t->acc[i] = keys + (uint32_t)sdone++;
        } else {
            uint64_t z = zdone;
            if (loop) /* a cyclic pass over loop keys, again and again */
                t->acc[i] = (uint32_t)(z % loop);
            else if (phases > 1) /* popularity moves: each phase ranks the keys from a new origin */
                t->acc[i] = (uint32_t)((lg_dist_pick(&d, &rng) +
                                        z * phases / requests * (uint64_t)(keys / 3 + 1)) % keys);
            else
                t->acc[i] = lg_dist_pick(&d, &rng);
            (*counted)[i] = zdone++ >= requests / 2;
        }
    }
    t->req_at[t->nreq] = total;
    lg_dist_release(&d);
    return 0;
}

int main(int argc, char **argv)
{
    enum lg_trace_fmt fmt = LG_TRACE_LIS;
    const char *file = "-", *items_s = NULL, *pols_s = NULL;
    unsigned max_keys = 16;
    uint32_t seg_items = 0, zkeys = 1000000, batch = 128;
    uint32_t zloop = 0, zphases = 1;
    uint64_t lines = 0, zreq = 5000000, zscan = 0, seed = 42, mem_mb = 64;
    uint8_t *counted = NULL;
    double zipf = 0;
    bool bands = false;
    static const struct option opts[] = {
        { "format", 1, 0, 'F' }, { "file", 1, 0, 'f' }, { "items", 1, 0, 'i' },
        { "seg-items", 1, 0, 'S' }, { "max-keys", 1, 0, 'K' }, { "lines", 1, 0, 'n' },
        { "zipf", 1, 0, 'z' }, { "keys", 1, 0, 'k' }, { "requests", 1, 0, 'r' },
        { "seed", 1, 0, 'e' }, { "batch", 1, 0, 'b' }, { "memory", 1, 0, 'm' },
        { "policies", 1, 0, 'p' }, { "scan", 1, 0, 'c' }, { "seg-keep", 1, 0, 'R' },
        { "loop", 1, 0, 'L' }, { "phases", 1, 0, 'P' }, { "ad-step", 1, 0, 'A' }, { "ad-start", 1, 0, 'B' },
        { "bands", 0, 0, 'D' }, { "ghost-per", 1, 0, 'G' }, { "ghost-bits", 1, 0, 'H' },
        { "credit", 1, 0, 'C' }, { 0, 0, 0, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "F:f:i:S:K:n:z:k:r:e:b:m:p:c:R:A:B:L:P:DG:H:C:", opts, NULL)) != -1) {
        switch (o) {
        case 'F':
            if (lg_trace_fmt_parse(optarg, &fmt) != 0)
                goto usage;
            break;
        case 'f': file = optarg; break;
        case 'i': items_s = optarg; break;
        case 'S': seg_items = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'K': max_keys = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'n': lines = strtoull(optarg, NULL, 10); break;
        case 'z': zipf = atof(optarg); break;
        case 'k': zkeys = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'r': zreq = strtoull(optarg, NULL, 10); break;
        case 'e': seed = strtoull(optarg, NULL, 10); break;
        case 'b': batch = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'm': mem_mb = strtoull(optarg, NULL, 10); break;
        case 'p': pols_s = optarg; break;
        case 'c': zscan = strtoull(optarg, NULL, 10); break;
        case 'R':
            if (sscanf(optarg, "%u/%u", &seg_keep_num, &seg_keep_den) != 2 || !seg_keep_den ||
                seg_keep_num > seg_keep_den)
                goto usage;
            break;
        case 'L': zloop = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'P': zphases = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'A': seg_ad_step = atof(optarg); break;
        case 'B': seg_ad_start = atof(optarg); break;
        case 'D': bands = true; break;
        case 'C': credit_mul = atof(optarg); break;
        case 'G':
            ghost_per = (uint32_t)strtoul(optarg, NULL, 10);
            if (!ghost_per)
                goto usage;
            break;
        case 'H':
            ghost_bits = (uint32_t)strtoul(optarg, NULL, 10);
            if (ghost_bits > 31)
                goto usage;
            break;
        default: goto usage;
        }
    }
    if (!items_s || max_keys < 1 || max_keys > 256 || batch < 1 || batch > 256)
        goto usage;
    struct lg_trace t;
    if (zloop && zipf <= 0)
        zipf = 0.99; /* the loop ignores it */
    if (zipf > 0) {
        if (zipf_trace(&t, &counted, zkeys, zipf, zreq, zscan, seed, batch, zloop, zphases) != 0)
            return 1;
    } else {
        FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
        if (!in) {
            perror(file);
            return 1;
        }
        int rc = lg_trace_load(&t, in, fmt, max_keys, lines);
        if (in != stdin)
            fclose(in);
        if (rc != 0)
            return 1;
    }
    bool use[P_N];
    for (int p = 0; p < P_N; p++) {
        use[p] = !pols_s;
        for (const char *c = pols_s; c && *c;) {
            size_t n = strcspn(c, ",");
            if (n == strlen(pol_names[p]) && strncmp(c, pol_names[p], n) == 0)
                use[p] = true;
            c += n + (c[n] == ',');
        }
    }
    /* next use of each access (nacc = none) for Bélády */
    uint64_t *nextuse = NULL;
    if (use[P_OPT]) {
        nextuse = xcalloc(t.nacc, sizeof(uint64_t));
        uint64_t *last = xcalloc(t.nkeys, sizeof(uint64_t));
        for (uint32_t k = 0; k < t.nkeys; k++)
            last[k] = UINT64_MAX;
        for (uint64_t i = t.nacc; i-- > 0;) {
            nextuse[i] = last[t.acc[i]];
            last[t.acc[i]] = i;
        }
        free(last);
    }
    uint32_t *dist = bands ? reuse_distances(&t) : NULL;
    static double band[P_N][8][NBANDS][2];
    uint32_t caps[8], ncap = 0;
    for (char *c = (char *)items_s; *c && ncap < 8;) {
        caps[ncap++] = (uint32_t)strtoul(c, &c, 10);
        if (*c == ',')
            c++;
    }
    printf("cachesim: %u lines, %lu accesses, %u keys; second-half miss ratio at each item "
           "count\n", t.nreq, t.nacc, t.nkeys);
    printf("%-15s", "policy");
    for (uint32_t c = 0; c < ncap; c++)
        printf(" %10u", caps[c]);
    printf("\n");
    for (int p = 0; p < P_N; p++) {
        if (!use[p])
            continue;
        printf("%-15s", pol_names[p]);
        for (uint32_t c = 0; c < ncap; c++) {
            uint32_t si = seg_items ? seg_items : caps[c] / (uint32_t)(mem_mb ? mem_mb : 1);
            if (si < 1)
                si = 1;
            if ((p == P_SEG || p == P_SEGALL || p == P_SEGAD) && caps[c] / si < 2) {
                printf(" %10s", "-");
                continue;
            }
            printf(" %9.2f%%", 100 * run(&t, p, caps[c], si, mem_mb << 20, nextuse, counted, dist,
                                         band[p][c]));
            fflush(stdout);
        }
        printf("\n");
    }
    for (uint32_t c = 0; dist && c < ncap; c++) {
        printf("\nmisses by reuse distance at %u items (c), %% of counted accesses\n%-9s %7s", caps[c],
               "distance", "share");
        for (int p = 0; p < P_N; p++)
            if (use[p])
                printf(" %13s", pol_names[p]);
        printf("\n");
        int any = -1;
        for (int p = 0; p < P_N && any < 0; p++)
            if (use[p])
                any = p;
        for (unsigned b = 0; any >= 0 && b < NBANDS; b++) {
            printf("%-9s %6.2f%%", band_names[b], 100 * band[any][c][b][0]);
            for (int p = 0; p < P_N; p++)
                if (use[p])
                    printf(" %12.2f%%", 100 * band[p][c][b][1]);
            printf("\n");
        }
    }
    free(dist);
    free(nextuse);
    free(counted);
    lg_trace_release(&t);
    return 0;
usage:
    fprintf(stderr, "usage: cachesim --items N[,N...] [--format lis|kv] [--file F|-]"
                    " [--lines N] [--max-keys 16] [--memory MB] [--seg-items N] [--seg-keep NUM/DEN]"
                    " [--policies a,b] | --zipf S [--keys N] [--requests N] [--scan N] [--seed N]"
                    " [--batch N] [--loop N] [--phases P] [--ad-step ITEMS] [--ad-start SHARE] --items N"
                    " [--bands] [--ghost-per BYTES] [--ghost-bits 15] [--credit MUL]\n");
    return 2;
}
