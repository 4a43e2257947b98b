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

struct store_ctx;
struct store_key;

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
/* The request that waited is done: drop the bytes read for it. */
void store_flash_wait_reset(struct store_flash_wait *w);
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

#endif
