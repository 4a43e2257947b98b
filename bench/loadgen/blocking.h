/* SPDX-License-Identifier: BSD-3-Clause */
/* A plain blocking connection for the tools that go step by step (fill,
 * replay): send a batch, then read its replies in order. */
#ifndef LG_BLOCKING_H
#define LG_BLOCKING_H

#include "wire.h"

struct lg_bconn {
    int fd;
    struct lg_buf in;
    size_t in_off;
};

int lg_bconn_open(struct lg_bconn *b, const char *host, int port);
void lg_bconn_close(struct lg_bconn *b);
int lg_bconn_send(struct lg_bconn *b, const char *p, size_t len);
/* Reads one text-protocol reply to (op, nkeys) into rep; the hits point into
 * the connection's buffer until the next call. */
int lg_bconn_reply(struct lg_bconn *b, enum lg_op op, unsigned nkeys, struct lg_reply *rep);
/* Sends "stats" and returns the value of one field, or -1. */
long long lg_bconn_stat(struct lg_bconn *b, const char *name);
/* One "stats" round trip; fields looked up in the returned text. */
int lg_bconn_stats(struct lg_bconn *b, char *out, size_t cap);
long long lg_stats_field(const char *stats, const char *name);

#endif
