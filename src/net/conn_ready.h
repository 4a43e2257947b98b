/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection's readiness path (conn_ready.c): read and write when the
 * loop says the socket may be, plainly or through TLS. */
#ifndef NODELAY_CONN_READY_H
#define NODELAY_CONN_READY_H

#include "store/store.h"

struct conn;
struct conn_path;
struct tls_conn;

struct conn_ready {
    struct tls_conn *tls; /* -Z: the TLS session, NULL for plaintext (TLS
                             stays on readiness on every loop) */
};

/* Its functions for conn.c (conn_path.h); conn_on_event, the worker's,
 * is in conn.h. */
extern const struct conn_path conn_ready_path;

/* One turn's readable plaintext connections, read one after another with
 * the running of each read's requests put off by two reads
 * (conn_ready_batch_event): a request's lookup loads an index bucket and
 * an item from memory the kernel's work for the other connections has
 * pushed out of the caches, and loading them while the next reads run
 * hides that wait, where running each read at once leaves nothing to hide
 * it behind. The worker keeps one on its stack, empty between turns. */
#define CONN_READY_DEFER 2
struct conn_ready_batch {
    unsigned head, n; /* a ring of the reads not yet run, oldest at head */
    struct conn_ready_read {
        struct conn *c;
        size_t n; /* bytes the read appended to the connection's buffer */
        struct store_prefetch_run run; /* its first request's key (proto_read_hint) */
    } r[CONN_READY_DEFER + 1];
};
/* A readiness event of a connection: a plain readable one joins the batch,
 * anything else runs the batch first and is handled at once. */
void conn_ready_batch_event(struct conn_ready_batch *b, struct conn *c, unsigned events);
/* Run every read the batch holds (before anything else of the turn);
 * inline, as every completion of an io_uring turn asks with none held. */
void conn_ready_batch_run_all(struct conn_ready_batch *b);
static inline void conn_ready_batch_finish(struct conn_ready_batch *b)
{
    if (b->n > 0)
        conn_ready_batch_run_all(b);
}

#endif
