/* SPDX-License-Identifier: BSD-3-Clause */
/* Strict mode: the writes a key's connection abandoned.
 *
 * A set or delete in flight when its connection is dropped was never
 * acknowledged, but the server may already hold it (in its socket buffer, a
 * paused connection's read buffer, a worker busy elsewhere) and run it at any
 * later time: after the key's next connection has had newer writes
 * acknowledged, and no bound on how much later. Those versions, and only
 * those, may legally come back below the acknowledged one; any other old
 * version is stale. Each key is owned by one connection, so one thread
 * touches a key's entry (no lock). */
#ifndef LG_LIMBO_H
#define LG_LIMBO_H

#include <stdbool.h>
#include <stdint.h>

#define LG_LIMBO_DELETE UINT32_MAX /* an abandoned delete (it may still land) */

struct lg_abandoned {
    uint32_t ver;       /* a set's version, or LG_LIMBO_DELETE */
    uint64_t dropped_ns; /* when its connection was dropped */
};

struct lg_limbo {
    uint32_t n, cap;
    struct lg_abandoned *v;
};

/* Records an abandoned write; -1 when out of memory. */
int lg_limbo_add(struct lg_limbo *l, uint32_t ver, uint64_t dropped_ns);
/* The abandoned set of version ver, or NULL if ver was never abandoned. */
const struct lg_abandoned *lg_limbo_find(const struct lg_limbo *l, uint32_t ver);
/* Whether a delete of this key was abandoned (it may cause a miss later). */
bool lg_limbo_has_delete(const struct lg_limbo *l);
void lg_limbo_release(struct lg_limbo *l);

#endif
