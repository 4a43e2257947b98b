/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection: socket -> read buffer -> proto_process() -> reply queue ->
 * one writev. Everything parsed from one read is answered by one writev
 * (looping only on a partial write), never a write per reply.
 *
 * This file is what both I/O models share: the life of a connection
 * (create, close, free), what it waits for (interest), how much it may owe
 * (allowance), what it does after input (apply, settle), and the tick.
 * The system calls are the paths': conn_ready.c reads and writes on
 * readiness (read/readv/writev, or TLS through tls.c); conn_uring.c starts
 * receives and sends on an io_uring loop and takes their completions (a
 * plaintext connection there). Both hand what they read to the input side
 * (conn_input.c) through conn_read_target and conn_read_done. This file
 * reaches a path only through its table (c->path, conn_path.h), which the
 * worker chose: the paths call this file, never the other way. */
#include "net/conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event/event.h"
#include "base/log.h"
#include "net/conn_path.h"
#include "net/worker_pool.h"
#include "net/sockopt.h"
#include "net/tls.h"
#include "proto/proto.h"
#include "net/net_options.h"
#include "settings/settings_run.h"
#include "stats/stats.h"
#include "watch/watch.h"


/* The global bound on memory owed to clients (-o client_mem_limit): half
 * of -m, at least 32 MiB, unless set. Read per call: -m changes at run time
 * (cache_memlimit). */
static size_t conn_client_bound(const struct worker_pool *pool)
{
    if (pool->opt->client_mem_limit > 0)
        return pool->opt->client_mem_limit;
    size_t half = SETTINGS_RUN_GET(pool->run, maxbytes) / 2;
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
    struct worker_pool *pool = c->env->pool;
    size_t half = conn_client_bound(pool) / 2;
    size_t used = c->env->client_bytes(pool);
    int conns = __atomic_load_n(&pool->curr_conns, __ATOMIC_RELAXED);
    size_t share = half / (size_t)(conns > 1 ? conns : 1);
    size_t room = half > used ? half - used : 0;
    size_t allow = proto_owed(&c->sess) + room;
    if (allow < share)
        allow = share;
    if (allow > CONN_REPLY_SOFT_LIMIT)
        allow = CONN_REPLY_SOFT_LIMIT;
    if (allow < CONN_REPLY_FLOOR)
        allow = CONN_REPLY_FLOOR;
    proto_set_allowance(&c->sess, allow);
    return allow;
}

/* Run more of what is buffered now? Unblocked (held -R replies) up to the
 * allowance; after the socket filled, once half of it has drained. */
static bool conn_may_run(struct conn *c)
{
    if (c->in.waiting)
        return false; /* its wake puts it on the ready list */
    size_t allow = conn_allowance(c);
    size_t pending = proto_owed(&c->sess);
    return pending <= allow / 2 || (!c->blocked && pending <= allow);
}

/* The session's view of the socket (session.h): what it holds unread; a
 * TLS socket's bytes are records, never the requests' own. */
static long conn_queued(void *ctx, bool raw)
{
    const struct conn *c = ctx;
    return raw && c->rd.tls ? -1 : sockopt_queued(c->fd);
}

static void conn_ready_push(struct conn *c);

/* The flash reads its request waited for are in (proto_flash.h): run it
 * again this turn, after the connections whose events came. */
static void conn_flash_woken(void *arg)
{
    struct conn *c = arg;
    conn_input_woken(&c->in);
    if (!c->dead && !c->in_ready)
        conn_ready_push(c);
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
        !(c->rd.tls = tls_conn_new(fd, (enum tls_mode)tls, w->stats, clock_now()))) {
        log_info("<%d could not start TLS: out of memory", fd);
        close(fd);
        free(c);
        return NULL;
    }
    c->watch.kind = TOKEN_CONN;
    c->watch.obj = c;
    c->env = w;
    c->fd = fd;
    c->tcp = tcp;
    c->last_active = clock_now();
    conn_input_init(&c->in, w->rbufs);
    session_init(&c->sess, w->store, w->stats, w->pool->proto, w->pool->run);
    session_set_peer(&c->sess, tcp ? addr : NULL);
    c->log_watch = (struct loop_token){TOKEN_WATCH, c};
    struct proto_conn_info ci = {.fd = fd,
                                 .queued = conn_queued,
                                 .queued_ctx = c,
                                 .loop = w->loop,
                                 .wake_ptr = &c->log_watch,
                                 .ops = w->pool->ops,
                                 .flash = w->flash,
                                 .flash_wake = conn_flash_woken,
                                 .flash_arg = c};
    proto_attach(&c->sess, &ci);
    c->entry.fd = fd;
    snprintf(c->entry.addr, sizeof c->entry.addr, "%s", addr);
    c->entry.listen_addr = listen_addr;
    c->entry.state = REGISTRY_NEW_CMD;
    c->entry.last_cmd = c->last_active;
    c->interest = EVENT_READ;
    c->path = c->rd.tls ? w->tls_path : w->plain_path;
    if (proto_attach_failed(&c->sess, &ci) || c->path->open(c) < 0) {
        proto_release(&c->sess);
        tls_conn_free(c->rd.tls);
        close(fd);
        free(c);
        return NULL;
    }
    if (registry_add(&w->pool->registry, &c->entry) < 0)
        log_info("stats conns: could not register fd %d", fd);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    w->nconns++;
    if (watch_active(WATCH_CONNEVENTS))
        watch_conn_event(c->entry.addr, true, NULL, fd);
    /* a completion path starts its receive: may close it, the caller's
     * count stays right */
    c->path->want(c, c->interest);
    return c;
}

/* What a closed connection holds: its session, buffers and socket. */
void conn_release_io(struct conn *c)
{
    /* Aborts a value being received and releases every pin the queue holds. */
    proto_release(&c->sess);
    reply_init(proto_reply(&c->sess));
    conn_account_reply(c);
    conn_input_release(&c->in);
    tls_conn_free(c->rd.tls);
    c->rd.tls = NULL;
    c->path->release(c);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void conn_close(struct conn *c, const char *why)
{
    if (c->dead)
        return;
    struct conn_env *w = c->env;
    log_verbose("<%d connection closed%s%s.", c->fd, why ? ": " : "", why ? why : "");
    if (watch_active(WATCH_CONNEVENTS))
        watch_conn_event(c->entry.addr, false, why, c->fd);
    registry_remove(&w->pool->registry, &c->entry);
    c->dead = true;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    w->nconns--;
    __atomic_fetch_sub(&w->pool->curr_conns, 1, __ATOMIC_RELAXED);
    if (c->path->close(c))
        return; /* released when its started I/O completes */
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
    if (!c->dead)
        c->path->want(c, want);
}

void conn_note_state(struct conn *c)
{
    if (c->blocked)
        registry_set_state(&c->entry, REGISTRY_MWRITE);
    else if (proto_sink_wait(&c->sess) > 0)
        registry_set_state(&c->entry, REGISTRY_NREAD);
    else if (c->in.len > 0)
        registry_set_state(&c->entry, REGISTRY_READ);
    else
        registry_set_state(&c->entry, REGISTRY_NEW_CMD);
}

/* Read while we may owe little; write interest only after EAGAIN. A held
 * value (sink_held: its bytes are queued, its segment reserved) is read
 * whatever is owed: reading it takes no memory, and its segment must not
 * wait on the client. */
static void conn_update_interest(struct conn *c)
{
    size_t pending = proto_owed(&c->sess);
    unsigned want = 0;
    bool held = proto_sink_held(&c->sess);
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
    conn_note_state(c);
}

int conn_watch_copy(void *q, const void *data, size_t n)
{
    return reply_copy(q, data, n);
}

/* Blocked with more owed than a client may: cut it off. */
void conn_check_owed(struct conn *c)
{
    struct conn_env *w = c->env;
    struct reply_queue *q = proto_reply(&c->sess);
    if (c->stall_since == 0)
        c->stall_since = clock_now();
    if (reply_pending(q) > w->pool->opt->reply_queue_limit) {
        STAT_INC(w->stats, slow_reader_kills);
        log_info("<%d client owes %zu reply bytes and is not reading: cut off", c->fd,
                 reply_pending(q));
        conn_close(c, "slow reader");
    }
}

/* Public: at shutdown. */
void conn_flush(struct conn *c)
{
    conn_flush_now(c);
}

/* Run again next turn, after the connections whose events came this turn. */
static void conn_ready_push(struct conn *c)
{
    c->in_ready = true;
    c->ready_next = c->env->ready;
    c->env->ready = c;
}

/* The reason conn_close reports for a close the session or the server asked
 * for (NULL: the client's own). */
static const char *conn_close_why(const struct conn *c)
{
    switch (proto_close_reason(&c->sess)) {
    case SESSION_CLOSE_NORMAL:
        return NULL;
    case SESSION_CLOSE_SHUTDOWN:
        return "server stopping";
    case SESSION_CLOSE_ERROR:
        break;
    }
    return "protocol error";
}

/* A `watch` stream with lines not yet in the reply queue? */
static bool conn_watch_lines(const struct conn *c)
{
    return proto_watcher(&c->sess) && watch_has_lines(proto_watcher(&c->sess));
}

/* After a flush: close if asked and done, else set what to wait for. */
void conn_settle(struct conn *c)
{
    if (c->dead)
        return;
    /* Replies held back (a -R yield) that nothing else would send: the
     * allowance shrank under the global bound so the resume must wait, or
     * input has stopped; or `watch` lines that waited for the socket to
     * drain (their wake-up was taken then). Send them now: either the
     * socket takes them or its write side wakes us. */
    if (!c->blocked && !c->flush_more &&
        (proto_owed(&c->sess) > 0 || conn_watch_lines(c)) &&
        !(c->in.again && !c->closing && conn_may_run(c))) {
        conn_flush_now(c);
        if (c->dead)
            return;
    }
    if (c->closing && proto_owed(&c->sess) == 0) {
        conn_close(c, conn_close_why(c));
        return;
    }
    conn_update_interest(c);
    if (c->dead || c->in_ready)
        return;
    /* No event will come for bytes we hold or a flush cut short by its
     * budget: run them next turn, after the other connections. */
    if (c->flush_more || (c->in.again && !c->closing && conn_may_run(c)) ||
        conn_ready_pending(c))
        conn_ready_push(c);
}

/* Do what the input side asked for. */
void conn_apply(struct conn *c, unsigned act)
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
        conn_flush_now(c);
    else
        conn_account_reply(c);
    conn_settle(c);
}

/* Where the next read lands; CONN_IN_TO_NOWHERE after closing. A read
 * buffer grows (a request line longer than it) as a reply may be owed
 * (conn_allowance): up to the connection's share of half the bound
 * whatever the others hold, so an honest multiget is read while others
 * hoard, and past it only while all clients together hold less than half
 * (each worker reads the sum on its own: the other half is what racing
 * growths may take). 100 clients each sending an unending 12 MiB line
 * held 1.6 GB of read buffers at -m 64. */
enum conn_in_target conn_read_target(struct conn *c, char **at, size_t *room)
{
    conn_allowance(c);
    size_t grow_room = SIZE_MAX; /* the sums are read only when it must grow */
    if (conn_input_full(&c->in)) {
        struct worker_pool *pool = c->env->pool;
        size_t half = conn_client_bound(pool) / 2, used = c->env->client_bytes(pool);
        int conns = __atomic_load_n(&pool->curr_conns, __ATOMIC_RELAXED);
        size_t share = half / (size_t)(conns > 1 ? conns : 1);
        size_t first_come = half > used ? half - used : 0;
        size_t own = share > c->in.size ? share - c->in.size : 0;
        grow_room = first_come > own ? first_come : own;
    }
    enum conn_in_target t = conn_input_target(&c->in, &c->sess, grow_room, at, room);
    if (t == CONN_IN_TO_NOWHERE) {
        log_info("<%d request line too long for the read buffer limits: closing", c->fd);
        conn_apply(c, CONN_IN_CLOSE | CONN_IN_FLUSH);
    }
    return t;
}

/* n bytes (0: end of input) were read into what target t named. */
void conn_read_done(struct conn *c, enum conn_in_target t, size_t n)
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

void conn_resume(struct conn *c)
{
    if (c->dead)
        return;
    if (c->flush_more) {
        conn_flush_now(c);
        if (c->dead)
            return;
    }
    if (c->in.again && !c->closing && conn_may_run(c)) {
        registry_set_state(&c->entry, REGISTRY_PARSE_CMD);
        conn_apply(c, conn_input_resume(&c->in, &c->sess));
        return;
    }
    if (conn_ready_pending(c)) {
        c->path->read(c);
        return;
    }
    conn_settle(c);
}

void conn_on_watch_wake(struct conn *c)
{
    if (c->dead || !proto_watcher(&c->sess))
        return;
    /* Always taken, even when the socket is behind and nothing is moved:
     * a pipe left readable would fire every turn. */
    watch_ack(proto_watcher(&c->sess));
    conn_flush_now(c);
    conn_settle(c);
}

void conn_stop_reading(struct conn *c)
{
    if (c->dead || c->closing)
        return;
    c->closing = true;
    proto_set_close(&c->sess, SESSION_CLOSE_SHUTDOWN);
    conn_update_interest(c);
}

void conn_tick(struct conn *c, rel_time_t now)
{
    if (c->dead)
        return;
    struct conn_env *w = c->env;
    if (c->rd.tls && tls_conn_handshake_expired(c->rd.tls, now, w->pool->opt->ssl_handshake_timeout)) {
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
    struct reply_queue *q = proto_reply(&c->sess);
    if (reply_pending(q) == 0 && now - c->last_active >= 1) {
        if (q->cap > 0 || q->spare || q->first) {
            reply_release(q);
            reply_init(q);
        }
        conn_account_reply(c);
        c->path->trim(c);
    }
    /* An upload cut off for others frees its memory; while the kernel is
     * receiving into it, stop that first (conn_received then checks). */
    if (!c->path->stop_upload(c))
        proto_tick(&c->sess);
    int idle = w->pool->opt->idle_timeout;
    if (idle > 0 && !c->blocked && proto_owed(&c->sess) == 0 &&
        now - c->last_active > (rel_time_t)idle) {
        STAT_INC(w->stats, idle_kicks);
        log_info("<%d idle for more than %d s: closing", c->fd, idle);
        conn_close(c, "idle timeout");
    }
}
