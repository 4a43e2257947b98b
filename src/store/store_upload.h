/* SPDX-License-Identifier: BSD-3-Clause */
/* Uploads (store_upload.c): values still arriving, staged outside the
 * segments; docs/store.md "Uploads". */
#ifndef NODELAY_STORE_UPLOAD_H
#define NODELAY_STORE_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct store_upload;
void store_upload_init(struct store *s);
void store_upload_release(struct store *s);
/* The default bound on large incomplete uploads for this -m and -I. */
uint64_t store_upload_default_limit(size_t mem_limit, size_t item_size_max);
/* Free a staged upload's memory. */
void store_upload_free(struct store_ctx *ctx, struct store_reservation *res);

#endif
