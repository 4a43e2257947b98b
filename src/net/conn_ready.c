/* SPDX-License-Identifier: BSD-3-Clause */
/* The readiness path: the loop says the socket is readable or writable, and
 * the connection reads (read, or readv for a held value and what follows
 * it) and writes (writev of the whole queue), plainly or through TLS. Used
 * on epoll and poll, and on io_uring by TLS connections (a poll through the
 * ring, then SSL_read/SSL_write). */
#include "net/conn_ready.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "event/event.h"
#include "base/log.h"
#include "net/conn.h"
#include "net/conn_path.h"
#include "net/sock_io.h"
#include "net/sockopt.h"
#include "net/tls.h"
#include "proto/proto.h"
#include "stats/stats.h"
#include "watch/watch.h"


/* The one place the socket is read or written: plainly, or through TLS
 * (tls.c), with read(2)'s and writev(2)'s contract either way. */
static ssize_t conn_io_read(struct conn *c, void *buf, size_t n)
{
    return c->rd.tls ? tls_conn_read(c->rd.tls, buf, n) : sock_read(c->fd, buf, n);
}

static ssize_t conn_io_writev(struct conn *c, const struct iovec *iov, int n)
{
    return c->rd.tls ? tls_conn_writev(c->rd.tls, iov, n) : sock_writev(c->fd, iov, n);
}

/* Readiness: writev what is owed until the socket is full or the budget is
 * spent (flush_more: the rest next turn). */
static void conn_ready_flush(struct conn *c)
{
    struct conn_env *w = c->env;
    struct reply_queue *q = proto_reply(&c->sess);
    c->blocked = false;
    c->flush_more = false;
    size_t sent = 0;
    /* A `watch` stream is composed as the socket drains. */
    while (reply_pending(q) > 0 ||
           (proto_watcher(&c->sess) && watch_refill(proto_watcher(&c->sess), reply_pending(q), conn_watch_copy, q) > 0)) {
        if (sent >= CONN_FLUSH_BUDGET) {
            c->flush_more = true; /* the rest next turn, after the others */
            break;
        }
        int n = reply_iov(q, w->iov, w->iov_max);
        ssize_t wr = conn_io_writev(c, w->iov, n);
        if (wr < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->blocked = true;
                break;
            }
            log_verbose("<%d writev: %s", c->fd, strerror(errno));
            conn_close(c, "write error");
            return;
        }
        STAT_INC(w->stats, write_calls);
        STAT_ADD(w->stats, bytes_written, (uint64_t)wr);
        reply_consume(q, (size_t)wr);
        sent += (size_t)wr;
        c->stall_since = 0;
    }
    conn_account_reply(c);
    if (c->blocked)
        conn_check_owed(c);
}

/* A held value (its rest queued: session_reserve_value) is read now, in
 * this turn, and the read that fills it takes what follows it too: one
 * readv for the rest, its "\r\n" and any next request. */
static ssize_t conn_read_held(struct conn *c, char *at, size_t room)
{
    char *tail;
    size_t tail_room = conn_input_tail(&c->in, &c->sess, &tail);
    if (tail_room == 0)
        return sock_read(c->fd, at, room);
    struct iovec v[2] = {{at, room}, {tail, tail_room}};
    return sock_readv(c->fd, v, 2);
}

/* One read where conn_input_target says (*t): the bytes it took, 0 at the
 * end of input, -1 when the socket had nothing or the connection closed. */
static ssize_t conn_read_syscall(struct conn *c, enum conn_in_target *t)
{
    struct conn_env *w = c->env;
    char *at;
    size_t room;
    *t = conn_read_target(c, &at, &room);
    if (*t == CONN_IN_TO_NOWHERE)
        return -1;
    bool held = *t == CONN_IN_TO_SINK && proto_sink_held(&c->sess) && !c->rd.tls;
    ssize_t n = held ? conn_read_held(c, at, room) : conn_io_read(c, at, room);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            /* Part of a TLS record: its sender waits for our ACK as for
             * part of a request. */
            if (c->rd.tls && c->tcp && tls_conn_record_incomplete(c->rd.tls) &&
                sockopt_quickack(c->fd) == 0)
                STAT_INC(w->stats, quickacks);
            return -1;
        }
        conn_close(c, strerror(errno));
        return -1;
    }
    return n;
}

/* Reads a readiness event makes while a value it holds is still unfilled:
 * the first takes the command line, the next the rest; more only when a
 * read returned less than the socket said it held. */
#define CONN_HELD_READS 4

/* The event's reads after the first `done` (which took bytes and ran). */
static void conn_ready_read_from(struct conn *c, int done)
{
    for (int i = done; i < CONN_HELD_READS; i++) {
        if (i > 0 && (c->dead || !proto_sink_held(&c->sess) || !(c->interest & EVENT_READ)))
            return;
        enum conn_in_target t;
        ssize_t n = conn_read_syscall(c, &t);
        if (n < 0)
            return;
        conn_read_done(c, t, (size_t)n);
        if (n == 0)
            return;
    }
}

static void conn_ready_read(struct conn *c)
{
    conn_ready_read_from(c, 0);
}

/* Run the batch's oldest read: what conn_ready_read does after its first. */
static void conn_ready_batch_run(struct conn_ready_batch *b)
{
    struct conn_ready_read *r = &b->r[b->head];
    b->head = (b->head + 1) % (CONN_READY_DEFER + 1);
    b->n--;
    if (r->c->dead)
        return;
    conn_read_done(r->c, CONN_IN_TO_BUF, r->n);
    conn_ready_read_from(r->c, 1);
}

void conn_ready_batch_run_all(struct conn_ready_batch *b)
{
    while (b->n > 0) {
        /* the newest read's item: the older one runs meanwhile */
        if (b->n == 2) {
            struct conn_ready_read *r = &b->r[(b->head + 1) % (CONN_READY_DEFER + 1)];
            proto_read_hint_next(&r->c->sess, &r->run);
        }
        conn_ready_batch_run(b);
    }
}

void conn_ready_batch_event(struct conn_ready_batch *b, struct conn *c, unsigned events)
{
    if (events != EVENT_READ || c->dead || !(c->interest & EVENT_READ) || c->rd.tls ||
        c->path != &conn_ready_path) {
        conn_ready_batch_finish(b);
        conn_on_event(c, events);
        return;
    }
    enum conn_in_target t;
    ssize_t n = conn_read_syscall(c, &t);
    if (n < 0)
        return;
    if (n == 0 || t != CONN_IN_TO_BUF) {
        conn_read_done(c, t, (size_t)n); /* the end of input, or a value's bytes */
        if (n > 0)
            conn_ready_read_from(c, 1);
        return;
    }
    /* Its key's bucket loads during the next read, its item during the
     * one after, and its requests run then. */
    struct conn_ready_read *r = &b->r[(b->head + b->n) % (CONN_READY_DEFER + 1)];
    r->c = c;
    r->n = (size_t)n;
    const char *buf;
    size_t len = conn_input_unread(&c->in, r->n, &buf);
    proto_read_hint(&c->sess, buf, len, &r->run);
    if (b->n > 0) {
        struct conn_ready_read *prev = &b->r[(b->head + b->n - 1) % (CONN_READY_DEFER + 1)];
        proto_read_hint_next(&prev->c->sess, &prev->run);
    }
    b->n++;
    if (b->n > CONN_READY_DEFER)
        conn_ready_batch_run(b);
}

void conn_on_event(struct conn *c, unsigned events)
{
    if (c->dead)
        return;
    if (events & EVENT_WRITE) {
        conn_flush_now(c);
        conn_settle(c);
        if (c->dead)
            return;
    }
    if (events & EVENT_READ) {
        if (c->interest & EVENT_READ)
            conn_ready_read(c);
    } else if (events & EVENT_ERROR) {
        conn_close(c, "socket error");
    }
}

/* Taken over: watch the socket for what it waits for. */
static int conn_ready_open(struct conn *c)
{
    if (event_add(c->env->loop, c->fd, c->interest, &c->watch) < 0) {
        log_info("event_add(%d): %s", c->fd, strerror(errno));
        return -1;
    }
    return 0;
}

static void conn_ready_want(struct conn *c, unsigned want)
{
    if (want == c->interest)
        return;
    if (event_modify(c->env->loop, c->fd, want, &c->watch) < 0) {
        log_info("event_modify(%d): %s", c->fd, strerror(errno));
        conn_close(c, "event loop error");
        return;
    }
    c->interest = want;
}

/* Closing: no I/O is ever in flight here, only the watch to end. */
static bool conn_ready_close(struct conn *c)
{
    event_delete(c->env->loop, c->fd);
    return false;
}

/* Nothing held beyond what conn.c releases (its TLS session), nothing in
 * flight to stop. */
static void conn_ready_nothing(struct conn *c)
{
    (void)c;
}

static bool conn_ready_no_upload(struct conn *c)
{
    (void)c;
    return false;
}

const struct conn_path conn_ready_path = {
    .open = conn_ready_open,
    .want = conn_ready_want,
    .send = conn_ready_flush,
    .read = conn_ready_read,
    .close = conn_ready_close,
    .release = conn_ready_nothing,
    .trim = conn_ready_nothing,
    .stop_upload = conn_ready_no_upload,
};
