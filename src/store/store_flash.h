/* SPDX-License-Identifier: BSD-3-Clause */
/* The contract between the flash tier (store side) and the sessions that
 * wait for it (store_flash.c): how an operation on a key whose item is on
 * flash waits for the read without its worker waiting.
 *
 * An operation that needs a key's item (any get, touch, delete, arith,
 * append/prepend/cas, every meta command, the binary equivalents) first
 * probes the key, before it has any effect: STORE_PROBE_READY means the
 * lookups that follow see the item as if it were in RAM (it is in RAM, or
 * its bytes were read for this wait set); STORE_PROBE_WAIT means a read was
 * submitted, and the session stops at that request, unconsumed, until the
 * wait set's wake callback runs, and then processes the request again from
 * its start. A request with several keys probes them all before it stops,
 * so their reads go out together. The wait set belongs to the session; the
 * store fills it. A lookup made with no wait set attached treats a flash
 * item as a miss it does not unlink. */
#ifndef NODELAY_STORE_FLASH_H
#define NODELAY_STORE_FLASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store_ctx;
struct store_key;
struct flash_read; /* one device read (store/flash/flash_dev.h), opaque here */

enum store_probe {
    STORE_PROBE_READY, /* go on: the item is in RAM, read already, or absent */
    STORE_PROBE_WAIT,  /* a read is outstanding: stop, and run again when woken */
};

/* A session's flash reads: submitted, completed, and the bytes that came
 * back, until store_flash_wait_reset. The store owns what is inside. */
struct store_flash_wait;

/* wake(arg) runs on the worker's own thread (from store_flash_drain) when
 * the last outstanding read of the set completes. */
struct store_flash_wait *store_flash_wait_create(void (*wake)(void *arg), void *arg);
/* The session is going: outstanding reads complete into nothing. */
void store_flash_wait_destroy(struct store_flash_wait *w);
/* The request is done: drop the bytes read for it. Owed by every request
 * after whose probes store_flash_wait_held is true, not only one that
 * waited: a probe answers READY at once for an item copied from a writer's
 * buffer (or a read that failed), and what it keeps would answer the key's
 * next probes without a read, long after the key moved (a miss, or an
 * item judged live before a flush_all). */
void store_flash_wait_reset(struct store_flash_wait *w);
/* The request is refused after its lookups were given flash items (a get
 * line with a key too long further on): they count as reads aborted
 * (get_aborted_extstore), as memcached drops the reads it had started for
 * the line. */
void store_flash_wait_abort(struct store_flash_wait *w, struct store_ctx *ctx);
/* The set holds reads (done or not) that a reset must drop. */
bool store_flash_wait_held(const struct store_flash_wait *w);
/* Reads submitted and not yet completed. */
unsigned store_flash_pending(const struct store_flash_wait *w);

/* Lookups of ctx use w's completed reads until detached (NULL). */
void store_flash_attach(struct store_ctx *ctx, struct store_flash_wait *w);

/* Whether the store has a flash tier: when not, every probe is READY and a
 * caller may skip probing. Constant after start. */
bool store_flash_on(const struct store_ctx *ctx);
enum store_probe store_flash_probe(struct store_ctx *ctx, struct store_flash_wait *w,
                                   const struct store_key *k);

/* The fd the worker's loop watches (readable when reads have completed),
 * or -1 with no flash tier; then store_flash_drain runs the completions
 * (and the wake callbacks) on the worker's thread. Never blocks. */
int store_flash_fd(struct store_ctx *ctx);
void store_flash_drain(struct store_ctx *ctx);

/* A worker's own ring (io_uring), for the device reads of its ctx:
 * start(arg, r, fd, buf, len, pos, delay_ms) begins reading len bytes at
 * pos of fd into buf and returns 0, and the worker later passes the
 * result (bytes read, or -errno) to store_flash_ring_done(r, res), on its
 * own thread; or it returns -errno and the read goes to the device's
 * thread pool. fd may be O_DIRECT: buf, len and pos are aligned for it.
 * delay_ms: start the read that much later (debug builds' slow-device
 * seam, NODELAY_DEBUG_FLASH_DEV; 0 otherwise). */
struct store_flash_ring {
    int (*start)(void *arg, struct flash_read *r, int fd, void *buf, uint32_t len, uint64_t pos,
                 unsigned delay_ms);
    void *arg;
};
/* Install it (once, before the worker's first request; no flash tier:
 * nothing to do). */
void store_flash_use_ring(struct store_ctx *ctx, const struct store_flash_ring *ring);
/* A read its ring started has ended: the same completion as the pool's
 * (parse, compare, expiry, the session's wake). Never blocks. */
void store_flash_ring_done(struct flash_read *r, int res);
/* Reads started on ctx's ring and not yet done: a stopping worker reaps
 * them (their buffers are the kernel's until then). */
unsigned store_flash_ring_pending(const struct store_ctx *ctx);

#endif
