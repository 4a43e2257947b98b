/* SPDX-License-Identifier: BSD-3-Clause */
/* A worker: its event loop, accepting, the -R ready list and the once-a-second
 * housekeeping (idle timeout, stalled readers, re-enabling accept). */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "net/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "event/event.h"
#include "base/log.h"
#include "net/conn.h"
#include "net/worker_pool.h"
#include "net/sockopt.h"
#include "net/udp.h"
#include "proto/proto_flash.h"
#include "net/net_options.h"
#include "store/store.h"
#include "store/store_flash.h"
#include "watch/watch.h"

#define WORKER_EVENTS 256
#define WORKER_ACCEPT_BATCH 64
/* How long a graceful stop waits for clients to take their replies. */
#define WORKER_DRAIN_MS 2000
/* Give freed client memory back to the OS once what this worker's clients
 * hold has dropped this much below its last high point. */
#define WORKER_TRIM_DROP (8u << 20)
#define WORKER_QUIET_BYTES (64u << 10)
/* How long a stop waits for flash reads still on the ring (the kernel's
 * buffers until they end), as the store waits for its read threads'. */
#define WORKER_FLASH_SETTLE_MS 30000

static const char worker_too_many[] = "ERROR Too many open connections\r\n";

/* conn_env.client_bytes: what all workers' clients hold (each gauge is
 * written by its own worker and read here without a lock): reply queues,
 * read buffers, and small values still arriving (the large ones have their
 * own bound, upload_limit). */
static size_t worker_client_bytes(const struct worker_pool *pool)
{
    size_t used = store_upload_small_bytes(pool->store);
    for (int i = 0; i < pool->nworkers; i++) {
        used += __atomic_load_n(&pool->workers[i].reply_bytes, __ATOMIC_RELAXED);
        used += __atomic_load_n(&pool->workers[i].rbuf_bytes, __ATOMIC_RELAXED);
    }
    return used;
}

/* store_flash.h's ring hook: the flash tier's device reads go out on this
 * worker's own ring (io_uring), as its receives and sends do, and come back
 * as EVENT_FILE events (worker_flash_event). */
static int worker_flash_start(void *arg, struct flash_read *r, int fd, void *buf, uint32_t len,
                              uint64_t pos, unsigned delay_ms)
{
    struct worker *w = arg;
    return event_pread(w->loop, fd, buf, len, pos, delay_ms, r) == 0 ? 0 : -errno;
}

/* An event that is a flash read's end (its pointer is the read, not a
 * loop token): completed here, true; anything else, false. */
static bool worker_flash_event(const struct event_fired *ev)
{
    if (!(ev->events & EVENT_FILE))
        return false;
    store_flash_ring_done(ev->ptr, ev->res);
    return true;
}

int worker_init(struct worker *w, struct worker_pool *pool, int id)
{
    memset(w, 0, sizeof *w);
    w->pool = pool;
    w->id = id;
    w->wake[0] = w->wake[1] = -1;
    /* -o read_buf_mem_limit (MB, 0 = none): each worker's share of it bounds
     * how much its connections' read buffers may hold together. */
    size_t rlimit = pool->opt->read_buf_mem_limit > 0
                        ? ((size_t)pool->opt->read_buf_mem_limit << 20) / (size_t)pool->opt->num_threads
                        : 0;
    rbuf_pool_init(&w->rbufs, &w->rbuf_bytes, rlimit);
    if (event_loop_create(&w->loop) < 0)
        return -1;
    if (pipe(w->wake) < 0)
        goto fail;
    for (int i = 0; i < 2; i++)
        if (sockopt_nonblock(w->wake[i]) < 0 || fcntl(w->wake[i], F_SETFD, FD_CLOEXEC) < 0)
            goto fail;
    w->wake_watch = (struct loop_token){TOKEN_WAKE, w};
    if (event_add(w->loop, w->wake[0], EVENT_READ, &w->wake_watch) < 0)
        goto fail;
    w->store = store_ctx_create(pool->store);
    if (!w->store)
        goto fail;
    if (flash_loop_create(w->store, &w->flash) < 0)
        goto fail;
    /* The flash tier's completions (proto_flash.h): every backend watches
     * them as it does any fd, so no worker waits on the disk. */
    w->flash_watch = (struct loop_token){TOKEN_FLASH, w};
    for (int i = 0; w->flash && i < 2; i++) {
        int fd = flash_loop_fd(w->flash, i);
        if (fd >= 0 && event_add(w->loop, fd, EVENT_READ, &w->flash_watch) < 0)
            goto fail;
    }
    /* With a ring, the reads themselves go there (O_DIRECT, no thread);
     * the read threads take what it refuses, and every read on epoll. */
    if (event_has_io(w->loop))
        store_flash_use_ring(w->store, &(struct store_flash_ring){worker_flash_start, w});
    w->env = (struct conn_env){
        .pool = pool,
        .loop = w->loop,
        .store = w->store,
        .flash = w->flash,
        .stats = &w->stats,
        .rbufs = &w->rbufs,
        .iov = w->iov,
        .iov_max = WORKER_IOV_MAX,
        .reply_bytes = &w->reply_bytes,
        .client_bytes = worker_client_bytes,
        .plain_path = event_has_io(w->loop) ? &conn_uring_path : &conn_ready_path,
        .tls_path = &conn_ready_path,
    };
    size_t nl = pool->listeners.n;
    w->listen_watch = calloc(nl ? nl : 1, sizeof *w->listen_watch);
    if (!w->listen_watch)
        goto fail;
    for (size_t i = 0; i < nl; i++) {
        bool udp = pool->listeners.l[i].udp;
        if (udp && !w->udp_buf && !(w->udp_buf = malloc(WORKER_UDP_BUF)))
            goto fail;
        w->listen_watch[i] = (struct loop_token){udp ? TOKEN_UDP : TOKEN_LISTENER, &pool->listeners.l[i]};
        if (event_add(w->loop, pool->listeners.l[i].fd, EVENT_READ | EVENT_EXCLUSIVE,
                      &w->listen_watch[i]) < 0)
            goto fail;
    }
    w->listening = true;
    return 0;
fail:
    log_error("worker %d: setup failed: %s", id, strerror(errno));
    worker_release(w);
    return -1;
}

void worker_release(struct worker *w)
{
    while (w->env.conns)
        conn_close(w->env.conns, NULL);
    w->env.ready = NULL; /* every connection is closed: all are on the dead list */
    /* ...or, with I/O still started (a stop that could not wait for it),
     * zombies: the ring's end drops that I/O, then their memory can go. */
    if (w->env.zombies) {
        event_loop_destroy(&w->loop);
        while (w->env.zombies)
            conn_zombie_release(w->env.zombies);
    }
    while (w->env.dead) {
        struct conn *c = w->env.dead;
        w->env.dead = c->dead_next;
        conn_free(c);
    }
    rbuf_pool_release(&w->rbufs);
    flash_loop_destroy(&w->flash); /* after the sessions that wait on it */
    if (w->store)
        store_ctx_destroy(&w->store);
    event_loop_destroy(&w->loop);
    for (int i = 0; i < 2; i++)
        if (w->wake[i] >= 0)
            close(w->wake[i]);
    w->wake[0] = w->wake[1] = -1;
    free(w->listen_watch);
    w->listen_watch = NULL;
    free(w->udp_buf);
    w->udp_buf = NULL;
}

void worker_wake(struct worker *w)
{
    char b = 1;
    ssize_t rc = write(w->wake[1], &b, 1);
    (void)rc; /* a full pipe already means "wake up" */
}


static void worker_listen_enable(struct worker *w, bool on)
{
    struct listener_set *ls = &w->pool->listeners;
    for (size_t i = 0; i < ls->n; i++) {
        if (on)
            event_add(w->loop, ls->l[i].fd, EVENT_READ | EVENT_EXCLUSIVE, &w->listen_watch[i]);
        else
            event_delete(w->loop, ls->l[i].fd);
    }
    w->listening = on;
}

static void worker_accept(struct worker *w, struct listener *l)
{
    struct worker_pool *pool = w->pool;
    for (int i = 0; i < WORKER_ACCEPT_BATCH; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
#ifdef __linux__
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
#else
        int fd = accept(l->fd, (struct sockaddr *)&ss, &len);
        if (fd >= 0 && (sockopt_nonblock(fd) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)) {
            close(fd);
            continue;
        }
#endif
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                /* Out of descriptors: stop accepting for a second rather than
                 * spin on a listener that stays readable. */
                log_info("accept(): %s; pausing accept for 1 s", strerror(errno));
                __atomic_fetch_add(&pool->listen_disabled, 1, __ATOMIC_RELAXED);
                __atomic_store_n(&pool->accepting, 0, __ATOMIC_RELAXED);
                worker_listen_enable(w, false);
                w->relisten_at = clock_now() + 1;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
                log_info("accept(): %s", strerror(errno));
            }
            return; /* EAGAIN: another worker took it, or none left */
        }
        int maxconns = pool->opt->maxconns;
        if (__atomic_fetch_add(&pool->curr_conns, 1, __ATOMIC_RELAXED) >= maxconns) {
            __atomic_fetch_sub(&pool->curr_conns, 1, __ATOMIC_RELAXED);
            /* counted before the client can see it refused and ask stats */
            STAT_INC(&w->stats, rejected_connections);
            ssize_t rc = write(fd, worker_too_many, sizeof worker_too_many - 1);
            (void)rc; /* best effort, as memcached */
            close(fd);
            log_info("Too many open connections (-c %d)", maxconns);
            continue;
        }
        if (l->tcp && sockopt_nodelay(fd) < 0) {
            STAT_INC(&w->stats, nodelay_failures);
            log_info("<%d setsockopt(TCP_NODELAY): %s", fd, strerror(errno));
        }
        if (l->tcp && sockopt_notsent_lowat(fd, CONN_KERNEL_UNSENT) < 0)
            log_verbose("<%d setsockopt(TCP_NOTSENT_LOWAT): %s", fd, strerror(errno));
        char addr[128];
        if (l->tcp) {
            listener_format_addr((struct sockaddr *)&ss, "tcp", NULL, addr, sizeof addr);
        } else {
            snprintf(addr, sizeof addr, "%s", l->name);
        }
        struct conn *c = conn_create(&w->env, fd, l->tcp, l->tls, addr, l->name);
        if (!c) {
            __atomic_fetch_sub(&pool->curr_conns, 1, __ATOMIC_RELAXED);
            continue;
        }
        STAT_INC(&w->stats, total_connections);
        log_verbose("<%d new %s client connection", fd,
                    strcmp(pool->opt->binding_protocol, "auto") == 0
                        ? "auto-negotiating"
                        : pool->opt->binding_protocol);
    }
}

/* When what this worker's clients hold has fallen well below its high
 * point, free the cached read buffers and ask the trimmer (base/trim.h) to
 * return free pages to the OS: the trim itself runs on its own thread, not
 * here, and only once every worker is quiet, since it holds the heaps'
 * locks for tens of milliseconds. Sampled once a second,
 * so a steady load never trims; a worker left with no clients asks once. */
static void worker_trim(struct worker *w)
{
    size_t held = __atomic_load_n(&w->reply_bytes, __ATOMIC_RELAXED) +
                  __atomic_load_n(&w->rbuf_bytes, __ATOMIC_RELAXED);
    if (held > w->client_peak)
        w->client_peak = held;
    /* Also once when the last client has gone: what it held beyond these
     * two gauges (a value staged outside the segments, say) is free now. */
    bool idle = w->env.nconns == 0 && w->clients_since_trim;
    if (w->env.nconns > 0)
        w->clients_since_trim = true;
    if (w->client_peak - held < WORKER_TRIM_DROP && !idle)
        return;
    w->client_peak = held;
    w->clients_since_trim = w->env.nconns > 0;
    rbuf_pool_trim(&w->rbufs);
    trimmer_request(&w->pool->trimmer);
    log_verbose("worker %d: client memory fell to %zu bytes: returning free memory", w->id, held);
}

/* Busy or quiet for the trimmer (base/trim.h): a few requests a second (a
 * stats scraper, a health check) leave a worker quiet. */
static void worker_note_busy(struct worker *w)
{
    uint64_t moved = __atomic_load_n(&w->stats.bytes_read, __ATOMIC_RELAXED) +
                     __atomic_load_n(&w->stats.bytes_written, __ATOMIC_RELAXED);
    __atomic_store_n(&w->busy, moved - w->moved_mark > WORKER_QUIET_BYTES, __ATOMIC_RELAXED);
    w->moved_mark = moved;
}

static void worker_tick(struct worker *w, rel_time_t now)
{
    for (struct conn *c = w->env.conns, *next; c; c = next) {
        next = c->next;
        conn_tick(c, now);
    }
    worker_note_busy(w);
    worker_trim(w);
    if (!w->listening && now >= w->relisten_at && !__atomic_load_n(&w->pool->stopping, __ATOMIC_RELAXED)) {
        worker_listen_enable(w, true);
        __atomic_store_n(&w->pool->accepting, 1, __ATOMIC_RELAXED);
    }
}

/* Free connections closed this turn; one still on the ready list is kept
 * until worker_run_ready has taken it off. */
static void worker_free_dead(struct worker *w)
{
    struct conn *keep = NULL;
    while (w->env.dead) {
        struct conn *c = w->env.dead;
        w->env.dead = c->dead_next;
        if (c->in_ready) {
            c->dead_next = keep;
            keep = c;
        } else {
            conn_free(c);
        }
    }
    w->env.dead = keep;
}

/* Run the connections queued for another turn. Those that queue themselves
 * again wait for the next turn, so a pipelining client cannot starve others. */
static void worker_run_ready(struct worker *w)
{
    struct conn *list = w->env.ready;
    w->env.ready = NULL;
    while (list) {
        struct conn *c = list;
        list = c->ready_next;
        c->in_ready = false;
        conn_resume(c);
    }
}

static long worker_ms_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

static void worker_drain_wake(struct worker *w)
{
    char buf[64];
    while (read(w->wake[0], buf, sizeof buf) > 0)
        ;
}

/* Stopping: no new clients; graceful gives queued replies a short while. */
static void worker_shutdown(struct worker *w)
{
    if (w->listening)
        worker_listen_enable(w, false);
    bool graceful = __atomic_load_n(&w->pool->graceful, __ATOMIC_RELAXED);
    if (graceful) {
        struct event_fired ev[WORKER_EVENTS];
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
            if (worker_ms_since(&start) >= WORKER_DRAIN_MS)
                break;
            bool owed = false;
            for (struct conn *c = w->env.conns; c; c = c->next)
                if (proto_owed(&c->sess) > 0)
                    owed = true;
            if (!owed)
                break;
            /* only write interest now: clients' new requests are not read */
            for (struct conn *c = w->env.conns; c; c = c->next)
                conn_stop_reading(c);
            int n = event_wait(w->loop, ev, WORKER_EVENTS, 50);
            for (int i = 0; i < n; i++) {
                if (worker_flash_event(&ev[i]))
                    continue;
                struct loop_token *wt = ev[i].ptr;
                if (wt->kind != TOKEN_CONN)
                    continue;
                if (ev[i].events & (EVENT_RECV | EVENT_SEND))
                    conn_on_complete(wt->obj, ev[i].events, ev[i].res, ev[i].data);
                else if (ev[i].events & EVENT_WRITE)
                    conn_on_event(wt->obj, EVENT_WRITE);
            }
            worker_free_dead(w);
        }
    }
    while (w->env.conns)
        conn_close(w->env.conns, "server stopping");
    /* Closed connections with I/O started wait for its cancellation, and
     * flash reads on the ring for their end: only this thread can reap
     * them (the ring's one issuer), and their buffers are the kernel's
     * until then. Their sessions are gone: they complete into nothing.
     * Bounded in time, not turns: a wake-up pipe left readable ends a wait
     * at once. */
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        long waited = worker_ms_since(&start);
        bool zombies = w->env.zombies && waited < WORKER_DRAIN_MS;
        bool reads = store_flash_ring_pending(w->store) && waited < WORKER_FLASH_SETTLE_MS;
        if (!zombies && !reads)
            break;
        struct event_fired ev[WORKER_EVENTS];
        int n = event_wait(w->loop, ev, WORKER_EVENTS, 50);
        for (int i = 0; i < n; i++) {
            if (worker_flash_event(&ev[i]))
                continue;
            struct loop_token *wt = ev[i].ptr;
            if (wt->kind == TOKEN_CONN && (ev[i].events & (EVENT_RECV | EVENT_SEND)))
                conn_on_complete(wt->obj, ev[i].events, ev[i].res, ev[i].data);
            else if (wt->kind == TOKEN_WAKE)
                worker_drain_wake(w);
            else if (wt->kind == TOKEN_FLASH)
                flash_loop_drain(w->flash); /* the read threads' too, into nothing */
        }
    }
    worker_free_dead(w);
}

/* io_uring's completions, a turn's all in before the first runs: each
 * receive's key loads ahead of it (conn_uring_hint), its bucket two
 * completions before it runs and its item one before, hidden behind the
 * completions run meanwhile. Slot j % 3 is completion j's: its receiving
 * connection (NULL for anything else), found once, and its run. */
struct worker_ahead {
    struct store_prefetch_run run[3];
    struct conn *conn[3];
    bool hinted[3]; /* its run was started (conn_uring_hint) */
};

static struct conn *worker_recv_conn(const struct event_fired *ev)
{
    if (ev->events & EVENT_FILE)
        return NULL; /* its pointer is a flash read's, not a token */
    const struct loop_token *t = ev->ptr;
    return t->kind == TOKEN_CONN && (ev->events & EVENT_RECV) ? t->obj : NULL;
}

/* Completion j's bucket, into slot s (j % 3). The other two slots hold
 * the completions that run before it: when one is a receive of the same
 * connection, these bytes follow bytes not yet in its buffer, and a hint
 * must see the input from its first unconsumed byte (proto_read_hint): only
 * the connection's first receive in the window gets one. */
static void worker_ahead_bucket(struct worker_ahead *a, unsigned s, const struct event_fired *ev,
                                int n, int j)
{
    struct conn *c = j < n ? worker_recv_conn(&ev[j]) : NULL;
    a->conn[s] = c;
    a->hinted[s] = false;
    if (!c || c == a->conn[s == 2 ? 0 : s + 1] || c == a->conn[s == 0 ? 2 : s - 1])
        return;
    a->hinted[s] = true;
    conn_uring_hint(c, ev[j].res, ev[j].data, &a->run[s]);
}

/* The item of the completion in slot s, its bucket loaded by now. */
static void worker_ahead_item(struct worker_ahead *a, unsigned s)
{
    if (a->hinted[s])
        conn_uring_hint_next(a->conn[s], &a->run[s]);
}

void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct worker_pool *pool = w->pool;
    struct event_fired ev[WORKER_EVENTS];
    struct conn_ready_batch batch = {0};
    struct worker_ahead ahead;
    rel_time_t last_tick = clock_now();
    while (!__atomic_load_n(&pool->stopping, __ATOMIC_ACQUIRE)) {
        /* While someone watches, records left in the rings are pumped
         * within WATCH_POLL_MS even when every worker is idle. */
        int timeout = w->env.ready ? 0 : watch_active(WATCH_LOGGED) ? WATCH_POLL_MS : 1000;
        int n = event_wait(w->loop, ev, WORKER_EVENTS, timeout);
        if (n < 0) {
            log_error("worker %d: event_wait: %s", w->id, strerror(errno));
            break;
        }
        bool listener = false;
        /* s is i % 3; s1 and s2 the slots of completions i + 1 and i + 2 */
        for (unsigned i = 0, s = 0; i < (unsigned)n; i++, s = s == 2 ? 0 : s + 1) {
            unsigned s1 = s == 2 ? 0 : s + 1, s2 = s1 == 2 ? 0 : s1 + 1;
            if (i == 0) {
                ahead.conn[0] = ahead.conn[1] = ahead.conn[2] = NULL; /* the last turn's */
                worker_ahead_bucket(&ahead, 0, ev, n, 0);
                worker_ahead_bucket(&ahead, 1, ev, n, 1);
                worker_ahead_item(&ahead, 0);
            }
            worker_ahead_bucket(&ahead, s2, ev, n, (int)i + 2);
            worker_ahead_item(&ahead, s1);
            if (ev[i].events & EVENT_FILE) {
                conn_ready_batch_finish(&batch); /* the turn's reads run first */
                worker_flash_event(&ev[i]); /* a wake puts its connection on the ready list */
                continue;
            }
            struct loop_token *wt = ev[i].ptr;
            bool readiness = wt->kind == TOKEN_CONN && !(ev[i].events & (EVENT_RECV | EVENT_SEND));
            if (!readiness)
                conn_ready_batch_finish(&batch); /* the turn's reads run first */
            switch (wt->kind) {
            case TOKEN_CONN:
                if (readiness)
                    conn_ready_batch_event(&batch, wt->obj, ev[i].events);
                else
                    conn_on_complete(wt->obj, ev[i].events, ev[i].res, ev[i].data);
                break;
            case TOKEN_WATCH:
                conn_on_watch_wake(wt->obj);
                break;
            case TOKEN_LISTENER:
                listener = true; /* below */
                break;
            case TOKEN_UDP:
                if (w->listening)
                    udp_on_readable(w, wt->obj);
                break;
            case TOKEN_FLASH:
                flash_loop_drain(w->flash); /* wakes put connections on the ready list */
                break;
            case TOKEN_WAKE:
                worker_drain_wake(w);
                break;
            }
        }
        conn_ready_batch_finish(&batch);
        /* Accept after this turn's closes: a client that hung up and
         * reconnected finds its descriptor number free again (as memcached
         * and epoll's ordering usually give; `connection_structures`), and a
         * full -c has made room first. */
        for (int i = 0; listener && i < n && w->listening; i++) {
            struct loop_token *wt = ev[i].ptr;
            if (!(ev[i].events & EVENT_FILE) && wt->kind == TOKEN_LISTENER)
                worker_accept(w, wt->obj);
        }
        worker_run_ready(w);
        store_ctx_follow_limit(w->store); /* an idle worker's open segments too */
        if (watch_active(WATCH_LOGGED))
            watch_pump();
        worker_free_dead(w);
        rel_time_t now = clock_now();
        if (now != last_tick) {
            last_tick = now;
            worker_tick(w, now);
            worker_free_dead(w);
        }
    }
    worker_shutdown(w);
    return NULL;
}
