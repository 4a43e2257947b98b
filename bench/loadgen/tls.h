/* SPDX-License-Identifier: BSD-3-Clause */
/* LOADGEN_TLS=1 in the environment: every connection the load generator
 * opens speaks TLS (no certificate check: the benchmark's own server). The
 * handshake is done, blocking, when the connection opens; afterwards
 * lg_send/lg_recv keep send(2)/recv(2)'s contract, non-blocking included. */
#ifndef LG_TLS_H
#define LG_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Start TLS on a connected, still blocking socket when LOADGEN_TLS is set.
 * Returns 0 (also when TLS is off), -1 if the handshake failed. */
int lg_tls_start(int fd);
ssize_t lg_send(int fd, const void *p, size_t len);
ssize_t lg_recv(int fd, void *p, size_t len);
/* Close the socket (and its TLS session). */
void lg_close(int fd);

#endif
