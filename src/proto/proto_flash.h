/* SPDX-License-Identifier: BSD-3-Clause */
/* How a session waits for the flash tier (store/store_flash.h) without its
 * worker waiting: a worker's flash loop (what its event loop watches and
 * drains) and a session's wait (the store's wait set, probed per key).
 *
 * A request that needs a key's existing item probes its keys before it
 * has any effect; when a probe says WAIT the protocol stops at that
 * request, unconsumed (PROTO_WAIT), and the connection runs it again from
 * its start once woken. The bytes read for it are kept until the request
 * is done (session_flash_done).
 *
 * With no flash tier a worker has no flash loop, a session no wait: one
 * NULL test per request. Debug builds (on Linux) add a test seam (no flash tier
 * needed): NODELAY_DEBUG_FLASH=PREFIX[:MS] in the environment makes every
 * probe of a key that starts with PREFIX wait once per request, completing
 * MS milliseconds later (default 0: the next loop turn) through a timerfd
 * the loop watches, as a device's reads would. */
#ifndef NODELAY_PROTO_FLASH_H
#define NODELAY_PROTO_FLASH_H

#include <stdbool.h>
#include <stddef.h>

#include "store/store_flash.h"

struct store_ctx;
struct session;

/* A worker's: its store context's flash tier (and the debug seam). */
struct flash_loop;

/* *out = the worker's flash loop, or NULL when there is nothing to wait
 * for (no flash tier, no seam). Returns 0, or -1 (errno set). */
int flash_loop_create(struct store_ctx *ctx, struct flash_loop **out);
void flash_loop_destroy(struct flash_loop **l);
/* The fds the worker's loop watches for reads (i = 0, 1; -1: none). */
int flash_loop_fd(const struct flash_loop *l, int i);
/* One of them is readable: complete what has completed and wake the
 * sessions whose reads are all done. Never blocks. */
void flash_loop_drain(struct flash_loop *l);

/* A session's wait: created by proto_attach when its connection has a
 * flash loop; wake(arg) runs on the worker's thread from flash_loop_drain
 * once the last outstanding read of the session's request completes. */
struct proto_flash;
struct proto_flash *proto_flash_create(struct flash_loop *l, void (*wake)(void *arg), void *arg);
/* The session goes: its outstanding reads complete into nothing. */
void proto_flash_destroy(struct proto_flash **f);

/* The store's lookups see the session's reads while it runs (NULL: not). */
void proto_flash_attach(struct session *s, bool on);

/* Probe one key a request needs (s->flash set): READY, or WAIT with its
 * read submitted. Probe all of a request's keys before stopping. */
enum store_probe proto_flash_probe(struct session *s, const char *key, size_t nkey);

/* The session's wait set in the store (a request that reads flash other
 * than by key: a dump, store_compat.h), or NULL without a flash tier. */
struct store_flash_wait *proto_flash_wait(struct session *s);
/* The request is refused after its lookups were served flash items: they
 * count as aborted reads (store_flash_wait_abort). */
void proto_flash_abort(struct session *s);

/* The request that waited is done: drop what was read for it. */
void proto_flash_reset(struct session *s);
/* The session's set holds reads, whether or not its probes kept them (the
 * store reads an item again as a request runs: store_core.h). */
bool proto_flash_held(const struct session *s);

#endif
