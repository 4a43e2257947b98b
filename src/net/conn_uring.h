/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection's completion path (conn_uring.c): on an io_uring loop a
 * plaintext connection starts receives and sends and takes their
 * completions (conn_on_complete, in conn.h). */
#ifndef NODELAY_CONN_URING_H
#define NODELAY_CONN_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net/conn_input.h"

struct conn;

/* The memory a started receive or send names is the kernel's until it
 * completes, so a closed connection waits for them on the zombie list
 * before its buffers and pins are released. */
struct conn_uring {
    bool on;                   /* this connection is on the completion path */
    bool recv_busy, send_busy;
    bool recv_own;             /* the loop ran out of its buffers: use ours */
    bool recv_multi;           /* the started receive is multishot: it stays
                                  started while the connection is idle */
    bool multi_stop;           /* ...and its cancellation has been asked */
    bool multi_none;           /* the loop offers none: one-shot receives */
    bool taking;               /* conn_take is handing bytes over: no
                                  receive may be started into our buffers */
    size_t recv_room;          /* what the receive started was given */
    enum conn_in_target recv_target;
    struct iovec recv_iov[2];  /* a two-piece receive's: a held value's
                                  rest, then the read buffer */
    struct iovec *iov;         /* the send in flight's iovecs */
    int iov_cap;
    struct msghdr msg;
};

/* Start a receive where a read would go, unless one is started (may
 * close the connection). */
void conn_uring_recv(struct conn *c);
/* The connection stopped being idle: stop its multishot receive. */
void conn_uring_multi_stop(struct conn *c);
/* Send everything owed in one sendmsg, unless one is in flight. */
void conn_uring_send(struct conn *c);
/* Closing: true when I/O is in flight and c went on the zombie list. */
bool conn_uring_zombie(struct conn *c);
/* Release the send's iovecs and leave the ring's file table. */
void conn_uring_release(struct conn *c);
/* Idle: give the send iovecs back unless a send holds them. */
void conn_uring_trim(struct conn *c);
/* The tick: stop a receive into a value's memory so that the upload can
 * be checked when it completes; false when there is none. */
bool conn_uring_stop_upload(struct conn *c);

#endif
