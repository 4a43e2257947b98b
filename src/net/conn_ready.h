/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection's readiness path (conn_ready.c): read and write when the
 * loop says the socket may be, plainly or through TLS. */
#ifndef NODELAY_CONN_READY_H
#define NODELAY_CONN_READY_H

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

#endif
