/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/conn_input.h"

#include <stdint.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/session.h"
#include "reply/reply.h"

void conn_input_init(struct conn_input *in, struct rbuf_pool *pool)
{
    memset(in, 0, sizeof *in);
    in->pool = pool;
}

void conn_input_release(struct conn_input *in)
{
    rbuf_pool_put(in->pool, in->buf, in->size);
    in->buf = NULL;
    in->size = in->pos = in->len = 0;
}

/* Room at the end of the read buffer: reuse, compact, or grow (by its
 * size, only when grow_room allows that much more). */
static int conn_input_room(struct conn_input *in, size_t grow_room)
{
    if (!in->buf) {
        in->buf = rbuf_pool_get(in->pool);
        if (!in->buf)
            return -1;
        in->size = RBUF_SIZE;
        in->pos = in->len = 0;
        return 0;
    }
    if (in->pos + in->len < in->size)
        return 0;
    if (in->pos > 0) {
        memmove(in->buf, in->buf + in->pos, in->len);
        in->pos = 0;
        return 0;
    }
    if (in->size > grow_room)
        return -1;
    char *n = rbuf_pool_grow(in->pool, in->buf, in->size, in->len);
    if (!n)
        return -1;
    in->buf = n;
    in->size *= 2;
    return 0;
}

enum conn_in_target conn_input_target(struct conn_input *in, struct session *s,
                                      size_t grow_room, char **at, size_t *room)
{
    /* A large value goes straight into item memory; a small one is read
     * with what follows it (its "\r\n", the next requests) in one call. */
    if (proto_sink_wait(s) >= CONN_DIRECT_MIN && in->len == 0 &&
        !(in->more_queued && proto_sink_wait(s) + 2 <= RBUF_SIZE)) {
        *at = proto_sink(s);
        *room = proto_sink_wait(s);
        return CONN_IN_TO_SINK;
    }
    if (conn_input_room(in, grow_room) < 0) {
        /* memcached answers this and closes, too */
        reply_str(proto_reply(s), "SERVER_ERROR out of memory reading request\r\n");
        *at = NULL;
        *room = 0;
        return CONN_IN_TO_NOWHERE;
    }
    *at = in->buf + in->pos + in->len;
    *room = in->size - in->pos - in->len;
    return CONN_IN_TO_BUF;
}

size_t conn_input_tail(struct conn_input *in, const struct session *s, char **at)
{
    if (!proto_sink_held(s) || in->len > 0 || conn_input_room(in, 0) < 0)
        return 0;
    *at = in->buf + in->pos;
    return in->size - in->pos;
}

bool conn_input_incomplete(const struct conn_input *in, const struct session *s)
{
    return (in->len > 0 && !in->again) || (proto_sink_wait(s) > 0 && !proto_sink_held(s));
}

/* Whether to acknowledge the bytes just read at once (CONN_IN_QUICKACK).
 * A client without TCP_NODELAY sends a small write only once what it sent
 * before is acknowledged, and a reply of ours carries that ACK; without one
 * the kernel delays it (40 ms). So: when a request is left incomplete (its
 * client's next bytes wait for the ACK: a line or header in part, a value
 * or its "\r\n" still to come), and when the requests are complete but
 * queued no reply since `owed` (noreply, quiet commands, quiet misses: the
 * client's next request waits for it). Not while requests are left to run
 * (a -R yield, a pause, a request waiting for flash: their replies come
 * and carry the ACK; a flash read is far shorter than the delayed ACK,
 * whose timer bounds a slow one), nor for a held value (its rest
 * is queued in the socket and read this turn; the read that ends it
 * decides), nor when the rest of the read's batch is queued and read next
 * by a receive that never waits (rest_next: that read decides, and one
 * that finds nothing acknowledges). direct: the read went straight into
 * item memory and took exactly the value's rest, so a text value's "\r\n"
 * was left in the socket, not missing (the read that takes it decides). */
static unsigned conn_input_ack(const struct conn_input *in, const struct session *s,
                               size_t owed, bool direct)
{
    if (conn_input_incomplete(in, s))
        return in->rest_next ? 0 : CONN_IN_QUICKACK;
    if (in->again || proto_sink_wait(s) > 0)
        return 0;
    if (proto_mid_request(s))
        return direct ? 0 : CONN_IN_QUICKACK;
    return proto_owed(s) <= owed ? CONN_IN_QUICKACK : 0;
}

/* Hand buffered bytes to the protocol and say what follows; owed: what the
 * reply queue held before this read's requests ran. */
static unsigned conn_input_run(struct conn_input *in, struct session *s, size_t owed)
{
    if (in->waiting)
        return 0; /* bytes are kept; the wake runs them, in order */
    enum proto_status st = PROTO_OK;
    while (in->len > 0) {
        size_t consumed = 0;
        st = proto_process(s, in->buf + in->pos, in->len, &consumed);
        if (consumed > in->len)
            consumed = in->len; /* defensive: never trust a count past the data */
        in->pos += consumed;
        in->len -= consumed;
        if (st != PROTO_OK || consumed == 0)
            break;
    }
    in->again = st == PROTO_YIELD || st == PROTO_PAUSE || st == PROTO_WAIT;
    in->waiting = st == PROTO_WAIT;
    if (in->len == 0)
        conn_input_release(in);

    unsigned act = 0;
    if (st == PROTO_CLOSE)
        return CONN_IN_CLOSE | CONN_IN_FLUSH;
    if (in->eof && !in->again) {
        proto_set_close(s, SESSION_CLOSE_NORMAL);
        return CONN_IN_CLOSE | CONN_IN_FLUSH;
    }
    act |= conn_input_ack(in, s, owed, false);
    if (in->again)
        act |= CONN_IN_AGAIN;
    /* A -R yield gives the turn to other connections but keeps this read's
     * replies together: they leave in one writev once its last request has
     * run, unless they already owe more than the allowance. */
    if (st == PROTO_YIELD) {
        act |= CONN_IN_YIELD;
        if (proto_owed(s) > proto_allowance(s))
            act |= CONN_IN_FLUSH;
    } else {
        act |= CONN_IN_FLUSH;
    }
    return act;
}

unsigned conn_input_received(struct conn_input *in, struct session *s,
                             enum conn_in_target t, size_t n)
{
    size_t owed = proto_owed(s);
    if (t == CONN_IN_TO_SINK) {
        /* past the value: what follows it, in the tail (conn_input_tail) */
        size_t into = n < proto_sink_wait(s) ? n : proto_sink_wait(s);
        proto_sink_filled(s, into);
        if (n > into) {
            in->len += n - into;
            return conn_input_run(in, s, owed);
        }
        if (in->len == 0)
            conn_input_release(in); /* a tail that took nothing */
        return CONN_IN_FLUSH | conn_input_ack(in, s, owed, true);
    }
    if (t != CONN_IN_TO_BUF)
        return CONN_IN_CLOSE | CONN_IN_FLUSH;
    in->len += n;
    return conn_input_run(in, s, owed);
}

int conn_input_keep(struct conn_input *in, const char *data, size_t n)
{
    while (n > 0) {
        if (conn_input_room(in, SIZE_MAX) < 0) /* it came: held, or the connection closes */
            return -1;
        size_t room = in->size - in->pos - in->len;
        size_t k = room < n ? room : n;
        memcpy(in->buf + in->pos + in->len, data, k);
        in->len += k;
        data += k;
        n -= k;
    }
    in->again = true; /* work left: run at the resume, not read past */
    return 0;
}

unsigned conn_input_eof(struct conn_input *in, struct session *s)
{
    /* A half-closed client still reads: answer what it sent in full (an
     * incomplete last request is dropped), then close. */
    in->eof = true;
    if (in->waiting)
        return 0; /* answered after the wake, then closed */
    if (!in->again) {
        proto_set_close(s, SESSION_CLOSE_NORMAL);
        return CONN_IN_CLOSE | CONN_IN_FLUSH;
    }
    return conn_input_run(in, s, proto_owed(s));
}

unsigned conn_input_resume(struct conn_input *in, struct session *s)
{
    if (!in->again) {
        if (!in->eof)
            return 0;
        proto_set_close(s, SESSION_CLOSE_NORMAL);
        return CONN_IN_CLOSE | CONN_IN_FLUSH;
    }
    return conn_input_run(in, s, proto_owed(s));
}
