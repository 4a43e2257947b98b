/* SPDX-License-Identifier: BSD-3-Clause */
/* The compactor's choice: flash_gc.h. Greedy by live share, which under
 * uniform overwrites is also LFS's cost-benefit pick (a segment's items
 * die at the same rate whatever its age, so the least live is the
 * oldest), and under skewed ones the cheapest to rewrite. */
#include "store/flash/flash_gc.h"

uint32_t flash_gc_under(uint32_t compact_under, uint32_t segs_per_page, uint32_t room)
{
    if (!compact_under)
        return 0; /* `extstore compact_under 0`: no compaction, as memcached */
    uint64_t under = (uint64_t)compact_under * segs_per_page;
    uint64_t floor = (uint64_t)room + FLASH_GC_MARGIN;
    if (under < floor)
        under = floor;
    return under > UINT32_MAX ? UINT32_MAX : (uint32_t)under;
}

uint64_t flash_gc_live_bytes(const struct flash_rec *r)
{
    if (!r->nitems || r->nbytes <= FLASH_HDR_LEN)
        return 0;
    return (uint64_t)(r->nbytes - FLASH_HDR_LEN) * r->live_items / r->nitems;
}

/* a < b in live share, the older first on a tie */
static bool less_live(const struct flash_rec *a, const struct flash_rec *b)
{
    uint64_t x = (uint64_t)a->live_items * b->nitems, y = (uint64_t)b->live_items * a->nitems;
    return x < y || (x == y && a->seq < b->seq);
}

int32_t flash_gc_least_live(const struct flash_rec *recs, uint32_t n, bool any_bucket, int32_t skip)
{
    int32_t best = -1;
    for (uint32_t i = 0; i < n; i++) {
        const struct flash_rec *r = &recs[i];
        if (r->state != FSEG_DISK || !r->live_items || !r->nitems || (int32_t)i == skip)
            continue;
        if (!any_bucket && r->bucket == FLASH_W_LOWTTL)
            continue;
        if (best < 0 || less_live(r, &recs[best]))
            best = (int32_t)i;
    }
    return best;
}

static int32_t oldest(const struct flash_rec *recs, uint32_t n)
{
    int32_t old = -1;
    for (uint32_t i = 0; i < n; i++) {
        const struct flash_rec *r = &recs[i];
        if (r->state != FSEG_DISK || !r->live_items || r->bucket == FLASH_W_LOWTTL)
            continue;
        if (old < 0 || r->seq < recs[old].seq)
            old = (int32_t)i;
    }
    return old;
}

enum flash_gc_act flash_gc_choose(const struct flash_rec *recs, uint32_t n,
                                  const struct flash_gc_rule *g, int32_t *victim, bool *unread)
{
    *victim = -1;
    *unread = g->drop_unread && g->free_segs < g->drop_under;
    if (g->free_segs >= g->compact_under)
        return FLASH_GC_NONE;
    int32_t least = flash_gc_least_live(recs, n, false, -1);
    if (least < 0)
        return FLASH_GC_NONE;
    const struct flash_rec *r = &recs[least];
    double share = (double)r->live_items / r->nitems;
    /* A segment whose rewrite costs at most the budget's ratio per byte
     * freed (u/(1-u) <= NUM/DEN) keeps to it by itself, whatever the
     * credit; dropping unread items, a rescue rewrites what was read only
     * (memcached's rule, outside the budget). */
    bool cheap = share * (FLASH_GC_BUDGET_NUM + FLASH_GC_BUDGET_DEN) <= FLASH_GC_BUDGET_NUM;
    bool paid = g->credit >= (int64_t)flash_gc_live_bytes(r);
    if (share < g->max_frag && (cheap || paid || *unread)) {
        *victim = least;
        return FLASH_GC_RESCUE;
    }
    if (*unread) {
        /* memcached's compactor then takes its oldest page */
        *victim = oldest(recs, n);
        return *victim >= 0 ? FLASH_GC_RESCUE : FLASH_GC_NONE;
    }
    if (!g->need_room)
        return FLASH_GC_NONE;
    *victim = least;
    return FLASH_GC_DROP;
}
