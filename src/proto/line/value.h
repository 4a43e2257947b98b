/* SPDX-License-Identifier: BSD-3-Clause */
/* The value a text-protocol line announces (set, cas, ms, -Y's auth
 * token): its bytes and the "\r\n" after them, received into a reservation
 * or a buffer, or swallowed, across as many reads as they take. Shared by
 * classic and meta commands, beneath both; the caller owns the struct
 * text_value and says which one. While bytes of the value are still to
 * come into memory, the session's sink points at them, so the connection
 * may read straight there (proto_sink_filled). */
#ifndef NODELAY_PROTO_LINE_VALUE_H
#define NODELAY_PROTO_LINE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "proto/session.h"
#include "store/store.h"

/* Called once a value and the two bytes after it have arrived: chunk_ok is
 * false when those two bytes were not "\r\n" (memcached's "bad data chunk").
 * The reservation, if any, is the text_value's res and is the callee's to
 * commit or abort. */
typedef void (*text_value_done_fn)(struct session *s, bool chunk_ok);

struct text_value {
    bool receiving;              /* a value (+ "\r\n") is arriving */
    bool have_res;               /* into `res`; otherwise it is swallowed */
    char *dest;                  /* where the value goes (res.value, the auth
                                    buffer) or NULL to swallow it */
    struct store_reservation res;
    size_t need;                 /* value bytes still to come */
    size_t filled;               /* value bytes received so far */
    char term[2];                /* the two bytes after the value */
    size_t term_got;
    text_value_done_fn done;
};

/* Receive nvalue bytes (+ "\r\n") into dest, or swallow them if dest is
 * NULL. done() runs when all have arrived. */
static inline void text_expect_into(struct session *s, struct text_value *v, char *dest,
                                    size_t nvalue, text_value_done_fn done)
{
    (void)s;
    v->receiving = true;
    v->dest = dest;
    v->need = nvalue;
    v->filled = 0;
    v->term_got = 0;
    v->done = done;
}

/* The same into v->res (reserved by the caller) when have_res, else
 * swallowed. */
static inline void text_expect_value(struct session *s, struct text_value *v, size_t nvalue,
                                     bool have_res, text_value_done_fn done)
{
    v->have_res = have_res;
    text_expect_into(s, v, have_res ? v->res.value : NULL, nvalue, done);
}

/* done() for swallowed data: nothing to do. */
void text_swallowed(struct session *s, bool chunk_ok);

/* Feed bytes of a read to the value being received; returns how many it
 * took (the value's and its terminator's, no more). Inline: it is on every
 * storage command's path, in text_process's loop. */
static inline size_t text_value_receive(struct session *s, struct text_value *v, const char *buf,
                                        size_t len)
{
    size_t pos = 0;
    /* an upload cut off for others: drop the rest, the commit refuses it */
    if (v->have_res && v->dest && !store_upload_alive(s->store, &v->res, len > 0)) {
        v->dest = NULL;
        s->sink = NULL;
        s->sink_len = 0;
    }
    if (v->filled < v->need) {
        size_t n = v->need - v->filled;
        if (n > len)
            n = len;
        if (v->dest)
            memcpy(v->dest + v->filled, buf, n);
        v->filled += n;
        pos = n;
    }
    if (v->filled == v->need) {
        while (v->term_got < 2 && pos < len)
            v->term[v->term_got++] = buf[pos++];
    }
    if (v->filled == v->need && v->term_got == 2) {
        bool ok = v->term[0] == '\r' && v->term[1] == '\n';
        text_value_done_fn done = v->done;
        v->receiving = false;
        v->dest = NULL;
        v->done = NULL;
        s->sink = NULL;
        s->sink_len = 0;
        done(s, ok);
        if (!v->receiving)
            v->have_res = false;
    } else if (v->dest && v->filled < v->need) {
        s->sink = v->dest + v->filled;
        s->sink_len = v->need - v->filled;
    } else {
        /* The value is whole, its "\r\n" still to come: no receive may
         * land in item memory now. A sink left from an earlier piece (the
         * rest read into the buffer, io_uring's more_queued) took the
         * "\r\n" as value bytes and the set never finished. */
        s->sink = NULL;
        s->sink_len = 0;
    }
    return pos;
}

/* The connection read n bytes straight into s->sink. */
void text_value_sink_filled(struct session *s, struct text_value *v, size_t n);
/* Now and then while idle: free a value being received that was cut off
 * to make room for others (store_upload_alive). */
void text_value_tick(struct session *s, struct text_value *v);
/* Abort the value being received, its reservation included. */
void text_value_abort(struct session *s, struct text_value *v);

#endif
