/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection's readiness path (conn_ready.c): read and write when the
 * loop says the socket may be, plainly or through TLS. */
#ifndef NODELAY_CONN_READY_H
#define NODELAY_CONN_READY_H

struct conn;
struct tls_conn;

struct conn_ready {
    struct tls_conn *tls; /* -Z: the TLS session, NULL for plaintext (TLS
                             stays on readiness on every loop) */
};

/* Readable: read what the input side names and hand it over (more than
 * once while a held value is unfilled). */
void conn_ready_read(struct conn *c);
/* writev what is owed until the socket is full or the budget is spent. */
void conn_ready_flush(struct conn *c);

#endif
