/* SPDX-License-Identifier: BSD-3-Clause */
/* What a connection borrows from the worker that owns it: the loop, store
 * context, counters, read buffers and gauges, and the lists its
 * connections are on. The worker fills it in; conn.c knows nothing else of
 * the worker, so the two do not depend on each other. */
#ifndef NODELAY_CONN_ENV_H
#define NODELAY_CONN_ENV_H

#include <stddef.h>
#include <sys/uio.h>

struct conn;
struct conn_path;
struct worker_pool;
struct event_loop;
struct rbuf_pool;
struct stats_thread;
struct store_ctx;
struct flash_loop;

struct conn_env {
    struct worker_pool *pool;
    struct event_loop *loop;
    struct store_ctx *store;
    struct flash_loop *flash; /* its flash tier's waits (proto_flash.h), NULL: none */
    struct stats_thread *stats;
    struct rbuf_pool *rbufs;
    struct iovec *iov; /* scratch for writev */
    int iov_max;
    size_t *reply_bytes; /* the worker's gauge of reply memory, relaxed atomic */
    /* Reply and read-buffer bytes of all clients, summed over the workers. */
    size_t (*client_bytes)(const struct worker_pool *pool);
    /* The I/O path of a plaintext connection on this loop (completion on
     * io_uring, else readiness), and of a TLS one (readiness). */
    const struct conn_path *plain_path;
    const struct conn_path *tls_path;

    struct conn *conns; /* every live connection (doubly linked) */
    size_t nconns;
    struct conn *ready; /* to run again next turn (-R yield, paused, flush budget) */
    struct conn *dead;  /* closed this turn, freed at its end */
    struct conn *zombies; /* closed, waiting for started I/O to complete */
};

#endif
