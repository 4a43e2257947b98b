/* SPDX-License-Identifier: BSD-3-Clause */
/* Item life (store_life.c): the flush marks flush_all leaves and the one
 * rule that says whether an item is live, expired or flushed, by
 * memcached's rules. docs/store-expiry.md "Expiry" and "flush_all". */
#ifndef NODELAY_STORE_LIFE_H
#define NODELAY_STORE_LIFE_H

#include <pthread.h>
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

/* Expired or flushed, by memcached's rules; counts nothing. */
enum item_life life_of_item(const struct store_life *l, const char *p, const struct item_hdr *h,
                            uint64_t cas_base, rel_time_t tbase, rel_time_t now);

#endif
