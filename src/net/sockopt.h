/* SPDX-License-Identifier: BSD-3-Clause */
/* Every socket option nodelay sets, in one place. Each returns 0 or -1 with
 * errno set; the caller decides what a failure means (DESIGN.md: TCP_NODELAY
 * failures are counted and logged). nodelay never uses TCP_CORK/TCP_NOPUSH. */
#ifndef NODELAY_SOCKOPT_H
#define NODELAY_SOCKOPT_H

#include <stdbool.h>

int sockopt_nonblock(int fd);
int sockopt_nodelay(int fd);
/* Acknowledge at once: the peer's Nagle must not wait on our delayed ACK
 * while we wait for the rest of its request. Linux only; elsewhere a no-op
 * that returns 0. Linux clears it again by itself, so it is set per read. */
int sockopt_quickack(int fd);
/* Keep at most about `bytes` written but not yet sent in the kernel's send
 * queue: a writev past it is partial and the socket is writable again once
 * the backlog is under half of it. Without it a client that stops reading
 * holds the send buffer's whole autotuned size (tcp_wmem's maximum, 4 MiB)
 * of kernel memory. Where the option does not exist, a no-op returning 0. */
int sockopt_notsent_lowat(int fd, int bytes);
int sockopt_reuseaddr(int fd);
int sockopt_v6only(int fd);
/* How many bytes the kernel holds unread for the socket (FIONREAD), or -1
 * with errno set. Not an option, but the one other question asked of it. */
long sockopt_queued(int fd);
/* Read back TCP_NODELAY (for tests and stats). */
int sockopt_get_nodelay(int fd, bool *on);

#endif
