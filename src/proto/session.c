/* SPDX-License-Identifier: BSD-3-Clause */
#include "proto/session.h"

#include <stdint.h>
#include <string.h>

#include "stats/stats.h"
#include "watch/watch.h"

void session_init(struct session *s, struct store_ctx *store, struct stats_thread *stats,
                  const struct proto_options *opt, struct settings_runtime *run)
{
    memset(s, 0, sizeof *s);
    s->store = store;
    s->stats = stats;
    s->opt = opt;
    s->run = run;
    s->ops = &server_ops_none;
    s->cfd = -1;
    reply_init(&s->reply);
    s->reply_allow = SIZE_MAX;
    /* -Y speaks ascii only (memcached forces -B ascii with it). */
    const char *bind = opt->binding_protocol;
    if (opt->auth_file || (bind && strcmp(bind, "ascii") == 0))
        s->kind = PROTO_KIND_TEXT;
    else if (bind && strcmp(bind, "binary") == 0)
        s->kind = PROTO_KIND_BINARY;
    else
        s->kind = PROTO_KIND_NEGOTIATING;
    s->authenticated = !opt->auth_file && !opt->sasl;
}

void session_set_peer(struct session *s, const char *addr)
{
    auth_guard_init(&s->auth, addr);
}

void session_release(struct session *s)
{
    watch_remove(&s->watcher);
    proto_flash_destroy(&s->flash);
    s->flash_held = false;
    s->sink = NULL;
    s->sink_len = 0;
    reply_release(&s->reply);
}

bool session_value_coming(const struct session *s, size_t got, size_t rest)
{
    /* A connection reads while it owes at most half its allowance. */
    if (!s->queued || reply_pending(&s->reply) > s->reply_allow / 2)
        return false;
    long queued = s->queued(s->queued_ctx, false);
    if (queued < 0)
        return false;
    /* What the read took counts with what it left queued: one segment
     * split by the read is one segment sent, whichever backend read it. */
    return (size_t)queued >= rest || got + (size_t)queued >= SESSION_COMING_MIN;
}

/* The socket holds at least rest more bytes of the request. */
static bool session_value_queued(const struct session *s, size_t rest)
{
    long queued = s->queued ? s->queued(s->queued_ctx, true) : -1;
    return queued >= 0 && (size_t)queued >= rest;
}

enum store_status session_reserve_value(struct session *s, const char *key, size_t nkey,
                                        size_t nvalue, size_t avail, size_t need, bool known,
                                        uint32_t flags, rel_time_t exptime,
                                        struct store_reservation *res)
{
    s->sink_held = false;
    bool here = avail >= need;
    /* Ask only for a large value: the FIONREAD costs about what staging and
     * copying a small one does (and the ring's system calls are few). */
    if (!here && nvalue > STORE_UPLOAD_SMALL && session_value_queued(s, need - avail)) {
        /* The rest is in the kernel: a segment reserved now is filled by
         * the reads this turn makes, never held waiting for the client
         * (docs/store.md "Uploads"). */
        here = true;
        s->sink_held = true;
    }
    if (here) {
        enum store_status st = known ? store_reserve_for(s->store, key, nkey, nvalue, flags,
                                                         exptime, res)
                                     : store_reserve(s->store, key, nkey, nvalue, res);
        if (st == STORE_OK && s->sink_held)
            STAT_INC(s->stats, sets_direct);
        return st;
    }
    return store_reserve_upload_here(s->store, key, nkey, nvalue, known, flags, exptime,
                                     !store_upload_fits(s->store, nvalue) &&
                                         session_value_coming(s, avail, need - avail),
                                     res);
}
