/* SPDX-License-Identifier: BSD-3-Clause */
/* The I/O floor: a server with no cache at all. It answers memcached text
 * requests with canned replies (every get key a hit of -v bytes, every
 * storage command STORED) so `make bench` can show how far each real server
 * is from what the kernel interface alone costs. Everything parsed from one
 * read is answered in one write, as nodelay does.
 *
 *   floor [-b epoll|uring] [-p PORT] [-t THREADS] [-v VALUE_BYTES] [-n VALUES]
 *
 * Two loops over the same parser: epoll (one read and one writev per ready
 * connection) and io_uring (a send linked to the next recv, all of a turn's
 * submissions and the wait in one io_uring_enter). Each thread has its own
 * SO_REUSEPORT listener. The load generator must run with --no-verify: the
 * values are canned, so only their key and size are right.
 *
 * -n VALUES (default 1): that many distinct value buffers, a key's chosen by
 * a hash of it, so a key set of large values is sent from as much memory as
 * a cache holds for it (200 of 100 KiB: 20 MB, past the L2 and shared L3),
 * not from one buffer that stays in the L2 cache. */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define FL_IN 65536     /* read buffer per connection */
#define FL_TEXT 32768   /* reply headers per turn; values are iovecs into one canned buffer */
#define FL_IOV 512
#define FL_CONNS 4096

struct fconn {
    int fd;
    size_t nin, skip;   /* bytes buffered; value bytes of a set still to discard */
    size_t ntext;
    int niov, iov_at;   /* iovecs composed; the first not yet sent */
    bool more;          /* complete requests left in the buffer (the turn's reply was full) */
    bool dead;          /* io_uring: a send failed; close when its linked recv is cancelled */
    bool want_out;      /* epoll: registered for EPOLLOUT (changed only when it must) */
    struct iovec iov[FL_IOV];
    struct msghdr msg;
    char in[FL_IN];
    char text[FL_TEXT];
};

static int fl_port = 11311;
static size_t fl_vlen = 100;
static char *fl_value;  /* fl_nvalues buffers of fl_vlen bytes of 'x', fl_stride apart */
static size_t fl_nvalues = 1, fl_stride;

/* The buffer a key's value is sent from: always the same one for a key. */
static const char *fl_value_of(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211u;
    return fl_value + (h % fl_nvalues) * fl_stride;
}

static void fl_iov_text(struct fconn *c, size_t from)
{
    if (c->ntext > from) {
        if (c->niov && (char *)c->iov[c->niov - 1].iov_base + c->iov[c->niov - 1].iov_len ==
                           c->text + from) {
            c->iov[c->niov - 1].iov_len += c->ntext - from;
        } else {
            c->iov[c->niov++] = (struct iovec){c->text + from, c->ntext - from};
        }
    }
}

static void fl_say(struct fconn *c, const char *s, size_t n)
{
    size_t from = c->ntext;
    memcpy(c->text + c->ntext, s, n);
    c->ntext += n;
    fl_iov_text(c, from);
}

/* Answers every complete request in c->in; leaves c->more set when the
 * reply is full with requests still buffered. */
static void fl_process(struct fconn *c)
{
    size_t at = 0;
    c->ntext = 0;
    c->niov = c->iov_at = 0;
    c->more = false;
    for (;;) {
        if (c->skip) {
            size_t n = c->nin - at < c->skip ? c->nin - at : c->skip;
            at += n;
            c->skip -= n;
            if (c->skip)
                break;
        }
        char *line = c->in + at, *nl = memchr(line, '\n', c->nin - at);
        if (!nl)
            break;
        /* room for this line's replies, or it waits for the next turn */
        size_t keys = 1;
        for (char *q = line; q < nl; q++)
            keys += *q == ' ';
        if (c->ntext + (size_t)(nl - line) + 32 * keys + 16 > FL_TEXT ||
            c->niov + 2 * (int)keys + 2 > FL_IOV) {
            if ((c->more = c->niov > 0))
                break;
            at = (size_t)(nl - c->in) + 1; /* it would never fit: not in any workload */
            fl_say(c, "SERVER_ERROR line too long\r\n", 28);
            continue;
        }
        at = (size_t)(nl - c->in) + 1;
        char *end = nl > line && nl[-1] == '\r' ? nl - 1 : nl;
        if (end - line > 4 && (memcmp(line, "get ", 4) == 0 || memcmp(line, "gets ", 5) == 0)) {
            for (char *k = memchr(line, ' ', (size_t)(end - line)); k && k < end;) {
                while (k < end && *k == ' ')
                    k++;
                char *ke = k;
                while (ke < end && *ke != ' ')
                    ke++;
                if (ke == k || ke - k > 250)
                    break;
                size_t from = c->ntext;
                c->ntext += (size_t)sprintf(c->text + c->ntext, "VALUE %.*s 0 %zu\r\n",
                                            (int)(ke - k), k, fl_vlen);
                fl_iov_text(c, from);
                c->iov[c->niov++] =
                    (struct iovec){(void *)fl_value_of(k, (size_t)(ke - k)), fl_vlen};
                fl_say(c, "\r\n", 2);
                k = ke;
            }
            fl_say(c, "END\r\n", 5);
        } else if (memcmp(line, "set ", 4) == 0 || memcmp(line, "add ", 4) == 0) {
            unsigned long bytes = 0;
            char key[251];
            unsigned flags;
            long exp;
            if (sscanf(line + 4, "%250s %u %ld %lu", key, &flags, &exp, &bytes) != 4) {
                fl_say(c, "ERROR\r\n", 7);
                continue;
            }
            c->skip = bytes + 2;
            if (!memmem(line, (size_t)(end - line), " noreply", 8))
                fl_say(c, "STORED\r\n", 8);
        } else {
            fl_say(c, "ERROR\r\n", 7);
        }
    }
    memmove(c->in, c->in + at, c->nin - at);
    c->nin -= at;
}

/* Drops the first n bytes of the composed reply (they were sent). */
static void fl_sent(struct fconn *c, size_t n)
{
    while (n && c->iov_at < c->niov) {
        struct iovec *v = &c->iov[c->iov_at];
        size_t k = n < v->iov_len ? n : v->iov_len;
        v->iov_base = (char *)v->iov_base + k;
        v->iov_len -= k;
        n -= k;
        if (!v->iov_len)
            c->iov_at++;
    }
}

static int fl_listen(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)fl_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
        bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1024)) {
        perror("floor: listen");
        exit(1);
    }
    return fd;
}

static struct fconn *fl_conn(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct fconn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    return c;
}

static void fl_close(struct fconn *c)
{
    close(c->fd);
    free(c);
}

/* ---- epoll: one read, one writev per ready connection ---- */

static bool fl_epoll_flush(struct fconn *c)
{
    while (c->iov_at < c->niov) {
        ssize_t n = writev(c->fd, c->iov + c->iov_at, c->niov - c->iov_at);
        if (n < 0)
            return errno == EAGAIN;
        fl_sent(c, (size_t)n);
    }
    return true;
}

static void *fl_epoll(void *arg)
{
    (void)arg;
    int lfd = fl_listen(), ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL}, evs[256];
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            struct fconn *c = evs[i].data.ptr;
            if (!c) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
                if (fd >= 0 && (c = fl_conn(fd))) {
                    ev = (struct epoll_event){.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            bool ok = true;
            if (c->iov_at < c->niov) { /* EPOLLOUT after a partial write */
                ok = fl_epoll_flush(c);
            } else {
                ssize_t r = read(c->fd, c->in + c->nin, FL_IN - c->nin);
                ok = r > 0 || (r < 0 && errno == EAGAIN);
                if (r > 0)
                    c->nin += (size_t)r;
            }
            while (ok && c->iov_at == c->niov) {
                fl_process(c);
                ok = fl_epoll_flush(c);
                if (!c->more)
                    break;
            }
            if (!ok) {
                fl_close(c);
                continue;
            }
            bool out = c->iov_at < c->niov;
            if (out != c->want_out) {
                c->want_out = out;
                ev = (struct epoll_event){.events = out ? EPOLLOUT : EPOLLIN, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
            }
        }
    }
    return NULL;
}

/* ---- io_uring: a send linked to the next recv; one enter per turn ---- */

enum { FL_ACCEPT, FL_RECV, FL_SEND };
#define FL_UD(c, op) ((uint64_t)(uintptr_t)(c) | (op))

static struct io_uring_sqe *fl_sqe(struct io_uring *r)
{
    struct io_uring_sqe *s = io_uring_get_sqe(r);
    if (!s) {
        io_uring_submit(r);
        s = io_uring_get_sqe(r);
    }
    return s;
}

static void fl_uring_recv(struct io_uring *r, struct fconn *c)
{
    struct io_uring_sqe *s = fl_sqe(r);
    io_uring_prep_recv(s, c->fd, c->in + c->nin, FL_IN - c->nin, 0);
    io_uring_sqe_set_data64(s, FL_UD(c, FL_RECV));
}

/* Sends what is left of the reply; the recv after it rides on the same
 * submission unless requests are still buffered. */
static void fl_uring_send(struct io_uring *r, struct fconn *c)
{
    struct io_uring_sqe *s = fl_sqe(r);
    c->msg = (struct msghdr){.msg_iov = c->iov + c->iov_at, .msg_iovlen = (size_t)(c->niov - c->iov_at)};
    io_uring_prep_sendmsg(s, c->fd, &c->msg, MSG_WAITALL);
    io_uring_sqe_set_data64(s, FL_UD(c, FL_SEND));
    if (!c->more) {
        s->flags |= IOSQE_IO_LINK;
        fl_uring_recv(r, c);
    }
}

static void fl_uring_turn(struct io_uring *r, struct fconn *c)
{
    fl_process(c);
    if (c->niov)
        fl_uring_send(r, c);
    else
        fl_uring_recv(r, c);
}

static void fl_uring_accept(struct io_uring *r, int lfd)
{
    struct io_uring_sqe *s = fl_sqe(r);
    io_uring_prep_accept(s, lfd, NULL, NULL, 0);
    io_uring_sqe_set_data64(s, FL_UD(NULL, FL_ACCEPT));
}

static void *fl_uring(void *arg)
{
    (void)arg;
    struct io_uring r;
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
    if (io_uring_queue_init_params(1024, &r, &p) < 0) {
        p = (struct io_uring_params){0};
        int e = io_uring_queue_init_params(1024, &r, &p);
        if (e < 0) {
            fprintf(stderr, "floor: io_uring: %s\n", strerror(-e));
            exit(1);
        }
    }
    int lfd = fl_listen();
    fl_uring_accept(&r, lfd);
    for (;;) {
        io_uring_submit_and_wait(&r, 1);
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&r, head, cqe) {
            seen++;
            uint64_t ud = io_uring_cqe_get_data64(cqe);
            struct fconn *c = (struct fconn *)(uintptr_t)(ud & ~(uint64_t)3);
            int res = cqe->res;
            switch (ud & 3) {
            case FL_ACCEPT:
                if (res >= 0 && (c = fl_conn(res)))
                    fl_uring_recv(&r, c);
                fl_uring_accept(&r, lfd);
                break;
            case FL_RECV:
                if (res == -ECANCELED && !c->dead) /* its send fell short: re-armed there */
                    break;
                if (res <= 0) {
                    fl_close(c);
                    break;
                }
                c->nin += (size_t)res;
                fl_uring_turn(&r, c);
                break;
            case FL_SEND:
                if (res < 0) {
                    if (c->more) /* no recv linked: nothing else refers to c */
                        fl_close(c);
                    else /* its linked recv completes cancelled and closes */
                        c->dead = true;
                    break;
                }
                fl_sent(c, (size_t)res);
                if (c->iov_at < c->niov)
                    fl_uring_send(&r, c);
                else if (c->more)
                    fl_uring_turn(&r, c);
                break;
            }
        }
        io_uring_cq_advance(&r, seen);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *backend = "epoll";
    int threads = 1, o;
    while ((o = getopt(argc, argv, "b:p:t:v:n:h")) != -1) {
        switch (o) {
        case 'b': backend = optarg; break;
        case 'p': fl_port = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'v': fl_vlen = strtoul(optarg, NULL, 10); break;
        case 'n': fl_nvalues = strtoul(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: floor [-b epoll|uring] [-p PORT] [-t THREADS] [-v VALUE_BYTES]"
                            " [-n VALUES]\n");
            return o == 'h' ? 0 : 2;
        }
    }
    void *(*loop)(void *) = strcmp(backend, "uring") == 0 ? fl_uring : fl_epoll;
    if (threads < 1 || fl_nvalues < 1 || fl_nvalues > 100000 ||
        (loop == fl_epoll && strcmp(backend, "epoll") != 0)) {
        fprintf(stderr, "floor: bad -b, -t or -n\n");
        return 2;
    }
    fl_stride = (fl_vlen + 63) & ~(size_t)63; /* each value on its own cache lines */
    fl_value = malloc(fl_nvalues * fl_stride + 1);
    if (!fl_value)
        return 1;
    memset(fl_value, 'x', fl_nvalues * fl_stride + 1);
    pthread_t t;
    for (int i = 1; i < threads; i++)
        pthread_create(&t, NULL, loop, NULL);
    loop(NULL);
    return 0;
}
