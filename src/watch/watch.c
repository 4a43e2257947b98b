/* SPDX-License-Identifier: BSD-3-Clause */
/* Watchers: the producers' rings, the pump that turns their records into
 * lines, each watcher's bounded buffer of lines, and the hand-over to the
 * watcher's connection. See watch.h for the shape.
 *
 * Producers: every thread that logs an event gets its own ring (watch_ring.h)
 * on its first event; pushing a record takes no lock and makes no system
 * call. A full ring drops the record and counts it against its class.
 *
 * The pump (one at a time: `pump_lock`, which workers only ever try) pops
 * records, formats each once and copies the line into the buffer of every
 * watcher of its class. `pump_lock` also guards the registry: adding or
 * removing a watcher waits for a pump's slice at most. Each watcher's buffer
 * is again single-producer (the pump) single-consumer (the watcher's
 * worker) without a lock, so its worker never waits for the pump, nor a
 * producer for anything. Its CPU is budgeted: tokens
 * accrue at watch_cpu_percent of wall time, each pump spends what it measured
 * and runs at most WATCH_PUMP_SLICE_NS; out of tokens, records wait in the
 * rings and, once those are full, are dropped. What a watcher lost either
 * way (its buffer full, or a ring full) is its `skipped=N`.
 *
 * Wake-ups: the pump writes a watcher's pipe only when it sets `notified`,
 * and the consumer clears it only once it has taken everything (then looks
 * again); so a busy stream costs one pipe write per drain, not per line. */
#define _GNU_SOURCE /* pipe2 */
#include "watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "event/event.h"
#include "watch/watch_rec.h"
#include "watch/watch_ring.h"

/* Room kept for the "skipped=N\n" line before the next real one (as memcached). */
#define WATCH_SKIP_ROOM 128
/* Event classes that producers log (bits 0 .. WATCH_NCLASS-1 of watch_flag). */
#define WATCH_NCLASS 5
/* Threads that may log (workers, housekeeping); past it events are dropped. */
#define WATCH_MAX_PRODUCERS 256
/* The pump's budget: cpu_percent of one CPU (watch_configure), at most
 * this much per call, and no more than this saved up while idle. */
#define WATCH_PUMP_SLICE_NS 100000
#define WATCH_BURST_NS 2000000
/* What sending a byte of a stream costs its worker (the kernel's copy and
 * loopback delivery, about 1 GB/s a core), charged to the pump's budget
 * when the byte is placed: the budget covers the whole stream. */
#define WATCH_SEND_NS_PER_BYTE 1

struct watcher {
    unsigned flags;
    char *buf;          /* ring of `cap` bytes: [head, tail) as byte counts */
    size_t cap;
    uint64_t tail;      /* written by the pump (release) */
    uint64_t head;      /* written by the owner (release) */
    uint64_t skipped;   /* pump: lines dropped since the last "skipped=" line */
    int notified;       /* a wake-up is pending or not needed (atomic) */
    size_t pulled;      /* bytes moved since the last wake-up (owner only) */
    int pipe[2];
    struct event_loop *loop;
    int slot;
};

/* One producing thread's ring and counts. The counters are written by the
 * producer only (relaxed atomics, read by stats and the pump); `seen` is
 * the pump's (pump_lock). */
struct producer {
    struct watch_ring *ring;
    uint64_t written;
    uint64_t dropped[WATCH_NCLASS];
    uint64_t seen[WATCH_NCLASS];
    int orphan; /* its thread exited: the next new thread may take it */
};

unsigned watch_mask;
static bool watch_stderr; /* pump_lock */

/* The registry: pump_lock (below). */
static struct watcher *watchers[WATCH_MAX_WATCHERS];
static unsigned watch_count; /* also read without the lock (stats) */

static uint64_t cnt_skipped, cnt_sent, cnt_unlogged; /* relaxed atomics */
static uint64_t pump_bytes; /* pump_lock: bytes placed in watcher buffers by this pump */

static size_t ring_bytes = 64 * 1024;
static unsigned cpu_percent = 10; /* set before the workers start */
static pthread_mutex_t producers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct producer *producers[WATCH_MAX_PRODUCERS]; /* published with release */
static unsigned nproducers;                              /* release / acquire */
static __thread struct producer *my_producer;
static pthread_key_t producer_key;
static pthread_once_t producer_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t pump_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pump_gid;                 /* pump_lock: memcached's gid, in stream order */
static int64_t pump_tokens = WATCH_BURST_NS; /* pump_lock */
static int64_t pump_last;                 /* pump_lock; 0 = never */
static unsigned pump_next;                /* pump_lock: the ring to start from */

void watch_configure(size_t worker_ring_bytes, unsigned percent)
{
    ring_bytes = worker_ring_bytes;
    cpu_percent = percent;
}

unsigned watch_flag_parse(const char *s, size_t len)
{
    /* memcached compares strncmp(token, name, token_len), first match wins,
     * in this order. */
    static const struct { const char *name; unsigned flag; } names[] = {
        {"rawcmds", WATCH_RAWCMDS},     {"evictions", WATCH_EVICTIONS},
        {"fetchers", WATCH_FETCHERS},   {"mutations", WATCH_MUTATIONS},
        {"sysevents", WATCH_SYSEVENTS}, {"connevents", WATCH_CONNEVENTS},
        {"proxyreqs", WATCH_PROXY},     {"proxyevents", WATCH_PROXY},
        {"proxyuser", WATCH_PROXY},     {"deletions", WATCH_DELETIONS},
    };
    if (len == 0)
        return 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) >= len && strncmp(s, names[i].name, len) == 0)
            return names[i].flag;
    return 0;
}

/* ---- producers ---- */

static void producer_exit(void *p)
{
    __atomic_store_n(&((struct producer *)p)->orphan, 1, __ATOMIC_RELEASE);
}

static void producer_key_make(void)
{
    if (pthread_key_create(&producer_key, producer_exit) != 0)
        producer_key = 0;
}

/* This thread's producer: an orphan's ring, or a new one. NULL when out of
 * memory or past WATCH_MAX_PRODUCERS. */
static struct producer *producer_get(void)
{
    pthread_once(&producer_once, producer_key_make);
    struct producer *p = NULL;
    pthread_mutex_lock(&producers_lock);
    for (unsigned i = 0; i < nproducers && !p; i++) {
        int one = 1;
        if (producers[i]->ring->cap == ring_bytes &&
            __atomic_compare_exchange_n(&producers[i]->orphan, &one, 0, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            p = producers[i];
    }
    if (!p && nproducers < WATCH_MAX_PRODUCERS && (p = calloc(1, sizeof *p))) {
        p->ring = watch_ring_new(ring_bytes);
        if (!p->ring) {
            free(p);
            p = NULL;
        } else {
            __atomic_store_n(&producers[nproducers], p, __ATOMIC_RELEASE);
            __atomic_store_n(&nproducers, nproducers + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&producers_lock);
    if (p) {
        pthread_setspecific(producer_key, p);
        my_producer = p;
    }
    return p;
}

static unsigned class_of(unsigned flag)
{
    return (unsigned)__builtin_ctz(flag);
}

void watch_emit(unsigned flag, const struct watch_rec *r, const char *key, size_t nkey)
{
    struct producer *p = my_producer ? my_producer : producer_get();
    if (!p) {
        __atomic_fetch_add(&cnt_unlogged, 1, __ATOMIC_RELAXED);
        return;
    }
    if (nkey > WATCH_RING_REC_MAX - sizeof *r)
        nkey = WATCH_RING_REC_MAX - sizeof *r;
    /* single writer: a relaxed load and store, no locked instruction */
    if (watch_ring_push(p->ring, r, sizeof *r, key, nkey))
        __atomic_store_n(&p->written, p->written + 1, __ATOMIC_RELAXED);
    else
        __atomic_store_n(&p->dropped[class_of(flag)], p->dropped[class_of(flag)] + 1,
                         __ATOMIC_RELAXED);
}

/* ---- the registry ---- */

/* Registry lock held. */
static void watch_set_mask(void)
{
    unsigned m = watch_stderr ? WATCH_STDERR : 0;
    for (int i = 0; i < WATCH_MAX_WATCHERS; i++)
        if (watchers[i])
            m |= watchers[i]->flags;
    __atomic_store_n(&watch_mask, m, __ATOMIC_RELAXED);
}

static void watcher_free(struct watcher *w)
{
    for (int i = 0; i < 2; i++)
        if (w->pipe[i] >= 0)
            close(w->pipe[i]);
    free(w->buf);
    free(w);
}

/* pump_lock held, no watchers: what the rings hold is nobody's. */
static void pump_discard(void)
{
    unsigned n = __atomic_load_n(&nproducers, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        struct producer *p = __atomic_load_n(&producers[i], __ATOMIC_ACQUIRE);
        char rec[WATCH_RING_REC_MAX];
        while (watch_ring_pop(p->ring, rec) > 0)
            ;
        for (unsigned c = 0; c < WATCH_NCLASS; c++)
            __atomic_store_n(&p->seen[c], __atomic_load_n(&p->dropped[c], __ATOMIC_RELAXED),
                             __ATOMIC_RELAXED);
    }
}

enum watch_add_result watch_add(unsigned flags, size_t bufsize, struct event_loop *loop,
                                void *wake_ptr, struct watcher **out)
{
    *out = NULL;
    if (bufsize < 2 * WATCH_SKIP_ROOM)
        bufsize = 2 * WATCH_SKIP_ROOM;
    struct watcher *w = calloc(1, sizeof *w);
    if (!w)
        return WATCH_ADD_FAILED;
    w->pipe[0] = w->pipe[1] = -1;
    w->flags = flags;
    w->cap = bufsize;
    w->loop = loop;
    w->buf = malloc(bufsize);
    if (!w->buf || pipe2(w->pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
        watcher_free(w);
        return WATCH_ADD_FAILED;
    }
    if (event_add(loop, w->pipe[0], EVENT_READ, wake_ptr) < 0) {
        watcher_free(w);
        return WATCH_ADD_FAILED;
    }
    pthread_mutex_lock(&pump_lock);
    int slot = -1;
    for (int i = 0; i < WATCH_MAX_WATCHERS && slot < 0; i++)
        if (!watchers[i])
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&pump_lock);
        event_delete(loop, w->pipe[0]);
        watcher_free(w);
        return WATCH_ADD_TOO_MANY;
    }
    if (watch_count == 0)
        pump_discard(); /* a first watcher starts from now */
    w->slot = slot;
    watchers[slot] = w;
    __atomic_store_n(&watch_count, watch_count + 1, __ATOMIC_RELAXED);
    watch_set_mask();
    pthread_mutex_unlock(&pump_lock);
    *out = w;
    return WATCH_ADD_OK;
}

void watch_set_stderr(bool on)
{
    pthread_mutex_lock(&pump_lock);
    watch_stderr = on;
    watch_set_mask();
    pthread_mutex_unlock(&pump_lock);
}

void watch_remove(struct watcher **wp)
{
    struct watcher *w = *wp;
    if (!w)
        return;
    /* Waits for a pump's slice at most: then no pump writes into w. */
    pthread_mutex_lock(&pump_lock);
    watchers[w->slot] = NULL;
    __atomic_store_n(&watch_count, watch_count - 1, __ATOMIC_RELAXED);
    watch_set_mask();
    pthread_mutex_unlock(&pump_lock);
    event_delete(w->loop, w->pipe[0]);
    watcher_free(w);
    *wp = NULL;
}

/* ---- the pump ---- */

/* Pump: copy len bytes in at the buffer's tail (the caller checked room),
 * not yet published. */
static void ring_put(struct watcher *w, uint64_t *tail, const char *p, size_t len)
{
    size_t at = (size_t)(*tail % w->cap);
    size_t first = w->cap - at < len ? w->cap - at : len;
    memcpy(w->buf + at, p, first);
    memcpy(w->buf, p + first, len - first);
    *tail += len;
}

static void watch_wake(struct watcher *w)
{
    char b = 1;
    ssize_t rc = write(w->pipe[1], &b, 1);
    (void)rc; /* a full pipe already means "wake up" */
}

/* pump_lock held: n lines of class `flag` that never reached the watchers
 * (a producer's ring was full) are skipped for each watcher of that class. */
static void skip_for_all(unsigned flag, uint64_t n)
{
    uint64_t skipped = 0;
    for (int i = 0; i < WATCH_MAX_WATCHERS; i++)
        if (watchers[i] && (watchers[i]->flags & flag)) {
            watchers[i]->skipped += n;
            skipped += n;
        }
    if (skipped)
        __atomic_fetch_add(&cnt_skipped, skipped, __ATOMIC_RELAXED);
}

/* pump_lock held: one finished line (ending "\n") to every watcher of
 * `flag`. */
static void offer(unsigned flag, const char *line, size_t len)
{
    uint64_t sent = 0, skipped = 0;
    for (int i = 0; i < WATCH_MAX_WATCHERS; i++) {
        struct watcher *w = watchers[i];
        if (!w || !(w->flags & flag))
            continue;
        uint64_t tail = w->tail; /* the pump's alone */
        uint64_t head = __atomic_load_n(&w->head, __ATOMIC_ACQUIRE);
        if (w->cap - (size_t)(tail - head) < len + WATCH_SKIP_ROOM) {
            w->skipped++;
            skipped++;
            continue;
        }
        if (w->skipped > 0) {
            char skip[WATCH_SKIP_ROOM];
            int n = snprintf(skip, sizeof skip, "skipped=%llu\n", (unsigned long long)w->skipped);
            ring_put(w, &tail, skip, (size_t)n);
            w->skipped = 0;
        }
        ring_put(w, &tail, line, len);
        pump_bytes += tail - w->tail;
        __atomic_store_n(&w->tail, tail, __ATOMIC_RELEASE);
        sent++;
    }
    if (sent)
        __atomic_fetch_add(&cnt_sent, sent, __ATOMIC_RELAXED);
    if (skipped)
        __atomic_fetch_add(&cnt_skipped, skipped, __ATOMIC_RELAXED);
}

/* pump_lock held: might a watcher of `flag` have room for a line with a
 * key of nkey bytes? (Its shortest form: the key unencoded, and the fixed
 * fields at their fewest digits.) */
static bool any_room(unsigned flag, size_t nkey)
{
    size_t least = nkey + 48 + WATCH_SKIP_ROOM;
    for (int i = 0; i < WATCH_MAX_WATCHERS; i++) {
        struct watcher *w = watchers[i];
        if (w && (w->flags & flag) &&
            w->cap - (size_t)(w->tail - __atomic_load_n(&w->head, __ATOMIC_ACQUIRE)) >= least)
            return true;
    }
    return false;
}

static unsigned rec_flag(const struct watch_rec *r)
{
    switch (r->type) {
    case WATCH_REC_GET:
        return WATCH_FETCHERS;
    case WATCH_REC_STORE:
        return WATCH_MUTATIONS;
    case WATCH_REC_DELETED:
        return WATCH_DELETIONS;
    case WATCH_REC_EVICTION:
        return WATCH_EVICTIONS;
    default:
        return WATCH_CONNEVENTS;
    }
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Anything for the pump? (no lock: a hint) */
static bool pump_has_work(void)
{
    unsigned n = __atomic_load_n(&nproducers, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        struct producer *p = __atomic_load_n(&producers[i], __ATOMIC_ACQUIRE);
        if (!watch_ring_empty(p->ring))
            return true;
        for (unsigned c = 0; c < WATCH_NCLASS; c++)
            if (__atomic_load_n(&p->dropped[c], __ATOMIC_RELAXED) !=
                __atomic_load_n(&p->seen[c], __ATOMIC_RELAXED))
                return true;
    }
    return false;
}

void watch_pump(void)
{
    if (!watch_active(WATCH_LOGGED) || !pump_has_work())
        return;
    if (pthread_mutex_trylock(&pump_lock) != 0)
        return; /* another worker pumps: never wait for it */
    int64_t start = mono_ns();
    if (pump_last)
        pump_tokens += (start - pump_last) * (int64_t)cpu_percent / 100;
    if (pump_tokens > WATCH_BURST_NS)
        pump_tokens = WATCH_BURST_NS;
    pump_last = start;
    int64_t slice = pump_tokens < WATCH_PUMP_SLICE_NS ? pump_tokens : WATCH_PUMP_SLICE_NS;
    unsigned n = __atomic_load_n(&nproducers, __ATOMIC_ACQUIRE);
    /* What the producers dropped, for each watcher of its class. */
    for (unsigned i = 0; i < n; i++) {
        struct producer *p = __atomic_load_n(&producers[i], __ATOMIC_ACQUIRE);
        for (unsigned c = 0; c < WATCH_NCLASS; c++) {
            uint64_t d = __atomic_load_n(&p->dropped[c], __ATOMIC_RELAXED);
            if (d != p->seen[c])
                skip_for_all(1u << c, d - p->seen[c]);
            __atomic_store_n(&p->seen[c], d, __ATOMIC_RELAXED); /* pump_has_work reads it */
        }
    }
    /* Round robin over the rings, a few records each, until they are
     * empty or the slice is spent. */
    int64_t spent = 0;
    unsigned done = 0;
    pump_bytes = 0;
    bool more = slice > 0 && n > 0;
    while (more) {
        more = false;
        for (unsigned k = 0; k < n && spent < slice; k++) {
            struct producer *p = __atomic_load_n(&producers[(pump_next + k) % n], __ATOMIC_ACQUIRE);
            for (int j = 0; j < 16; j++) {
                union {
                    struct watch_rec r;
                    char b[WATCH_RING_REC_MAX];
                } rec;
                size_t len = watch_ring_pop(p->ring, rec.b);
                if (len == 0)
                    break;
                more = true;
                unsigned flag = rec_flag(&rec.r);
                if (!any_room(flag, len - sizeof rec.r)) {
                    skip_for_all(flag, 1); /* every buffer is full: no need to format */
                    continue;
                }
                char line[2048];
                size_t nl = watch_format(&rec.r, rec.b + sizeof rec.r, len - sizeof rec.r,
                                         ++pump_gid, line, sizeof line);
                if (nl > 0)
                    offer(flag, line, nl);
                if (++done % 32 == 0)
                    spent = mono_ns() - start + (int64_t)pump_bytes * WATCH_SEND_NS_PER_BYTE;
            }
        }
        pump_next++;
        if (spent >= slice)
            break;
    }
    /* Wake the watchers with something new that were drained (under the
     * lock, which keeps a watcher from being freed meanwhile): one
     * non-blocking write per drain. */
    for (int i = 0; i < WATCH_MAX_WATCHERS; i++) {
        struct watcher *w = watchers[i];
        if (w && __atomic_load_n(&w->tail, __ATOMIC_RELAXED) != __atomic_load_n(&w->head, __ATOMIC_ACQUIRE) &&
            !__atomic_exchange_n(&w->notified, 1, __ATOMIC_SEQ_CST))
            watch_wake(w);
    }
    pump_tokens -= mono_ns() - start + (int64_t)pump_bytes * WATCH_SEND_NS_PER_BYTE;
    pthread_mutex_unlock(&pump_lock);
}

/* ---- the watcher's side ---- */

/* The most moved into the reply queue in one piece: no larger than its
 * blocks, so a stream is packed like any other reply. */
#define WATCH_COPY_PIECE (8 * 1024)

bool watch_has_lines(const struct watcher *w)
{
    return __atomic_load_n(&w->tail, __ATOMIC_ACQUIRE) != w->head;
}

void watch_ack(struct watcher *w)
{
    char drain[64];
    while (read(w->pipe[0], drain, sizeof drain) > 0)
        w->pulled = 0; /* a new wake-up: a new turn's budget */
}

size_t watch_refill(struct watcher *w, size_t pending, watch_copy_fn copy, void *ctx)
{
    watch_pump();
    if (pending >= w->cap)
        return 0; /* the socket is behind: its drain calls us again */
    if (w->pulled >= w->cap) {
        /* A turn's worth moved already: let the worker's other connections
         * run, and come back on the next turn. */
        watch_wake(w);
        return 0;
    }
    size_t want = w->cap - pending;
    size_t moved = 0;
    uint64_t head = w->head; /* ours alone */
    uint64_t tail = __atomic_load_n(&w->tail, __ATOMIC_ACQUIRE);
    size_t n = (size_t)(tail - head) < want ? (size_t)(tail - head) : want;
    /* The buffer's bytes in pieces; what could not be copied (out of
     * memory) stays for the next call. */
    while (moved < n) {
        size_t at = (size_t)((head + moved) % w->cap);
        size_t piece = n - moved;
        if (piece > w->cap - at)
            piece = w->cap - at;
        if (piece > WATCH_COPY_PIECE)
            piece = WATCH_COPY_PIECE;
        if (copy(ctx, w->buf + at, piece) != 0)
            break;
        moved += piece;
    }
    head += moved;
    __atomic_store_n(&w->head, head, __ATOMIC_RELEASE);
    if (head == tail) {
        /* Drained: the next line wakes us. Look again after saying so, or
         * a line the pump added meanwhile (and did not wake us for) would
         * wait for the one after it. */
        __atomic_store_n(&w->notified, 0, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&w->tail, __ATOMIC_SEQ_CST) != head &&
            !__atomic_exchange_n(&w->notified, 1, __ATOMIC_SEQ_CST))
            watch_wake(w);
    }
    w->pulled += moved;
    return moved;
}

void watch_counters_get(struct watch_counters *out)
{
    uint64_t written = 0, dropped = 0;
    unsigned n = __atomic_load_n(&nproducers, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        struct producer *p = __atomic_load_n(&producers[i], __ATOMIC_ACQUIRE);
        written += __atomic_load_n(&p->written, __ATOMIC_RELAXED);
        for (unsigned c = 0; c < WATCH_NCLASS; c++)
            dropped += __atomic_load_n(&p->dropped[c], __ATOMIC_RELAXED);
    }
    out->log_worker_dropped = dropped + __atomic_load_n(&cnt_unlogged, __ATOMIC_RELAXED);
    out->log_worker_written = written;
    out->log_watcher_skipped = __atomic_load_n(&cnt_skipped, __ATOMIC_RELAXED);
    out->log_watcher_sent = __atomic_load_n(&cnt_sent, __ATOMIC_RELAXED);
    out->log_watchers = __atomic_load_n(&watch_count, __ATOMIC_RELAXED);
}
