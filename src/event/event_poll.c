/* SPDX-License-Identifier: BSD-3-Clause */
/* poll(2) backend: any POSIX system. Watched fds live in a dense pollfd
 * array (what poll wants); an fd-indexed table finds an fd's slot, so add,
 * modify and delete are O(1) and wait is O(watched fds). */
#include "event/event_backend.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

struct event_poll {
    struct event_loop base;
    struct pollfd *pfd;
    void **ptr;
    size_t n, cap;
    int *slot; /* slot[fd] = index in pfd, or -1 */
    size_t nslot;
};

static struct event_poll *event_poll_of(struct event_loop *base)
{
    return (struct event_poll *)base;
}

static int event_poll_create(struct event_loop **out)
{
    struct event_poll *l = calloc(1, sizeof *l);
    if (!l)
        return -1;
    l->base.ops = &event_poll_ops;
    *out = &l->base;
    return 0;
}

static void event_poll_destroy(struct event_loop *base)
{
    struct event_poll *l = event_poll_of(base);
    free(l->pfd);
    free(l->ptr);
    free(l->slot);
    free(l);
}

static short event_poll_mask(unsigned interest)
{
    short m = 0;
    if (interest & EVENT_READ)
        m |= POLLIN;
    if (interest & EVENT_WRITE)
        m |= POLLOUT;
    return m;
}

static int event_poll_slot(const struct event_poll *l, int fd)
{
    if (fd < 0 || (size_t)fd >= l->nslot)
        return -1;
    return l->slot[fd];
}

static int event_poll_add(struct event_loop *base, int fd, unsigned interest, void *ptr)
{
    struct event_poll *l = event_poll_of(base);
    if (fd < 0) {
        errno = EBADF;
        return -1;
    }
    if (event_poll_slot(l, fd) >= 0) {
        errno = EEXIST;
        return -1;
    }
    if ((size_t)fd >= l->nslot) {
        size_t nslot = l->nslot ? l->nslot : 64;
        while (nslot <= (size_t)fd)
            nslot *= 2;
        int *slot = realloc(l->slot, nslot * sizeof *slot);
        if (!slot)
            return -1;
        for (size_t i = l->nslot; i < nslot; i++)
            slot[i] = -1;
        l->slot = slot;
        l->nslot = nslot;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct pollfd *pfd = realloc(l->pfd, cap * sizeof *pfd);
        if (!pfd)
            return -1;
        l->pfd = pfd;
        void **ptrs = realloc(l->ptr, cap * sizeof *ptrs);
        if (!ptrs)
            return -1;
        l->ptr = ptrs;
        l->cap = cap;
    }
    l->pfd[l->n] = (struct pollfd){.fd = fd, .events = event_poll_mask(interest)};
    l->ptr[l->n] = ptr;
    l->slot[fd] = (int)l->n;
    l->n++;
    return 0;
}

static int event_poll_modify(struct event_loop *base, int fd, unsigned interest, void *ptr)
{
    struct event_poll *l = event_poll_of(base);
    int i = event_poll_slot(l, fd);
    if (i < 0) {
        errno = ENOENT;
        return -1;
    }
    l->pfd[i].events = event_poll_mask(interest);
    l->ptr[i] = ptr;
    return 0;
}

static int event_poll_del(struct event_loop *base, int fd)
{
    struct event_poll *l = event_poll_of(base);
    int i = event_poll_slot(l, fd);
    if (i < 0) {
        errno = ENOENT;
        return -1;
    }
    size_t last = l->n - 1;
    if ((size_t)i != last) {
        l->pfd[i] = l->pfd[last];
        l->ptr[i] = l->ptr[last];
        l->slot[l->pfd[i].fd] = i;
    }
    l->slot[fd] = -1;
    l->n--;
    return 0;
}

static int event_poll_wait(struct event_loop *base, struct event_fired *out, int max, int timeout_ms)
{
    struct event_poll *l = event_poll_of(base);
    int n = poll(l->pfd, (nfds_t)l->n, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    int got = 0;
    for (size_t i = 0; i < l->n && got < max && n > 0; i++) {
        short r = l->pfd[i].revents;
        if (!r)
            continue;
        n--;
        unsigned ev = 0;
        if (r & POLLIN)
            ev |= EVENT_READ;
        if (r & POLLOUT)
            ev |= EVENT_WRITE;
        if (r & (POLLERR | POLLHUP | POLLNVAL))
            ev |= EVENT_ERROR;
        out[got] = (struct event_fired){.ptr = l->ptr[i], .events = ev};
        got++;
    }
    return got;
}

const struct event_ops event_poll_ops = {
    .name = "poll",
    .create = event_poll_create,
    .destroy = event_poll_destroy,
    .add = event_poll_add,
    .modify = event_poll_modify,
    .del = event_poll_del,
    .wait = event_poll_wait,
};
