/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS (-Z), with OpenSSL: the server context built from the ssl_* settings,
 * and per connection a TLS session whose records are collected in memory and
 * leave in ONE send per flush, so the no-delay rule (everything answered from
 * one read leaves in one write) holds under TLS as in plaintext. With
 * -o ssl_kernel_tls, where the kernel has TLS, the kernel builds the records
 * sent after the handshake and a flush is one writev of plaintext.
 *
 * The connection calls tls_conn_read/tls_conn_writev where it would call
 * read/writev; they keep the same contract (-1 with errno EAGAIN when the
 * socket has nothing or takes nothing, 0 at end of input). */
#ifndef NODELAY_TLS_H
#define NODELAY_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "base/clock.h"

struct stats_thread;
struct tls_conn;

/* What a listener asks of its connections (-l notls:/btls:/mtls: prefixes). */
enum tls_mode {
    TLS_MODE_NONE,  /* plaintext: no -Z, or a notls: listener */
    TLS_MODE_TLS,   /* TLS with -o ssl_verify_mode */
    TLS_MODE_MTLS,  /* TLS that requires a client certificate */
};

/* The ssl_* settings tls.c reads (options.c fills them; a field has its
 * settings row's name and C type). */
#define TLS_OPTIONS(X)                                                                             \
    X(const char *, ssl_chain_cert)                                                                \
    X(const char *, ssl_key)                                                                       \
    X(int, ssl_keyformat)                                                                          \
    X(const char *, ssl_ca_cert)                                                                   \
    X(int, ssl_verify_mode)                                                                        \
    X(const char *, ssl_ciphers)                                                                   \
    X(int, ssl_min_version)                                                                        \
    X(bool, ssl_session_cache)                                                                     \
    X(int, ssl_wbuf_size)                                                                          \
    X(bool, ssl_kernel_tls)

#define TLS_OPTIONS_FIELD(type, name) type name;
struct tls_options {
    TLS_OPTIONS(TLS_OPTIONS_FIELD)
};
#undef TLS_OPTIONS_FIELD

/* Build the server context from the options (once, at start-up, when -Z
 * was given; *o must outlive the server: refresh_certs reads it again). Returns 0, or -1 after printing memcached's message (and
 * OpenSSL's error queue) to `err`; the caller exits with 64 as memcached. */
int tls_setup(const struct tls_options *o, FILE *err);
void tls_teardown(void);
/* -Z was given and tls_setup succeeded. */
bool tls_enabled(void);
/* refresh_certs: load the certificate chain and key again into a new context
 * that new connections use; open connections keep theirs. Returns 0, or -1
 * with memcached's message in msg (the old context stays). */
int tls_refresh_certs(char *msg, size_t n);
/* Seconds since the certificates were loaded (time_since_server_cert_refresh). */
uint64_t tls_cert_age(void);

/* A TLS session on an accepted, non-blocking socket (not owned: the caller
 * closes it). NULL on failure (out of memory). st: the worker's counters
 * (ssl_handshake_errors, ssl_proto_errors, ssl_new_sessions). */
struct tls_conn *tls_conn_new(int fd, enum tls_mode mode, struct stats_thread *st,
                              rel_time_t now);
/* Say goodbye (close_notify, best effort) and free. NULL is fine. */
void tls_conn_free(struct tls_conn *t);
/* Decrypted bytes into buf: the handshake first (driven by the caller's read
 * events), then as many records as fit. >0 bytes, 0 at end of input, -1
 * with errno EAGAIN (nothing yet), EPROTO (bad TLS: counted) or the
 * socket's error. */
ssize_t tls_conn_read(struct tls_conn *t, void *buf, size_t n);
/* Encrypt from iov and send it as one run of records in one send(). Returns
 * the plaintext bytes whose records have left (resuming a partial send
 * first), or -1 with errno EAGAIN (nothing could leave) or the socket's. */
ssize_t tls_conn_writev(struct tls_conn *t, const struct iovec *iov, int n);
/* Decrypted or received bytes are buffered inside TLS: read again without
 * waiting for the socket. */
bool tls_conn_has_input(const struct tls_conn *t);
/* Part of a record (or of the handshake) is buffered, waiting for the rest. */
bool tls_conn_record_incomplete(const struct tls_conn *t);
/* Still in its handshake after `secs` seconds: cut it off (counted). */
bool tls_conn_handshake_expired(struct tls_conn *t, rel_time_t now, int secs);

#endif
