/* SPDX-License-Identifier: BSD-3-Clause */
/* Item life: the flush_all rule behind life_of_item (store_life.h). */
#include "store/store_life.h"

bool life_flushed(const struct store_life *l, const char *p, const struct item_hdr *h,
                  uint64_t cas_base, rel_time_t tbase, rel_time_t ol)
{
    rel_time_t atime = item_get_st(p, h, tbase) & ~ITEM_S_MASK;
    uint64_t oc = __atomic_load_n(&l->oldest_cas, __ATOMIC_RELAXED);
    uint64_t cas = item_get_cas(p, h, cas_base);
    return atime <= ol || (oc && cas && cas < oc);
}
