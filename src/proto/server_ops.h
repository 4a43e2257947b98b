/* SPDX-License-Identifier: BSD-3-Clause */
/* What a protocol may ask of the running server as a whole.
 *
 * The worker hands every session a pointer to one of these (server.c fills
 * it for the real server), so protocols never reach a global and a unit
 * test can pass its own. server_ops_none answers as a server with nothing
 * behind it: no stats groups, no memory limit to change, no shutdown. */
#ifndef NODELAY_SERVER_OPS_H
#define NODELAY_SERVER_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "stats/stats_emit.h"

struct reply_queue;

/* What `stats <args>` did, for the protocol to frame in its own way. */
enum server_stats_rc {
    SERVER_STATS_END,     /* rows emitted (text: END) */
    SERVER_STATS_RESET,   /* counters reset (text: RESET) */
    SERVER_STATS_OK,      /* detail on/off (text: OK) */
    SERVER_STATS_DONE,    /* all written to raw, END included (text adds nothing) */
    SERVER_STATS_UNKNOWN, /* no such group here: the protocol answers as memcached */
    SERVER_STATS_REFUSED, /* *msg is memcached's error line, without CRLF */
    SERVER_STATS_NOMEM,
};

struct server_stats_out {
    struct stats_emit emit;  /* STAT rows */
    /* Groups that are not STAT rows (`stats cachedump` ITEM lines,
     * `stats detail dump` PREFIX lines) are written here; NULL (binary)
     * sends the detail dump as one row named "detailed", as memcached
     * does, and answers cachedump UNKNOWN. */
    struct reply_queue *raw;
    const char *msg;         /* set with SERVER_STATS_REFUSED */
};

struct server_ops {
    void *ctx;
    /* shutdown [graceful] (-A): stop accepting, finish, exit. */
    void (*shutdown)(void *ctx, bool graceful);
    /* verbosity <n>: clamps as memcached does. */
    void (*set_verbosity)(void *ctx, unsigned level);
    /* cache_memlimit <MB>: 0, or -1 when too small or not possible. */
    int (*set_memlimit)(void *ctx, size_t megabytes);
    /* stats <args> (what follows "stats ", possibly empty). */
    enum server_stats_rc (*stats)(void *ctx, const char *args, size_t len,
                                  struct server_stats_out *out);
    /* -D / stats detail on: one key's prefix counted; op is 'g' get (hit
     * tells), 's' set, 'd' delete. Called only while detail_enabled. */
    void (*stats_detail)(void *ctx, const char *key, size_t nkey, char op, bool hit);
    /* refresh_certs: 0, or -1 with memcached's error line (no CRLF) in msg. */
    int (*refresh_certs)(void *ctx, char *msg, size_t n);
};

extern const struct server_ops server_ops_none;

#endif
