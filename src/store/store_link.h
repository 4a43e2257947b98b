/* SPDX-License-Identifier: BSD-3-Clause */
/* What every write shares beneath the write paths (store_link.c): CAS
 * numbers, TTL groups, the layout an item needs, and the link of a filled reservation into the index. Called by writes,
 * deletes and uploads; calls lookup's parts below. */
#ifndef NODELAY_STORE_LINK_H
#define NODELAY_STORE_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "store/store.h"
#include "store/store_lookup.h"

uint64_t store_next_cas(struct store *s);
/* The TTL group for an item of this expiry (STORE_GROUP_TEMP included). */
unsigned store_ttl_group(struct store *s, rel_time_t exptime, rel_time_t now);
/* Link reservation res (filled, header fields set) in place of f->slot or
 * in a free slot; false when the index is out of memory. Bucket lock held.
 * With -e, *sum is the item's checksum (item_sum_for), worked out before
 * the lock was taken: a 1 MiB value costs ~0.1 ms of it; NULL: here. */
bool store_link(struct store *s, struct store_found *f, bool have_old,
                struct store_reservation *res, uint32_t tag, uint64_t hv, const uint32_t *sum);
/* The layout bits item fields need beyond what `have` has; 0 if it fits. */
uint8_t store_missing_layout(uint8_t have, uint32_t flags, rel_time_t exptime, bool cas_on,
                             uint64_t cas, uint64_t cas_base);

#endif
