/* SPDX-License-Identifier: BSD-3-Clause */
/* A session's flash waits (proto_flash.h): the store's wait set, and in
 * debug builds the test seam that makes chosen keys wait with no flash
 * tier at all, so the waiting side is tested over real sockets. */
#include "proto/proto_flash.h"

#include <errno.h>
#include <stdlib.h>

#include "proto/session.h"
#include "store/store_lookup.h"

/* The seam: debug builds, on Linux (a timerfd). */
#if defined(NODELAY_DEBUG) && defined(__linux__)
#define PROTO_FLASH_SEAM 1
#endif

#ifdef PROTO_FLASH_SEAM
#include <stdint.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* The seam: keys starting with prefix wait once per request, for delay_ms. */
struct flash_seam {
    int fd; /* a timerfd, armed while a session waits */
    char prefix[64];
    size_t nprefix;
    long delay_ms;
    struct proto_flash *waiting; /* sessions with seam reads outstanding */
};
#endif

struct flash_loop {
    struct store_ctx *ctx;
    bool store_on; /* the store has a flash tier */
#ifdef PROTO_FLASH_SEAM
    struct flash_seam *seam;
#endif
};

struct proto_flash {
    struct flash_loop *loop;
    struct store_flash_wait *w; /* the store's, NULL without a flash tier */
#ifdef PROTO_FLASH_SEAM
    unsigned seam_pending;  /* seam reads outstanding */
    bool seam_read;         /* the seam's reads for this request are done */
    uint64_t seam_due_ns;   /* when they complete */
    struct proto_flash *seam_next, **seam_prev;
    void (*wake)(void *arg);
    void *arg;
#endif
};

#ifdef PROTO_FLASH_SEAM
static uint64_t seam_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* NODELAY_DEBUG_FLASH=PREFIX[:MS]; NULL when unset or malformed. */
static struct flash_seam *seam_create(void)
{
    const char *spec = getenv("NODELAY_DEBUG_FLASH");
    if (!spec || !*spec)
        return NULL;
    struct flash_seam *sm = calloc(1, sizeof *sm);
    if (!sm)
        return NULL;
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (n == 0 || n >= sizeof sm->prefix) {
        free(sm);
        return NULL;
    }
    memcpy(sm->prefix, spec, n);
    sm->nprefix = n;
    sm->delay_ms = colon ? strtol(colon + 1, NULL, 10) : 0;
    if (sm->delay_ms < 0)
        sm->delay_ms = 0;
    sm->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (sm->fd < 0) {
        free(sm);
        return NULL;
    }
    return sm;
}

/* Fire at the earliest due session (never "now": a later loop turn). */
static void seam_arm(struct flash_seam *sm)
{
    uint64_t due = UINT64_MAX;
    for (struct proto_flash *f = sm->waiting; f; f = f->seam_next)
        if (f->seam_due_ns < due)
            due = f->seam_due_ns;
    struct itimerspec its = {0};
    if (due != UINT64_MAX) {
        uint64_t now = seam_now_ns();
        uint64_t in = due > now ? due - now : 1;
        its.it_value.tv_sec = (time_t)(in / 1000000000u);
        its.it_value.tv_nsec = (long)(in % 1000000000u);
    }
    timerfd_settime(sm->fd, 0, &its, NULL);
}

static void seam_unlink(struct proto_flash *f)
{
    if (!f->seam_prev)
        return;
    *f->seam_prev = f->seam_next;
    if (f->seam_next)
        f->seam_next->seam_prev = f->seam_prev;
    f->seam_next = NULL;
    f->seam_prev = NULL;
}

static enum store_probe seam_probe(struct proto_flash *f, const char *key, size_t nkey)
{
    struct flash_seam *sm = f->loop->seam;
    if (!sm || f->seam_read || nkey < sm->nprefix || memcmp(key, sm->prefix, sm->nprefix) != 0)
        return STORE_PROBE_READY;
    if (f->seam_pending++ == 0) {
        f->seam_due_ns = seam_now_ns() + (uint64_t)sm->delay_ms * 1000000u;
        f->seam_next = sm->waiting;
        if (sm->waiting)
            sm->waiting->seam_prev = &f->seam_next;
        f->seam_prev = &sm->waiting;
        sm->waiting = f;
        seam_arm(sm);
    }
    return STORE_PROBE_WAIT;
}

static void seam_drain(struct flash_seam *sm)
{
    uint64_t ticks;
    while (read(sm->fd, &ticks, sizeof ticks) > 0)
        ;
    uint64_t now = seam_now_ns();
    /* Woken sessions may probe again (and queue themselves) from wake:
     * take the due ones off first. */
    struct proto_flash *due = NULL;
    for (struct proto_flash *f = sm->waiting, *next; f; f = next) {
        next = f->seam_next;
        if (f->seam_due_ns > now)
            continue;
        seam_unlink(f);
        f->seam_next = due;
        due = f;
    }
    seam_arm(sm);
    while (due) {
        struct proto_flash *f = due;
        due = f->seam_next;
        f->seam_next = NULL;
        f->seam_pending = 0;
        f->seam_read = true;
        if (!f->w || store_flash_pending(f->w) == 0)
            f->wake(f->arg);
    }
}

/* The store's wake: the session goes on only once the seam's reads are
 * done too. */
static void seam_store_woken(void *arg)
{
    struct proto_flash *f = arg;
    if (f->seam_pending == 0)
        f->wake(f->arg);
}
#endif

int flash_loop_create(struct store_ctx *ctx, struct flash_loop **out)
{
    *out = NULL;
    bool on = store_flash_on(ctx);
#ifdef PROTO_FLASH_SEAM
    struct flash_seam *seam = seam_create();
    if (!on && !seam)
        return 0;
#else
    if (!on)
        return 0;
#endif
    struct flash_loop *l = calloc(1, sizeof *l);
    if (!l) {
#ifdef PROTO_FLASH_SEAM
        if (seam) {
            close(seam->fd);
            free(seam);
        }
#endif
        errno = ENOMEM;
        return -1;
    }
    l->ctx = ctx;
    l->store_on = on;
#ifdef PROTO_FLASH_SEAM
    l->seam = seam;
#endif
    *out = l;
    return 0;
}

void flash_loop_destroy(struct flash_loop **lp)
{
    struct flash_loop *l = *lp;
    if (!l)
        return;
#ifdef PROTO_FLASH_SEAM
    if (l->seam) {
        /* sessions are gone first (their connections closed) */
        close(l->seam->fd);
        free(l->seam);
    }
#endif
    free(l);
    *lp = NULL;
}

int flash_loop_fd(const struct flash_loop *l, int i)
{
    if (i == 0)
        return l->store_on ? store_flash_fd(l->ctx) : -1;
#ifdef PROTO_FLASH_SEAM
    if (i == 1 && l->seam)
        return l->seam->fd;
#endif
    return -1;
}

void flash_loop_drain(struct flash_loop *l)
{
    if (l->store_on)
        store_flash_drain(l->ctx);
#ifdef PROTO_FLASH_SEAM
    if (l->seam)
        seam_drain(l->seam);
#endif
}

struct proto_flash *proto_flash_create(struct flash_loop *l, void (*wake)(void *arg), void *arg)
{
    struct proto_flash *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->loop = l;
#ifdef PROTO_FLASH_SEAM
    f->wake = wake;
    f->arg = arg;
    /* the store wakes through the seam, which waits for its own reads too */
    wake = seam_store_woken;
    arg = f;
#endif
    if (l->store_on && !(f->w = store_flash_wait_create(wake, arg))) {
        free(f);
        return NULL;
    }
    return f;
}

void proto_flash_destroy(struct proto_flash **fp)
{
    struct proto_flash *f = *fp;
    if (!f)
        return;
#ifdef PROTO_FLASH_SEAM
    seam_unlink(f);
#endif
    if (f->w)
        store_flash_wait_destroy(f->w);
    free(f);
    *fp = NULL;
}

void proto_flash_attach(struct session *s, bool on)
{
    if (s->flash->w)
        store_flash_attach(s->store, on ? s->flash->w : NULL);
}

enum store_probe proto_flash_probe(struct session *s, const char *key, size_t nkey)
{
    struct proto_flash *f = s->flash;
    enum store_probe p = STORE_PROBE_READY;
#ifdef PROTO_FLASH_SEAM
    p = seam_probe(f, key, nkey);
#endif
    if (f->w) {
        struct store_key k = store_key_of(key, nkey);
        if (store_flash_probe(s->store, f->w, &k) == STORE_PROBE_WAIT)
            p = STORE_PROBE_WAIT;
        /* READY may keep a copy too (a writer's buffer, a RAM copy that goes
         * back): dropped at the request's end like a read's, or it would
         * answer later probes of the key */
        if (store_flash_wait_held(f->w))
            s->flash_held = true;
    }
    if (p == STORE_PROBE_WAIT)
        s->flash_held = true;
    return p;
}

struct store_flash_wait *proto_flash_wait(struct session *s)
{
    return s->flash ? s->flash->w : NULL;
}

void proto_flash_abort(struct session *s)
{
    if (s->flash && s->flash->w)
        store_flash_wait_abort(s->flash->w, s->store);
}

bool proto_flash_held(const struct session *s)
{
    return s->flash && s->flash->w && store_flash_wait_held(s->flash->w);
}

void proto_flash_reset(struct session *s)
{
    struct proto_flash *f = s->flash;
    s->flash_held = false;
    if (f->w)
        store_flash_wait_reset(f->w);
#ifdef PROTO_FLASH_SEAM
    f->seam_read = false;
#endif
}
