/* SPDX-License-Identifier: BSD-3-Clause */
/* A bounded single-producer single-consumer ring of variable-size records,
 * without locks: the producer (the thread where a watch event happens)
 * never waits and never fails but for want of room, when the record is
 * dropped and counted by the caller.
 *
 * Positions are byte counts since creation (64-bit, never wrap); each
 * record is a 2-byte length and that many bytes, split across the end of
 * the buffer when it falls there. `tail` is written by the producer only
 * (release: the bytes before it are complete), `head` by the consumer only
 * (release: the bytes before it may be overwritten). */
#ifndef NODELAY_WATCH_RING_H
#define NODELAY_WATCH_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest record a ring takes. */
#define WATCH_RING_REC_MAX 1024

struct watch_ring {
    uint64_t tail;       /* producer */
    char pad0[56];       /* keep the producer's and consumer's lines apart */
    uint64_t head;       /* consumer */
    char pad1[56];
    size_t cap;
    char buf[];
};

/* A ring of cap bytes (at least 2 * WATCH_RING_REC_MAX); NULL when out of
 * memory. Free with free(). */
struct watch_ring *watch_ring_new(size_t cap);
/* Producer: append one record made of a's na bytes then b's nb (b may be
 * NULL when nb is 0; 1..WATCH_RING_REC_MAX in all); false when it does not
 * fit. */
bool watch_ring_push(struct watch_ring *r, const void *a, size_t na, const void *b, size_t nb);
/* Consumer: copy the oldest record into out (WATCH_RING_REC_MAX bytes) and
 * remove it; returns its length, 0 when the ring is empty. */
size_t watch_ring_pop(struct watch_ring *r, void *out);
/* Either side: anything to pop? */
bool watch_ring_empty(const struct watch_ring *r);

#endif
