/* SPDX-License-Identifier: BSD-3-Clause */
/* Inside the connection: what conn.c offers its two I/O paths (conn_ready.c,
 * conn_uring.c), and what they offer it. Only the conn*.c files include
 * this; the worker sees conn.h. */
#ifndef NODELAY_CONN_PATH_H
#define NODELAY_CONN_PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "net/conn.h"
#include "net/conn_ready.h"
#include "net/conn_uring.h"
#include "net/tls.h"
#include "event/event.h"
#include "proto/proto.h"

/* After input or a flush: close if asked and done, else set what to wait
 * for, and go on the ready list if no event will come for what is left. */
void conn_settle_live(struct conn *c);
static inline void conn_settle(struct conn *c)
{
    if (!c->dead)
        conn_settle_live(c);
}
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
    if (c->u.on)
        conn_uring_send(c);
    else
        conn_ready_flush(c);
}

/* TLS holds decrypted bytes the read buffer had no room for: no socket
 * event will come for them, so read again next turn if we may read. */
static inline bool conn_ready_pending(const struct conn *c)
{
    return c->rd.tls && (c->interest & EVENT_READ) && tls_conn_has_input(c->rd.tls);
}

#endif
