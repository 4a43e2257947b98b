/* SPDX-License-Identifier: BSD-3-Clause */
/* One client connection: its read buffer, its session (protocol state and
 * reply queue), backpressure and limits. Owned by exactly one worker. */
#ifndef NODELAY_CONN_H
#define NODELAY_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "net/conn_env.h"
#include "net/conn_input.h"
#include "net/conn_ready.h"
#include "net/conn_uring.h"
#include "net/loop_token.h"
#include "stats/registry.h"
#include "proto/proto.h"

/* server.c's name for a standard read buffer's size. */
#define CONN_RBUF_SIZE RBUF_SIZE
/* A connection may owe at most this much before its requests pause (a long
 * multiget or dump then resumes as the socket drains)... */
#define CONN_REPLY_SOFT_LIMIT (4u * 1024 * 1024)
/* ...and, once all clients together owe half the client memory bound, its
 * share of the other half, never less than this (conn_allowance). */
#define CONN_REPLY_FLOOR (16u * 1024)
/* Reply bytes the kernel may hold unsent per TCP connection
 * (TCP_NOTSENT_LOWAT). Without a limit each client that stops reading holds
 * 4 MiB of kernel memory (tcp_wmem's maximum); a few hundred of them push
 * the host's TCP into memory pressure (tcp_mem), where the kernel drops and
 * shrinks the windows of every connection, honest ones included: requests
 * then wait 40 ms and more. A reader that keeps up never has a backlog, so
 * it loses nothing; one that lags is refilled as the backlog halves. */
#ifndef CONN_KERNEL_UNSENT
#define CONN_KERNEL_UNSENT (128 * 1024)
#endif
/* Bytes written per wake-up before other connections get their turn. */
#define CONN_FLUSH_BUDGET (2u * 1024 * 1024)
/* Cut off a client that takes none of its replies for this long. */
#define CONN_WRITE_STALL_SECS 60

/* The fields every completion or readiness event reads come first, in
 * the first cache lines; the registry entry's per-request pair follows
 * the input side's, ahead of the session's larger state. */
struct conn {
    struct loop_token watch; /* event pointer */
    struct conn_env *env; /* the owning worker's */
    const struct conn_path *path; /* its I/O path's functions (conn_path.h) */
    int fd;
    bool tcp;
    bool dead;
    unsigned interest;  /* EVENT_READ / EVENT_WRITE currently asked for */
    bool blocked;       /* last write hit EAGAIN */
    bool closing;       /* send what is queued, then close */
    bool flush_more;    /* the flush budget ran out before the socket filled */
    bool in_ready;
    rel_time_t last_active; /* last byte received */
    rel_time_t stall_since; /* blocked with no write progress since, 0 = not */
    size_t accounted;       /* reply bytes counted in the worker's gauge */

    struct conn_ready rd;  /* the readiness path's (conn_ready.c) */
    struct conn_uring u;   /* the completion path's (conn_uring.c) */

    struct conn_input in;
    struct registry_entry entry;

    struct session sess;
    struct loop_token log_watch; /* event pointer of a `watch` stream's wake-ups */
    struct conn *prev, *next, *ready_next, *dead_next;
};

/* Take over an accepted, non-blocking socket; tls: its listener's enum
 * tls_mode (a TLS connection takes env->tls_path, a plaintext one
 * env->plain_path). Returns the connection, or NULL (the fd is then
 * closed). */
struct conn *conn_create(struct conn_env *env, int fd, bool tcp, int tls, const char *addr,
                         const char *listen_addr);
/* Event handlers: readiness, and a started receive or send completing
 * (EVENT_RECV/EVENT_SEND, with event_fired's res and data). */
void conn_on_event(struct conn *c, unsigned events);
/* Its `watch` stream's wake-up pipe fired: take the wake-up, then send
 * what the stream has if the socket takes it (else its drain will). */
void conn_on_watch_wake(struct conn *c);
void conn_on_complete(struct conn *c, unsigned events, int res, const char *data);
/* After the loop is gone: release a closed connection still waiting for
 * its completions (the kernel has dropped them with the ring). */
void conn_zombie_release(struct conn *c);
/* On the ready list: go on flushing (budget spent) or running requests
 * already buffered (after a -R yield, or a reply paused for memory). */
void conn_resume(struct conn *c);
/* Close now: queued replies are dropped, pins and reservations released. */
void conn_close(struct conn *c, const char *why);
/* Free a closed connection (end of the loop turn). */
void conn_free(struct conn *c);
/* Once a second: idle timeout and stalled writers. */
void conn_tick(struct conn *c, rel_time_t now);
/* Try to send what is queued; used at shutdown. */
void conn_flush(struct conn *c);
/* Shutdown: take no more requests, only send what is owed. */
void conn_stop_reading(struct conn *c);

#endif
