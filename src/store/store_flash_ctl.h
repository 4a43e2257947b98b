/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier's place in the store (store_flash.c): opened with the
 * store, a completion queue per worker context, and what an index growth
 * does with a flash slot. Store-internal; the sessions' side is
 * store_flash.h. */
#ifndef NODELAY_STORE_FLASH_CTL_H
#define NODELAY_STORE_FLASH_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct store_ctx;
struct store_flash_options;

/* The bytes the -e file keeps for the flash tier that o describes (0: no
 * tier, or one that cannot open), and the hash of its shape (files, sizes,
 * page and segment size). */
size_t store_flash_keep_len(const struct store_flash_options *o, uint64_t *shape);
/* With s->opt.flash naming files: open the tier (with -e, attached to its
 * record in the file). 0, or -errno with *why. */
int store_flash_open(struct store *s, char *why, size_t n);
void store_flash_close(struct store *s);
/* The ctx's completion queue (none without a tier). 0 or -1. */
int store_flash_ctx_init(struct store_ctx *ctx);
void store_flash_ctx_release(struct store_ctx *ctx);
/* An index growth met a flash slot, whose key's hash no RAM holds: true,
 * and the slot is dropped (counted); false for a RAM slot. */
bool store_flash_forget(struct store *s, uint64_t slot);
/* A read of w's that is no key's (a dump's, store_flash_scan.c): hold
 * counts it outstanding; release, on the worker's thread once it has
 * completed, runs w's wake when it was the last (or frees w, destroyed
 * meanwhile). */
struct store_flash_wait;
void store_flash_wait_hold(struct store_flash_wait *w);
void store_flash_wait_release(struct store_flash_wait *w);
/* The STORE_FLASH_STATS fields of out (and curr_items counts flash items,
 * as memcached's counts items whose values are on flash). */
struct store_stats;
void store_flash_stats(struct store *s, struct store_stats *out);
/* A reference on the buffer of a flash item a lookup served from it
 * (store_found.flash_buf), as the pin of the store_item a read hands out;
 * whether a pin is one; and its release (store_pin_release's). */
struct store_pin;
struct store_pin *store_flash_buf_pin(void *buf);
bool store_flash_pin_is(const struct store_pin *pin);
void store_flash_buf_unpin(struct store_pin *pin);

#endif
