/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection: socket -> read buffer -> proto_process() -> reply queue ->
 * one writev. Everything parsed from one read is answered by one writev
 * (looping only on a partial write), never a write per reply.
 *
 * On an io_uring loop a plaintext connection does the same through
 * completions: a receive is started whenever it would wait for readability
 * (conn_recv_start; multishot while the connection is idle, so that one
 * serves many of its requests), a send of the whole iovec whenever it would writev
 * (conn_send_start), and both finish in conn_on_complete, which hands the
 * bytes to the same input path and settles the same way. TLS connections
 * stay on readiness (a poll through the ring, then SSL_read/SSL_write). */
#include "net/conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "event/event.h"
#include "log.h"
#include "net/core.h"
#include "net/sockopt.h"
#include "net/tls.h"
#include "proto/proto.h"
#include "net/net_options.h"
#include "settings_run.h"
#include "stats/stats.h"
#include "watch/watch.h"

/* Keep the worker's reply-bytes gauge (response_obj_bytes) in step with
 * the memory this connection's queue holds: its blocks, the room in them,
 * its spare and segment table (reply_held), so client_mem_limit sees all
 * of it. Values sent by reference live in item memory (-m) and are not
 * counted again; the allowance (reply_pending) still pauses a reply that
 * pins too many. */
static void conn_account_reply(struct conn *c)
{
    size_t now = reply_held(&c->sess.reply);
    if (now == c->accounted)
        return;
    size_t *gauge = c->env->reply_bytes;
    size_t v = __atomic_load_n(gauge, __ATOMIC_RELAXED);
    __atomic_store_n(gauge, v + now - c->accounted, __ATOMIC_RELAXED);
    c->accounted = now;
}

/* The global bound on memory owed to clients (-o client_mem_limit): half
 * of -m, at least 32 MiB, unless set. Read per call: -m changes at run time
 * (cache_memlimit). */
static size_t conn_client_bound(const struct core *core)
{
    if (core->opt->client_mem_limit > 0)
        return core->opt->client_mem_limit;
    size_t half = SETTINGS_RUN_GET(core->run, maxbytes) / 2;
    return half > ((size_t)32 << 20) ? half : (size_t)32 << 20;
}

/* How much this connection may owe before its requests pause. Half of the
 * bound is shared out: each connection may owe its share of that half (at
 * least the floor) whatever the others do, so clients that read keep being
 * served while others hoard. The other half is first come: a connection may
 * owe past its share only while all clients together owe less than half the
 * bound. So those that owe most (clients that stopped reading) are the ones
 * held back, and all together stay within the bound, plus a floor and one
 * reply per connection. */
static size_t conn_allowance(struct conn *c)
{
    struct core *core = c->env->core;
    size_t half = conn_client_bound(core) / 2;
    size_t used = c->env->client_bytes(core);
    int conns = __atomic_load_n(&core->curr_conns, __ATOMIC_RELAXED);
    size_t share = half / (size_t)(conns > 1 ? conns : 1);
    size_t room = half > used ? half - used : 0;
    size_t allow = reply_pending(&c->sess.reply) + room;
    if (allow < share)
        allow = share;
    if (allow > CONN_REPLY_SOFT_LIMIT)
        allow = CONN_REPLY_SOFT_LIMIT;
    if (allow < CONN_REPLY_FLOOR)
        allow = CONN_REPLY_FLOOR;
    c->sess.reply_allow = allow;
    c->sess.reply.copy_limit = allow;
    return allow;
}

/* Run more of what is buffered now? Unblocked (held -R replies) up to the
 * allowance; after the socket filled, once half of it has drained. */
static bool conn_may_run(struct conn *c)
{
    size_t allow = conn_allowance(c);
    size_t pending = reply_pending(&c->sess.reply);
    return pending <= allow / 2 || (!c->blocked && pending <= allow);
}

/* The one place the socket is read or written: plainly, or through TLS
 * (tls.c), with read(2)'s and writev(2)'s contract either way. */
static ssize_t conn_io_read(struct conn *c, void *buf, size_t n)
{
    return c->tls ? tls_conn_read(c->tls, buf, n) : read(c->fd, buf, n);
}

static ssize_t conn_io_writev(struct conn *c, const struct iovec *iov, int n)
{
    return c->tls ? tls_conn_writev(c->tls, iov, n) : writev(c->fd, iov, n);
}

/* The session's view of the socket (session.h): what it holds unread; a
 * TLS socket's bytes are records, never the requests' own. */
static long conn_queued(void *ctx, bool raw)
{
    const struct conn *c = ctx;
    return raw && c->tls ? -1 : sockopt_queued(c->fd);
}

static void conn_recv_start(struct conn *c);
static void conn_multi_stop(struct conn *c);

struct conn *conn_create(struct conn_env *w, int fd, bool tcp, int tls, const char *addr,
                         const char *listen_addr)
{
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    if (tls != TLS_MODE_NONE &&
        !(c->tls = tls_conn_new(fd, (enum tls_mode)tls, w->stats, clock_now()))) {
        log_info("<%d could not start TLS: out of memory", fd);
        close(fd);
        free(c);
        return NULL;
    }
    c->watch.kind = WATCH_CONN;
    c->watch.obj = c;
    c->env = w;
    c->fd = fd;
    c->tcp = tcp;
    c->last_active = clock_now();
    conn_input_init(&c->in, w->rbufs);
    session_init(&c->sess, w->store, w->stats, w->core->proto, w->core->run);
    if (w->core->ops)
        c->sess.ops = w->core->ops;
    session_set_peer(&c->sess, tcp ? addr : NULL);
    c->log_watch = (struct watch){WATCH_LOG, c};
    c->sess.cfd = fd;
    c->sess.queued = conn_queued;
    c->sess.queued_ctx = c;
    c->sess.loop = w->loop;
    c->sess.wake_ptr = &c->log_watch;
    c->entry.fd = fd;
    snprintf(c->entry.addr, sizeof c->entry.addr, "%s", addr);
    c->entry.listen_addr = listen_addr;
    c->entry.state = REGISTRY_NEW_CMD;
    c->entry.last_cmd = c->last_active;
    c->interest = EVENT_READ;
    c->ring = !c->tls && event_has_io(w->loop);
    if (!c->ring && event_add(w->loop, fd, c->interest, &c->watch) < 0) {
        log_info("event_add(%d): %s", fd, strerror(errno));
        proto_release(&c->sess);
        tls_conn_free(c->tls);
        close(fd);
        free(c);
        return NULL;
    }
    if (registry_add(&w->core->registry, &c->entry) < 0)
        log_info("stats conns: could not register fd %d", fd);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    w->nconns++;
    if (watch_active(WATCH_CONNEVENTS))
        watch_conn_event(c->entry.addr, true, NULL, fd);
    if (c->ring)
        conn_recv_start(c); /* may close it: the caller's count stays right */
    return c;
}

/* Before closing a ring connection's socket: out of the ring's file table.
 * Should that fail the table keeps the socket open (its client sees no
 * EOF) until the slot is reused or the worker stops: say so. */
static void conn_forget(struct conn *c)
{
    if (event_forget(c->env->loop, c->fd) < 0)
        log_info("<%d could not leave the ring's file table: %s", c->fd, strerror(errno));
}

/* What a closed connection holds: its session, buffers and socket. */
static void conn_release_io(struct conn *c)
{
    /* Aborts a value being received and releases every pin the queue holds. */
    proto_release(&c->sess);
    reply_init(&c->sess.reply);
    conn_account_reply(c);
    conn_input_release(&c->in);
    tls_conn_free(c->tls);
    c->tls = NULL;
    free(c->iov);
    c->iov = NULL;
    if (c->fd >= 0) {
        if (c->ring)
            conn_forget(c);
        close(c->fd);
    }
    c->fd = -1;
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
    c->recv_busy = c->send_busy = false;
    c->ring = false; /* its loop is gone, and with it the registered file */
    conn_zombie_done(c);
}

void conn_close(struct conn *c, const char *why)
{
    if (c->dead)
        return;
    struct conn_env *w = c->env;
    log_verbose("<%d connection closed%s%s.", c->fd, why ? ": " : "", why ? why : "");
    if (watch_active(WATCH_CONNEVENTS))
        watch_conn_event(c->entry.addr, false, why, c->fd);
    if (!c->ring)
        event_delete(w->loop, c->fd);
    registry_remove(&w->core->registry, &c->entry);
    c->dead = true;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    w->nconns--;
    __atomic_fetch_sub(&w->core->curr_conns, 1, __ATOMIC_RELAXED);
    if (c->recv_busy || c->send_busy) {
        /* The kernel still has our memory: stop its I/O and wait for the
         * completions (conn_on_complete) before releasing anything. A
         * `watch` stream has nothing in flight: it goes now. */
        event_cancel(w->loop, &c->watch, (c->recv_busy ? EVENT_RECV : 0u) | (c->send_busy ? EVENT_SEND : 0u));
        watch_remove(&c->sess.watcher);
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
        return;
    }
    conn_release_io(c);
    c->dead_next = w->dead;
    w->dead = c;
}

void conn_free(struct conn *c)
{
    free(c);
}

static void conn_set_interest(struct conn *c, unsigned want)
{
    if (c->dead)
        return;
    if (c->ring) {
        /* no readiness to ask for: a receive is started, and writes finish
         * by themselves */
        c->interest = want;
        if (want & EVENT_READ)
            conn_recv_start(c);
        else
            conn_multi_stop(c);
        return;
    }
    if (want == c->interest)
        return;
    if (event_modify(c->env->loop, c->fd, want, &c->watch) < 0) {
        log_info("event_modify(%d): %s", c->fd, strerror(errno));
        conn_close(c, "event loop error");
        return;
    }
    c->interest = want;
}

/* Read while we may owe little; write interest only after EAGAIN. A held
 * value (sink_held: its bytes are queued, its segment reserved) is read
 * whatever is owed: reading it takes no memory, and its segment must not
 * wait on the client. */
static void conn_update_interest(struct conn *c)
{
    size_t pending = reply_pending(&c->sess.reply);
    unsigned want = 0;
    bool held = c->sess.sink_len > 0 && c->sess.sink_held;
    /* The allowance is never below CONN_REPLY_FLOOR, so owing at most half
     * of that (nothing, mostly, after the read's write) reads without it:
     * it was two thirds of a read's allowances at pipeline 1, and what it
     * sets (reply_allow, copy_limit) is set again before anything runs
     * (conn_read_target, conn_may_run). */
    if (!c->closing && !conn_input_busy(&c->in) &&
        (held || pending <= CONN_REPLY_FLOOR / 2 || pending <= conn_allowance(c) / 2))
        want |= EVENT_READ;
    if (c->blocked && pending > 0)
        want |= EVENT_WRITE;
    if ((c->interest & EVENT_READ) && !(want & EVENT_READ) && !c->closing)
        log_debug("<%d owes %zu bytes: not reading until it drains", c->fd, pending);
    else if (!(c->interest & EVENT_READ) && (want & EVENT_READ))
        log_debug("<%d drained: reading again", c->fd);
    conn_set_interest(c, want);
    if (c->blocked)
        registry_set_state(&c->entry, REGISTRY_MWRITE);
    else if (c->sess.sink_len > 0)
        registry_set_state(&c->entry, REGISTRY_NREAD);
    else if (c->in.len > 0)
        registry_set_state(&c->entry, REGISTRY_READ);
    else
        registry_set_state(&c->entry, REGISTRY_NEW_CMD);
}

static int conn_watch_copy(void *q, const void *data, size_t n)
{
    return reply_copy(q, data, n);
}

/* Blocked with more owed than a client may: cut it off. */
static void conn_check_owed(struct conn *c)
{
    struct conn_env *w = c->env;
    struct reply_queue *q = &c->sess.reply;
    if (c->stall_since == 0)
        c->stall_since = clock_now();
    if (reply_pending(q) > w->core->opt->reply_queue_limit) {
        STAT_INC(w->stats, slow_reader_kills);
        log_info("<%d client owes %zu reply bytes and is not reading: cut off", c->fd,
                 reply_pending(q));
        conn_close(c, "slow reader");
    }
}

/* Completion I/O: send everything owed (IOV_MAX-bounded) in one sendmsg,
 * unless the last one is still the kernel's; its completion sends what
 * came since, and the rest of a partial send (conn_sent). */
static void conn_send_start(struct conn *c)
{
    struct conn_env *w = c->env;
    struct reply_queue *q = &c->sess.reply;
    c->flush_more = false;
    if (c->send_busy) {
        conn_check_owed(c);
        return;
    }
    if (reply_pending(q) == 0 && c->sess.watcher)
        watch_refill(c->sess.watcher, 0, conn_watch_copy, q);
    if (reply_pending(q) == 0) {
        conn_account_reply(c);
        return;
    }
    size_t segs = q->nseg - q->head;
    int need = segs < (size_t)w->iov_max ? (int)segs : w->iov_max;
    if (need > c->iov_cap) {
        int cap = c->iov_cap ? c->iov_cap : 8;
        while (cap < need)
            cap *= 2;
        if (cap > w->iov_max)
            cap = w->iov_max;
        struct iovec *iov = realloc(c->iov, (size_t)cap * sizeof *iov);
        if (!iov) {
            conn_close(c, "out of memory");
            return;
        }
        c->iov = iov;
        c->iov_cap = cap;
    }
    int n = reply_iov(q, c->iov, c->iov_cap);
    c->msg = (struct msghdr){.msg_iov = c->iov, .msg_iovlen = (size_t)n};
    if (event_send(w->loop, c->fd, &c->msg, &c->watch) < 0) {
        log_info("<%d could not start a send: %s", c->fd, strerror(errno));
        conn_close(c, "event loop error");
        return;
    }
    c->send_busy = true;
    c->blocked = true; /* until the kernel says it took them */
    if (c->stall_since == 0)
        c->stall_since = clock_now();
    STAT_INC(w->stats, write_calls);
    conn_account_reply(c);
}

void conn_flush(struct conn *c)
{
    if (c->ring) {
        conn_send_start(c);
        return;
    }
    struct conn_env *w = c->env;
    struct reply_queue *q = &c->sess.reply;
    c->blocked = false;
    c->flush_more = false;
    size_t sent = 0;
    /* A `watch` stream is composed as the socket drains. */
    while (reply_pending(q) > 0 ||
           (c->sess.watcher && watch_refill(c->sess.watcher, reply_pending(q), conn_watch_copy, q) > 0)) {
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

/* Run again next turn, after the connections whose events came this turn. */
static void conn_ready_push(struct conn *c)
{
    c->in_ready = true;
    c->ready_next = c->env->ready;
    c->env->ready = c;
}

/* TLS holds decrypted bytes the read buffer had no room for: no socket
 * event will come for them, so read again next turn if we may read. */
static bool conn_tls_input(const struct conn *c)
{
    return c->tls && (c->interest & EVENT_READ) && tls_conn_has_input(c->tls);
}

/* The reason conn_close reports for a close the session or the server asked
 * for (NULL: the client's own). */
static const char *conn_close_why(const struct conn *c)
{
    switch (c->sess.close_why) {
    case SESSION_CLOSE_NORMAL:
        return NULL;
    case SESSION_CLOSE_SHUTDOWN:
        return "server stopping";
    case SESSION_CLOSE_ERROR:
        break;
    }
    return "protocol error";
}

/* After a flush: close if asked and done, else set what to wait for. */
/* A `watch` stream with lines not yet in the reply queue? */
static bool conn_watch_lines(const struct conn *c)
{
    return c->sess.watcher && watch_has_lines(c->sess.watcher);
}

static void conn_settle(struct conn *c)
{
    if (c->dead)
        return;
    /* Replies held back (a -R yield) that nothing else would send: the
     * allowance shrank under the global bound so the resume must wait, or
     * input has stopped; or `watch` lines that waited for the socket to
     * drain (their wake-up was taken then). Send them now: either the
     * socket takes them or its write side wakes us. */
    if (!c->blocked && !c->flush_more &&
        (reply_pending(&c->sess.reply) > 0 || conn_watch_lines(c)) &&
        !(c->in.again && !c->closing && conn_may_run(c))) {
        conn_flush(c);
        if (c->dead)
            return;
    }
    if (c->closing && reply_pending(&c->sess.reply) == 0) {
        conn_close(c, conn_close_why(c));
        return;
    }
    conn_update_interest(c);
    if (c->dead || c->in_ready)
        return;
    /* No event will come for bytes we hold or a flush cut short by its
     * budget: run them next turn, after the other connections. */
    if (c->flush_more || (c->in.again && !c->closing && conn_may_run(c)) ||
        conn_tls_input(c))
        conn_ready_push(c);
}

/* Do what the input side asked for. */
static void conn_apply(struct conn *c, unsigned act)
{
    struct conn_env *w = c->env;
    if ((act & CONN_IN_QUICKACK) && c->tcp && sockopt_quickack(c->fd) == 0)
        STAT_INC(w->stats, quickacks);
    if (act & CONN_IN_CLOSE)
        c->closing = true;
    if (act & CONN_IN_YIELD) {
        STAT_INC(w->stats, conn_yields);
        log_debug("<%d -R budget spent with requests buffered: yielding", c->fd);
    }
    if (act & CONN_IN_FLUSH)
        conn_flush(c);
    else
        conn_account_reply(c);
    conn_settle(c);
}

/* Where the next read lands; CONN_IN_TO_NOWHERE after closing. */
static enum conn_in_target conn_read_target(struct conn *c, char **at, size_t *room)
{
    conn_allowance(c);
    enum conn_in_target t = conn_input_target(&c->in, &c->sess, at, room);
    if (t == CONN_IN_TO_NOWHERE) {
        log_info("<%d request line too long for the read buffer limits: closing", c->fd);
        conn_apply(c, CONN_IN_CLOSE | CONN_IN_FLUSH);
    }
    return t;
}

/* n bytes (0: end of input) were read into what target t named. */
static void conn_read_done(struct conn *c, enum conn_in_target t, size_t n)
{
    struct conn_env *w = c->env;
    STAT_INC(w->stats, read_calls);
    if (n == 0) {
        conn_apply(c, conn_input_eof(&c->in, &c->sess));
        return;
    }
    STAT_ADD(w->stats, bytes_read, (uint64_t)n);
    /* One clock read for the read: its time of arrival and the time its
     * requests run at (proto_process holds it no longer). */
    bool held = clock_hold();
    c->last_active = clock_now();
    registry_touch(&c->entry, c->last_active);
    if (t == CONN_IN_TO_SINK)
        STAT_INC(w->stats, direct_reads);
    registry_set_state(&c->entry, REGISTRY_PARSE_CMD);
    conn_apply(c, conn_input_received(&c->in, &c->sess, t, n));
    clock_release(held);
}

/* A held value (its rest queued: session_reserve_value) is read now, in
 * this turn, and the read that fills it takes what follows it too: one
 * readv for the rest, its "\r\n" and any next request. */
static ssize_t conn_read_held(struct conn *c, char *at, size_t room)
{
    char *tail;
    size_t tail_room = conn_input_tail(&c->in, &c->sess, &tail);
    if (tail_room == 0)
        return read(c->fd, at, room);
    struct iovec v[2] = {{at, room}, {tail, tail_room}};
    return readv(c->fd, v, 2);
}

/* One read where conn_input_target says; false when the socket had
 * nothing (or the connection closed). */
static bool conn_read_once(struct conn *c)
{
    struct conn_env *w = c->env;
    char *at;
    size_t room;
    enum conn_in_target t = conn_read_target(c, &at, &room);
    if (t == CONN_IN_TO_NOWHERE)
        return false;
    bool held = t == CONN_IN_TO_SINK && c->sess.sink_held && !c->tls;
    ssize_t n = held ? conn_read_held(c, at, room) : conn_io_read(c, at, room);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            /* Part of a TLS record: its sender waits for our ACK as for
             * part of a request. */
            if (c->tls && c->tcp && tls_conn_record_incomplete(c->tls) &&
                sockopt_quickack(c->fd) == 0)
                STAT_INC(w->stats, quickacks);
            return false;
        }
        conn_close(c, strerror(errno));
        return false;
    }
    conn_read_done(c, t, (size_t)n);
    return n > 0;
}

/* Reads a readiness event makes while a value it holds is still unfilled:
 * the first takes the command line, the next the rest; more only when a
 * read returned less than the socket said it held. */
#define CONN_HELD_READS 4

static void conn_on_readable(struct conn *c)
{
    for (int i = 0; i < CONN_HELD_READS; i++) {
        if (!conn_read_once(c) || c->dead || c->sess.sink_len == 0 || !c->sess.sink_held ||
            !(c->interest & EVENT_READ))
            return;
    }
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
    return (c->interest & EVENT_READ) && !c->closing && !c->recv_own && c->in.len == 0 &&
           !conn_input_busy(&c->in) && c->sess.sink_len < CONN_DIRECT_MIN &&
           !(c->in.more_queued && c->sess.sink_len > 0);
}

/* The connection stopped being idle: stop its multishot receive. What it
 * delivers until the cancellation lands is taken as any receive's is
 * (conn_take). Should the cancel not be queued, the receive still ends by
 * itself within CONN_MULTI_BYTES, and the next call asks again. */
static void conn_multi_stop(struct conn *c)
{
    if (c->recv_busy && c->recv_multi && !c->multi_stop &&
        event_cancel(c->env->loop, &c->watch, EVENT_RECV) == 0)
        c->multi_stop = true;
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
static void conn_recv_start(struct conn *c)
{
    if (c->dead || c->taking)
        return;
    bool idle = conn_idle(c);
    if (c->recv_busy) {
        if (c->recv_multi && !idle)
            conn_multi_stop(c);
        return;
    }
    if (idle && !c->multi_none && c->env->core->opt->io_uring_multishot) {
        if (event_recv_multi(c->env->loop, c->fd, CONN_MULTI_BYTES, &c->watch) == 0) {
            c->recv_busy = c->recv_multi = true;
            c->multi_stop = false;
            c->recv_target = CONN_IN_TO_BUF;
            c->recv_room = EVENT_RECV_BUF_MAX;
            STAT_INC(c->env->stats, multishot_receives);
            return;
        }
        if (errno != ENOTSUP) {
            log_info("<%d could not start a receive: %s", c->fd, strerror(errno));
            conn_close(c, "event loop error");
            return;
        }
        c->multi_none = true; /* this kernel cannot bound one: one-shot */
    }
    char *at = NULL;
    size_t room = 0;
    enum conn_in_target t = CONN_IN_TO_BUF;
    if (c->recv_own || c->in.len > 0 || c->sess.sink_len >= CONN_DIRECT_MIN ||
        (c->in.more_queued && c->sess.sink_len > 0)) {
        t = conn_read_target(c, &at, &room);
        if (t == CONN_IN_TO_NOWHERE)
            return;
    }
    /* A held value's rest is queued: the receive that fills it takes its
     * "\r\n" and what follows into the read buffer too (conn_read_held) */
    char *tail = NULL;
    size_t tail_room = 0;
    if (t == CONN_IN_TO_SINK && c->sess.sink_held)
        tail_room = conn_input_tail(&c->in, &c->sess, &tail);
    int rc;
    if (tail_room > 0) {
        c->recv_iov[0] = (struct iovec){at, room};
        c->recv_iov[1] = (struct iovec){tail, tail_room};
        rc = event_recvv(c->env->loop, c->fd, c->recv_iov, 2, &c->watch);
    } else {
        rc = event_recv(c->env->loop, c->fd, at, room, &c->watch);
    }
    if (rc < 0) {
        log_info("<%d could not start a receive: %s", c->fd, strerror(errno));
        conn_close(c, "event loop error");
        return;
    }
    c->recv_busy = true;
    c->recv_multi = false;
    c->recv_target = t;
    c->recv_room = at ? room + tail_room : EVENT_RECV_BUF_MAX;
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
    c->taking = true;
    while (n > 0 && !c->dead && !c->closing) {
        if (conn_input_busy(&c->in) || !(c->interest & EVENT_READ)) {
            STAT_INC(w->stats, read_calls);
            STAT_ADD(w->stats, bytes_read, (uint64_t)n);
            STAT_ADD(w->stats, multishot_kept_bytes, (uint64_t)n);
            c->last_active = clock_now();
            registry_touch(&c->entry, c->last_active);
            if (conn_input_keep(&c->in, data, n) < 0) {
                log_info("<%d no read buffer may hold what came: closing", c->fd);
                reply_str(&c->sess.reply, "SERVER_ERROR out of memory reading request\r\n");
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
    c->taking = false;
    if (!c->dead && (c->interest & EVENT_READ))
        conn_recv_start(c);
}

/* multi: it came from a multishot receive (which may still be started). */
static void conn_received(struct conn *c, int res, const char *data, bool multi)
{
    c->recv_own = false;
    c->in.more_queued = res > 0 && (size_t)res == c->recv_room;
    if (res == -ECANCELED) {
        /* conn_tick stopped a receive into a value's memory to check the
         * upload (it may have been cut off for others); or a multishot
         * receive was stopped */
        if (!multi)
            proto_tick(&c->sess);
        conn_settle(c);
        return;
    }
    if (res == -ENOBUFS) {
        c->recv_own = true; /* the loop's buffers are all out this turn */
        conn_settle(c);
        return;
    }
    if (res < 0) {
        if (res == -EAGAIN || res == -EINTR) {
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
    conn_read_done(c, c->recv_target, (size_t)res);
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
        reply_consume(&c->sess.reply, (size_t)res);
        c->stall_since = 0;
    }
    c->blocked = false;
    conn_account_reply(c);
    /* the rest of a partial send, and what was queued meanwhile, leave
     * from here as conn_settle decides (replies held by a -R yield wait) */
    conn_settle(c);
}

void conn_on_complete(struct conn *c, unsigned events, int res, const char *data)
{
    bool multi = c->recv_multi;
    if (events & EVENT_RECV) {
        if (!(events & EVENT_MORE)) { /* the receive's last event */
            c->recv_busy = false;
            c->recv_multi = c->multi_stop = false;
        }
    } else {
        c->send_busy = false;
    }
    if (c->dead) {
        if (!c->recv_busy && !c->send_busy)
            conn_zombie_done(c);
        return;
    }
    if (events & EVENT_RECV)
        conn_received(c, res, data, multi);
    else
        conn_sent(c, res);
}

void conn_resume(struct conn *c)
{
    if (c->dead)
        return;
    if (c->flush_more) {
        conn_flush(c);
        if (c->dead)
            return;
    }
    if (c->in.again && !c->closing && conn_may_run(c)) {
        registry_set_state(&c->entry, REGISTRY_PARSE_CMD);
        conn_apply(c, conn_input_resume(&c->in, &c->sess));
        return;
    }
    if (conn_tls_input(c)) {
        conn_on_readable(c);
        return;
    }
    conn_settle(c);
}

void conn_on_event(struct conn *c, unsigned events)
{
    if (c->dead)
        return;
    if (events & EVENT_WRITE) {
        conn_flush(c);
        conn_settle(c);
        if (c->dead)
            return;
    }
    if (events & EVENT_READ) {
        if (c->interest & EVENT_READ)
            conn_on_readable(c);
    } else if (events & EVENT_ERROR) {
        conn_close(c, "socket error");
    }
}

void conn_on_watch_wake(struct conn *c)
{
    if (c->dead || !c->sess.watcher)
        return;
    /* Always taken, even when the socket is behind and nothing is moved:
     * a pipe left readable would fire every turn. */
    watch_ack(c->sess.watcher);
    conn_on_event(c, EVENT_WRITE);
}

void conn_stop_reading(struct conn *c)
{
    if (c->dead || c->closing)
        return;
    c->closing = true;
    c->sess.close_why = SESSION_CLOSE_SHUTDOWN;
    conn_update_interest(c);
}

void conn_tick(struct conn *c, rel_time_t now)
{
    if (c->dead)
        return;
    struct conn_env *w = c->env;
    if (c->tls && tls_conn_handshake_expired(c->tls, now, w->core->opt->ssl_handshake_timeout)) {
        conn_close(c, "TLS handshake timeout");
        return;
    }
    if (c->blocked && c->stall_since && now - c->stall_since >= CONN_WRITE_STALL_SECS) {
        STAT_INC(w->stats, slow_reader_kills);
        log_info("<%d client took no reply bytes for %d s: cut off", c->fd,
                 CONN_WRITE_STALL_SECS);
        conn_close(c, "stalled reader");
        return;
    }
    /* A connection quiet for a second gives its reply-queue memory back, so
     * idle clients cost about one struct conn each. */
    if (reply_pending(&c->sess.reply) == 0 && now - c->last_active >= 1 &&
        (c->sess.reply.cap > 0 || c->sess.reply.spare || c->sess.reply.first || c->iov)) {
        reply_release(&c->sess.reply);
        reply_init(&c->sess.reply);
        conn_account_reply(c);
        if (!c->send_busy) {
            free(c->iov);
            c->iov = NULL;
            c->iov_cap = 0;
        }
    }
    /* An upload cut off for others frees its memory; while the kernel is
     * receiving into it, stop that first (conn_received then checks). */
    if (c->recv_busy && c->recv_target == CONN_IN_TO_SINK)
        event_cancel(w->loop, &c->watch, EVENT_RECV);
    else
        proto_tick(&c->sess);
    int idle = w->core->opt->idle_timeout;
    if (idle > 0 && !c->blocked && reply_pending(&c->sess.reply) == 0 &&
        now - c->last_active > (rel_time_t)idle) {
        STAT_INC(w->stats, idle_kicks);
        log_info("<%d idle for more than %d s: closing", c->fd, idle);
        conn_close(c, "idle timeout");
    }
}
