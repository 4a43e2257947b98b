/* SPDX-License-Identifier: BSD-3-Clause */
/* Inside the connection: what conn.c offers its two I/O paths (conn_ready.c,
 * conn_uring.c), and what they offer it, a table of functions (struct
 * conn_path) the worker picks for each connection. The paths call conn.c;
 * conn.c calls a path only through its table, so the calls go one way.
 * Only the conn*.c files include this; the worker sees conn.h (and the
 * two tables, conn_ready.h's and conn_uring.h's). */
#ifndef NODELAY_CONN_PATH_H
#define NODELAY_CONN_PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "net/conn.h"
#include "net/tls.h"
#include "event/event.h"
#include "proto/proto.h"

/* What conn.c asks of a connection's I/O path. */
struct conn_path {
    /* Taken over: start watching the socket (readiness; logs and returns
     * -1 when the loop refuses it) or nothing yet (completion). */
    int (*open)(struct conn *c);
    /* Wait for what want says (EVENT_READ, EVENT_WRITE); a completion
     * path starts or stops its receive. May close the connection. */
    void (*want)(struct conn *c, unsigned want);
    /* Send what is owed (may close the connection). */
    void (*send)(struct conn *c);
    /* Read what the path already holds (conn_ready_pending). */
    void (*read)(struct conn *c);
    /* Closing: stop watching the socket; true when I/O is in flight and c
     * went on the zombie list, to be released when it completes. */
    bool (*close)(struct conn *c);
    /* What the path holds of a closed connection, before its socket goes. */
    void (*release)(struct conn *c);
    /* Idle for a second: give back what it holds for sending. */
    void (*trim)(struct conn *c);
    /* The tick: stop a receive into an upload's memory so that the upload
     * can be checked when it completes; false when there is none. */
    bool (*stop_upload)(struct conn *c);
};

/* After input or a flush: close if asked and done, else set what to wait
 * for, and go on the ready list if no event will come for what is left.
 * Nothing for a dead one. */
void conn_settle(struct conn *c);
/* What `stats conns` says it waits for (memcached's state names). */
void conn_note_state(struct conn *c);
/* Do what the input side asked for (CONN_IN_* bits). */
void conn_apply(struct conn *c, unsigned act);
/* Where the next read lands (conn_input_target, after setting the
 * allowance); CONN_IN_TO_NOWHERE after closing. */
enum conn_in_target conn_read_target(struct conn *c, char **at, size_t *room);
/* n bytes (0: end of input) were read into what target t named. */
void conn_read_done(struct conn *c, enum conn_in_target t, size_t n);
/* Blocked with more owed than a client may: cut it off. */
void conn_check_owed(struct conn *c);
/* watch_refill's copy into the reply queue. */
int conn_watch_copy(void *q, const void *data, size_t n);
/* What a closed connection holds: its session, buffers and socket. */
void conn_release_io(struct conn *c);

/* Keep the worker's reply-bytes gauge (response_obj_bytes) in step with
 * the memory this connection's queue holds: its blocks, the room in them,
 * its spare and segment table (reply_held), so client_mem_limit sees all
 * of it. Values sent by reference live in item memory (-m) and are not
 * counted again; the allowance (reply_pending) still pauses a reply that
 * pins too many. */
static inline void conn_account_reply(struct conn *c)
{
    size_t now = reply_held(proto_reply(&c->sess));
    if (now == c->accounted)
        return;
    size_t *gauge = c->env->reply_bytes;
    size_t v = __atomic_load_n(gauge, __ATOMIC_RELAXED);
    __atomic_store_n(gauge, v + now - c->accounted, __ATOMIC_RELAXED);
    c->accounted = now;
}

/* Send what is owed, by the connection's path. */
static inline void conn_flush_now(struct conn *c)
{
    c->path->send(c);
}

/* TLS holds decrypted bytes the read buffer had no room for: no socket
 * event will come for them, so read again next turn if we may read. */
static inline bool conn_ready_pending(const struct conn *c)
{
    return c->rd.tls && (c->interest & EVENT_READ) && tls_conn_has_input(c->rd.tls);
}

#endif
