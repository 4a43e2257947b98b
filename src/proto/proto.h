/* SPDX-License-Identifier: BSD-3-Clause */
/* The protocols' single entry point, as the connection sees it.
 *
 * A connection hands over the bytes it has read; the protocol consumes whole
 * requests (the first byte of a connection picks text or binary, as
 * memcached's -B auto), runs them against the store and appends the replies
 * to the session's reply queue. "Need more bytes" is a return value, never a
 * block, and no socket is ever touched here.
 */
#ifndef NODELAY_PROTO_H
#define NODELAY_PROTO_H

#include <stdbool.h>
#include <stddef.h>

struct session;

enum proto_status {
    PROTO_OK,    /* consumed what it could; call again when more bytes arrive */
    PROTO_YIELD, /* -R budget spent with complete requests left: flush, then call again */
    PROTO_CLOSE, /* send what is queued, then close (quit, HTTP line, fatal error) */
    PROTO_PAUSE, /* the session owes more than s->reply_allow (or a long reply
                    spent its work budget): flush, call again with the same
                    unconsumed bytes once the queue has drained. A multiget or
                    dump resumes where it stopped. */
};

/* Process requests in buf[0..len). *consumed is how many bytes were used;
 * unconsumed bytes (an incomplete request) must be passed again, with more
 * appended, on the next call. A value being received is consumed as it
 * arrives, so a connection's read buffer never has to hold a whole value. */
enum proto_status proto_process(struct session *s, const char *buf, size_t len,
                                size_t *consumed);

/* Direct reads: when s->sink_len > 0 the protocol is waiting for that many
 * bytes of a value and wants them written to s->sink. The connection may read
 * straight there (no copy through its buffer) and must then call
 * proto_sink_filled with how many bytes it put there. */
void proto_sink_filled(struct session *s, size_t n);

/* A request has begun and not ended: its value, or the "\r\n" after it, is
 * still to come (bytes of a line or header not yet whole stay unconsumed,
 * in the caller's buffer). */
bool proto_mid_request(const struct session *s);

/* Once a second or so from the connection: lets a value being received
 * that was cut off for others give its memory back while its client is
 * silent (docs/store.md "Uploads"). */
void proto_tick(struct session *s);

/* The connection is done with the session: abort any value being received,
 * free the protocol's state, then the contract's (session_release). */
void proto_release(struct session *s);

#endif
