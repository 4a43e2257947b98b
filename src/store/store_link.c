/* SPDX-License-Identifier: BSD-3-Clause */
/* What every write shares (store_link.h). */
#include "store/store_link.h"
#include "store/store_core.h"
#include "store/store_classes.h"
#include "store/store_ghost.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_seg.h"
#include "store/persist/persist.h"
#include "store/seg_counts.h"
#include "store/flash/flash_tier.h"
#include "store/store_lookup.h"

uint64_t store_next_cas(struct store *s)
{
    uint64_t c = __atomic_add_fetch(&s->cas_next, 1, __ATOMIC_RELAXED);
    /* -e: the file's ceiling stays above every CAS a client was given, so a
     * restart after a crash never hands one out twice. */
    if (s->pm && c >= __atomic_load_n(&s->pm->hdr->cas_ceiling, __ATOMIC_RELAXED))
        persist_cas(s->pm, c);
    return c;
}

/* Groups by expiry distance on a roughly x8 scale, so a segment's items
 * expire within a factor of each other and the segment can go whole. */
unsigned store_ttl_group(struct store *s, rel_time_t exptime, rel_time_t now)
{
    if (exptime == REL_TIME_NEVER)
        return 0;
    /* memcached's do_item_alloc test (`exptime - current_time <=
     * temporary_ttl`, unsigned: an already expired item is not one). */
    int64_t temp = __atomic_load_n(&s->temp_ttl, __ATOMIC_RELAXED);
    if (temp >= 0 && exptime >= now && (int64_t)(exptime - now) <= temp)
        return STORE_GROUP_TEMP;
    uint32_t ttl = exptime > now ? exptime - now : 1;
    unsigned g = 1;
    while (ttl >= 8 && g < STORE_TTL_GROUPS - 1) {
        ttl >>= 3;
        g++;
    }
    return g;
}

uint8_t store_missing_layout(uint8_t have, uint32_t flags, rel_time_t exptime, bool cas_on,
                             uint64_t cas, uint64_t cas_base)
{
    uint8_t need = 0;
    if (flags && !(have & ITEM_L_FLAGS))
        need |= ITEM_L_FLAGS;
    if (exptime != REL_TIME_NEVER && !(have & ITEM_L_EXP))
        need |= ITEM_L_EXP;
    if (cas_on && !item_cas_fits(have, cas, cas_base))
        need |= item_cas_layout(cas, cas_base);
    return need;
}

bool store_link(struct store *s, struct store_found *f, bool have_old,
                struct store_reservation *res, uint32_t tag, uint64_t hv, const uint32_t *sum)
{
    struct seg *seg = res->seg;
    char *p = res->item;
    uint32_t off = (uint32_t)((p - seg->data) >> s->pool.off_shift);
    uint64_t ns = slot_make(tag, seg->id, off);
    struct item_hdr h;
    item_decode(p, &h);
    uint64_t *slot = NULL;
    if (!have_old && !(slot = index_pair_free_slot(&s->index, &f->keys)))
        return false;
    struct pm_journal *j = NULL;
    if (s->pm) {
        /* Checksum, then the commit bit; an overwrite journals both items
         * so that a kill between the new commit and the old death cannot
         * leave two live versions (docs/store.md "Restarts"). */
        item_put_u32(p, h.sum_off, sum ? *sum : item_sum(p, &h));
        if (have_old)
            j = persist_journal_begin(s->pm, pm_loc(f->seg->id, (uint32_t)(f->p - f->seg->data)),
                                      pm_loc(seg->id, (uint32_t)(p - seg->data)));
        item_set_state(p, ITEM_L_COMMIT);
    }
    if (have_old) {
        slot_store(f->slot, ns);
        if (s->pm) {
            item_set_dead(f->p);
            persist_journal_end(s->pm, j);
        }
        struct store_cls_of oc = classes_item(&s->classes, f->p, &f->h);
        seg_note_gone(f->seg, item_total(&f->h), &oc);
    } else {
        enum ghost_from gf = ghost_take(&s->ghost, hv);
        bool read = gf == GHOST_SMALL || (gf == GHOST_MAIN && seg_main_credit(&s->pool, hv));
        slot_store(slot, read ? slot_hit(ns) : ns);
        if (gf != GHOST_NONE)
            seg_steer_small(&s->pool, gf == GHOST_SMALL,
                            ghost_step(&s->ghost, gf, item_total(&h)));
    }
    /* Any flash copy under the key's tag must never answer for it again
     * (nor may two flash candidates share a tag): dropped. */
    if (s->flash)
        flash_tier_drop_tag(s->flash, &f->keys, index_flash_tag(&s->index, hv),
                            have_old ? f->slot : slot);
    struct store_cls_of nc = classes_item(&s->classes, p, &h);
    seg_note_item(seg, item_total(&h), item_get_u32(p, h.exp_off),
                  item_get_cas(p, &h, seg->cas_base), &nc);
    return true;
}
