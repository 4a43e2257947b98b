/* memcached's UDP transport (-U): each datagram carries an 8-byte frame
 * (request id, sequence number, datagram count, reserved; big-endian) and
 * one or more whole requests; the replies go back split into datagrams of at
 * most UDP_MAX_DATAGRAM bytes, each with the same frame. Off by default:
 * UDP replies to forged sources make a server a reflection amplifier. */
#ifndef NODELAY_UDP_H
#define NODELAY_UDP_H

#include <stddef.h>
#include <stdint.h>

#define UDP_HEADER_SIZE 8
#define UDP_MAX_DATAGRAM 1400 /* memcached's UDP_MAX_PAYLOAD_SIZE, frame included */

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

#endif
