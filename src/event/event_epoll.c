/* epoll backend (Linux). */
#include "event/event.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#define EVENT_EPOLL_BATCH 256

struct event_loop {
    int epfd;
    struct epoll_event buf[EVENT_EPOLL_BATCH];
};

int event_loop_create(struct event_loop **out)
{
    struct event_loop *l = malloc(sizeof *l);
    if (!l)
        return -1;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        int e = errno;
        free(l);
        errno = e;
        return -1;
    }
    *out = l;
    return 0;
}

void event_loop_destroy(struct event_loop **loop)
{
    if (!*loop)
        return;
    close((*loop)->epfd);
    free(*loop);
    *loop = NULL;
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

int event_add(struct event_loop *loop, int fd, unsigned interest, void *ptr)
{
    struct epoll_event ev = {.events = event_epoll_mask(interest), .data.ptr = ptr};
    return epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int event_modify(struct event_loop *loop, int fd, unsigned interest, void *ptr)
{
    struct epoll_event ev = {.events = event_epoll_mask(interest & ~(unsigned)EVENT_EXCLUSIVE),
                             .data.ptr = ptr};
    return epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev);
}

int event_delete(struct event_loop *loop, int fd)
{
    struct epoll_event ev = {0};
    return epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, &ev);
}

int event_wait(struct event_loop *loop, struct event_fired *out, int max, int timeout_ms)
{
    if (max > EVENT_EPOLL_BATCH)
        max = EVENT_EPOLL_BATCH;
    int n = epoll_wait(loop->epfd, loop->buf, max, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    for (int i = 0; i < n; i++) {
        uint32_t e = loop->buf[i].events;
        unsigned ev = 0;
        if (e & (EPOLLIN | EPOLLRDHUP))
            ev |= EVENT_READ;
        if (e & EPOLLOUT)
            ev |= EVENT_WRITE;
        if (e & (EPOLLERR | EPOLLHUP))
            ev |= EVENT_ERROR;
        out[i].ptr = loop->buf[i].data.ptr;
        out[i].events = ev;
    }
    return n;
}

const char *event_backend(void)
{
    return "epoll";
}
