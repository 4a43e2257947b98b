/* SPDX-License-Identifier: BSD-3-Clause */
/* The idle flush (store_cold.h). memcached's storage write thread takes
 * items from the tail of each class's COLD LRU once they are older than
 * ext_item_age; nodelay has no per-class LRU, so the pass walks the index
 * from a cursor, bucket by bucket under one bucket lock at a time (as the
 * housekeeper's crawl does), and moves each RAM item that qualifies the
 * way eviction moves one (seg.c, seg_drop_item): copied into a flash
 * writer's buffer, its slot switched to the flash copy, its RAM bytes
 * dead. An item read twice since it was written has its access time
 * bumped (store.c), so a recently read item stays, as memcached's ACTIVE
 * items leave COLD.
 *
 * What keeps it cheap: a segment is looked into only when it may hold an
 * item that qualifies: some live item of a class at least ext_item_size's,
 * and made at least ext_item_age ago (an item's access time is no older
 * than its segment's making, carried items aside, which wait a pass). */
#include "store/store_cold.h"
#include "store/store_core.h"

#include <xxhash.h>

static bool cold_seg_may(const struct store *s, const struct seg *seg, unsigned min_cls,
                         uint32_t age, rel_time_t now)
{
    if (!__atomic_load_n(&seg->live_items, __ATOMIC_RELAXED))
        return false;
    rel_time_t made = __atomic_load_n(&seg->created, __ATOMIC_RELAXED);
    if (made > now || now - made < age)
        return false;
    for (unsigned c = min_cls; c < s->classes.n && c < STORE_CLASSES; c++)
        if (__atomic_load_n(&seg->cls_items[c], __ATOMIC_RELAXED) > 0)
            return true;
    return false;
}

/* One item of b's chain in *slot (b locked) that qualifies: to flash. Its
 * flash slot takes the RAM slot's place, in whichever of the key's buckets
 * that is, as eviction's does (seg.c, seg_drop_item); the key's other
 * bucket is locked too (index_lock_other_of), since the key's other flash
 * candidates in either go. Returns whether it went (b's chain changed);
 * not when the other bucket is busy at a lower address: a later pass. */
static bool cold_item(struct store *s, uint64_t *b, uint64_t *slot, struct seg *seg,
                      const char *p, const struct item_hdr *h, rel_time_t now, bool *full)
{
    uint64_t hv = XXH3_64bits(p + h->hlen, h->nkey);
    uint64_t *ob = index_lock_other_of(&s->index, hv, b);
    if (!ob)
        return false;
    uint64_t ns = flash_tier_take(s->flash, p, h, seg->cas_base, seg->tbase,
                                  index_flash_tag(&s->index, hv), now, FLASH_TAKE_IDLE, full);
    if (ns) {
        struct store_cls_of cls = classes_item(&s->classes, p, h);
        /* the flash slot takes the RAM one's place under the locks a
         * lookup of the key takes; the RAM bytes dead first (W3), so a
         * restart brings back only the flash copy; its reads so far go
         * with it, as memcached's header keeps FETCHED and ACTIVE
         * (store_flash.c) */
        if (s->pm)
            item_set_dead((char *)p);
        slot_store(slot, index_flash_place(&s->index, hv, b, ns) | slot_freq(slot_load(slot)));
        seg_note_gone(seg, item_total(h), &cls);
        /* the key's one flash candidate is this copy (flash_tier.h) */
        struct index_pair keys = {{b, ob == b ? NULL : ob}};
        flash_tier_drop_tag(s->flash, &keys, slot_flash_tag(&s->index, ns), slot);
    }
    if (ob != b)
        index_unlock(ob);
    return ns != 0;
}

/* One bucket, b locked: its RAM items that qualify go to flash. */
static uint64_t cold_bucket(struct store *s, uint64_t *b, unsigned min_cls, uint32_t age,
                            rel_time_t now, bool *full)
{
    uint64_t moved = 0;
    for (uint64_t *cur = b; cur && !*full; cur = index_next(&s->index, cur)) {
        for (int j = 0; j < INDEX_SLOTS && !*full; j++) {
            uint64_t sl = slot_load(index_slot(cur, j));
            if (!sl || slot_is_flash(sl))
                continue;
            struct seg *seg = seg_of(&s->pool, slot_seg(sl));
            if (!cold_seg_may(s, seg, min_cls, age, now))
                continue;
            const char *p = seg_item(&s->pool, sl);
            struct item_hdr h;
            item_decode(p, &h);
            if (life_of_item(&s->life, p, &h, seg->cas_base, seg->tbase, now) != ITEM_LIVE)
                continue; /* the crawl or a read reaps it */
            if (!cold_item(s, b, index_slot(cur, j), seg, p, &h, now, full))
                continue;
            moved++;
            /* a slot cleared or dropped may have freed a bucket of the
             * chain: start it over (what moved is on flash, skipped) */
            cur = b;
            j = -1;
        }
    }
    return moved;
}

uint64_t store_cold_pass(struct store *s, uint64_t max, bool *full)
{
    *full = false;
    if (!s->flash)
        return 0;
    uint32_t item_size, age;
    flash_tier_idle_rules(s->flash, &item_size, &age);
    if (age == UINT32_MAX)
        return 0;
    unsigned min_cls = classes_id(&s->classes, item_size);
    rel_time_t now = clock_now();
    uint64_t moved = 0, nb = 0;
    for (uint64_t n = 0; n < max && !*full; n++) {
        uint64_t *b = index_lock_nth(&s->index, s->hk.cold_cursor, &nb);
        if (!b) {
            s->hk.cold_cursor = 0;
            if (nb == 0 || n >= nb)
                break;
            continue;
        }
        moved += cold_bucket(s, b, min_cls, age, now, full);
        index_unlock(b);
        if (!*full)
            s->hk.cold_cursor++;
    }
    return moved;
}
