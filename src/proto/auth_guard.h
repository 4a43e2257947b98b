/* SPDX-License-Identifier: BSD-3-Clause */
/* A limit on password guessing, for -Y and SASL alike (memcached has none:
 * one connection can try 20,000 passwords in 0.02 s).
 *
 * With -o auth_fail_limit=N (default 5; 0 turns both limits off):
 *   - a connection is closed, after its reply, at its Nth failed attempt;
 *   - a TCP source address that has failed 4N times within a minute has
 *     every further attempt refused unchecked (the usual failure reply, then
 *     the connection closed) until that minute is over.
 * Nothing ever waits: refusing is a reply and a close, so no worker sleeps.
 * A client with the right password authenticates on its first attempt and
 * never meets either limit; only an address that keeps guessing does (and,
 * with it, anyone sharing that address for that minute). Unix-socket peers
 * have no address: only the per-connection limit applies to them. */
#ifndef NODELAY_PROTO_AUTH_GUARD_H
#define NODELAY_PROTO_AUTH_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"

/* An address's failures allowed per window, as a multiple of the limit. */
#define AUTH_GUARD_ADDR_FACTOR 4
#define AUTH_GUARD_WINDOW 60 /* seconds */

struct auth_guard {
    uint32_t failures; /* on this connection */
    bool has_addr;
    uint64_t addr;     /* hash of the source address (without the port) */
};

/* peer: the connection's "tcp:<ip>:<port>" / "tcp6:[<ip>]:<port>", or NULL
 * when it has no network address. */
void auth_guard_init(struct auth_guard *g, const char *peer);

/* Before a password is checked: false when the attempt must be refused
 * unchecked (its address is over its limit). */
bool auth_guard_admit(const struct auth_guard *g, int limit, rel_time_t now);

/* After a failed (or refused) attempt: true when the connection must now be
 * closed. */
bool auth_guard_failed(struct auth_guard *g, int limit, rel_time_t now);

/* Forget every address (tests). */
void auth_guard_reset(void);

#endif
