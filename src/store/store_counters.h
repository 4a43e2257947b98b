/* SPDX-License-Identifier: BSD-3-Clause */
/* What a worker counts (no .c): its event counters (STORE_COUNTERS,
 * store.h) and its per-class counters (STORE_CLASS_EVENTS, store_compat.h),
 * each with a single writer, the worker's thread, and read by stats.
 * Beneath every part that counts: the segment pool counts its evictions
 * through a pointer to its worker's (struct seg_ctx). */
#ifndef NODELAY_STORE_COUNTERS_H
#define NODELAY_STORE_COUNTERS_H

#include <stdint.h>

#include "store/store.h"
#include "store/store_compat.h"

struct store_ctx_counters {
#define STORE_CTX_FIELD(n) uint64_t n;
    STORE_COUNTERS(STORE_CTX_FIELD)
#undef STORE_CTX_FIELD
};

/* The single-writer update on a struct store_ctx_counters. */
#define CNT_ADD(c, f, n)                                                       \
    __atomic_store_n(&(c)->f, __atomic_load_n(&(c)->f, __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define CNT_INC(c, f) CNT_ADD(c, f, 1)
/* The same single-writer update on a struct store_cls_ctr. */
#define CLS_SET(c, f, v) __atomic_store_n(&(c)->f, (v), __ATOMIC_RELAXED)
#define CLS_INC(c, f) CLS_SET(c, f, __atomic_load_n(&(c)->f, __ATOMIC_RELAXED) + 1)

#define CLS_ADD(c, f, n) CLS_SET(c, f, __atomic_load_n(&(c)->f, __ATOMIC_RELAXED) + (n))

/* Per-class event counters of one ctx (single writer, like cnt). */
struct store_cls_ctr {
#define STORE_CLS_CTR_FIELD(f) uint64_t f;
    STORE_CLASS_EVENTS(STORE_CLS_CTR_FIELD)
#undef STORE_CLS_CTR_FIELD
    uint32_t evicted_time; /* age of the last item this ctx evicted from the class */
};

#endif
