/* SPDX-License-Identifier: BSD-3-Clause */
/* Reservations and commits (store_write.c) as the store's other files use
 * them: raw reservations with a given layout, and the commit behind set,
 * add, replace and cas. */
#ifndef NODELAY_STORE_WRITE_H
#define NODELAY_STORE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_lookup.h"

struct seg_open_set;

/* Commit for set/add/replace/cas (not append/prepend). `status` bits are
 * given to the new item, and its access time when not 0 (else now); with expect_slot non-zero the
 * commit happens only if that exact item is still the key's (else STORE_EXISTS): a flash slot (a
 * flash item read back, store_flash.c) is then replaced by the new RAM item. Consumes res. */
enum store_status store_commit_ex(struct store_ctx *ctx, struct store_reservation *res,
                                  const struct store_set_req *req, uint32_t status,
                                  uint64_t expect_slot, uint64_t *cas_out);
/* store_reserve_for with the layout bits `more` besides (ITEM_L_AT32 for
 * an item that keeps an access time older than any open segment). */
enum store_status store_reserve_with(struct store_ctx *ctx, const char *key, size_t nkey,
                                     size_t nvalue, uint32_t flags, rel_time_t exptime,
                                     uint8_t more, struct store_reservation *res);
/* Reserve raw space for an item with this layout in TTL group g; cas_hint
 * is the CAS the item will be given when the caller knows it (0: the
 * counter's next), for the CAS field's width. */
enum store_status store_reserve_raw(struct store_ctx *ctx, const char *key, size_t nkey,
                                    size_t nvalue, uint8_t layout, unsigned g, uint64_t cas_hint,
                                    struct store_reservation *res);

/* Seal every open segment of set, under its lock: its last writer is
 * gone (store_ctx_destroy) or a limit change says so. */
void store_set_seal(struct store_ctx *c, struct seg_open_set *set);

/* Copy a linked item to a new place with at least `layout` fields (so a
 * touch or CAS change fits), keeping everything else; cas_hint is the CAS
 * the item is about to be given (0: it keeps its own). */
enum store_status store_widen(struct store_ctx *ctx, const struct store_key *k, uint8_t layout,
                              uint64_t cas_hint);

#endif
