/* SPDX-License-Identifier: BSD-3-Clause */
/* What each event backend provides (event_epoll.c, event_poll.c,
 * event_uring.c); event.c picks one at start-up and forwards the public
 * calls of event.h to it. Only the event/ files include this. */
#ifndef NODELAY_EVENT_BACKEND_H
#define NODELAY_EVENT_BACKEND_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "event/event.h"

struct event_ops;

/* Every backend's loop starts with this. */
struct event_loop {
    const struct event_ops *ops;
};

struct event_ops {
    const char *name;
    int (*create)(struct event_loop **out);
    void (*destroy)(struct event_loop *loop);
    int (*add)(struct event_loop *loop, int fd, unsigned interest, void *ptr);
    int (*modify)(struct event_loop *loop, int fd, unsigned interest, void *ptr);
    int (*del)(struct event_loop *loop, int fd);
    int (*wait)(struct event_loop *loop, struct event_fired *out, int max, int timeout_ms);
    /* Completion I/O; NULL on a readiness-only backend. */
    int (*recv)(struct event_loop *loop, int fd, void *buf, size_t len, bool nowait, void *ptr);
    int (*recvv)(struct event_loop *loop, int fd, const struct iovec *iov, int n, void *ptr);
    int (*send)(struct event_loop *loop, int fd, const struct msghdr *msg, void *ptr);
    /* NULL: no multishot receive (event_recv_multi says ENOTSUP) */
    int (*recv_multi)(struct event_loop *loop, int fd, size_t max, void *ptr);
    /* NULL: no file reads (event_pread says ENOTSUP) */
    int (*pread)(struct event_loop *loop, int fd, void *buf, size_t len, uint64_t off,
                 unsigned after_ms, void *ptr);
    int (*cancel)(struct event_loop *loop, void *ptr, unsigned which);
    int (*submit)(struct event_loop *loop);
    int (*forget)(struct event_loop *loop, int fd); /* NULL: nothing kept */
};

#ifdef NODELAY_EVENT_poll
extern const struct event_ops event_poll_ops;
#else
extern const struct event_ops event_epoll_ops;
#endif
#ifdef NODELAY_HAVE_URING
extern const struct event_ops event_uring_ops;
/* 0 if this kernel lets us set up a ring as event_uring_ops does, else -1
 * with the reason in why. */
int event_uring_probe(char *why, size_t n);
#endif

#endif
