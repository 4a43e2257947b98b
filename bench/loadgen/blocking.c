/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* memmem */
#include "blocking.h"

#include "loadgen.h"
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int lg_bconn_open(struct lg_bconn *b, const char *host, int port)
{
    memset(b, 0, sizeof(*b));
    b->fd = lg_connect(host, port, false);
    return b->fd < 0 ? -1 : 0;
}

void lg_bconn_close(struct lg_bconn *b)
{
    if (b->fd >= 0)
        lg_close(b->fd);
    b->fd = -1;
    lg_buf_release(&b->in);
}

int lg_bconn_send(struct lg_bconn *b, const char *p, size_t len)
{
    while (len) {
        ssize_t n = lg_send(b->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int bconn_fill(struct lg_bconn *b)
{
    if (b->in_off > 0) {
        memmove(b->in.p, b->in.p + b->in_off, b->in.len - b->in_off);
        b->in.len -= b->in_off;
        b->in_off = 0;
    }
    if (lg_buf_reserve(&b->in, 65536) != 0)
        return -1;
    ssize_t n;
    do
        n = lg_recv(b->fd, b->in.p + b->in.len, b->in.cap - b->in.len);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;
    b->in.len += (size_t)n;
    return 0;
}

int lg_bconn_reply(struct lg_bconn *b, enum lg_op op, unsigned nkeys, struct lg_reply *rep)
{
    for (;;) {
        long used = lg_wire_parse(LG_TEXT, op, nkeys, b->in.p + b->in_off,
                                  b->in.len - b->in_off, rep);
        if (used < 0)
            return -1;
        if (used > 0) {
            b->in_off += (size_t)used;
            return 0;
        }
        if (bconn_fill(b) != 0)
            return -1;
    }
}

int lg_bconn_stats(struct lg_bconn *b, char *out, size_t cap)
{
    if (lg_bconn_send(b, "stats\r\n", 7) != 0)
        return -1;
    for (;;) {
        const char *s = b->in.p + b->in_off;
        size_t len = b->in.len - b->in_off;
        const char *end = len >= 5 ? memmem(s, len, "END\r\n", 5) : NULL;
        if (end) {
            size_t n = (size_t)(end - s) + 5;
            size_t c = n < cap - 1 ? n : cap - 1;
            memcpy(out, s, c);
            out[c] = 0;
            b->in_off += n;
            return 0;
        }
        if (bconn_fill(b) != 0)
            return -1;
    }
}

long long lg_stats_field(const char *stats, const char *name)
{
    char pat[96];
    snprintf(pat, sizeof(pat), "STAT %s ", name);
    const char *p = strstr(stats, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

long long lg_bconn_stat(struct lg_bconn *b, const char *name)
{
    static char buf[16384];
    if (lg_bconn_stats(b, buf, sizeof(buf)) != 0)
        return -1;
    return lg_stats_field(buf, name);
}
