/* SPDX-License-Identifier: BSD-3-Clause */
/* The SPSC record ring (watch_ring.h). */
#include "watch/watch_ring.h"

#include <stdlib.h>
#include <string.h>

struct watch_ring *watch_ring_new(size_t cap)
{
    if (cap < 2 * WATCH_RING_REC_MAX)
        cap = 2 * WATCH_RING_REC_MAX;
    struct watch_ring *r = calloc(1, sizeof *r + cap);
    if (r)
        r->cap = cap;
    return r;
}

static void ring_write(struct watch_ring *r, uint64_t pos, const void *p, size_t n)
{
    size_t off = (size_t)(pos % r->cap);
    size_t first = r->cap - off < n ? r->cap - off : n;
    memcpy(r->buf + off, p, first);
    memcpy(r->buf, (const char *)p + first, n - first);
}

static void ring_read(const struct watch_ring *r, uint64_t pos, void *p, size_t n)
{
    size_t off = (size_t)(pos % r->cap);
    size_t first = r->cap - off < n ? r->cap - off : n;
    memcpy(p, r->buf + off, first);
    memcpy((char *)p + first, r->buf, n - first);
}

bool watch_ring_push(struct watch_ring *r, const void *a, size_t na, const void *b, size_t nb)
{
    size_t len = na + nb;
    if (len == 0 || len > WATCH_RING_REC_MAX)
        return false;
    uint64_t tail = r->tail; /* ours alone */
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    if (r->cap - (size_t)(tail - head) < len + 2)
        return false;
    uint16_t n = (uint16_t)len;
    ring_write(r, tail, &n, 2);
    ring_write(r, tail + 2, a, na);
    if (nb)
        ring_write(r, tail + 2 + na, b, nb);
    __atomic_store_n(&r->tail, tail + 2 + len, __ATOMIC_RELEASE);
    return true;
}

size_t watch_ring_pop(struct watch_ring *r, void *out)
{
    uint64_t head = r->head; /* ours alone */
    uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (head == tail)
        return 0;
    uint16_t n;
    ring_read(r, head, &n, 2);
    ring_read(r, head + 2, out, n);
    __atomic_store_n(&r->head, head + 2 + n, __ATOMIC_RELEASE);
    return n;
}

bool watch_ring_empty(const struct watch_ring *r)
{
    return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}
