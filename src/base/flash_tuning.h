/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier's tuning that a client may change at run time with
 * memcached's `extstore` command (ext_item_size, ext_item_age, ...): the
 * values are kept once, as run-time settings (settings_rows_ext.h), and
 * whoever acts on them reads a snapshot through a flash_tuning_src, handed
 * to it at setup (options.h), at the moment it decides. The reader goes
 * through a function pointer so that the store need not see the settings,
 * which sit above it. */
#ifndef NODELAY_BASE_FLASH_TUNING_H
#define NODELAY_BASE_FLASH_TUNING_H

#include <stdbool.h>
#include <stdint.h>

/* One snapshot, each value as memcached holds it (32 bits unsigned). */
struct flash_tuning {
    uint32_t item_size;     /* items smaller than this stay in RAM */
    uint32_t item_age;      /* seconds since last access before one may go */
    uint32_t low_ttl;       /* TTLs under this go to short-lived pages */
    uint32_t recache_rate;  /* one flash read in N copies the item back */
    uint32_t compact_under; /* compact when fewer free pages than this */
    uint32_t drop_under;    /* drop rather than rescue under this many */
    uint32_t max_sleep;     /* longest pause of the background work, us */
    double max_frag;        /* compact pages whose live share is under this */
    bool drop_unread;       /* compaction drops items never read */
};

struct flash_tuning_src {
    void (*read)(const void *src, struct flash_tuning *out);
    const void *src;
};

/* The current values (each read atomically; a change between two fields
 * may show in one and not yet the other). */
static inline void flash_tuning_get(const struct flash_tuning_src *t, struct flash_tuning *out)
{
    t->read(t->src, out);
}

#endif
