/* SPDX-License-Identifier: BSD-3-Clause */
/* The idle flush (store_cold.c): items idle ext_item_age seconds are
 * copied to the flash tier while RAM is still free, as memcached's storage
 * write thread does; their RAM becomes their index slot. Run by the
 * housekeeper; docs/store-flash.md "What moves when". */
#ifndef NODELAY_STORE_COLD_H
#define NODELAY_STORE_COLD_H

#include <stdbool.h>
#include <stdint.h>

struct store;

/* One pass over up to max index buckets from the pass's cursor (the whole
 * index comes round in turn). Returns the items moved to flash; *full is
 * set when the tier's write buffers ran out first (the pass stopped there:
 * run it again once the writer thread has written some out). Nothing
 * waits on the disk: an item is a copy into a buffer under its bucket
 * lock. No-op without a flash tier or with ext_item_age at its default. */
uint64_t store_cold_pass(struct store *s, uint64_t max, bool *full);

#endif
