/* SPDX-License-Identifier: BSD-3-Clause */
/* epoll backend (Linux). */
#include "event/event_backend.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#define EVENT_EPOLL_BATCH 256

struct event_epoll {
    struct event_loop base;
    int epfd;
    struct epoll_event buf[EVENT_EPOLL_BATCH];
};

static struct event_epoll *event_epoll_of(struct event_loop *base)
{
    return (struct event_epoll *)base;
}

static int event_epoll_create(struct event_loop **out)
{
    struct event_epoll *l = malloc(sizeof *l);
    if (!l)
        return -1;
    l->base.ops = &event_epoll_ops;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        int e = errno;
        free(l);
        errno = e;
        return -1;
    }
    *out = &l->base;
    return 0;
}

static void event_epoll_destroy(struct event_loop *base)
{
    struct event_epoll *l = event_epoll_of(base);
    close(l->epfd);
    free(l);
}

static uint32_t event_epoll_mask(unsigned interest)
{
    uint32_t m = 0;
    if (interest & EVENT_READ)
        m |= EPOLLIN;
    /* EPOLLEXCLUSIVE accepts only a few flags alongside it (no RDHUP). */
    if ((interest & EVENT_READ) && !(interest & EVENT_EXCLUSIVE))
        m |= EPOLLRDHUP;
    if (interest & EVENT_WRITE)
        m |= EPOLLOUT;
#ifdef EPOLLEXCLUSIVE
    if (interest & EVENT_EXCLUSIVE)
        m |= EPOLLEXCLUSIVE;
#endif
    return m;
}

static int event_epoll_add(struct event_loop *base, int fd, unsigned interest, void *ptr)
{
    struct epoll_event ev = {.events = event_epoll_mask(interest), .data.ptr = ptr};
    return epoll_ctl(event_epoll_of(base)->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int event_epoll_modify(struct event_loop *base, int fd, unsigned interest, void *ptr)
{
    struct epoll_event ev = {.events = event_epoll_mask(interest & ~(unsigned)EVENT_EXCLUSIVE),
                             .data.ptr = ptr};
    return epoll_ctl(event_epoll_of(base)->epfd, EPOLL_CTL_MOD, fd, &ev);
}

static int event_epoll_del(struct event_loop *base, int fd)
{
    struct epoll_event ev = {0};
    return epoll_ctl(event_epoll_of(base)->epfd, EPOLL_CTL_DEL, fd, &ev);
}

static int event_epoll_wait(struct event_loop *base, struct event_fired *out, int max, int timeout_ms)
{
    struct event_epoll *l = event_epoll_of(base);
    if (max > EVENT_EPOLL_BATCH)
        max = EVENT_EPOLL_BATCH;
    int n = epoll_wait(l->epfd, l->buf, max, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    for (int i = 0; i < n; i++) {
        uint32_t e = l->buf[i].events;
        unsigned ev = 0;
        if (e & (EPOLLIN | EPOLLRDHUP))
            ev |= EVENT_READ;
        if (e & EPOLLOUT)
            ev |= EVENT_WRITE;
        if (e & (EPOLLERR | EPOLLHUP))
            ev |= EVENT_ERROR;
        out[i] = (struct event_fired){.ptr = l->buf[i].data.ptr, .events = ev};
    }
    return n;
}

const struct event_ops event_epoll_ops = {
    .name = "epoll",
    .create = event_epoll_create,
    .destroy = event_epoll_destroy,
    .add = event_epoll_add,
    .modify = event_epoll_modify,
    .del = event_epoll_del,
    .wait = event_epoll_wait,
};
