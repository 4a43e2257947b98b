/* SPDX-License-Identifier: BSD-3-Clause */
/* Watchers: the registry, each watcher's bounded buffer, and the hand-over
 * to the watcher's connection. See watch.h for the shape.
 *
 * Locking: `watch_lock` guards the registry (add, remove, and producers
 * walking it); each buffer is a ring guarded by the same lock. It is held
 * only to copy a finished line (formatting happens before it), and only
 * while someone watches, so the request path takes it never otherwise.
 *
 * Wake-ups: a producer writes the watcher's pipe only when `notified` was
 * clear, and the consumer clears it, under the lock, only once it has taken
 * everything; so a busy stream costs one pipe write per drain, not per line. */
#define _GNU_SOURCE /* pipe2 */
#include "watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event/event.h"

/* Room kept for the "skipped=N\n" line before the next real one (as memcached). */
#define WATCH_SKIP_ROOM 128

struct watcher {
    unsigned flags;
    char *buf; /* ring of `cap` bytes: [head, head+len) */
    size_t cap, head, len;
    uint64_t skipped;   /* lines dropped since the last "skipped=" line */
    bool notified;      /* a wake-up is pending or not needed (lock) */
    size_t pulled;      /* bytes moved since the last wake-up (owner only) */
    int pipe[2];
    struct event_loop *loop;
    int slot;
};

unsigned watch_mask;
static bool watch_stderr; /* registry lock */

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watcher *watchers[WATCH_MAX_WATCHERS];
static unsigned watch_count;

static uint64_t cnt_written, cnt_skipped, cnt_sent; /* relaxed atomics */

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
    pthread_mutex_lock(&watch_lock);
    int slot = -1;
    for (int i = 0; i < WATCH_MAX_WATCHERS && slot < 0; i++)
        if (!watchers[i])
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&watch_lock);
        event_delete(loop, w->pipe[0]);
        watcher_free(w);
        return WATCH_ADD_TOO_MANY;
    }
    w->slot = slot;
    watchers[slot] = w;
    watch_count++;
    watch_set_mask();
    pthread_mutex_unlock(&watch_lock);
    *out = w;
    return WATCH_ADD_OK;
}

void watch_set_stderr(bool on)
{
    pthread_mutex_lock(&watch_lock);
    watch_stderr = on;
    watch_set_mask();
    pthread_mutex_unlock(&watch_lock);
}

void watch_remove(struct watcher **wp)
{
    struct watcher *w = *wp;
    if (!w)
        return;
    pthread_mutex_lock(&watch_lock);
    watchers[w->slot] = NULL;
    watch_count--;
    watch_set_mask();
    pthread_mutex_unlock(&watch_lock);
    event_delete(w->loop, w->pipe[0]);
    watcher_free(w);
    *wp = NULL;
}

/* Lock held. Copy len bytes in at the ring's end; the caller checked room. */
static void ring_put(struct watcher *w, const char *p, size_t len)
{
    size_t tail = (w->head + w->len) % w->cap;
    size_t first = w->cap - tail < len ? w->cap - tail : len;
    memcpy(w->buf + tail, p, first);
    memcpy(w->buf, p + first, len - first);
    w->len += len;
}

static void watch_wake(struct watcher *w)
{
    char b = 1;
    ssize_t rc = write(w->pipe[1], &b, 1);
    (void)rc; /* a full pipe already means "wake up" */
}

void watch_offer(unsigned flag, const char *line, size_t len)
{
    struct watcher *wake[WATCH_MAX_WATCHERS];
    int nwake = 0;
    uint64_t sent = 0, skipped = 0;
    pthread_mutex_lock(&watch_lock);
    for (int i = 0; i < WATCH_MAX_WATCHERS; i++) {
        struct watcher *w = watchers[i];
        if (!w || !(w->flags & flag))
            continue;
        if (w->cap - w->len < len + WATCH_SKIP_ROOM) {
            w->skipped++;
            skipped++;
            continue;
        }
        if (w->skipped > 0) {
            char skip[WATCH_SKIP_ROOM];
            int n = snprintf(skip, sizeof skip, "skipped=%llu\n", (unsigned long long)w->skipped);
            ring_put(w, skip, (size_t)n);
            w->skipped = 0;
        }
        ring_put(w, line, len);
        sent++;
        if (!w->notified) {
            w->notified = true;
            wake[nwake++] = w;
        }
    }
    /* Writing the pipe under the lock keeps a watcher from being freed
     * meanwhile; it is one non-blocking write per drained watcher. */
    for (int i = 0; i < nwake; i++)
        watch_wake(wake[i]);
    pthread_mutex_unlock(&watch_lock);
    __atomic_fetch_add(&cnt_written, 1, __ATOMIC_RELAXED);
    if (sent)
        __atomic_fetch_add(&cnt_sent, sent, __ATOMIC_RELAXED);
    if (skipped)
        __atomic_fetch_add(&cnt_skipped, skipped, __ATOMIC_RELAXED);
}

size_t watch_refill(struct watcher *w, size_t pending, watch_copy_fn copy, void *ctx)
{
    char drain[64];
    while (read(w->pipe[0], drain, sizeof drain) > 0)
        w->pulled = 0; /* a new wake-up: a new turn's budget */
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
    pthread_mutex_lock(&watch_lock);
    size_t n = w->len < want ? w->len : want;
    size_t first = w->cap - w->head < n ? w->cap - w->head : n;
    /* The ring's bytes in at most two pieces; what could not be copied
     * (out of memory) stays for the next call. */
    if (first > 0 && copy(ctx, w->buf + w->head, first) == 0) {
        moved = first;
        if (n > first && copy(ctx, w->buf, n - first) == 0)
            moved = n;
    }
    w->head = (w->head + moved) % w->cap;
    w->len -= moved;
    if (w->len == 0)
        w->notified = false;
    pthread_mutex_unlock(&watch_lock);
    w->pulled += moved;
    return moved;
}

void watch_counters_get(struct watch_counters *out)
{
    out->log_worker_dropped = 0;
    out->log_worker_written = __atomic_load_n(&cnt_written, __ATOMIC_RELAXED);
    out->log_watcher_skipped = __atomic_load_n(&cnt_skipped, __ATOMIC_RELAXED);
    out->log_watcher_sent = __atomic_load_n(&cnt_sent, __ATOMIC_RELAXED);
    pthread_mutex_lock(&watch_lock);
    out->log_watchers = watch_count;
    pthread_mutex_unlock(&watch_lock);
}
