/* SPDX-License-Identifier: BSD-3-Clause */
/* Listening sockets: TCP v4/v6 from -l/-p, or a unix socket from -s/-a.
 * Every worker watches every listener (EPOLLEXCLUSIVE with epoll). */
#ifndef NODELAY_LISTENER_H
#define NODELAY_LISTENER_H

#include <stdbool.h>
#include <stddef.h>

struct net_options;

struct listener {
    int fd;
    bool tcp;       /* TCP (accepts connections) */
    bool udp;       /* UDP (datagrams, memcached's 8-byte frame); neither: unix socket */
    int port;       /* bound TCP port (useful with -p -1) */
    int tls;        /* enum tls_mode: what accepted connections speak */
    char name[128]; /* "tcp:127.0.0.1:11211", "tcp6:[::1]:11211", "unix:/path" */
};

struct listener_set {
    struct listener *l;
    size_t n;
    char *unix_path; /* to unlink at close */
};

/* Split one -l entry ("host", "host:port", "[v6]:port", "[v6]", with optional
 * memcached "proto[..]:"/"tag[..]:" prefixes, which nodelay ignores, and
 * "notls:"/"btls:"/"mtls:", see listener_tls_mode) into host
 * and port. host gets "" for any address; *port keeps default_port unless the
 * entry names one. Returns 0, or -1 when malformed. */
int listener_parse_addr(const char *entry, char *host, size_t hostsz, int default_port,
                        int *port);

/* The enum tls_mode of one -l entry under -Z: notls: plaintext, mtls: TLS
 * requiring a client certificate, btls: or no prefix TLS. Without -Z
 * (tls_on false) every listener is plaintext. */
int listener_tls_mode(const char *entry, bool tls_on);

/* Open every listener the options ask for. Returns 0, or -1 after logging
 * why (the caller exits, as memcached does, with EX_OSERR). */
int listener_open_all(const struct net_options *s, struct listener_set *out);
void listener_close_all(struct listener_set *set);

/* memcached's MEMCACHED_PORT_FILENAME: "TCP INET: <port>" per TCP listener,
 * "UDP INET: <port>" per UDP one. */
int listener_write_port_file(const struct listener_set *set, const char *path);

/* "tcp:1.2.3.4:5", "tcp6:[::1]:5", "udp:…" (proto "tcp"/"udp") or
 * "unix:path" (proto NULL) for an address. */
struct sockaddr;
void listener_format_addr(const struct sockaddr *sa, const char *proto, const char *unix_path,
                          char *out, size_t outsz);

#endif
