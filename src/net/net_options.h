/* SPDX-License-Identifier: BSD-3-Clause */
/* What the connection layer reads of the settings: fixed at start-up,
 * filled from the settings table by options.c (a field here has its row's
 * name and C type, checked there at build time). The core holds one. */
#ifndef NODELAY_NET_OPTIONS_H
#define NODELAY_NET_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#define NET_OPTIONS(X)                                                                             \
    X(int, num_threads)            /* -t */                                                        \
    X(bool, io_uring)              /* -o io_uring: the ring backend where the kernel allows it */ \
    X(bool, io_uring_multishot)    /* -o io_uring_multishot: idle connections' receives stay started */ \
    X(int, maxconns)               /* -c */                                                        \
    X(const char *, binding_protocol) /* -B, for the listening log line */                        \
    X(int, read_buf_mem_limit)     /* MB of read buffers, all workers; 0 = no bound */            \
    X(size_t, client_mem_limit)    /* bytes owed to clients, all connections; 0 = default */      \
    X(size_t, reply_queue_limit)   /* bytes owed to one client before it is cut off */            \
    X(int, idle_timeout)           /* seconds; 0 = never */                                        \
    X(int, ssl_handshake_timeout)  /* seconds */                                                   \
    X(int, udp_amplification)      /* reply bytes per request byte over UDP */                    \
    X(bool, udp_trust_loopback)    /* loopback datagrams: up to UDP_LOOPBACK_REPLY_MAX instead */ \
    /* the listeners (listener.c) */                                                               \
    X(const char *, inter)         /* -l */                                                        \
    X(int, port)                   /* -p */                                                        \
    X(int, udpport)                /* -U */                                                        \
    X(const char *, domain_socket) /* -s */                                                        \
    X(int, umask)                  /* -a */                                                        \
    X(int, tcp_backlog)            /* -b */                                                        \
    X(bool, ssl_enabled)           /* -Z */

#define NET_OPTIONS_FIELD(type, name) type name;
struct net_options {
    NET_OPTIONS(NET_OPTIONS_FIELD)
};
#undef NET_OPTIONS_FIELD

#endif
