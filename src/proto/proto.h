/* SPDX-License-Identifier: BSD-3-Clause */
/* The protocols' single entry point, as the connection sees it.
 *
 * A connection hands over the bytes it has read; the protocol consumes whole
 * requests (the first byte of a connection picks text or binary, as
 * memcached's -B auto), runs them against the store and appends the replies
 * to the session's reply queue. "Need more bytes" is a return value, never a
 * block, and no socket is ever touched here.
 */
#ifndef NODELAY_PROTO_H
#define NODELAY_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/session.h"

enum proto_status {
    PROTO_OK,    /* consumed what it could; call again when more bytes arrive */
    PROTO_YIELD, /* -R budget spent with complete requests left: flush, then call again */
    PROTO_CLOSE, /* send what is queued, then close (quit, HTTP line, fatal error) */
    PROTO_PAUSE, /* the session owes more than s->reply_allow (or a long reply
                    spent its work budget): flush, call again with the same
                    unconsumed bytes once the queue has drained. A multiget or
                    dump resumes where it stopped. */
    PROTO_WAIT,  /* a request waits for flash reads (proto_flash.h): it stays
                    unconsumed; send the replies queued, run nothing more of
                    this session until the wake, then call again with the
                    same bytes */
};

/* Process requests in buf[0..len). *consumed is how many bytes were used;
 * unconsumed bytes (an incomplete request) must be passed again, with more
 * appended, on the next call. A value being received is consumed as it
 * arrives, so a connection's read buffer never has to hold a whole value. */
enum proto_status proto_process(struct session *s, const char *buf, size_t len,
                                size_t *consumed);

/* A hint for a caller that has read bytes and other work to do before it
 * runs them (a worker's next read): starts loading the index bucket of the
 * first buffered request's key into *run, when the session expects a text
 * request line (else run->n is 0). proto_read_hint_next, called later and
 * before proto_process, starts loading its item, the bucket having arrived
 * by then. buf[0..len) must be the input from its first unconsumed byte,
 * what proto_process will be given (there or in a copy): the session keeps
 * what the hint found of the first line (its tokens, its key's hash) for
 * that run, and drops it once any byte is consumed. Changes nothing else
 * but caches. */
void proto_read_hint(struct session *s, const char *buf, size_t len,
                     struct store_prefetch_run *run);
static inline void proto_read_hint_next(struct session *s, struct store_prefetch_run *run)
{
    store_prefetch_next(s->store, run);
}

/* Direct reads: when s->sink_len > 0 the protocol is waiting for that many
 * bytes of a value and wants them written to s->sink. The connection may read
 * straight there (no copy through its buffer) and must then call
 * proto_sink_filled with how many bytes it put there. */
void proto_sink_filled(struct session *s, size_t n);

/* What the connection reads and sets of the session, so that it never
 * names a session field itself: the contract may change inside without
 * the connection noticing. All inline: several run per request. */

/* A request has begun and not ended: its value, or the "\r\n" after it, is
 * still to come (bytes of a line or header not yet whole stay unconsumed,
 * in the caller's buffer). As the last proto_process or proto_sink_filled
 * left it. */
static inline bool proto_mid_request(const struct session *s)
{
    return s->mid_request;
}

/* The queue the protocol appends replies to; the connection sends from it. */
static inline struct reply_queue *proto_reply(struct session *s)
{
    return &s->reply;
}

/* Reply bytes queued and not yet sent. */
static inline size_t proto_owed(const struct session *s)
{
    return reply_pending(&s->reply);
}

/* Bytes of a value still to come into s->sink (0: none expected). */
static inline size_t proto_sink_wait(const struct session *s)
{
    return s->sink_len;
}

/* Where those bytes go (item memory), valid while proto_sink_wait > 0. */
static inline char *proto_sink(const struct session *s)
{
    return s->sink;
}

/* A value being received whose rest is queued in the socket (its segment
 * reserved: it must be read now, whatever is owed). */
static inline bool proto_sink_held(const struct session *s)
{
    return s->sink_len > 0 && s->sink_held;
}

/* Reply bytes the session may owe before its requests pause (and copy
 * into the queue rather than pin). */
static inline void proto_set_allowance(struct session *s, size_t allow)
{
    s->reply_allow = allow;
    s->reply.copy_limit = allow;
}

static inline size_t proto_allowance(const struct session *s)
{
    return s->reply_allow;
}

/* Why the session (or the server, proto_set_close) asked to close. */
static inline enum session_close proto_close_reason(const struct session *s)
{
    return s->close_why;
}

static inline void proto_set_close(struct session *s, enum session_close why)
{
    s->close_why = why;
}

/* After `watch`: the stream this session sends instead of replies. */
static inline struct watcher *proto_watcher(const struct session *s)
{
    return s->watcher;
}

/* The connection is closing with I/O in flight: stop a `watch` stream now
 * (it has nothing in flight), before the session itself is released. */
void proto_watch_end(struct session *s);

/* What the session learns of its connection once, at its start. */
struct proto_conn_info {
    int fd;                       /* the client's socket (cfd= in `watch` lines) */
    long (*queued)(void *ctx, bool raw); /* what the socket holds unread
                                            (session.h's queued)... */
    void *queued_ctx;                    /* ...and its argument */
    struct event_loop *loop;      /* where a watcher's wake-ups go... */
    void *wake_ptr;               /* ...and with this event pointer */
    const struct server_ops *ops; /* server-wide actions, NULL: none */
    struct flash_loop *flash;     /* the worker's flash loop, NULL: none... */
    void (*flash_wake)(void *arg); /* ...and what a finished wait calls */
    void *flash_arg;
};

static inline void proto_attach(struct session *s, const struct proto_conn_info *ci)
{
    if (ci->ops)
        s->ops = ci->ops;
    s->cfd = ci->fd;
    s->queued = ci->queued;
    s->queued_ctx = ci->queued_ctx;
    s->loop = ci->loop;
    s->wake_ptr = ci->wake_ptr;
    if (ci->flash)
        s->flash = proto_flash_create(ci->flash, ci->flash_wake, ci->flash_arg);
}

/* The wait could not be set up (out of memory): the connection refuses. */
static inline bool proto_attach_failed(const struct session *s, const struct proto_conn_info *ci)
{
    return ci->flash && !s->flash;
}

/* Once a second or so from the connection: lets a value being received
 * that was cut off for others give its memory back while its client is
 * silent (docs/store.md "Uploads"). */
void proto_tick(struct session *s);

/* The connection is done with the session: abort any value being received,
 * free the protocol's state, then the contract's (session_release). */
void proto_release(struct session *s);

#endif
