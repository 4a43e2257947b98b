/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/udp.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/log.h"
#include "net/conn.h"
#include "net/listener.h"
#include "net/worker_pool.h"
#include "net/worker.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "net/net_options.h"

#define UDP_BATCH 64
#define UDP_DATA_MAX (UDP_MAX_DATAGRAM - UDP_HEADER_SIZE)
/* What a datagram whose replies would exceed udp_amplification gets
 * instead (a binary request gets nothing: there is no text to send). */
#define UDP_TOO_LARGE "SERVER_ERROR reply too large for UDP\r\n"

void udp_frame(unsigned char out[UDP_HEADER_SIZE], uint16_t req_id, uint16_t seq, uint16_t total)
{
    out[0] = (unsigned char)(req_id >> 8);
    out[1] = (unsigned char)req_id;
    out[2] = (unsigned char)(seq >> 8);
    out[3] = (unsigned char)seq;
    out[4] = (unsigned char)(total >> 8);
    out[5] = (unsigned char)total;
    out[6] = 0;
    out[7] = 0;
}

size_t udp_datagrams(size_t len)
{
    return (len + UDP_DATA_MAX - 1) / UDP_DATA_MAX;
}

_Static_assert(UDP_LOOPBACK_REPLY_MAX == CONN_REPLY_SOFT_LIMIT,
               "a loopback datagram may be owed what a TCP connection may");

bool udp_from_loopback(const struct sockaddr *from, socklen_t fromlen)
{
    if (from->sa_family == AF_INET && fromlen >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)from;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (from->sa_family == AF_INET6 && fromlen >= (socklen_t)sizeof(struct sockaddr_in6)) {
        /* Not ::ffff:127.x: our IPv6 sockets are IPV6_V6ONLY, so such a
         * source came in an IPv6 packet, and Linux (since 5.12) delivers
         * those to UDP whichever interface they arrive on. */
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)from)->sin6_addr);
    }
    return false;
}

size_t udp_reply_bound(int factor, size_t n, bool loopback)
{
    if (factor <= 0)
        return SIZE_MAX;
    size_t bound = (size_t)factor * n;
    if (loopback && bound < UDP_LOOPBACK_REPLY_MAX)
        bound = UDP_LOOPBACK_REPLY_MAX;
    return bound;
}

/* A reply's bytes on the wire: its data and a frame per datagram. */
static size_t udp_wire_bytes(size_t data)
{
    return data + UDP_HEADER_SIZE * udp_datagrams(data);
}

/* Send what the session owes, UDP_DATA_MAX bytes per datagram. UDP is best
 * effort: a datagram the socket will not take now is dropped, as memcached. */
static void udp_send(struct worker *w, struct listener *l, struct reply_queue *q,
                     uint16_t req_id, const struct sockaddr *to, socklen_t tolen)
{
    size_t total = udp_datagrams(reply_pending(q));
    if (total > UINT16_MAX) {
        log_info("UDP reply of %zu bytes is too large for one request id: dropped",
                 reply_pending(q));
        return;
    }
    struct iovec all[64];
    for (size_t seq = 0; seq < total; seq++) {
        unsigned char hdr[UDP_HEADER_SIZE];
        udp_frame(hdr, req_id, (uint16_t)seq, (uint16_t)total);
        struct iovec iov[65];
        iov[0] = (struct iovec){hdr, sizeof hdr};
        int n = reply_iov(q, all, 64);
        size_t room = UDP_DATA_MAX, used = 0;
        int k = 1;
        for (int i = 0; i < n && room > 0; i++) {
            size_t take = all[i].iov_len < room ? all[i].iov_len : room;
            iov[k++] = (struct iovec){all[i].iov_base, take};
            room -= take;
            used += take;
        }
        struct msghdr msg = {.msg_name = (void *)to, .msg_namelen = tolen, .msg_iov = iov,
                             .msg_iovlen = (size_t)k};
        ssize_t sent = sendmsg(l->fd, &msg, 0);
        if (sent < 0) {
            log_info("UDP sendmsg: %s", strerror(errno));
            return;
        }
        STAT_INC(&w->stats, write_calls);
        STAT_ADD(&w->stats, bytes_written, (uint64_t)sent);
        reply_consume(q, used);
    }
}

static void udp_serve(struct worker *w, struct listener *l, const unsigned char *buf, size_t n,
                      const struct sockaddr *from, socklen_t fromlen)
{
    if (n < UDP_HEADER_SIZE)
        return; /* not memcached's frame: nothing to answer to */
    uint16_t req_id = (uint16_t)(buf[0] << 8 | buf[1]);
    uint16_t seq = (uint16_t)(buf[2] << 8 | buf[3]);
    uint16_t count = (uint16_t)(buf[4] << 8 | buf[5]);
    (void)seq; /* memcached (1.6.18 and 1.6.45) reads only the count */
    if (count != 1)
        return; /* memcached 1.6 takes only single-datagram requests, silently */
    struct session s;
    session_init(&s, w->store, &w->stats, w->pool->proto, w->pool->run);
    if (w->pool->ops)
        s.ops = w->pool->ops;
    s.datagram = true;
    /* A forged source gets at most `factor` times what it sent (frames
     * included, both ways): past that the requests have run but their
     * replies are replaced by one error line. A multiget or dump
     * pauses once it owes more, so it is not composed to be thrown away.
     * A loopback source cannot be forged from outside and its reply stays
     * on this host: it gets what a TCP connection may owe, so memory and
     * the worker's time stay bounded (-o udp_trust_loopback). */
    int factor = w->pool->opt->udp_amplification;
    bool loopback = w->pool->opt->udp_trust_loopback && udp_from_loopback(from, fromlen);
    size_t cap = udp_reply_bound(factor, n, loopback);
    s.reply_allow = cap;
    bool over = false;
    const char *p = (const char *)buf + UDP_HEADER_SIZE;
    size_t left = n - UDP_HEADER_SIZE;
    while (left > 0) {
        size_t used = 0;
        enum proto_status st = proto_process(&s, p, left, &used);
        if (used > left)
            used = left;
        p += used;
        left -= used;
        if (udp_wire_bytes(reply_pending(&s.reply)) > cap) {
            over = true;
            break;
        }
        if (st == PROTO_CLOSE || (st == PROTO_OK && used == 0))
            break; /* an incomplete request cannot be finished: dropped */
        /* PROTO_PAUSE under the cap: a long multiget's key budget; go on */
    }
    if (over) {
        log_verbose("UDP reply over %zu bytes to a %zu-byte request%s: refused", cap, n,
                    loopback ? " from loopback" : "");
        proto_release(&s);
        session_init(&s, w->store, &w->stats, w->pool->proto, w->pool->run);
        /* the error only where it is itself within the bound */
        if (buf[UDP_HEADER_SIZE] != 0x80 && udp_wire_bytes(sizeof UDP_TOO_LARGE - 1) <= cap)
            reply_copy(&s.reply, UDP_TOO_LARGE, sizeof UDP_TOO_LARGE - 1);
    }
    udp_send(w, l, &s.reply, req_id, from, fromlen);
    proto_release(&s); /* aborts a value that did not fit the datagram */
}

void udp_on_readable(struct worker *w, struct listener *l)
{
    unsigned char *buf = (unsigned char *)w->udp_buf;
    for (int i = 0; i < UDP_BATCH; i++) {
        struct sockaddr_storage from;
        socklen_t fromlen = sizeof from;
        ssize_t n = recvfrom(l->fd, buf, WORKER_UDP_BUF, 0, (struct sockaddr *)&from, &fromlen);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                log_info("UDP recvfrom: %s", strerror(errno));
            return; /* EAGAIN: another worker took it, or none left */
        }
        STAT_INC(&w->stats, read_calls);
        STAT_ADD(&w->stats, bytes_read, (uint64_t)n);
        udp_serve(w, l, buf, (size_t)n, (struct sockaddr *)&from, fromlen);
    }
}
