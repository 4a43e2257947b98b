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
struct conn_path;

/* The memory a started receive or send names is the kernel's until it
 * completes, so a closed connection waits for them on the zombie list
 * before its buffers and pins are released. */
struct conn_uring {
    /* Read by every completion: first, in one cache line with rd. */
    bool on;                   /* this connection is on the completion path */
    bool recv_busy, send_busy;
    bool recv_own;             /* the loop ran out of its buffers: use ours */
    bool recv_multi;           /* the started receive is multishot: it stays
                                  started while the connection is idle */
    bool multi_stop;           /* ...and its cancellation has been asked */
    bool multi_none;           /* the loop offers none: one-shot receives */
    bool taking;               /* conn_take is handing bytes over: no
                                  receive may be started into our buffers */
    bool rest_first;           /* a receive filled the loop's buffer: the
                                  rest of the batch is queued, and its
                                  replies leave with the rest's, after... */
    bool rest_recv;            /* ...the receive that takes it, one that
                                  never waits (started, or being started) */
    int iov_cap;
    enum conn_in_target recv_target;
    size_t recv_room;          /* what the receive started was given */
    struct iovec *iov;         /* the send in flight's iovecs */
    struct iovec recv_iov[2];  /* a two-piece receive's: a held value's
                                  rest, then the read buffer */
    struct msghdr msg;
};

/* Its functions for conn.c (conn_path.h); conn_on_complete and
 * conn_zombie_release, the worker's, are in conn.h. */
extern const struct conn_path conn_uring_path;

/* A turn's completions are all in before the first runs, so the worker
 * loads each receive's key ahead of running it: conn_uring_hint with the
 * completion's res and data, its index bucket (when the bytes start a
 * request: nothing is buffered before them), conn_uring_hint_next later,
 * its item. Hints only: they change nothing. */
struct store_prefetch_run;
void conn_uring_hint(struct conn *c, int res, const char *data, struct store_prefetch_run *run);
void conn_uring_hint_next(struct conn *c, struct store_prefetch_run *run);

#endif
