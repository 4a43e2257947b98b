/* SPDX-License-Identifier: BSD-3-Clause */
/* io_uring backend (Linux, liburing): completion I/O plus readiness.
 *
 * Connections receive and send through the ring (event_recv/event_send):
 * the kernel delivers the bytes and takes the replies, and the worker
 * enters the kernel once per loop turn, handing over every request of the
 * turn and collecting every completion in the same call.
 *
 * Readiness (listeners, the wake pipe, TLS connections, `watch` pipes) is a
 * one-shot poll per watched fd, armed again at the next wait while the
 * interest stays: a one-shot poll on an fd that is still ready completes at
 * once, so this is level-triggered like epoll. Each poll carries its fd and
 * a generation; a completion from before a modify or delete is dropped.
 *
 * Listening fds (EVENT_EXCLUSIVE) are the exception: the ring never holds
 * them (see "The listeners' set" below).
 *
 * The ring is set up with SINGLE_ISSUER | DEFER_TASKRUN where the kernel
 * has them (6.1+): completions are run when the owning thread enters, not
 * by interrupting it. It starts disabled and is enabled by the first wait,
 * so the thread that waits, not the one that set it up, is its issuer. */
#define _GNU_SOURCE /* POLLRDHUP */
#include "event/event_backend.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h> /* EPOLLEXCLUSIVE, which io_uring's poll takes too */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define EVENT_URING_SQ 1024
#define EVENT_URING_CQ 8192
/* Provided buffers: a receive started with no buffer of its own (an idle
 * connection's, one-shot or multishot) takes one only when its bytes
 * arrive, so idle connections hold no read buffer, as on epoll. A turn
 * hands out at most its batch of completions' worth, whose bytes the
 * connections copy out in that turn; all come back at the next wait, before
 * the enter in which the kernel could pick one again. */
#define EVENT_URING_BUFS 512 /* a power of two */
#define EVENT_URING_BUF_SIZE EVENT_RECV_BUF_MAX
#define EVENT_URING_BGID 0
/* Registered files: a connection's socket is put in the ring's file table
 * (slot = its fd number) the first time it starts I/O, so each receive and
 * send skips the kernel's fd lookup and reference count (fget/fput). The
 * table is sized by the descriptor limit (-c raises it), at most this. */
#define EVENT_URING_FILES_MAX 65536

/* The low two bits of user_data say what completed. */
enum {
    URING_TAG_POLL = 0,
    URING_TAG_RECV = 1,
    URING_TAG_SEND = 2,
    URING_TAG_FILE = 3,   /* an event_pread; with no pointer (URING_UD_IGNORE) poll
                             removals, cancellations and delays, whose
                             completions are dropped */
    URING_TAG_MASK = 3,
};
#define URING_UD_IGNORE ((uint64_t)URING_TAG_FILE)

struct uring_fd {
    void *ptr;
    unsigned interest;
    unsigned armed_mask; /* poll mask of the armed poll */
    uint32_t gen;
    bool used, armed, queued;
    bool fixed;  /* in the ring's file table (event_uring_file) */
    bool member; /* a listener: watched through the shared set, never polled */
    bool set;    /* the shared set itself, polled for its members */
};

struct event_uring {
    struct event_loop base;
    struct io_uring ring;
    bool enabled;
    struct uring_fd *fds; /* by fd */
    size_t nfds;
    int *arm; /* fds whose poll is to be armed at the next wait */
    size_t narm, armcap;
    struct io_uring_buf_ring *br; /* EVENT_URING_BUFS entries, page aligned */
    char *bufs;                   /* EVENT_URING_BUFS * EVENT_URING_BUF_SIZE */
    unsigned short lent[EVENT_URING_BUFS]; /* ids handed out this turn */
    size_t nlent;
    unsigned nfiles; /* slots in the file table; 0 = none registered */
    int set_fd;      /* the shared set's fd while this loop watches members */
    unsigned nmembers; /* members this loop watches */
};

/* The listeners' set. A pending poll holds a reference on its file, and a
 * ring's pending requests are cancelled only when the ring is torn down,
 * which the kernel does after the process has gone, on a kernel worker,
 * milliseconds later (tens of them on a loaded host). A listener a ring
 * polled therefore outlived a killed server: its port stayed in LISTEN,
 * took connections into its queue and reset them when the ring let go, and
 * a restart's bind failed with EADDRINUSE. An epoll set holds no reference
 * on what it watches (the last close of a descriptor removes it), so every
 * listener of the process goes into one epoll set, shared by every loop,
 * and each loop's ring polls that set, with EPOLLEXCLUSIVE: a wake-up of
 * the set wakes one waiting loop, as a listener polled directly did (one
 * set per loop would wake every loop: an epoll set passes on a member's
 * exclusive wake-up only to epoll_wait callers). Level-triggered, as
 * everything here: the set reads ready while a member is, and a loop woken
 * by it takes the ready members with epoll_wait (no wait). Members are
 * counted by fd across loops: the set holds an fd while a loop watches it,
 * and the set exists while it holds any. */
static struct {
    pthread_mutex_t lock;
    int fd; /* -1: none */
    unsigned *watchers; /* by fd: loops watching it */
    size_t nwatchers;
    unsigned total; /* sum of watchers */
} event_uring_set = {PTHREAD_MUTEX_INITIALIZER, -1, NULL, 0, 0};

/* Setup flags this kernel accepts, found by event_uring_probe. */
static unsigned event_uring_flags;
/* Whether a multishot receive here can be given a byte limit, after which
 * it ends by itself (Linux 6.17; event_uring_probe_multi). Without one the
 * kernel would go on draining a socket into the provided buffers until a
 * cancellation lands, so event_recv_multi is not offered then. */
static bool event_uring_multi_ok;

static struct event_uring *event_uring_of(struct event_loop *base)
{
    return (struct event_uring *)base;
}

/* A multishot receive's byte limit is the SQE word the kernel reads as
 * optlen (6.17: it ends the receive once that many bytes came); Debian 12's
 * liburing 2.3 names that word file_index. Older kernels refuse the
 * receive (EINVAL: the word must be 0 there). */
static void event_uring_prep_multi(struct io_uring_sqe *sqe, int fd, size_t max)
{
    io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = EVENT_URING_BGID;
    sqe->file_index = max > UINT32_MAX ? UINT32_MAX : (uint32_t)max;
}

/* Does a limited multishot receive end at its limit on this kernel? Tried
 * on r (set up with the flags being probed, its buffer ring br of 8
 * entries registered): a socket pair holding 4 bytes, a receive limited to
 * 1 byte, whose one completion must be its last. */
static bool event_uring_probe_multi(struct io_uring *r, void *br)
{
    int sv[2];
    if (!(event_uring_flags & IORING_SETUP_DEFER_TASKRUN) ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
        return false;
    bool ok = false;
    static char buf[64];
    struct io_uring_buf_ring *ring = br;
    io_uring_buf_ring_init(ring);
    io_uring_buf_ring_add(ring, buf, sizeof buf, 0, io_uring_buf_ring_mask(8), 0);
    io_uring_buf_ring_advance(ring, 1);
    struct io_uring_sqe *sqe;
    struct io_uring_cqe *cqe;
    if (io_uring_register(r->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) == 0 &&
        write(sv[1], "ping", 4) == 4 && (sqe = io_uring_get_sqe(r))) {
        event_uring_prep_multi(sqe, sv[0], 1);
        if (io_uring_submit_and_wait(r, 1) >= 0 && io_uring_peek_cqe(r, &cqe) == 0) {
            ok = cqe->res > 0 && !(cqe->flags & IORING_CQE_F_MORE);
            io_uring_cqe_seen(r, cqe);
        }
    }
    close(sv[0]);
    close(sv[1]);
    return ok;
}

int event_uring_probe(char *why, size_t n)
{
    /* Newest first; an older kernel answers EINVAL for flags it lacks. */
    static const unsigned tries[] = {
        IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN,
        0,
    };
    int err = EINVAL;
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        struct io_uring r;
        struct io_uring_params p = {.flags = tries[i] | IORING_SETUP_R_DISABLED};
        int rc = io_uring_queue_init_params(8, &r, &p);
        if (rc < 0) {
            err = -rc;
            if (err == EINVAL)
                continue;
            break;
        }
        /* a wait with a timeout in one call (5.11), sockets polled
         * internally rather than by a kernel thread (5.7), provided buffer
         * rings (5.19) */
        bool old = !(p.features & IORING_FEAT_EXT_ARG) || !(p.features & IORING_FEAT_FAST_POLL);
        void *br = NULL;
        if (!old && posix_memalign(&br, 4096, 4096) == 0) {
            struct io_uring_buf_reg reg = {.ring_addr = (uintptr_t)br, .ring_entries = 8,
                                           .bgid = EVENT_URING_BGID};
            old = io_uring_register_buf_ring(&r, &reg, 0) < 0;
        }
        if (!old) {
            event_uring_flags = tries[i];
            event_uring_multi_ok = event_uring_probe_multi(&r, br);
        }
        io_uring_queue_exit(&r);
        free(br);
        if (old) {
            snprintf(why, n, "kernel too old: needs EXT_ARG, FAST_POLL and buffer rings (5.19)");
            return -1;
        }
        return 0;
    }
    snprintf(why, n, "io_uring_setup: %s", strerror(err));
    return -1;
}

static void event_uring_destroy(struct event_loop *base);
static void event_uring_set_drop(int fd);

static int event_uring_create(struct event_loop **out)
{
    struct event_uring *l = calloc(1, sizeof *l);
    if (!l)
        return -1;
    l->base.ops = &event_uring_ops;
    l->set_fd = -1;
    struct io_uring_params p = {
        .flags = event_uring_flags | IORING_SETUP_R_DISABLED | IORING_SETUP_CQSIZE,
        .cq_entries = EVENT_URING_CQ,
    };
    int rc = io_uring_queue_init_params(EVENT_URING_SQ, &l->ring, &p);
    if (rc < 0) {
        free(l);
        errno = -rc;
        return -1;
    }
    void *br = NULL;
    if (posix_memalign(&br, 4096, EVENT_URING_BUFS * sizeof(struct io_uring_buf)) != 0 ||
        !(l->bufs = malloc((size_t)EVENT_URING_BUFS * EVENT_URING_BUF_SIZE))) {
        free(br);
        io_uring_queue_exit(&l->ring);
        free(l);
        errno = ENOMEM;
        return -1;
    }
    l->br = br;
    io_uring_buf_ring_init(l->br);
    struct io_uring_buf_reg reg = {.ring_addr = (uintptr_t)br, .ring_entries = EVENT_URING_BUFS,
                                   .bgid = EVENT_URING_BGID};
    rc = io_uring_register_buf_ring(&l->ring, &reg, 0);
    if (rc < 0) {
        event_uring_destroy(&l->base);
        errno = -rc;
        return -1;
    }
    int mask = io_uring_buf_ring_mask(EVENT_URING_BUFS);
    for (int i = 0; i < EVENT_URING_BUFS; i++)
        io_uring_buf_ring_add(l->br, l->bufs + (size_t)i * EVENT_URING_BUF_SIZE,
                              EVENT_URING_BUF_SIZE, (unsigned short)i, mask, i);
    io_uring_buf_ring_advance(l->br, EVENT_URING_BUFS);
    struct rlimit rl;
    unsigned nfiles = EVENT_URING_FILES_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < nfiles)
        nfiles = (unsigned)rl.rlim_cur;
    /* without a table (an old kernel, no memory) I/O names plain fds */
    if (io_uring_register_files_sparse(&l->ring, nfiles) == 0)
        l->nfiles = nfiles;
    *out = &l->base;
    return 0;
}

/* Give the kernel back the buffers handed out by the last wait. */
static void event_uring_give_back(struct event_uring *l)
{
    int mask = io_uring_buf_ring_mask(EVENT_URING_BUFS);
    for (size_t i = 0; i < l->nlent; i++) {
        unsigned short bid = l->lent[i];
        io_uring_buf_ring_add(l->br, l->bufs + (size_t)bid * EVENT_URING_BUF_SIZE,
                              EVENT_URING_BUF_SIZE, bid, mask, (int)i);
    }
    if (l->nlent)
        io_uring_buf_ring_advance(l->br, (int)l->nlent);
    l->nlent = 0;
}

static void event_uring_destroy(struct event_loop *base)
{
    struct event_uring *l = event_uring_of(base);
    for (size_t fd = 0; fd < l->nfds; fd++)
        if (l->fds[fd].used && l->fds[fd].member)
            event_uring_set_drop((int)fd);
    io_uring_queue_exit(&l->ring);
    free(l->fds);
    free(l->arm);
    free(l->br);
    free(l->bufs);
    free(l);
}

/* A submission slot; when the queue is full, hand it to the kernel first. */
static struct io_uring_sqe *event_uring_sqe(struct event_uring *l)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
    if (!sqe && l->enabled) {
        io_uring_submit(&l->ring);
        sqe = io_uring_get_sqe(&l->ring);
    }
    if (!sqe)
        errno = EBUSY;
    return sqe;
}

static uint64_t event_uring_poll_ud(int fd, uint32_t gen)
{
    return (uint64_t)gen << 32 | (uint64_t)(unsigned)fd << 2 | URING_TAG_POLL;
}

static unsigned event_uring_mask(unsigned interest)
{
    unsigned m = 0;
    /* a listener watched by every worker wakes one of them, as on epoll */
    if (interest & EVENT_EXCLUSIVE)
        m |= EPOLLEXCLUSIVE;
    else if (interest & EVENT_READ)
        m |= POLLRDHUP;
    if (interest & EVENT_READ)
        m |= POLLIN;
    if (interest & EVENT_WRITE)
        m |= POLLOUT;
    return m;
}

/* Grow the per-fd table to hold fd. */
static int event_uring_grow(struct event_uring *l, int fd)
{
    if ((size_t)fd < l->nfds)
        return 0;
    size_t n = l->nfds ? l->nfds : 64;
    while (n <= (size_t)fd)
        n *= 2;
    struct uring_fd *f = realloc(l->fds, n * sizeof *f);
    if (!f)
        return -1;
    memset(f + l->nfds, 0, (n - l->nfds) * sizeof *f);
    l->fds = f;
    l->nfds = n;
    return 0;
}

/* An sqe for an operation on fd, its slot in the loop's tables made; NULL
 * (errno set) when fd is out of range or no room can be had. */
static struct io_uring_sqe *event_uring_sqe_for(struct event_uring *l, int fd)
{
    if (fd < 0 || fd >= (1 << 30)) {
        errno = EBADF;
        return NULL;
    }
    if (event_uring_grow(l, fd) < 0)
        return NULL;
    return event_uring_sqe(l);
}

static struct uring_fd *event_uring_slot(struct event_uring *l, int fd)
{
    if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].used)
        return NULL;
    return &l->fds[fd];
}

static int event_uring_queue(struct event_uring *l, int fd)
{
    struct uring_fd *s = &l->fds[fd];
    if (s->queued || s->armed || !s->interest || s->member)
        return 0;
    if (l->narm == l->armcap) {
        size_t cap = l->armcap ? l->armcap * 2 : 64;
        int *a = realloc(l->arm, cap * sizeof *a);
        if (!a)
            return -1;
        l->arm = a;
        l->armcap = cap;
    }
    l->arm[l->narm++] = fd;
    s->queued = true;
    return 0;
}

/* Drop the armed poll: a later completion of it carries an old generation. */
static void event_uring_disarm(struct event_uring *l, int fd)
{
    struct uring_fd *s = &l->fds[fd];
    if (s->armed) {
        struct io_uring_sqe *sqe = event_uring_sqe(l);
        if (sqe) {
            io_uring_prep_poll_remove(sqe, event_uring_poll_ud(fd, s->gen));
            sqe->user_data = URING_UD_IGNORE;
        }
        s->armed = false;
    }
    s->gen++;
}

/* One watcher of fd fewer in the shared set: fd leaves the set when no
 * loop watches it, the set closes when it holds nothing. */
static void event_uring_set_drop(int fd)
{
    pthread_mutex_lock(&event_uring_set.lock);
    if ((size_t)fd < event_uring_set.nwatchers && event_uring_set.watchers[fd] > 0) {
        /* fails harmlessly when fd was closed first: that removed it */
        if (--event_uring_set.watchers[fd] == 0)
            epoll_ctl(event_uring_set.fd, EPOLL_CTL_DEL, fd, NULL);
        if (--event_uring_set.total == 0) {
            close(event_uring_set.fd);
            event_uring_set.fd = -1;
            free(event_uring_set.watchers);
            event_uring_set.watchers = NULL;
            event_uring_set.nwatchers = 0;
        }
    }
    pthread_mutex_unlock(&event_uring_set.lock);
}

/* One watcher of fd more in the shared set (made on first use); returns
 * the set's fd, or -1 with errno. */
static int event_uring_set_take(int fd)
{
    pthread_mutex_lock(&event_uring_set.lock);
    int err = 0;
    if (event_uring_set.fd < 0 && (event_uring_set.fd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        err = errno;
    if (!err && (size_t)fd >= event_uring_set.nwatchers) {
        size_t n = event_uring_set.nwatchers ? event_uring_set.nwatchers : 16;
        while (n <= (size_t)fd)
            n *= 2;
        unsigned *w = realloc(event_uring_set.watchers, n * sizeof *w);
        if (w) {
            memset(w + event_uring_set.nwatchers, 0, (n - event_uring_set.nwatchers) * sizeof *w);
            event_uring_set.watchers = w;
            event_uring_set.nwatchers = n;
        } else {
            err = ENOMEM;
        }
    }
    if (!err && event_uring_set.watchers[fd] == 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        if (epoll_ctl(event_uring_set.fd, EPOLL_CTL_ADD, fd, &ev) < 0)
            err = errno;
    }
    if (!err) {
        event_uring_set.watchers[fd]++;
        event_uring_set.total++;
    } else if (event_uring_set.total == 0 && event_uring_set.fd >= 0) {
        close(event_uring_set.fd);
        event_uring_set.fd = -1;
    }
    int set_fd = event_uring_set.fd;
    pthread_mutex_unlock(&event_uring_set.lock);
    errno = err;
    return err ? -1 : set_fd;
}

/* Watch fd through the shared set: this loop polls the set while it
 * watches any member. Returns 0 or -1 (errno set). */
static int event_uring_join(struct event_uring *l, int fd)
{
    int set_fd = event_uring_set_take(fd);
    if (set_fd < 0)
        return -1;
    if (l->nmembers > 0) {
        l->nmembers++;
        return 0;
    }
    /* the set's fd stays open while this loop counts in it */
    if (event_uring_grow(l, set_fd) < 0) {
        event_uring_set_drop(fd);
        return -1;
    }
    l->nmembers = 1;
    struct uring_fd *s = &l->fds[set_fd];
    s->used = s->set = true;
    s->ptr = NULL;
    s->interest = EVENT_READ | EVENT_EXCLUSIVE;
    s->gen++;
    l->set_fd = set_fd;
    return event_uring_queue(l, set_fd);
}

/* This loop no longer watches fd; with no member left, no longer the set. */
static void event_uring_leave(struct event_uring *l, int fd)
{
    event_uring_set_drop(fd);
    if (l->nmembers == 0 || --l->nmembers > 0)
        return;
    struct uring_fd *s = &l->fds[l->set_fd];
    event_uring_disarm(l, l->set_fd);
    s->used = s->set = false;
    s->interest = 0;
    l->set_fd = -1;
}

/* The set polled ready: its ready members this loop watches, as read
 * events, at most max. Those left out stay ready in the set, which then
 * polls ready again at the next turn. */
static int event_uring_members(struct event_uring *l, struct event_fired *out, int max)
{
    struct epoll_event ev[64];
    int n = epoll_wait(l->set_fd, ev, max < 64 ? max : 64, 0);
    int got = 0;
    for (int i = 0; i < n; i++) {
        struct uring_fd *s = event_uring_slot(l, ev[i].data.fd);
        if (!s || !s->member || !(s->interest & EVENT_READ))
            continue;
        unsigned e = EVENT_READ;
        if (ev[i].events & (EPOLLERR | EPOLLHUP))
            e |= EVENT_ERROR;
        out[got++] = (struct event_fired){.ptr = s->ptr, .events = e};
    }
    return got;
}

static int event_uring_add(struct event_loop *base, int fd, unsigned interest, void *ptr)
{
    struct event_uring *l = event_uring_of(base);
    if (fd < 0 || fd >= (1 << 30)) {
        errno = EBADF;
        return -1;
    }
    if (event_uring_slot(l, fd)) {
        errno = EEXIST;
        return -1;
    }
    if (event_uring_grow(l, fd) < 0)
        return -1;
    struct uring_fd *s = &l->fds[fd];
    s->used = true;
    s->ptr = ptr;
    s->interest = interest & (EVENT_READ | EVENT_WRITE | EVENT_EXCLUSIVE);
    s->gen++;
    if (interest & EVENT_EXCLUSIVE) {
        s->member = true;
        if (event_uring_join(l, fd) < 0) {
            s->used = s->member = false;
            s->interest = 0;
            return -1;
        }
        return 0;
    }
    return event_uring_queue(l, fd);
}

static int event_uring_modify(struct event_loop *base, int fd, unsigned interest, void *ptr)
{
    struct event_uring *l = event_uring_of(base);
    struct uring_fd *s = event_uring_slot(l, fd);
    if (!s) {
        errno = ENOENT;
        return -1;
    }
    s->ptr = ptr;
    s->interest = interest & (EVENT_READ | EVENT_WRITE);
    if (s->member)
        return 0; /* the set reports it while EVENT_READ is asked */
    if (s->armed && s->armed_mask != event_uring_mask(s->interest))
        event_uring_disarm(l, fd);
    return event_uring_queue(l, fd);
}

static int event_uring_del(struct event_loop *base, int fd)
{
    struct event_uring *l = event_uring_of(base);
    struct uring_fd *s = event_uring_slot(l, fd);
    if (!s) {
        errno = ENOENT;
        return -1;
    }
    if (s->member) {
        s->member = false;
        event_uring_leave(l, fd);
    } else {
        event_uring_disarm(l, fd);
    }
    s->used = false;
    s->interest = 0;
    s->ptr = NULL;
    return 0;
}

/* Arm a poll for every fd that wants one and has none. */
static void event_uring_arm(struct event_uring *l)
{
    size_t i = 0;
    for (; i < l->narm; i++) {
        int fd = l->arm[i];
        struct uring_fd *s = &l->fds[fd];
        if (!s->used || s->armed || !s->interest) {
            s->queued = false;
            continue;
        }
        struct io_uring_sqe *sqe = event_uring_sqe(l);
        if (!sqe)
            break; /* the rest at the next wait */
        s->queued = false;
        s->armed = true;
        s->armed_mask = event_uring_mask(s->interest);
        io_uring_prep_poll_add(sqe, fd, s->armed_mask);
        sqe->user_data = event_uring_poll_ud(fd, s->gen);
    }
    if (i > 0 && i < l->narm)
        memmove(l->arm, l->arm + i, (l->narm - i) * sizeof *l->arm);
    l->narm -= i;
}

/* One poll completion: the event to report, or 0 to drop it. */
static unsigned event_uring_polled(struct event_uring *l, uint64_t ud, int res, void **ptr)
{
    int fd = (int)((ud >> 2) & 0x3fffffff);
    struct uring_fd *s = event_uring_slot(l, fd);
    if (!s || !s->armed || s->gen != (uint32_t)(ud >> 32))
        return 0;
    s->armed = false;
    event_uring_queue(l, fd); /* level-triggered: ask again next turn */
    *ptr = s->ptr;
    if (res < 0)
        return res == -ECANCELED ? 0 : EVENT_ERROR;
    unsigned ev = 0;
    if (res & (POLLIN | POLLRDHUP))
        ev |= EVENT_READ;
    if (res & POLLOUT)
        ev |= EVENT_WRITE;
    if (res & (POLLERR | POLLHUP | POLLNVAL))
        ev |= EVENT_ERROR;
    return ev;
}

/* With DEFER_TASKRUN, completions that waited for a socket (a receive
 * whose bytes came later: most of them) are finished by the kernel only
 * when this thread enters it, and one enter finishes at most
 * EVENT_URING_TW_BATCH of them (Linux 6.13+: IO_LOCAL_TW_DEFAULT_MAX); the
 * rest wait for the next turn, behind that turn's new arrivals, so on a busy
 * loop a request waited several turns (the soak's isolated 40 ms sets: their
 * bytes were in the socket 25 ms before their receive completed, while the
 * worker ran turns of 100+ events). A batch that looks cut there is
 * followed by more enters until one brings nothing new or the turn is full;
 * a quiet loop (fewer completions than a batch) makes no extra call. */
#define EVENT_URING_TW_BATCH 20
#define EVENT_URING_TOP_UPS 16

static void event_uring_top_up(struct event_uring *l, unsigned max)
{
    if (!(event_uring_flags & IORING_SETUP_DEFER_TASKRUN))
        return;
    unsigned ready = io_uring_cq_ready(&l->ring);
    for (int i = 0; i < EVENT_URING_TOP_UPS && ready >= EVENT_URING_TW_BATCH && ready < max; i++) {
        if (io_uring_get_events(&l->ring) < 0)
            return;
        unsigned now = io_uring_cq_ready(&l->ring);
        if (now == ready)
            return;
        ready = now;
    }
}

static int event_uring_wait(struct event_loop *base, struct event_fired *out, int max, int timeout_ms)
{
    struct event_uring *l = event_uring_of(base);
    if (!l->enabled) {
        /* io_uring_enable_rings is not in Debian 12's liburing 2.3 */
        int rc = io_uring_register(l->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
        l->enabled = true;
    }
    event_uring_give_back(l);
    event_uring_arm(l);
    int rc;
    if (timeout_ms == 0 || io_uring_cq_ready(&l->ring) > 0) {
        rc = io_uring_submit_and_get_events(&l->ring);
    } else {
        struct io_uring_cqe *cqe;
        struct __kernel_timespec ts = {.tv_sec = timeout_ms / 1000,
                                       .tv_nsec = (long long)(timeout_ms % 1000) * 1000000};
        rc = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, timeout_ms < 0 ? NULL : &ts, NULL);
    }
    if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
        errno = -rc;
        return -1;
    }
    event_uring_top_up(l, (unsigned)max);
    int got = 0;
    unsigned head, seen = 0;
    struct io_uring_cqe *cqe;
    io_uring_for_each_cqe(&l->ring, head, cqe)
    {
        if (got == max || l->nlent == EVENT_URING_BUFS)
            break;
        seen++;
        uint64_t ud = cqe->user_data;
        void *ptr = (void *)(uintptr_t)(ud & ~(uint64_t)URING_TAG_MASK);
        switch (ud & URING_TAG_MASK) {
        case URING_TAG_RECV: {
            const char *data = NULL;
            if (cqe->flags & IORING_CQE_F_BUFFER) {
                unsigned short bid = (unsigned short)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
                l->lent[l->nlent++] = bid;
                data = l->bufs + (size_t)bid * EVENT_URING_BUF_SIZE;
            }
            unsigned more = cqe->flags & IORING_CQE_F_MORE ? EVENT_MORE : 0;
            out[got++] = (struct event_fired){
                .ptr = ptr, .events = EVENT_RECV | more, .res = cqe->res, .data = data};
            break;
        }
        case URING_TAG_SEND:
            out[got++] = (struct event_fired){.ptr = ptr, .events = EVENT_SEND, .res = cqe->res};
            break;
        case URING_TAG_FILE:
            if (ptr)
                out[got++] =
                    (struct event_fired){.ptr = ptr, .events = EVENT_FILE, .res = cqe->res};
            break;
        case URING_TAG_POLL: {
            unsigned ev = event_uring_polled(l, ud, cqe->res, &ptr);
            int fd = (int)((ud >> 2) & 0x3fffffff);
            if (ev && l->fds[fd].set)
                got += event_uring_members(l, out + got, max - got);
            else if (ev)
                out[got++] = (struct event_fired){.ptr = ptr, .events = ev};
            break;
        }
        default:
            break;
        }
    }
    io_uring_cq_advance(&l->ring, seen);
    return got;
}

/* fd's slot in the file table, put there on its first I/O; false: name
 * the fd itself (no table, out of range, or the update failed). */
static bool event_uring_file(struct event_uring *l, int fd)
{
    if ((unsigned)fd >= l->nfiles || (size_t)fd >= l->nfds)
        return false;
    struct uring_fd *s = &l->fds[fd];
    if (!s->fixed)
        s->fixed = io_uring_register_files_update(&l->ring, (unsigned)fd, &fd, 1) == 1;
    return s->fixed;
}

/* Aim sqe at fd's registered file where it has one. */
static void event_uring_target(struct event_uring *l, struct io_uring_sqe *sqe, int fd)
{
    if (event_uring_file(l, fd))
        sqe->flags |= IOSQE_FIXED_FILE; /* sqe->fd is then the slot: fd */
}

/* nowait: MSG_DONTWAIT, which the ring honours: -EAGAIN is the completion,
 * no poll is armed. */
static int event_uring_recv(struct event_loop *base, int fd, void *buf, size_t len, bool nowait,
                            void *ptr)
{
    struct event_uring *l = event_uring_of(base);
    struct io_uring_sqe *sqe = event_uring_sqe_for(l, fd);
    if (!sqe)
        return -1;
    int flags = nowait ? MSG_DONTWAIT : 0;
    if (buf) {
        io_uring_prep_recv(sqe, fd, buf, len, flags);
    } else {
        io_uring_prep_recv(sqe, fd, NULL, EVENT_URING_BUF_SIZE, flags);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = EVENT_URING_BGID;
    }
    event_uring_target(l, sqe, fd);
    sqe->user_data = (uint64_t)(uintptr_t)ptr | URING_TAG_RECV;
    return 0;
}

/* READV, not RECVMSG: no msghdr for the kernel to copy in, and on a socket
 * it ends at what was queued, as recv does (a short read is retried only
 * on regular files). */
static int event_uring_recvv(struct event_loop *base, int fd, const struct iovec *iov, int n,
                             void *ptr)
{
    struct event_uring *l = event_uring_of(base);
    if (fd < 0 || fd >= (1 << 30) || n <= 0 || event_uring_grow(l, fd) < 0)
        return -1;
    struct io_uring_sqe *sqe = event_uring_sqe(l);
    if (!sqe)
        return -1;
    io_uring_prep_readv(sqe, fd, iov, (unsigned)n, 0);
    event_uring_target(l, sqe, fd);
    sqe->user_data = (uint64_t)(uintptr_t)ptr | URING_TAG_RECV;
    return 0;
}

static int event_uring_recv_multi(struct event_loop *base, int fd, size_t max, void *ptr)
{
    struct event_uring *l = event_uring_of(base);
    if (!event_uring_multi_ok || max == 0) {
        errno = ENOTSUP;
        return -1;
    }
    struct io_uring_sqe *sqe = event_uring_sqe_for(l, fd);
    if (!sqe)
        return -1;
    event_uring_prep_multi(sqe, fd, max);
    event_uring_target(l, sqe, fd);
    sqe->user_data = (uint64_t)(uintptr_t)ptr | URING_TAG_RECV;
    return 0;
}

static int event_uring_send(struct event_loop *base, int fd, const struct msghdr *msg, void *ptr)
{
    struct event_uring *l = event_uring_of(base);
    struct io_uring_sqe *sqe = event_uring_sqe_for(l, fd);
    if (!sqe)
        return -1;
    /* One piece (most replies at pipeline 1: short values are copied in
     * with their header) needs no msghdr for the kernel to copy in. */
    if (msg->msg_iovlen == 1)
        io_uring_prep_send(sqe, fd, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, MSG_NOSIGNAL);
    else
        io_uring_prep_sendmsg(sqe, fd, msg, MSG_NOSIGNAL);
    event_uring_target(l, sqe, fd);
    sqe->user_data = (uint64_t)(uintptr_t)ptr | URING_TAG_SEND;
    return 0;
}

/* A read of a regular file, O_DIRECT or not: the kernel runs it without
 * this thread (async block I/O, or its own workers), and it completes
 * like a receive. after_ms: a timeout linked ahead of it, whose expiry
 * counts as success (IORING_TIMEOUT_ETIME_SUCCESS, 6.0), so the read
 * follows it; the timeout's timespec is read at submission, so that pair
 * is submitted at once (a test seam's, never a hot path). */
static int event_uring_pread(struct event_loop *base, int fd, void *buf, size_t len, uint64_t off,
                             unsigned after_ms, void *ptr)
{
    struct event_uring *l = event_uring_of(base);
    if (!ptr || fd < 0 || len > UINT32_MAX) {
        errno = EINVAL;
        return -1;
    }
    struct __kernel_timespec ts = {.tv_sec = after_ms / 1000,
                                   .tv_nsec = (long long)(after_ms % 1000) * 1000000};
    if (after_ms) {
        /* both in one submission, or the link would end with the first */
        if (!l->enabled) {
            errno = EBUSY;
            return -1;
        }
        if (io_uring_sq_space_left(&l->ring) < 2)
            io_uring_submit(&l->ring);
        struct io_uring_sqe *t = event_uring_sqe(l);
        if (!t)
            return -1;
        io_uring_prep_timeout(t, &ts, 0, IORING_TIMEOUT_ETIME_SUCCESS);
        t->flags |= IOSQE_IO_LINK;
        t->user_data = URING_UD_IGNORE;
    }
    struct io_uring_sqe *sqe = event_uring_sqe(l);
    if (!sqe)
        return -1; /* after_ms: the space was made above */
    io_uring_prep_read(sqe, fd, buf, (unsigned)len, off);
    sqe->user_data = (uint64_t)(uintptr_t)ptr | URING_TAG_FILE;
    if (after_ms)
        io_uring_submit(&l->ring);
    return 0;
}

static int event_uring_cancel(struct event_loop *base, void *ptr, unsigned which)
{
    struct event_uring *l = event_uring_of(base);
    static const struct {
        unsigned ev;
        uint64_t tag;
    } ops[] = {{EVENT_RECV, URING_TAG_RECV}, {EVENT_SEND, URING_TAG_SEND}};
    for (size_t i = 0; i < 2; i++) {
        if (!(which & ops[i].ev))
            continue;
        struct io_uring_sqe *sqe = event_uring_sqe(l);
        if (!sqe)
            return -1;
        io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)ptr | ops[i].tag, 0);
        sqe->user_data = URING_UD_IGNORE;
    }
    return 0;
}

/* fd is about to be closed: take it out of the file table, or the table's
 * reference would keep the socket open (no FIN for its peer). Started I/O
 * is handed to the kernel first, so none is left to find the slot empty
 * (or, later, holding the next connection given that number). */
static int event_uring_forget(struct event_loop *base, int fd)
{
    struct event_uring *l = event_uring_of(base);
    if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].fixed)
        return 0;
    if (l->enabled && io_uring_sq_ready(&l->ring) > 0)
        io_uring_submit(&l->ring);
    int none = -1;
    l->fds[fd].fixed = false;
    int rc = io_uring_register_files_update(&l->ring, (unsigned)fd, &none, 1);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

static int event_uring_submit(struct event_loop *base)
{
    struct event_uring *l = event_uring_of(base);
    if (!l->enabled || io_uring_sq_ready(&l->ring) == 0)
        return 0;
    int rc = io_uring_submit(&l->ring);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

const struct event_ops event_uring_ops = {
    .name = "io_uring",
    .create = event_uring_create,
    .destroy = event_uring_destroy,
    .add = event_uring_add,
    .modify = event_uring_modify,
    .del = event_uring_del,
    .wait = event_uring_wait,
    .recv = event_uring_recv,
    .recvv = event_uring_recvv,
    .send = event_uring_send,
    .recv_multi = event_uring_recv_multi,
    .pread = event_uring_pread,
    .cancel = event_uring_cancel,
    .submit = event_uring_submit,
    .forget = event_uring_forget,
};
