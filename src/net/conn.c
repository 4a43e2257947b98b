/* The connection: socket -> read buffer -> proto_process() -> reply queue ->
 * one writev. Everything parsed from one read is answered by one writev
 * (looping only on a partial write), never a write per reply. */
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
 * the memory this connection's queue holds: its copied bytes. Values sent by
 * reference live in item memory (-m) and are not counted again; the
 * allowance (reply_pending) still pauses a reply that pins too many. */
static void conn_account_reply(struct conn *c)
{
    size_t now = c->sess.reply.copied;
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

/* How much this connection may owe before its requests pause: up to the
 * soft limit while all clients together owe less than the bound, down to
 * the floor as they reach it, so those owing most stop being read and the
 * total stays within the bound plus one floor per connection. */
static size_t conn_allowance(struct conn *c)
{
    struct core *core = c->env->core;
    size_t used = c->env->client_bytes(core);
    size_t bound = conn_client_bound(core);
    size_t room = bound > used ? bound - used : 0;
    size_t allow = reply_pending(&c->sess.reply) + room;
    if (allow > CONN_REPLY_SOFT_LIMIT)
        allow = CONN_REPLY_SOFT_LIMIT;
    if (allow < CONN_REPLY_FLOOR)
        allow = CONN_REPLY_FLOOR;
    c->sess.reply_allow = allow;
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
    c->sess.loop = w->loop;
    c->sess.wake_ptr = &c->log_watch;
    c->entry.fd = fd;
    snprintf(c->entry.addr, sizeof c->entry.addr, "%s", addr);
    c->entry.listen_addr = listen_addr;
    c->entry.state = REGISTRY_NEW_CMD;
    c->entry.last_cmd = c->last_active;
    c->interest = EVENT_READ;
    if (event_add(w->loop, fd, c->interest, &c->watch) < 0) {
        log_info("event_add(%d): %s", fd, strerror(errno));
        session_release(&c->sess);
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
    return c;
}

void conn_close(struct conn *c, const char *why)
{
    if (c->dead)
        return;
    struct conn_env *w = c->env;
    log_verbose("<%d connection closed%s%s.", c->fd, why ? ": " : "", why ? why : "");
    if (watch_active(WATCH_CONNEVENTS))
        watch_conn_event(c->entry.addr, false, why, c->fd);
    event_delete(w->loop, c->fd);
    registry_remove(&w->core->registry, &c->entry);
    /* Aborts a value being received and releases every pin the queue holds. */
    session_release(&c->sess);
    reply_init(&c->sess.reply);
    conn_account_reply(c);
    conn_input_release(&c->in);
    tls_conn_free(c->tls);
    c->tls = NULL;
    close(c->fd);
    c->fd = -1;
    c->dead = true;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    w->nconns--;
    __atomic_fetch_sub(&w->core->curr_conns, 1, __ATOMIC_RELAXED);
    c->dead_next = w->dead;
    w->dead = c;
}

void conn_free(struct conn *c)
{
    free(c);
}

static void conn_set_interest(struct conn *c, unsigned want)
{
    if (c->dead || want == c->interest)
        return;
    if (event_modify(c->env->loop, c->fd, want, &c->watch) < 0) {
        log_info("event_modify(%d): %s", c->fd, strerror(errno));
        conn_close(c, "event loop error");
        return;
    }
    c->interest = want;
}

/* Read while we may owe little; write interest only after EAGAIN. */
static void conn_update_interest(struct conn *c)
{
    size_t pending = reply_pending(&c->sess.reply);
    unsigned want = 0;
    if (!c->closing && !conn_input_busy(&c->in) && pending <= conn_allowance(c) / 2)
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

void conn_flush(struct conn *c)
{
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
    if (c->blocked) {
        if (c->stall_since == 0)
            c->stall_since = clock_now();
        if (reply_pending(q) > w->core->opt->reply_queue_limit) {
            STAT_INC(w->stats, slow_reader_kills);
            log_info("<%d client owes %zu reply bytes and is not reading: cut off", c->fd,
                     reply_pending(q));
            conn_close(c, "slow reader");
        }
    }
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

/* After a flush: close if asked and done, else set what to wait for. */
static void conn_settle(struct conn *c)
{
    if (c->dead)
        return;
    /* Replies held back (a -R yield) that nothing else would send: the
     * allowance shrank under the global bound so the resume must wait, or
     * input has stopped. Send them now: either the socket takes them or its
     * write side wakes us. */
    if (!c->blocked && !c->flush_more && reply_pending(&c->sess.reply) > 0 &&
        !(c->in.again && !c->closing && conn_may_run(c))) {
        conn_flush(c);
        if (c->dead)
            return;
    }
    if (c->closing && reply_pending(&c->sess.reply) == 0) {
        conn_close(c, NULL);
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

static void conn_on_readable(struct conn *c)
{
    struct conn_env *w = c->env;
    char *at;
    size_t room;
    conn_allowance(c);
    enum conn_in_target t = conn_input_target(&c->in, &c->sess, &at, &room);
    if (t == CONN_IN_TO_NOWHERE) {
        log_info("<%d request line too long for the read buffer limits: closing", c->fd);
        conn_apply(c, CONN_IN_CLOSE | CONN_IN_FLUSH);
        return;
    }
    ssize_t n = conn_io_read(c, at, room);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            /* Part of a TLS record: its sender waits for our ACK as for
             * part of a request. */
            if (c->tls && c->tcp && tls_conn_record_incomplete(c->tls) &&
                sockopt_quickack(c->fd) == 0)
                STAT_INC(w->stats, quickacks);
            return;
        }
        conn_close(c, strerror(errno));
        return;
    }
    STAT_INC(w->stats, read_calls);
    if (n == 0) {
        conn_apply(c, conn_input_eof(&c->in, &c->sess));
        return;
    }
    STAT_ADD(w->stats, bytes_read, (uint64_t)n);
    c->last_active = clock_now();
    registry_touch(&c->entry, c->last_active);
    if (t == CONN_IN_TO_SINK)
        STAT_INC(w->stats, direct_reads);
    registry_set_state(&c->entry, REGISTRY_PARSE_CMD);
    conn_apply(c, conn_input_received(&c->in, &c->sess, t, (size_t)n));
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

void conn_stop_reading(struct conn *c)
{
    if (c->dead || c->closing)
        return;
    c->closing = true;
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
        (c->sess.reply.cap > 0 || c->sess.reply.spare || c->sess.reply.first)) {
        reply_release(&c->sess.reply);
        reply_init(&c->sess.reply);
    }
    session_tick(&c->sess); /* an upload cut off for others frees its memory */
    int idle = w->core->opt->idle_timeout;
    if (idle > 0 && !c->blocked && reply_pending(&c->sess.reply) == 0 &&
        now - c->last_active > (rel_time_t)idle) {
        STAT_INC(w->stats, idle_kicks);
        log_info("<%d idle for more than %d s: closing", c->fd, idle);
        conn_close(c, "idle timeout");
    }
}
