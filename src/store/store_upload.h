/* SPDX-License-Identifier: BSD-3-Clause */
/* Uploads (store_upload.c): values still arriving, staged outside the
 * segments; docs/store.md "Uploads". */
#ifndef NODELAY_STORE_UPLOAD_H
#define NODELAY_STORE_UPLOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct store_upload;

/* The uploads' state: bytes staged, their bound, the list cut-offs take
 * the oldest from. */
struct store_uploads {
    uint64_t bytes; /* staged by incomplete uploads, atomic */
    uint64_t limit; /* bound on the large ones (lock; atomic for stats) */
    pthread_mutex_t lock;
    struct store_upload *head, *tail; /* oldest first (lock) */
    uint64_t live;                    /* large ones not cut off (lock) */
    uint64_t held;                    /* large ones still allocated (lock) */
    uint64_t small;                   /* the small ones, atomic: client memory (client_mem_limit) */
};
void store_upload_init(struct store_uploads *up);
void store_upload_release(struct store_uploads *up);
/* The default bound on large incomplete uploads for this -m and -I. */
uint64_t store_upload_default_limit(size_t mem_limit, size_t item_size_max);
/* A new bound (cache_memlimit), applied as uploads are next admitted:
 * stalled ones past it are cut off then, as at a full bound. */
void store_upload_set_limit(struct store_uploads *up, uint64_t limit);
/* Free a staged upload's memory. */
void store_upload_free(struct store_ctx *ctx, struct store_reservation *res);
/* A staged upload's key (one cut off keeps it alone: store_upload_alive);
 * NULL when res holds no stage. */
const char *store_upload_key(const struct store_reservation *res);

#endif
