/* SPDX-License-Identifier: BSD-3-Clause */
/* A session is the protocols' view of one connection: everything a request
 * needs (store, counters, options, server operations, the reply queue) and
 * the state a protocol keeps between reads, with no socket in it, so
 * protocols are testable alone. */
#ifndef NODELAY_SESSION_H
#define NODELAY_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/auth_guard.h"
#include "proto/proto_flash.h"
#include "store/store.h"
#include "proto/proto_options.h"
#include "proto/server_ops.h"
#include "reply/reply.h"

struct store_ctx;
struct stats_thread;
struct settings_runtime;
struct event_loop;
struct watcher;

/* Why a connection closes, as memcached's close_reason (watch's conn_close
 * reason=): an error unless the client quit or hung up, or the server is
 * stopping. */
enum session_close {
    SESSION_CLOSE_ERROR, /* a PROTO_CLOSE that is not one of the below */
    SESSION_CLOSE_NORMAL, /* quit, or the client's end of stream */
    SESSION_CLOSE_SHUTDOWN,
};

/* Room for the protocol's own state (the largest, the text protocol's,
 * asserts it fits). */
#define SESSION_STATE_BYTES 768

enum proto_kind {
    PROTO_KIND_NEGOTIATING, /* -B auto: the first byte decides */
    PROTO_KIND_TEXT,        /* classic text and meta */
    PROTO_KIND_BINARY,
};

struct session {
    /* Provided by the connection; borrowed. */
    struct store_ctx *store;
    struct stats_thread *stats;
    const struct proto_options *opt;
    struct settings_runtime *run; /* the values that change at run time */
    const struct server_ops *ops; /* server-wide actions; &server_ops_none until set */
    /* For `watch`: the client's fd (cfd= in event lines), the loop and the
     * event pointer a watcher's wake-ups go to (NULL in socket-free tests). */
    int cfd;
    /* What a protocol may learn of the connection's socket, answered by
     * the connection: how many bytes the kernel holds unread for it
     * (FIONREAD). raw: only bytes that are the requests' own (a TLS
     * socket's are records: -1). -1 when it cannot tell; NULL, no socket. */
    long (*queued)(void *ctx, bool raw);
    void *queued_ctx;
    struct event_loop *loop;
    void *wake_ptr;

    /* Owned: what this connection owes its client. */
    struct reply_queue reply;
    /* Set by the connection before each call: reply bytes it may owe before
     * requests pause (PROTO_PAUSE). SIZE_MAX after session_init. */
    size_t reply_allow;

    enum proto_kind kind;
    bool authenticated; /* -Y ascii auth or SASL; true when neither is on */
    struct auth_guard auth; /* failed attempts (session_set_peer) */
    bool datagram;          /* serves one UDP datagram: no connection behind it */
    struct watcher *watcher; /* after `watch`: input is ignored, the stream is sent */
    enum session_close close_why; /* read when the connection closes */

    /* Direct read target, see proto_sink_filled(). */
    char *sink;
    size_t sink_len;
    /* While sink_len > 0: the sink is segment memory, reserved because the
     * socket already held the rest of the value (session_reserve_value).
     * The connection reads it now, whatever it owes, and acknowledges
     * nothing early: no segment waits on the client. */
    bool sink_held;
    /* A request has begun and not ended (proto_mid_request): set by
     * proto.c as each proto_process and proto_sink_filled returns, so the
     * connection learns it from what the call left, not by a second call. */
    bool mid_request;
    /* Flash reads (proto_flash.h): the session's wait, NULL without a flash
     * tier; flash_held: a request's probes kept reads (waited for or
     * copied at once) until it is done (session_flash_done). */
    struct proto_flash *flash;
    bool flash_held;

    /* The protocol's own state between reads: storage the contract does
     * not describe. Only the protocol's files see it as their type
     * (text_of() in proto/text/text_state.h, bin_of() in
     * proto/binary/binary.h), one protocol's at a time (kind), at a fixed
     * offset: no pointer to follow per request. Zero after session_init. */
    union {
        max_align_t align;
        unsigned char bytes[SESSION_STATE_BYTES];
    } state;
};

/* A request is done: if it read flash, drop what was read for it (its
 * probes said so, or the store read an item again as it ran). */
static inline void session_flash_done(struct session *s)
{
    if (s->flash_held || proto_flash_held(s))
        proto_flash_reset(s);
}

void session_init(struct session *s, struct store_ctx *store, struct stats_thread *stats,
                  const struct proto_options *opt, struct settings_runtime *run);
/* -D / stats detail on: count one key's prefix (op 'g', 's' or 'd'). */
static inline void session_stats_detail(struct session *s, const char *key, size_t nkey, char op,
                                        bool hit)
{
    s->ops->stats_detail(s->ops->ctx, key, nkey, op, hit);
}

/* The peer's address as the registry shows it ("tcp:<ip>:<port>"), or NULL:
 * what password-guessing limits count per address. */
void session_set_peer(struct session *s, const char *addr);
/* Release what the contract holds (a watcher, the reply queue); the
 * protocol's own state is proto_release's (proto.h), which calls this. */
void session_release(struct session *s);
/* The client is sending the rest of a value (rest bytes; got of it read
 * with its command): the socket holds all of the rest, or what was read and
 * what is queued come to SESSION_COMING_MIN bytes, and the connection owes
 * little enough to go on reading. Such an upload is being read, not held
 * back (store_reserve_upload_here). False without a socket (queued NULL).
 * One FIONREAD: ask only when the upload bound is full.
 * SESSION_COMING_MIN is half the first segment of a large write on a fresh
 * loopback connection (Linux caps a segment at half the window its peer
 * offered, 32741 bytes of a 64 KiB one): the server may wake on that
 * segment alone, and then sees only it, part read and part queued. */
#define SESSION_COMING_MIN (16u * 1024)
bool session_value_coming(const struct session *s, size_t got, size_t rest);

/* Reserve a value of nvalue bytes under key for a protocol that waits for
 * need bytes (the value and any terminator), avail of them already read.
 * All here: a plain reservation, filled from the read buffer. Else, for a
 * value over STORE_UPLOAD_SMALL whose rest the socket already holds (one
 * FIONREAD), a plain reservation
 * too, which the connection fills straight from the socket in the same
 * turn (sink_held, counted in sets_direct): no staging copy, and no
 * segment waits on the client. Else an upload, staged outside the segments
 * (store_reserve_upload_here). known: flags and exptime are the ones to
 * commit (store_reserve_for), else as store_reserve. */
enum store_status session_reserve_value(struct session *s, const char *key, size_t nkey,
                                        size_t nvalue, size_t avail, size_t need, bool known,
                                        uint32_t flags, rel_time_t exptime,
                                        struct store_reservation *res);

#endif
