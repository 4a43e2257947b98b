/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's UDP transport (-U): each datagram carries an 8-byte frame
 * (request id, sequence number, datagram count, reserved; big-endian) and
 * one or more whole requests; the replies go back split into datagrams of at
 * most UDP_MAX_DATAGRAM bytes, each with the same frame. Off by default:
 * UDP replies to forged sources make a server a reflection amplifier. */
#ifndef NODELAY_UDP_H
#define NODELAY_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define UDP_HEADER_SIZE 8
#define UDP_MAX_DATAGRAM 1400 /* memcached's UDP_MAX_PAYLOAD_SIZE, frame included */
/* The most a datagram from a loopback address is answered with, frames
 * included: what one TCP connection may owe before it pauses
 * (CONN_REPLY_SOFT_LIMIT), as a UDP reply is composed whole. */
#define UDP_LOOPBACK_REPLY_MAX (4u * 1024 * 1024)

struct worker;
struct listener;
struct reply_queue;

/* Serve the datagrams waiting on a UDP listener (a bounded batch). */
void udp_on_readable(struct worker *w, struct listener *l);

/* The frame of datagram `seq` of `total` answering request `req_id`. */
void udp_frame(unsigned char out[UDP_HEADER_SIZE], uint16_t req_id, uint16_t seq,
               uint16_t total);
/* How many datagrams a reply of `len` bytes takes (0 for none). */
size_t udp_datagrams(size_t len);

/* Whether a datagram's source is a loopback address: 127.0.0.0/8 or ::1
 * (not ::ffff:127.x, see udp.c). Linux drops such a source arriving on any
 * other interface (a martian: ::1 always, 127/8 unless route_localnet), and
 * a reply to one is routed to this host alone: it cannot reflect at anyone
 * else (docs/server-net.md "UDP"). */
bool udp_from_loopback(const struct sockaddr *from, socklen_t fromlen);
/* The most the reply to a datagram of `n` bytes (frame included) may take on
 * the wire, frames included: `factor` times n (0: no bound), and for a
 * loopback source at least UDP_LOOPBACK_REPLY_MAX. */
size_t udp_reply_bound(int factor, size_t n, bool loopback);

#endif
