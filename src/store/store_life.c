/* SPDX-License-Identifier: BSD-3-Clause */
/* Item life: live, expired or flushed (store_life.h). */
#include "store/store_life.h"

enum item_life life_of_item(const struct store_life *l, const char *p, const struct item_hdr *h,
                            uint64_t cas_base, rel_time_t tbase, rel_time_t now)
{
    /* memcached's item_is_flushed(), checked before expiry as it does. */
    rel_time_t ol = __atomic_load_n(&l->oldest_live, __ATOMIC_ACQUIRE);
    if (ol && ol <= now) {
        rel_time_t atime = item_get_st(p, h, tbase) & ~ITEM_S_MASK;
        uint64_t oc = __atomic_load_n(&l->oldest_cas, __ATOMIC_RELAXED);
        uint64_t cas = item_get_cas(p, h, cas_base);
        if (atime <= ol || (oc && cas && cas < oc))
            return ITEM_FLUSHED;
    }
    if (clock_expired(item_get_u32(p, h->exp_off), now))
        return ITEM_EXPIRED;
    return ITEM_LIVE;
}
