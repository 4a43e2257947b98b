/* SPDX-License-Identifier: BSD-3-Clause */
/* A connection's input side without its socket: the read buffer, where the
 * next read() should land (the buffer, or straight into an item's memory),
 * the loop that hands buffered bytes to the protocol, the -R yield, replies
 * paused for memory, and end of input. It is given bytes and events and says
 * what to do (acknowledge, flush, come back later, close); conn.c does the
 * system calls. Unit tests and a fuzzer drive it directly. */
#ifndef NODELAY_CONN_INPUT_H
#define NODELAY_CONN_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "net/rbuf_pool.h"

struct session;

/* Values at least this large, not yet buffered, are read straight into item
 * memory; smaller ones are read with what follows them (one system call). */
#define CONN_DIRECT_MIN (4 * 1024)

struct conn_input {
    struct rbuf_pool *pool;
    char *buf;
    size_t size, pos, len; /* unconsumed bytes: buf[pos .. pos+len) */
    bool again;            /* the protocol stopped with work left (-R yield,
                              a reply paused until the queue drains, a
                              request waiting for flash) */
    bool waiting;          /* a request waits for flash reads (PROTO_WAIT):
                              nothing runs until the wake clears it */
    bool eof;              /* the client sent its last byte */
    bool more_queued;      /* the last read filled its room: the rest of a
                              value that fits in the buffer is read with what
                              follows it, in one call, not straight into item
                              memory and then its "\r\n" in another */
    bool rest_next;        /* the rest of the last read's batch is queued and
                              read next by a receive that never waits
                              (io_uring): that read decides the ACK */
};

/* What the caller should do after an input event (bits). */
enum {
    CONN_IN_QUICKACK = 1, /* acknowledge at once: a request is incomplete, or
                             the read's requests queued no reply */
    CONN_IN_FLUSH = 2,    /* send what is owed now */
    CONN_IN_AGAIN = 4,    /* call conn_input_resume once the session owes no
                             more than half its allowance */
    CONN_IN_CLOSE = 8,    /* send what is owed, then close */
    CONN_IN_YIELD = 16,   /* the -R budget was spent (counted) */
};

/* Where the next read() lands. */
enum conn_in_target {
    CONN_IN_TO_BUF,     /* *at, *room: the read buffer's free tail */
    CONN_IN_TO_SINK,    /* *at, *room: the value's item memory (s->sink) */
    CONN_IN_TO_NOWHERE, /* no buffer may hold the request: an error reply is
                           queued; flush and close */
};

void conn_input_init(struct conn_input *in, struct rbuf_pool *pool);
/* Drop buffered bytes and give the buffer back. */
void conn_input_release(struct conn_input *in);

/* A request is left incomplete: its client's next bytes may wait for our
 * ACK (conn_input_ack). */
bool conn_input_incomplete(const struct conn_input *in, const struct session *s);

/* Whether the read buffer is full from its start: the next read makes it
 * grow (conn_input_target). */
static inline bool conn_input_full(const struct conn_input *in)
{
    return in->buf && in->pos == 0 && in->len >= in->size;
}
/* grow_room: how many bytes more the read buffer may take to grow (a
 * request line longer than it); past it, as when out of memory, the
 * request is answered as memcached answers one it cannot read into
 * memory, and the connection closes (CONN_IN_TO_NOWHERE). */
enum conn_in_target conn_input_target(struct conn_input *in, struct session *s,
                                      size_t grow_room, char **at, size_t *room);
/* When the sink is a held value (s->sink_held: the rest is queued in the
 * socket), the read buffer's free tail, so that the read that fills the
 * value takes its "\r\n" and what follows in the same call (readv): its
 * room, 0 when there is none to give. Read into the sink first, then *at. */
size_t conn_input_tail(struct conn_input *in, const struct session *s, char **at);
/* The bytes a read of n into the buffer (CONN_IN_TO_BUF) left to run, with
 * those buffered before it, before conn_input_received counts it: *at and
 * the length. */
static inline size_t conn_input_unread(const struct conn_input *in, size_t n, const char **at)
{
    *at = in->buf + in->pos;
    return in->len + n;
}
/* n > 0 bytes were read into what conn_input_target returned (t); with
 * CONN_IN_TO_SINK, those past the sink went to conn_input_tail's *at. */
unsigned conn_input_received(struct conn_input *in, struct session *s,
                             enum conn_in_target t, size_t n);
/* n > 0 bytes that arrived while the connection could not run them (a
 * multishot receive's, on io_uring, delivered before its stop landed):
 * appended to the read buffer, where read_buf_bytes (and so the client
 * bound) counts them, and run by the next conn_input_resume, in order
 * after what was buffered. Returns 0, or -1 when no buffer may hold them
 * (the caller closes, as for CONN_IN_TO_NOWHERE). */
int conn_input_keep(struct conn_input *in, const char *data, size_t n);
/* The client closed its side: answer every complete request buffered (over
 * as many resumes as it takes), then close. */
unsigned conn_input_eof(struct conn_input *in, struct session *s);
/* Go on after CONN_IN_AGAIN (not while waiting for flash). */
unsigned conn_input_resume(struct conn_input *in, struct session *s);
/* The flash reads a request waited for are in: it may run again (at the
 * next conn_input_resume). */
static inline void conn_input_woken(struct conn_input *in)
{
    in->waiting = false;
}

/* The connection should not read: it has work left on what is buffered, or
 * input has ended. */
static inline bool conn_input_busy(const struct conn_input *in)
{
    return in->again || in->eof;
}

#endif
