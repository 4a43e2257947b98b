/* SPDX-License-Identifier: BSD-3-Clause */
/* An event-loop token: what an event's pointer refers to, for every kind
 * of thing a worker's loop waits on (a connection, a listener, a UDP
 * socket, the worker's wake-up pipe, the flash tier's completions).
 * TOKEN_WATCH: a `watch` stream (see watch/watch.h) has lines for this
 * connection (obj). */
#ifndef NODELAY_NET_LOOP_TOKEN_H
#define NODELAY_NET_LOOP_TOKEN_H

enum loop_token_kind {
    TOKEN_CONN,
    TOKEN_LISTENER,
    TOKEN_UDP,
    TOKEN_WAKE,
    TOKEN_WATCH,
    TOKEN_FLASH, /* the flash tier's reads completed (proto/proto_flash.h) */
};
struct loop_token {
    enum loop_token_kind kind;
    void *obj;
};

#endif
