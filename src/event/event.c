/* SPDX-License-Identifier: BSD-3-Clause */
/* The public event calls, forwarded to the backend chosen at start-up. */
#include "event/event.h"

#include <errno.h>
#include <stdio.h>

#include "event/event_backend.h"

#ifdef NODELAY_EVENT_poll
static const struct event_ops *event_chosen = &event_poll_ops;
#else
static const struct event_ops *event_chosen = &event_epoll_ops;
#endif

int event_select(bool want_ring, char *why, size_t n)
{
#ifdef NODELAY_EVENT_poll
    event_chosen = &event_poll_ops;
#else
    event_chosen = &event_epoll_ops;
#endif
    if (!want_ring)
        return 0;
#ifdef NODELAY_HAVE_URING
    if (event_uring_probe(why, n) < 0)
        return -1;
    event_chosen = &event_uring_ops;
    return 0;
#else
    snprintf(why, n, "not built with liburing");
    return -1;
#endif
}

int event_loop_create(struct event_loop **out)
{
    return event_chosen->create(out);
}

void event_loop_destroy(struct event_loop **loop)
{
    if (!*loop)
        return;
    (*loop)->ops->destroy(*loop);
    *loop = NULL;
}

int event_add(struct event_loop *loop, int fd, unsigned interest, void *ptr)
{
    return loop->ops->add(loop, fd, interest, ptr);
}

int event_modify(struct event_loop *loop, int fd, unsigned interest, void *ptr)
{
    return loop->ops->modify(loop, fd, interest, ptr);
}

int event_delete(struct event_loop *loop, int fd)
{
    return loop->ops->del(loop, fd);
}

int event_wait(struct event_loop *loop, struct event_fired *out, int max, int timeout_ms)
{
    return loop->ops->wait(loop, out, max, timeout_ms);
}

bool event_has_io(const struct event_loop *loop)
{
    return loop->ops->recv != NULL;
}

int event_recv(struct event_loop *loop, int fd, void *buf, size_t len, bool nowait, void *ptr)
{
    if (!loop->ops->recv) {
        errno = ENOTSUP;
        return -1;
    }
    return loop->ops->recv(loop, fd, buf, len, nowait, ptr);
}

int event_recvv(struct event_loop *loop, int fd, const struct iovec *iov, int n, void *ptr)
{
    if (!loop->ops->recvv) {
        errno = ENOTSUP;
        return -1;
    }
    return loop->ops->recvv(loop, fd, iov, n, ptr);
}

int event_recv_multi(struct event_loop *loop, int fd, size_t max, void *ptr)
{
    if (!loop->ops->recv_multi) {
        errno = ENOTSUP;
        return -1;
    }
    return loop->ops->recv_multi(loop, fd, max, ptr);
}

int event_send(struct event_loop *loop, int fd, const struct msghdr *msg, void *ptr)
{
    if (!loop->ops->send) {
        errno = ENOTSUP;
        return -1;
    }
    return loop->ops->send(loop, fd, msg, ptr);
}

int event_pread(struct event_loop *loop, int fd, void *buf, size_t len, uint64_t off,
                unsigned after_ms, void *ptr)
{
    if (!loop->ops->pread) {
        errno = ENOTSUP;
        return -1;
    }
    return loop->ops->pread(loop, fd, buf, len, off, after_ms, ptr);
}

int event_cancel(struct event_loop *loop, void *ptr, unsigned which)
{
    if (!loop->ops->cancel) {
        errno = ENOTSUP;
        return -1;
    }
    return loop->ops->cancel(loop, ptr, which);
}

int event_submit(struct event_loop *loop)
{
    return loop->ops->submit ? loop->ops->submit(loop) : 0;
}

int event_forget(struct event_loop *loop, int fd)
{
    return loop->ops->forget ? loop->ops->forget(loop, fd) : 0;
}

const char *event_backend(void)
{
    return event_chosen->name;
}

bool event_ring_built(void)
{
#ifdef NODELAY_HAVE_URING
    return true;
#else
    return false;
#endif
}

const char *event_backends_built(void)
{
#ifdef NODELAY_EVENT_poll
    return "poll";
#elif defined(NODELAY_HAVE_URING)
    return "io_uring, epoll";
#else
    return "epoll";
#endif
}
