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
#include "proto/proto.h"
#include "settings.h"

/* Keep the worker's reply-bytes gauge (stats nodelay) in step with this
 * connection's queue. */
static void conn_account_reply(struct conn *c)
{
    size_t now = reply_pending(&c->sess.reply);
    if (now == c->accounted)
        return;
    size_t *gauge = &c->w->reply_bytes;
    size_t v = __atomic_load_n(gauge, __ATOMIC_RELAXED);
    __atomic_store_n(gauge, v + now - c->accounted, __ATOMIC_RELAXED);
    c->accounted = now;
}

static void conn_account_rbuf(struct conn *c, long delta)
{
    size_t *gauge = &c->w->rbuf_bytes;
    size_t v = __atomic_load_n(gauge, __ATOMIC_RELAXED);
    __atomic_store_n(gauge, v + (size_t)delta, __ATOMIC_RELAXED);
}

struct conn *conn_create(struct worker *w, int fd, bool tcp, const char *addr,
                         const char *listen_addr)
{
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->watch.kind = WATCH_CONN;
    c->watch.obj = c;
    c->w = w;
    c->fd = fd;
    c->tcp = tcp;
    c->last_active = clock_now();
    session_init(&c->sess, w->store, &w->stats, w->core->settings);
    if (w->core->ops)
        c->sess.ops = w->core->ops;
    c->entry.fd = fd;
    snprintf(c->entry.addr, sizeof c->entry.addr, "%s", addr);
    c->entry.listen_addr = listen_addr;
    c->entry.state = REGISTRY_NEW_CMD;
    c->entry.last_cmd = c->last_active;
    c->interest = EVENT_READ;
    if (event_add(w->loop, fd, c->interest, &c->watch) < 0) {
        log_info("event_add(%d): %s", fd, strerror(errno));
        session_release(&c->sess);
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
    return c;
}

static void conn_rbuf_drop(struct conn *c)
{
    if (!c->rbuf)
        return;
    if (c->rsize == CONN_RBUF_SIZE) {
        worker_buf_put(c->w, c->rbuf);
    } else {
        free(c->rbuf);
    }
    conn_account_rbuf(c, -(long)c->rsize);
    c->rbuf = NULL;
    c->rsize = c->rpos = c->rlen = 0;
}

void conn_close(struct conn *c, const char *why)
{
    if (c->dead)
        return;
    struct worker *w = c->w;
    log_verbose("<%d connection closed%s%s.", c->fd, why ? ": " : "", why ? why : "");
    event_delete(w->loop, c->fd);
    registry_remove(&w->core->registry, &c->entry);
    /* Aborts a value being received and releases every pin the queue holds. */
    session_release(&c->sess);
    reply_init(&c->sess.reply);
    conn_account_reply(c);
    conn_rbuf_drop(c);
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
    if (event_modify(c->w->loop, c->fd, want, &c->watch) < 0) {
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
    if (!c->closing && pending <= CONN_REPLY_SOFT_LIMIT)
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
    else if (c->rlen > 0)
        registry_set_state(&c->entry, REGISTRY_READ);
    else
        registry_set_state(&c->entry, REGISTRY_NEW_CMD);
}

void conn_flush(struct conn *c)
{
    struct worker *w = c->w;
    struct reply_queue *q = &c->sess.reply;
    c->blocked = false;
    while (reply_pending(q) > 0) {
        int n = reply_iov(q, w->iov, WORKER_IOV_MAX);
        ssize_t wr = writev(c->fd, w->iov, n);
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
        STAT_INC(&w->stats, write_calls);
        STAT_ADD(&w->stats, bytes_written, (uint64_t)wr);
        reply_consume(q, (size_t)wr);
        c->stall_since = 0;
    }
    conn_account_reply(c);
    if (c->blocked) {
        if (c->stall_since == 0)
            c->stall_since = clock_now();
        if (reply_pending(q) > w->core->settings->reply_queue_limit) {
            STAT_INC(&w->stats, slow_reader_kills);
            log_info("<%d client owes %zu reply bytes and is not reading: cut off", c->fd,
                     reply_pending(q));
            conn_close(c, "slow reader");
        }
    }
}

/* After a flush: close if asked and done, else set what to wait for. */
static void conn_settle(struct conn *c)
{
    if (c->dead)
        return;
    if (c->closing && reply_pending(&c->sess.reply) == 0) {
        conn_close(c, NULL);
        return;
    }
    conn_update_interest(c);
    /* Complete requests still buffered (-R yield) and not owing too much:
     * run them next turn, as no read event will come for bytes we hold. */
    if (c->yielded && !c->closing && !c->in_ready &&
        reply_pending(&c->sess.reply) <= CONN_REPLY_SOFT_LIMIT)
        worker_ready_push(c->w, c);
}

/* Hand buffered bytes to the protocol; true when it yielded (-R). */
static enum proto_status conn_process(struct conn *c)
{
    enum proto_status st = PROTO_OK;
    registry_set_state(&c->entry, REGISTRY_PARSE_CMD);
    while (c->rlen > 0) {
        size_t consumed = 0;
        st = proto_process(&c->sess, c->rbuf + c->rpos, c->rlen, &consumed);
        if (consumed > c->rlen)
            consumed = c->rlen; /* defensive: never trust a count past the data */
        c->rpos += consumed;
        c->rlen -= consumed;
        if (st != PROTO_OK || consumed == 0)
            break;
    }
    c->yielded = st == PROTO_YIELD;
    if (c->rlen == 0)
        conn_rbuf_drop(c);
    return st;
}

/* Everything one read gave has been processed: acknowledge early if a
 * request is incomplete, then one writev for all the replies. */
static void conn_after_input(struct conn *c, enum proto_status st)
{
    struct worker *w = c->w;
    /* After a yield the buffered bytes are complete requests, not a wait. */
    bool incomplete = (c->rlen > 0 && st != PROTO_YIELD) || c->sess.sink_len > 0;
    if (c->tcp && incomplete) {
        if (sockopt_quickack(c->fd) == 0)
            STAT_INC(&w->stats, quickacks);
    }
    if (st == PROTO_CLOSE)
        c->closing = true;
    /* A -R yield gives the turn to other connections but keeps this read's
     * replies together: they leave in one writev once its last request has
     * run, unless they already owe more than the soft limit. */
    if (st != PROTO_YIELD || reply_pending(&c->sess.reply) > CONN_REPLY_SOFT_LIMIT)
        conn_flush(c);
    if (c->dead)
        return;
    if (st == PROTO_YIELD) {
        STAT_INC(&w->stats, conn_yields);
        log_debug("<%d -R budget spent with requests buffered: yielding", c->fd);
    }
    conn_settle(c);
}

/* Room at the end of the read buffer: reuse, compact, or grow. */
static int conn_rbuf_room(struct conn *c)
{
    if (!c->rbuf) {
        c->rbuf = worker_buf_get(c->w);
        if (!c->rbuf)
            return -1;
        c->rsize = CONN_RBUF_SIZE;
        c->rpos = c->rlen = 0;
        conn_account_rbuf(c, (long)c->rsize);
        return 0;
    }
    if (c->rpos + c->rlen < c->rsize)
        return 0;
    if (c->rpos > 0) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen);
        c->rpos = 0;
        return 0;
    }
    if (c->rsize >= CONN_RBUF_MAX)
        return -1;
    size_t nsize = c->rsize * 2;
    /* -o read_buf_mem_limit (MB, 0 = none): each worker's share of it bounds
     * how much its connections' grown buffers may hold together. */
    const struct settings *set = c->w->core->settings;
    if (set->read_buf_mem_limit > 0) {
        size_t share = ((size_t)set->read_buf_mem_limit << 20) / (size_t)c->w->core->nworkers;
        size_t held = __atomic_load_n(&c->w->rbuf_bytes, __ATOMIC_RELAXED);
        if (held + nsize - c->rsize > share)
            return -1;
    }
    char *n = malloc(nsize);
    if (!n)
        return -1;
    memcpy(n, c->rbuf, c->rlen);
    if (c->rsize == CONN_RBUF_SIZE)
        worker_buf_put(c->w, c->rbuf);
    else
        free(c->rbuf);
    conn_account_rbuf(c, (long)(nsize - c->rsize));
    c->rbuf = n;
    c->rsize = nsize;
    return 0;
}

static void conn_on_readable(struct conn *c)
{
    struct worker *w = c->w;
    ssize_t n;
    /* A large value goes straight into item memory; a small one is read
     * with what follows it (its "\r\n", the next requests) in one call. */
    bool direct = c->sess.sink_len >= CONN_DIRECT_MIN && c->rlen == 0;
    if (direct) {
        /* A value larger than what is buffered: straight into item memory. */
        n = read(c->fd, c->sess.sink, c->sess.sink_len);
    } else {
        if (conn_rbuf_room(c) < 0) {
            /* memcached answers this and closes, too */
            log_info("<%d request line too long for the read buffer limits: closing", c->fd);
            reply_str(&c->sess.reply, "SERVER_ERROR out of memory reading request\r\n");
            c->closing = true;
            conn_flush(c);
            conn_settle(c);
            return;
        }
        n = read(c->fd, c->rbuf + c->rpos + c->rlen, c->rsize - c->rpos - c->rlen);
    }
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        conn_close(c, strerror(errno));
        return;
    }
    STAT_INC(&w->stats, read_calls);
    if (n == 0) {
        /* The client is gone or half-closed: answer every complete request
         * it sent, those an -R yield held back included (a half-closed
         * client still reads), then close. */
        while (c->yielded && c->rlen > 0 && conn_process(c) == PROTO_YIELD)
            ;
        c->closing = true;
        conn_flush(c);
        conn_settle(c);
        return;
    }
    STAT_ADD(&w->stats, bytes_read, (uint64_t)n);
    c->last_active = clock_now();
    registry_touch(&c->entry, c->last_active);
    enum proto_status st = PROTO_OK;
    if (direct) {
        STAT_INC(&w->stats, direct_reads);
        registry_set_state(&c->entry, REGISTRY_PARSE_CMD);
        proto_sink_filled(&c->sess, (size_t)n);
    } else {
        c->rlen += (size_t)n;
        st = conn_process(c);
    }
    conn_after_input(c, st);
}

void conn_resume(struct conn *c)
{
    if (c->dead || c->closing)
        return;
    if (reply_pending(&c->sess.reply) > CONN_REPLY_SOFT_LIMIT)
        return; /* still owes too much; the write side re-queues it */
    if (!c->yielded || c->rlen == 0)
        return;
    enum proto_status st = conn_process(c);
    conn_after_input(c, st);
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
    struct worker *w = c->w;
    if (c->blocked && c->stall_since && now - c->stall_since >= CONN_WRITE_STALL_SECS) {
        STAT_INC(&w->stats, slow_reader_kills);
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
    int idle = w->core->settings->idle_timeout;
    if (idle > 0 && !c->blocked && reply_pending(&c->sess.reply) == 0 &&
        now - c->last_active > (rel_time_t)idle) {
        STAT_INC(&w->stats, idle_kicks);
        log_info("<%d idle for more than %d s: closing", c->fd, idle);
        conn_close(c, "idle timeout");
    }
}
