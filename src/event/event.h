/* SPDX-License-Identifier: BSD-3-Clause */
/* One event-loop interface; the backend is chosen at start-up and nothing
 * else knows which: io_uring (Linux with liburing, when the kernel allows
 * it), else epoll (Linux) or poll (EVENT=poll, any POSIX).
 *
 * Readiness: level-triggered. An fd stays reported while it is
 * readable/writable and its interest includes that, so a caller that stops
 * early (the -R budget, backpressure) loses nothing. A loop belongs to one
 * thread (it may be set up by another before that thread first waits).
 *
 * Completion I/O (event_has_io): a receive or a send is started on an fd
 * and its result comes back later as an event (EVENT_RECV / EVENT_SEND with
 * res = what recv(2)/sendmsg(2) would have returned, or -errno). The
 * memory it names belongs to the kernel until then. */
#ifndef NODELAY_EVENT_H
#define NODELAY_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct iovec;
struct msghdr;

enum {
    EVENT_READ = 1u << 0,
    EVENT_WRITE = 1u << 1,
    EVENT_ERROR = 1u << 2,     /* reported only: hang-up or socket error */
    EVENT_EXCLUSIVE = 1u << 3, /* interest only, with event_add: a listening fd
                                  watched by several loops wakes one of them
                                  (EPOLLEXCLUSIVE, also on io_uring); ignored by poll.
                                  No loop keeps such an fd open: its last
                                  close ends it, whatever the loops (or a
                                  killed process's rings) still wait on */
    EVENT_RECV = 1u << 4,      /* reported only: an event_recv completed */
    EVENT_SEND = 1u << 5,      /* reported only: an event_send completed */
    EVENT_MORE = 1u << 6,      /* reported only, with EVENT_RECV: an
                                  event_recv_multi delivered bytes and stays
                                  started (more events of it will come) */
    EVENT_FILE = 1u << 7,      /* reported only: an event_pread completed;
                                  ptr is the caller's, not a watched fd's */
};

struct event_loop;

/* The most a receive into the loop's own buffer delivers. */
#define EVENT_RECV_BUF_MAX 2048

struct event_fired {
    void *ptr;
    unsigned events; /* EVENT_READ | EVENT_WRITE | EVENT_ERROR, or one of
                        EVENT_RECV, EVENT_SEND */
    int res;         /* EVENT_RECV/EVENT_SEND: bytes, 0 (EOF) or -errno */
    const char *data; /* EVENT_RECV started without a buffer: the loop's
                         buffer holding the res bytes, valid until the next
                         event_wait on this loop */
};

/* Pick the backend for the loops created after: io_uring if want_ring and
 * the kernel lets us set up a ring, else epoll/poll. Returns 0, or -1 when
 * the ring was wanted but is not available (the reason in why; the
 * fallback is then in use). Call before creating loops. */
int event_select(bool want_ring, char *why, size_t n);

/* Returns 0 or -1 (errno set). */
int event_loop_create(struct event_loop **out);
void event_loop_destroy(struct event_loop **loop);

/* Watch fd for `interest` (EVENT_READ/EVENT_WRITE, 0 = nothing for now);
 * ptr comes back in event_fired. Each returns 0 or -1 (errno set). */
int event_add(struct event_loop *loop, int fd, unsigned interest, void *ptr);
int event_modify(struct event_loop *loop, int fd, unsigned interest, void *ptr);
int event_delete(struct event_loop *loop, int fd);

/* Wait up to timeout_ms (-1 = forever) and fill up to max events. Returns
 * how many (0 on timeout or EINTR), or -1 on error. Started I/O is handed
 * to the kernel here, with the wait: one system call per turn. */
int event_wait(struct event_loop *loop, struct event_fired *out, int max, int timeout_ms);

/* Does this loop do completion I/O (event_recv/event_send)? */
bool event_has_io(const struct event_loop *loop);
/* Receive up to len bytes into buf / send msg: buf, msg, its iovec array
 * and the bytes it points at stay untouched until the completion. buf NULL:
 * into a buffer of the loop's, taken only when bytes arrive (at most
 * EVENT_RECV_BUF_MAX bytes, reported in event_fired.data). nowait: a
 * receive that takes only what is queued already, completing with -EAGAIN
 * rather than waiting for bytes (the rest of a batch that filled a receive,
 * which must never hold its replies waiting on the client). At most one of
 * each per ptr at a time; ptr must be 4-byte aligned. Return 0 or -1
 * (errno set). */
int event_recv(struct event_loop *loop, int fd, void *buf, size_t len, bool nowait, void *ptr);
int event_send(struct event_loop *loop, int fd, const struct msghdr *msg, void *ptr);
/* Receive into n pieces in order (a held value's rest and the read buffer
 * after it: one receive, as a readv on epoll); iov and what it points at
 * stay untouched until the completion, as for event_recv. */
int event_recvv(struct event_loop *loop, int fd, const struct iovec *iov, int n, void *ptr);
/* A receive that stays started (multishot) into the loop's buffers: each
 * arrival of bytes is one EVENT_RECV event (as event_recv with buf NULL),
 * flagged EVENT_MORE while it stays started. It ends by itself once it has
 * delivered max bytes or more (at most max + EVENT_RECV_BUF_MAX - 1), so
 * one start never hands a connection more than that, however long its
 * stop takes to land; the event without EVENT_MORE is its last (the one
 * that reached max, end of input, an error, -ECANCELED after event_cancel,
 * -ENOBUFS when the loop's buffers ran out). At most one receive of either
 * kind per ptr at a time. Returns 0, or -1 with errno ENOTSUP where the
 * loop or the kernel cannot bound it so (use event_recv). */
int event_recv_multi(struct event_loop *loop, int fd, size_t max, void *ptr);
/* Read len bytes at off of a regular file into buf (on an O_DIRECT fd,
 * all three aligned as the file asks): the result comes back as an
 * EVENT_FILE event with ptr and res = bytes read (fewer at the file's end)
 * or -errno, and buf is the kernel's until then. after_ms > 0 starts the
 * read that much later (a test seam's slow device). Any number per ptr;
 * ptr 4-byte aligned and not NULL. Returns 0, or -1 (errno set: ENOTSUP on
 * a readiness backend, EBUSY when the loop has no room now): read it some
 * other way then. */
int event_pread(struct event_loop *loop, int fd, void *buf, size_t len, uint64_t off,
                unsigned after_ms, void *ptr);
/* Ask the kernel to stop ptr's receive and/or send (which: EVENT_RECV |
 * EVENT_SEND). Their completions still come (res -ECANCELED, or what was
 * done). Returns 0 or -1. */
int event_cancel(struct event_loop *loop, void *ptr, unsigned which);

/* Hand the I/O started so far to the kernel now rather than at the next
 * wait (a system call: only before closing an fd that started I/O names,
 * so that no request of it is left to find that fd number reused).
 * Returns 0 or -1. */
int event_submit(struct event_loop *loop);

/* fd, which started I/O (event_recv/event_send), is about to be closed:
 * drop what the loop keeps of it (io_uring: its registered file, whose
 * reference would keep the socket open). Hands the I/O started so far to
 * the kernel first. Returns 0 or -1 (errno set); close the fd either way. */
int event_forget(struct event_loop *loop, int fd);

/* "io_uring", "epoll" or "poll": the backend in use, for logs and stats. */
const char *event_backend(void);
/* Whether this build has the io_uring backend (liburing at build time),
 * and the backends it has, for -V: "io_uring, epoll", "epoll" or "poll". */
bool event_ring_built(void);
const char *event_backends_built(void);

#endif
