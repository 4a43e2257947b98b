/* SPDX-License-Identifier: BSD-3-Clause */
/* Item life (store_life.c): the flush marks flush_all leaves and the one
 * rule that says whether an item is live, expired or flushed, by
 * memcached's rules. docs/store-expiry.md "Expiry" and "flush_all". */
#ifndef NODELAY_STORE_LIFE_H
#define NODELAY_STORE_LIFE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "store/store_item.h"

/* What life_of_item judges an item: memcached's rules. */
enum item_life { ITEM_LIVE, ITEM_EXPIRED, ITEM_FLUSHED };

struct store_life {
    rel_time_t oldest_live; /* flush_all, memcached's settings.oldest_live (atomic) */
    uint64_t oldest_cas;    /* items below this CAS are flushed from then (atomic) */
    /* One flush_all at a time: the pair it computes goes to the -e file and
     * to memory in the same order as any other flush's, so the two never
     * end holding different flushes. */
    pthread_mutex_t flush_lock;
};

/* Flushed by the flush_all whose oldest_live ol has come (memcached's
 * item_is_flushed). */
bool life_flushed(const struct store_life *l, const char *p, const struct item_hdr *h,
                  uint64_t cas_base, rel_time_t tbase, rel_time_t ol);

/* Expired or flushed, by memcached's rules; counts nothing. Inline: every
 * lookup's find asks, and a flush_all that has come is the rare case. */
static inline enum item_life life_of_item(const struct store_life *l, const char *p,
                                          const struct item_hdr *h, uint64_t cas_base,
                                          rel_time_t tbase, rel_time_t now)
{
    /* flushed is checked before expiry, as memcached does */
    rel_time_t ol = __atomic_load_n(&l->oldest_live, __ATOMIC_ACQUIRE);
    if (ol && ol <= now && life_flushed(l, p, h, cas_base, tbase, ol))
        return ITEM_FLUSHED;
    if (clock_expired(item_get_u32(p, h->exp_off), now))
        return ITEM_EXPIRED;
    return ITEM_LIVE;
}

#endif
