/* SPDX-License-Identifier: BSD-3-Clause */
/* The event loop on socketpairs: the readiness tests run on the build's
 * backend (epoll or poll) and again on io_uring when the build and the
 * kernel have it, which also runs the completion I/O tests. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "event/event.h"

static int find(const struct event_fired *ev, int n, void *ptr, unsigned *events)
{
    for (int i = 0; i < n; i++)
        if (ev[i].ptr == ptr) {
            *events = ev[i].events;
            return 1;
        }
    return 0;
}

static void test_read_write_interest(void **state)
{
    (void)state;
    struct event_loop *l = NULL;
    assert_int_equal(event_loop_create(&l), 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int tag_a, tag_b;
    assert_int_equal(event_add(l, sv[0], EVENT_READ, &tag_a), 0);
    assert_int_equal(event_add(l, sv[1], 0, &tag_b), 0);

    struct event_fired ev[8];
    unsigned e = 0;
    /* nothing readable yet */
    assert_int_equal(event_wait(l, ev, 8, 0), 0);

    assert_int_equal(write(sv[1], "x", 1), 1);
    int n = event_wait(l, ev, 8, 1000);
    assert_int_equal(n, 1);
    assert_true(find(ev, n, &tag_a, &e));
    assert_true(e & EVENT_READ);

    /* level-triggered: still readable until read */
    n = event_wait(l, ev, 8, 0);
    assert_int_equal(n, 1);
    char c;
    assert_int_equal(read(sv[0], &c, 1), 1);
    assert_int_equal(event_wait(l, ev, 8, 0), 0);

    /* write interest on b: writable at once, with the new pointer */
    int tag_c;
    assert_int_equal(event_modify(l, sv[1], EVENT_WRITE, &tag_c), 0);
    n = event_wait(l, ev, 8, 0);
    assert_int_equal(n, 1);
    assert_true(find(ev, n, &tag_c, &e));
    assert_true(e & EVENT_WRITE);
    assert_false(find(ev, n, &tag_b, &e));

    /* delete: no more reports */
    assert_int_equal(event_delete(l, sv[1]), 0);
    assert_int_equal(event_wait(l, ev, 8, 0), 0);
    assert_int_equal(event_delete(l, sv[1]), -1);

    close(sv[0]);
    close(sv[1]);
    event_loop_destroy(&l);
    assert_null(l);
}

static void test_hangup_reported(void **state)
{
    (void)state;
    struct event_loop *l = NULL;
    assert_int_equal(event_loop_create(&l), 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int tag;
    assert_int_equal(event_add(l, sv[0], EVENT_READ, &tag), 0);
    close(sv[1]);
    struct event_fired ev[4];
    int n = event_wait(l, ev, 4, 1000);
    assert_int_equal(n, 1);
    assert_ptr_equal(ev[0].ptr, &tag);
    /* a peer close reads as readable (EOF), possibly with an error flag */
    assert_true(ev[0].events & (EVENT_READ | EVENT_ERROR));
    close(sv[0]);
    event_loop_destroy(&l);
}

static void test_many_fds_and_swap_delete(void **state)
{
    (void)state;
    struct event_loop *l = NULL;
    assert_int_equal(event_loop_create(&l), 0);
    enum { N = 100 };
    int sv[N][2];
    int tags[N];
    for (int i = 0; i < N; i++) {
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]), 0);
        assert_int_equal(event_add(l, sv[i][0], EVENT_READ, &tags[i]), 0);
    }
    /* delete the even ones, then make every one readable */
    for (int i = 0; i < N; i += 2)
        assert_int_equal(event_delete(l, sv[i][0]), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(write(sv[i][1], "y", 1), 1);
    struct event_fired ev[N];
    int n = event_wait(l, ev, N, 1000);
    assert_int_equal(n, N / 2);
    unsigned e = 0;
    for (int i = 0; i < N; i++)
        assert_int_equal(find(ev, n, &tags[i], &e), i % 2);
    /* max bounds the batch */
    assert_int_equal(event_wait(l, ev, 3, 0), 3);
    for (int i = 0; i < N; i++) {
        close(sv[i][0]);
        close(sv[i][1]);
    }
    event_loop_destroy(&l);
}

/* A listening socket watched by two loops (as every worker watches every
 * listener): a connection wakes at least one, and once accepted none. */
static void test_shared_listener(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 8), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    struct event_loop *l1 = NULL, *l2 = NULL;
    assert_int_equal(event_loop_create(&l1), 0);
    assert_int_equal(event_loop_create(&l2), 0);
    int tag;
    assert_int_equal(event_add(l1, lfd, EVENT_READ | EVENT_EXCLUSIVE, &tag), 0);
    assert_int_equal(event_add(l2, lfd, EVENT_READ | EVENT_EXCLUSIVE, &tag), 0);
    int cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof a), 0);
    struct event_fired ev[2];
    int n1 = event_wait(l1, ev, 2, 1000);
    int n2 = event_wait(l2, ev, 2, 0);
    assert_true(n1 + n2 >= 1);
    int afd = accept(lfd, NULL, NULL);
    assert_true(afd >= 0);
    assert_int_equal(event_wait(l1, ev, 2, 0), 0);
    assert_int_equal(event_wait(l2, ev, 2, 0), 0);
    close(afd);
    close(cfd);
    close(lfd);
    event_loop_destroy(&l1);
    event_loop_destroy(&l2);
}

static int listen_loopback(struct sockaddr_in *a)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)a, sizeof *a), 0);
    assert_int_equal(listen(lfd, 8), 0);
    socklen_t len = sizeof *a;
    assert_int_equal(getsockname(lfd, (struct sockaddr *)a, &len), 0);
    return lfd;
}

/* A loop holds no reference on a listener it watches: once its last
 * descriptor is closed the port refuses connections at once, loops still
 * waiting on it (a pending io_uring poll held the socket open, in LISTEN,
 * until the ring was torn down). */
static void test_listener_not_held(void **state)
{
    (void)state;
    struct sockaddr_in a;
    int lfd = listen_loopback(&a);
    struct event_loop *l1 = NULL, *l2 = NULL;
    assert_int_equal(event_loop_create(&l1), 0);
    assert_int_equal(event_loop_create(&l2), 0);
    int tag;
    assert_int_equal(event_add(l1, lfd, EVENT_READ | EVENT_EXCLUSIVE, &tag), 0);
    assert_int_equal(event_add(l2, lfd, EVENT_READ | EVENT_EXCLUSIVE, &tag), 0);
    struct event_fired ev[2];
    assert_int_equal(event_wait(l1, ev, 2, 0), 0); /* polls armed, nothing ready */
    assert_int_equal(event_wait(l2, ev, 2, 0), 0);
    close(lfd);
    int cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof a), -1);
    assert_int_equal(errno, ECONNREFUSED);
    close(cfd);
    event_loop_destroy(&l1);
    event_loop_destroy(&l2);
}

static void test_backend_name(void **state)
{
    const char *want = *state;
    assert_string_equal(event_backend(), want);
    struct event_loop *l = NULL;
    assert_int_equal(event_loop_create(&l), 0);
    assert_int_equal(event_has_io(l), strcmp(want, "io_uring") == 0);
    if (!event_has_io(l)) {
        /* a readiness backend reads files some other way */
        char b[8];
        int tag;
        assert_int_equal(event_pread(l, 0, b, sizeof b, 0, 0, &tag), -1);
        assert_int_equal(errno, ENOTSUP);
    }
    event_loop_destroy(&l);
}

/* Wait until ptr's completion comes; returns it. */
static struct event_fired wait_for(struct event_loop *l, void *ptr, unsigned kind)
{
    struct event_fired ev[8];
    for (int tries = 0; tries < 20; tries++) {
        int n = event_wait(l, ev, 8, 100);
        for (int i = 0; i < n; i++)
            if (ev[i].ptr == ptr && (ev[i].events & kind))
                return ev[i];
    }
    fail_msg("no completion");
    return ev[0];
}

/* A receive into our buffer, one into the loop's, a send of an iovec. */
static void test_completion_io(void **state)
{
    (void)state;
    struct event_loop *l = NULL;
    assert_int_equal(event_loop_create(&l), 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int tag;
    char buf[16];
    assert_int_equal(event_recv(l, sv[0], buf, sizeof buf, false, &tag), 0);
    struct event_fired ev[4];
    assert_int_equal(event_wait(l, ev, 4, 0), 0); /* nothing sent yet */
    assert_int_equal(write(sv[1], "hello", 5), 5);
    struct event_fired f = wait_for(l, &tag, EVENT_RECV);
    assert_int_equal(f.res, 5);
    assert_null(f.data);
    assert_memory_equal(buf, "hello", 5);

    /* no buffer: the loop's, taken when the bytes come */
    assert_int_equal(event_recv(l, sv[0], NULL, 0, false, &tag), 0);
    assert_int_equal(write(sv[1], "world", 5), 5);
    f = wait_for(l, &tag, EVENT_RECV);
    assert_int_equal(f.res, 5);
    assert_non_null(f.data);
    assert_memory_equal(f.data, "world", 5);

    /* nowait: takes what is queued, and with nothing queued completes
     * with -EAGAIN at once rather than waiting for bytes */
    assert_int_equal(write(sv[1], "rest", 4), 4);
    assert_int_equal(event_recv(l, sv[0], buf, sizeof buf, true, &tag), 0);
    f = wait_for(l, &tag, EVENT_RECV);
    assert_int_equal(f.res, 4);
    assert_memory_equal(buf, "rest", 4);
    assert_int_equal(event_recv(l, sv[0], buf, sizeof buf, true, &tag), 0);
    assert_int_equal(event_wait(l, ev, 4, 0), 1);
    assert_ptr_equal(ev[0].ptr, &tag);
    assert_int_equal(ev[0].res, -EAGAIN);

    /* one receive into two pieces, the first filled before the second:
     * then one that ends at what was queued, not waiting to fill both */
    char one[4], two[8];
    struct iovec rv[2] = {{one, sizeof one}, {two, sizeof two}};
    assert_int_equal(write(sv[1], "value\r\nget", 10), 10);
    assert_int_equal(event_recvv(l, sv[0], rv, 2, &tag), 0);
    f = wait_for(l, &tag, EVENT_RECV);
    assert_int_equal(f.res, 10);
    assert_null(f.data);
    assert_memory_equal(one, "valu", 4);
    assert_memory_equal(two, "e\r\nget", 6);
    assert_int_equal(event_recvv(l, sv[0], rv, 2, &tag), 0);
    assert_int_equal(write(sv[1], "ab\r\n", 4), 4);
    f = wait_for(l, &tag, EVENT_RECV);
    assert_int_equal(f.res, 4);
    assert_memory_equal(one, "ab\r\n", 4);

    /* one send of two pieces */
    struct iovec iov[2] = {{"ab", 2}, {"cde", 3}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    assert_int_equal(event_send(l, sv[0], &msg, &tag), 0);
    f = wait_for(l, &tag, EVENT_SEND);
    assert_int_equal(f.res, 5);
    assert_int_equal(read(sv[1], buf, sizeof buf), 5);
    assert_memory_equal(buf, "abcde", 5);

    /* a cancelled receive completes with -ECANCELED */
    assert_int_equal(event_recv(l, sv[0], buf, sizeof buf, false, &tag), 0);
    assert_int_equal(event_wait(l, ev, 4, 0), 0);
    assert_int_equal(event_cancel(l, &tag, EVENT_RECV), 0);
    f = wait_for(l, &tag, EVENT_RECV);
    assert_int_equal(f.res, -ECANCELED);

    /* end of input */
    assert_int_equal(event_recv(l, sv[0], NULL, 0, false, &tag), 0);
    close(sv[1]);
    f = wait_for(l, &tag, EVENT_RECV);
    assert_int_equal(f.res, 0);
    close(sv[0]);
    event_loop_destroy(&l);
}

/* Reads of a regular file: at an offset, short at its end, several at
 * once each with its own completion, and one started later (after_ms). */
static void test_file_reads(void **state)
{
    (void)state;
    char path[] = "/tmp/nodelay-event-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    char data[8192];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)('a' + i % 23);
    assert_int_equal(write(fd, data, sizeof data), (ssize_t)sizeof data);
    struct event_loop *l = NULL;
    assert_int_equal(event_loop_create(&l), 0);
    struct event_fired ev[4];
    assert_int_equal(event_wait(l, ev, 4, 0), 0); /* the ring is enabled by its first wait */
    int t1, t2, t3;
    char b1[4096], b2[4096], b3[64];
    assert_int_equal(event_pread(l, fd, b1, sizeof b1, 4096, 0, &t1), 0);
    assert_int_equal(event_pread(l, fd, b2, sizeof b2, 6144, 0, &t2), 0); /* the last 2 KiB */
    int res1 = -1, res2 = -1;
    for (int tries = 0; tries < 20 && (res1 < 0 || res2 < 0); tries++) {
        int n = event_wait(l, ev, 4, 100);
        for (int i = 0; i < n; i++) {
            assert_int_equal(ev[i].events, EVENT_FILE);
            if (ev[i].ptr == &t1)
                res1 = ev[i].res;
            else if (ev[i].ptr == &t2)
                res2 = ev[i].res;
        }
    }
    assert_int_equal(res1, 4096);
    assert_memory_equal(b1, data + 4096, 4096);
    assert_int_equal(res2, 2048);
    assert_memory_equal(b2, data + 6144, 2048);

    /* after_ms: not there at once, there later */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(event_pread(l, fd, b3, sizeof b3, 0, 150, &t3), 0);
    assert_int_equal(event_wait(l, ev, 4, 0), 0);
    struct event_fired f = wait_for(l, &t3, EVENT_FILE);
    clock_gettime(CLOCK_MONOTONIC, &t);
    long ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 140);
    assert_int_equal(f.res, 64);
    assert_memory_equal(b3, data, 64);
    close(fd);
    event_loop_destroy(&l);
}

/* io_uring: a connection to a listener that two loops wait on wakes one of
 * them, not both (EPOLLEXCLUSIVE's promise, kept through the listeners'
 * shared set), and the other takes the next. */
static void test_listener_wakes_one_loop(void **state)
{
    (void)state;
    struct sockaddr_in a;
    int lfd = listen_loopback(&a);
    struct event_loop *l1 = NULL, *l2 = NULL;
    assert_int_equal(event_loop_create(&l1), 0);
    assert_int_equal(event_loop_create(&l2), 0);
    int t1, t2;
    assert_int_equal(event_add(l1, lfd, EVENT_READ | EVENT_EXCLUSIVE, &t1), 0);
    assert_int_equal(event_add(l2, lfd, EVENT_READ | EVENT_EXCLUSIVE, &t2), 0);
    struct event_fired ev[4];
    assert_int_equal(event_wait(l1, ev, 4, 0), 0);
    assert_int_equal(event_wait(l2, ev, 4, 0), 0);
    int cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof a), 0);
    int n1 = event_wait(l1, ev, 4, 200);
    int n2 = event_wait(l2, ev, 4, 200);
    assert_int_equal(n1 + n2, 1);
    assert_ptr_equal(ev[0].ptr, n1 ? (void *)&t1 : (void *)&t2);
    assert_true(ev[0].events & EVENT_READ);
    int afd = accept(lfd, NULL, NULL);
    assert_true(afd >= 0);
    close(afd);
    close(cfd);
    /* one loop left the set: the other still wakes */
    assert_int_equal(event_delete(l1, lfd), 0);
    cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(event_wait(l2, ev, 4, 1000), 1);
    assert_ptr_equal(ev[0].ptr, &t2);
    close(cfd);
    assert_int_equal(event_delete(l2, lfd), 0);
    close(lfd);
    event_loop_destroy(&l1);
    event_loop_destroy(&l2);
}

static const struct CMUnitTest readiness_tests[] = {
    cmocka_unit_test(test_read_write_interest),
    cmocka_unit_test(test_hangup_reported),
    cmocka_unit_test(test_many_fds_and_swap_delete),
    cmocka_unit_test(test_shared_listener),
    cmocka_unit_test(test_listener_not_held),
};

static int run_on(bool ring, const char *name)
{
    char why[128];
    if (event_select(ring, why, sizeof why) < 0) {
        printf("io_uring not available here (%s): its tests not run\n", why);
        return 0;
    }
    const char *want = name;
    const struct CMUnitTest named[] = {
        cmocka_unit_test_prestate(test_backend_name, (void *)want),
    };
    int failed = _cmocka_run_group_tests(name, readiness_tests,
                                         sizeof readiness_tests / sizeof readiness_tests[0], NULL, NULL);
    failed += _cmocka_run_group_tests(name, named, 1, NULL, NULL);
    if (ring) {
        const struct CMUnitTest io[] = {cmocka_unit_test(test_completion_io),
                                        cmocka_unit_test(test_file_reads),
                                        cmocka_unit_test(test_listener_wakes_one_loop)};
        failed += _cmocka_run_group_tests("io_uring completions", io, 3, NULL, NULL);
    }
    return failed;
}

int main(void)
{
#ifdef NODELAY_EVENT_poll
    int failed = run_on(false, "poll");
#else
    int failed = run_on(false, "epoll");
#endif
    return failed + run_on(true, "io_uring");
}
