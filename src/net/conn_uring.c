/* SPDX-License-Identifier: BSD-3-Clause */
/* The completion path, on an io_uring loop for a plaintext connection: a
 * receive is started whenever a read would wait for readability
 * (conn_uring_recv; multishot while the connection is idle, so that one
 * serves many of its requests), a send of the whole iovec whenever a
 * writev would go (conn_uring_send), and both finish in conn_on_complete,
 * which hands the bytes to the same input side and settles the same way.
 * The memory a started receive or send names is the kernel's until it
 * completes: a connection closed meanwhile waits on the zombie list. */
#include "net/conn_uring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event/event.h"
#include "base/log.h"
#include "net/conn.h"
#include "net/conn_path.h"
#include "net/worker_pool.h"
#include "net/net_options.h"
#include "net/sockopt.h"
#include "proto/proto.h"
#include "stats/stats.h"
#include "watch/watch.h"


/* Before closing a ring connection's socket: out of the ring's file table.
 * Should that fail the table keeps the socket open (its client sees no
 * EOF) until the slot is reused or the worker stops: say so. */
static void conn_forget(struct conn *c)
{
    if (event_forget(c->env->loop, c->fd) < 0)
        log_info("<%d could not leave the ring's file table: %s", c->fd, strerror(errno));
}

/* A zombie's last completion came: release it and free it at the turn's end. */
static void conn_zombie_done(struct conn *c)
{
    struct conn_env *w = c->env;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->zombies = c->next;
    if (c->next)
        c->next->prev = c->prev;
    conn_release_io(c);
    c->dead_next = w->dead;
    w->dead = c;
}

void conn_zombie_release(struct conn *c)
{
    c->u.recv_busy = c->u.send_busy = false;
    c->u.on = false; /* its loop is gone, and with it the registered file */
    conn_zombie_done(c);
}

/* Completion I/O: send everything owed (IOV_MAX-bounded) in one sendmsg,
 * unless the last one is still the kernel's; its completion sends what
 * came since, and the rest of a partial send (conn_sent). */
static void conn_uring_send(struct conn *c)
{
    struct conn_env *w = c->env;
    struct reply_queue *q = proto_reply(&c->sess);
    c->flush_more = false;
    if (c->u.rest_first && !c->closing && proto_owed(&c->sess) <= CONN_REPLY_FLOOR / 2) {
        /* the rest of the batch is queued: the receive that takes it sends
         * these replies with its own, in one send (conn_received). Owing
         * this little the connection reads, and may run what it holds */
        conn_account_reply(c);
        return;
    }
    if (c->u.send_busy) {
        conn_check_owed(c);
        return;
    }
    if (reply_pending(q) == 0 && proto_watcher(&c->sess))
        watch_refill(proto_watcher(&c->sess), 0, conn_watch_copy, q);
    if (reply_pending(q) == 0) {
        conn_account_reply(c);
        return;
    }
    size_t segs = q->nseg - q->head;
    int need = segs < (size_t)w->iov_max ? (int)segs : w->iov_max;
    if (need > c->u.iov_cap) {
        int cap = c->u.iov_cap ? c->u.iov_cap : 8;
        while (cap < need)
            cap *= 2;
        if (cap > w->iov_max)
            cap = w->iov_max;
        struct iovec *iov = realloc(c->u.iov, (size_t)cap * sizeof *iov);
        if (!iov) {
            conn_close(c, "out of memory");
            return;
        }
        c->u.iov = iov;
        c->u.iov_cap = cap;
    }
    int n = reply_iov(q, c->u.iov, c->u.iov_cap);
    c->u.msg = (struct msghdr){.msg_iov = c->u.iov, .msg_iovlen = (size_t)n};
    if (event_send(w->loop, c->fd, &c->u.msg, &c->watch) < 0) {
        log_info("<%d could not start a send: %s", c->fd, strerror(errno));
        conn_close(c, "event loop error");
        return;
    }
    c->u.send_busy = true;
    c->blocked = true; /* until the kernel says it took them */
    if (c->stall_since == 0)
        c->stall_since = clock_now();
    STAT_INC(w->stats, write_calls);
    conn_account_reply(c);
}

/* What one multishot receive may deliver before it ends by itself (the
 * kernel's bound, event_recv_multi): one provided buffer's worth. It is
 * started only on an idle connection (nothing buffered), so all it can
 * deliver, under 4 KiB, fits the 16 KiB read buffer a read on epoll would
 * have filled: bytes that come after the connection stopped being idle and
 * before its cancellation lands go there, counted in the client bound
 * (conn_take), never into a stash of their own. And a value sent in one
 * write reaches item memory after the same 2 KiB a one-shot receive would
 * have taken, not copied twice. At pipeline 1 one start still serves some
 * 60 requests of 30 bytes. */
#define CONN_MULTI_BYTES EVENT_RECV_BUF_MAX

/* Idle: reading, nothing buffered, no value of 4 KiB or more to fill (nor
 * the rest of a smaller one queued), the loop's buffers not out. Only then
 * may a multishot receive serve it: what it delivers is run at once. */
static bool conn_idle(const struct conn *c)
{
    return (c->interest & EVENT_READ) && !c->closing && !c->u.recv_own && c->in.len == 0 &&
           !conn_input_busy(&c->in) && proto_sink_wait(&c->sess) < CONN_DIRECT_MIN &&
           !(c->in.more_queued && proto_sink_wait(&c->sess) > 0);
}

/* The connection stopped being idle: stop its multishot receive. What it
 * delivers until the cancellation lands is taken as any receive's is
 * (conn_take). Should the cancel not be queued, the receive still ends by
 * itself within CONN_MULTI_BYTES, and the next call asks again. */
static void conn_uring_multi_stop(struct conn *c)
{
    if (c->u.recv_busy && c->u.recv_multi && !c->u.multi_stop &&
        event_cancel(c->env->loop, &c->watch, EVENT_RECV) == 0)
        c->u.multi_stop = true;
}

/* Completion I/O: start a receive where a read would go. An idle
 * connection gets a multishot receive into the loop's own buffers, which
 * stays started across its requests (one submission, its poll kept armed,
 * for some 60 of them) and holds no read buffer until bytes come
 * (conn_take copies them in). Otherwise, with nothing buffered and no
 * value to fill, a one-shot receive into the loop's buffers; else into
 * what the input path names. After a receive that filled its room in the
 * middle of a value, the rest is queued already: it goes into our read
 * buffer in one receive, with its "\r\n" (in.more_queued), not
 * EVENT_RECV_BUF_MAX bytes a turn nor into item memory and then the "\r\n"
 * a turn later. Each receive waits for a whole turn of the worker's other
 * connections (10 ms on a loaded host): a 5-8 KB set took three turns, the
 * soak's isolated 40 ms sets. */
static void conn_uring_recv(struct conn *c)
{
    if (c->dead || c->u.taking)
        return;
    bool idle = conn_idle(c);
    if (c->u.recv_busy) {
        if (c->u.recv_multi && !idle)
            conn_uring_multi_stop(c);
        return;
    }
    if (idle && !c->u.rest_first && !c->u.multi_none && c->env->pool->opt->io_uring_multishot) {
        if (event_recv_multi(c->env->loop, c->fd, CONN_MULTI_BYTES, &c->watch) == 0) {
            c->u.recv_busy = c->u.recv_multi = true;
            c->u.multi_stop = false;
            c->u.recv_target = CONN_IN_TO_BUF;
            c->u.recv_room = EVENT_RECV_BUF_MAX;
            STAT_INC(c->env->stats, multishot_receives);
            return;
        }
        if (errno != ENOTSUP) {
            log_info("<%d could not start a receive: %s", c->fd, strerror(errno));
            conn_close(c, "event loop error");
            return;
        }
        c->u.multi_none = true; /* this kernel cannot bound one: one-shot */
    }
    char *at = NULL;
    size_t room = 0;
    enum conn_in_target t = CONN_IN_TO_BUF;
    if (c->u.recv_own || c->in.len > 0 || proto_sink_wait(&c->sess) >= CONN_DIRECT_MIN ||
        (c->in.more_queued && proto_sink_wait(&c->sess) > 0)) {
        t = conn_read_target(c, &at, &room);
        if (t == CONN_IN_TO_NOWHERE)
            return;
    }
    /* A held value's rest is queued: the receive that fills it takes its
     * "\r\n" and what follows into the read buffer too (conn_read_held) */
    char *tail = NULL;
    size_t tail_room = 0;
    if (t == CONN_IN_TO_SINK && proto_sink_held(&c->sess))
        tail_room = conn_input_tail(&c->in, &c->sess, &tail);
    int rc;
    if (tail_room > 0) {
        c->u.recv_iov[0] = (struct iovec){at, room};
        c->u.recv_iov[1] = (struct iovec){tail, tail_room};
        rc = event_recvv(c->env->loop, c->fd, c->u.recv_iov, 2, &c->watch);
    } else {
        c->u.rest_recv = c->u.rest_first;
        rc = event_recv(c->env->loop, c->fd, at, room, c->u.rest_recv, &c->watch);
    }
    if (rc < 0) {
        log_info("<%d could not start a receive: %s", c->fd, strerror(errno));
        conn_close(c, "event loop error");
        return;
    }
    c->u.recv_busy = true;
    c->u.recv_multi = false;
    c->u.recv_target = t;
    c->u.recv_room = at ? room + tail_room : EVENT_RECV_BUF_MAX;
}

/* The receive for a batch's rest took nothing, or none was started: the
 * ACK conn_input_ack left to it, for a client that may wait on it. */
static void conn_rest_ack(struct conn *c)
{
    if (c->tcp && conn_input_incomplete(&c->in, &c->sess) && sockopt_quickack(c->fd) == 0)
        STAT_INC(c->env->stats, quickacks);
}

/* A receive for a batch's rest was to follow (rest_first) but none was
 * started: not reading (closing, owing too much, a request waiting for
 * flash: the replies before it must not wait on the device), or a held
 * value's two-piece receive. The replies go now. While requests are left
 * to run (a -R yield, a pause) the receive after them takes the rest. */
static void conn_rest_settle(struct conn *c)
{
    if (!c->u.rest_first || c->u.rest_recv || c->u.taking || c->dead ||
        (conn_input_busy(&c->in) && !c->closing && !c->in.waiting))
        return;
    c->u.rest_first = c->in.rest_next = false;
    conn_rest_ack(c);
    conn_flush_now(c);
}

/* n bytes a receive put in one of the loop's buffers (which goes back to
 * the kernel at the next wait: nothing of it is kept). Run at once, copied
 * where a read would have put them (the read buffer's tail, a value's
 * memory), in as many pieces as that takes; or, while the connection may
 * not run them (a multishot receive whose stop has not landed: paused for
 * its replies, a -R yield, the allowance reached), appended to its read
 * buffer, which the client bound counts (read_buf_bytes) and which is
 * freed as read buffers are, and run at the resume, in order. */
static void conn_take(struct conn *c, const char *data, size_t n)
{
    struct conn_env *w = c->env;
    c->u.taking = true;
    while (n > 0 && !c->dead && !c->closing) {
        if (conn_input_busy(&c->in) || !(c->interest & EVENT_READ)) {
            STAT_INC(w->stats, read_calls);
            STAT_ADD(w->stats, bytes_read, (uint64_t)n);
            STAT_ADD(w->stats, multishot_kept_bytes, (uint64_t)n);
            c->last_active = clock_now();
            registry_touch(&c->entry, c->last_active);
            if (conn_input_keep(&c->in, data, n) < 0) {
                log_info("<%d no read buffer may hold what came: closing", c->fd);
                reply_str(proto_reply(&c->sess), "SERVER_ERROR out of memory reading request\r\n");
                conn_apply(c, CONN_IN_CLOSE | CONN_IN_FLUSH);
                break;
            }
            conn_settle(c); /* run at the resume (in.again) */
            break;
        }
        char *at;
        size_t room;
        enum conn_in_target t = conn_read_target(c, &at, &room);
        if (t == CONN_IN_TO_NOWHERE)
            break;
        size_t k = room < n ? room : n;
        memcpy(at, data, k);
        data += k;
        n -= k;
        conn_read_done(c, t, k);
    }
    c->u.taking = false;
    if (!c->dead && (c->interest & EVENT_READ))
        conn_uring_recv(c);
    conn_rest_settle(c);
}

/* multi: it came from a multishot receive (which may still be started);
 * rest: it was a receive for the rest of a batch (never waiting). */
static void conn_received(struct conn *c, int res, const char *data, bool multi, bool rest)
{
    c->u.recv_own = false;
    c->in.more_queued = res > 0 && (size_t)res == c->u.recv_room;
    /* It filled the loop's buffer (2 KiB, where a read on epoll takes 16):
     * the rest of the client's batch is queued. Its replies wait for the
     * receive that takes the rest, started at once and never waiting, so
     * that a batch goes out in one send, as on epoll. Sending them now
     * split its replies in two segments, the second waiting on the first's
     * send: the client, still owed a reply, sent no ACK, and the server
     * probed for it (a tail-loss probe, some 10-20 ms later). Once a batch:
     * a rest that fills its room too is answered then. */
    c->u.rest_first = c->in.more_queued && data && !c->u.recv_busy && !rest && !c->closing;
    c->in.rest_next = c->u.rest_first;
    if (res == -ECANCELED) {
        /* conn_tick stopped a receive into a value's memory to check the
         * upload (it may have been cut off for others); or a multishot
         * receive was stopped */
        if (!multi)
            proto_tick(&c->sess);
        if (rest)
            conn_rest_ack(c); /* a rest receive that took nothing, as EAGAIN */
        conn_settle(c);
        return;
    }
    if (res == -ENOBUFS) {
        c->u.recv_own = true; /* the loop's buffers are all out this turn */
        if (rest)
            conn_rest_ack(c);
        conn_settle(c);
        return;
    }
    if (res < 0) {
        if (res == -EAGAIN || res == -EINTR) {
            if (rest)
                conn_rest_ack(c);
            conn_settle(c);
            return;
        }
        if (multi && c->in.again && c->in.len > 0 && !c->closing) {
            /* behind bytes kept from the same receive: answer those first,
             * as after an EOF (a reset peer then fails the send) */
            log_verbose("<%d recv: %s", c->fd, strerror(-res));
            conn_read_done(c, CONN_IN_TO_BUF, 0);
            return;
        }
        conn_close(c, strerror(-res));
        return;
    }
    if (c->closing) { /* stopping: no more requests */
        conn_settle(c);
        return;
    }
    if (data && res > 0) {
        conn_take(c, data, (size_t)res);
        return;
    }
    /* into our own memory (recv_target), or the end of input: an EOF behind
     * kept bytes answers them first (conn_input_eof) */
    conn_read_done(c, c->u.recv_target, (size_t)res);
}

/* Not reading only while a request waits for flash, owing little: its
 * multishot receive stays started. A client at pipeline 1 sends nothing
 * until the reply, so the receive is still there when the request is
 * done, where stopping it cost a cancellation and a new receive each
 * flash read; what a pipelining client sends meanwhile is kept in the read
 * buffer as before a stop lands (conn_take), at most the receive's own
 * bound (CONN_MULTI_BYTES), after which it ends by itself. */
static bool conn_uring_keep_multi(const struct conn *c)
{
    return c->in.waiting && !c->closing && !c->in.eof &&
           proto_owed(&c->sess) <= CONN_REPLY_FLOOR / 2;
}

/* The table's want: no readiness to ask for, a receive is started and
 * writes finish by themselves. */
static void conn_uring_want(struct conn *c, unsigned want)
{
    c->interest = want;
    if (want & EVENT_READ)
        conn_uring_recv(c);
    else if (!conn_uring_keep_multi(c))
        conn_uring_multi_stop(c);
    conn_rest_settle(c);
}

/* The kernel took all that was owed, and the connection reads on: what
 * conn_settle would find then is what the settle after the send's start
 * (conn_apply's) left, less the send. Nothing is owed, so nothing is to
 * send, to close on or to put on the ready list (no bytes held to run):
 * it keeps reading, drops the write interest the send asked for, and
 * waits for a command. Half of conn_settle's cost, at pipeline 1 once a
 * request; anything else takes conn_settle. */
static bool conn_sent_all(struct conn *c)
{
    if (proto_owed(&c->sess) > 0 || c->closing || c->flush_more || c->in.again ||
        !(c->interest & EVENT_READ) || conn_input_busy(&c->in) || proto_watcher(&c->sess))
        return false;
    conn_uring_want(c, EVENT_READ);
    conn_note_state(c);
    return true;
}

static void conn_sent(struct conn *c, int res)
{
    struct conn_env *w = c->env;
    if (res < 0 && res != -EAGAIN && res != -EINTR) {
        log_verbose("<%d sendmsg: %s", c->fd, strerror(-res));
        conn_close(c, "write error");
        return;
    }
    if (res > 0) {
        STAT_ADD(w->stats, bytes_written, (uint64_t)res);
        reply_consume(proto_reply(&c->sess), (size_t)res);
        c->stall_since = 0;
    }
    c->blocked = false;
    conn_account_reply(c);
    if (conn_sent_all(c))
        return;
    /* the rest of a partial send, and what was queued meanwhile, leave
     * from here as conn_settle decides (replies held by a -R yield wait) */
    conn_settle(c);
}

void conn_uring_hint(struct conn *c, int res, const char *data, struct store_prefetch_run *run)
{
    if (res > 0 && data && !c->dead && c->in.len == 0)
        proto_read_hint(&c->sess, data, (size_t)res, run);
    else
        run->n = run->next = 0;
}

void conn_uring_hint_next(struct conn *c, struct store_prefetch_run *run)
{
    if (!c->dead)
        proto_read_hint_next(&c->sess, run);
}

void conn_on_complete(struct conn *c, unsigned events, int res, const char *data)
{
    bool multi = c->u.recv_multi;
    bool rest = c->u.rest_recv;
    if (events & EVENT_RECV) {
        if (!(events & EVENT_MORE)) { /* the receive's last event */
            c->u.recv_busy = false;
            c->u.recv_multi = c->u.multi_stop = false;
            c->u.rest_first = c->u.rest_recv = false; /* the replies may go */
            c->in.rest_next = false;
        }
    } else {
        c->u.send_busy = false;
    }
    if (c->dead) {
        if (!c->u.recv_busy && !c->u.send_busy)
            conn_zombie_done(c);
        return;
    }
    if (events & EVENT_RECV)
        conn_received(c, res, data, multi, rest);
    else
        conn_sent(c, res);
}

/* Closing with a receive or send still the kernel's: stop them and wait
 * for their completions (conn_on_complete) before anything is released;
 * true when it waits (on the zombie list). A `watch` stream has nothing in
 * flight: it goes now. */
static bool conn_uring_zombie(struct conn *c)
{
    struct conn_env *w = c->env;
    if (!c->u.recv_busy && !c->u.send_busy)
        return false;
    event_cancel(w->loop, &c->watch, (c->u.recv_busy ? EVENT_RECV : 0u) | (c->u.send_busy ? EVENT_SEND : 0u));
    proto_watch_end(&c->sess);
    /* Its requests hold the socket itself: once they are the kernel's,
     * the descriptor can go now, as on epoll (the next accept may take
     * its number). Should the submit fail, keep it until they end. */
    if (event_submit(w->loop) == 0) {
        conn_forget(c);
        close(c->fd);
        c->fd = -1;
    }
    c->prev = NULL;
    c->next = w->zombies;
    if (w->zombies)
        w->zombies->prev = c;
    w->zombies = c;
    return true;
}

static void conn_uring_release(struct conn *c)
{
    free(c->u.iov);
    c->u.iov = NULL;
    if (c->fd >= 0 && c->u.on)
        conn_forget(c);
}

static void conn_uring_trim(struct conn *c)
{
    if (!c->u.send_busy) {
        free(c->u.iov);
        c->u.iov = NULL;
        c->u.iov_cap = 0;
    }
}

/* An upload cut off for others frees its memory; while the kernel is
 * receiving into it, stop that first (conn_received then checks). */
static bool conn_uring_stop_upload(struct conn *c)
{
    if (!(c->u.recv_busy && c->u.recv_target == CONN_IN_TO_SINK))
        return false;
    event_cancel(c->env->loop, &c->watch, EVENT_RECV);
    return true;
}

/* Taken over: nothing to watch, the first receive starts at its want. */
static int conn_uring_open(struct conn *c)
{
    c->u.on = true;
    return 0;
}

const struct conn_path conn_uring_path = {
    .open = conn_uring_open,
    .want = conn_uring_want,
    .send = conn_uring_send,
    .read = conn_uring_recv,
    .close = conn_uring_zombie,
    .release = conn_uring_release,
    .trim = conn_uring_trim,
    .stop_upload = conn_uring_stop_upload,
};
