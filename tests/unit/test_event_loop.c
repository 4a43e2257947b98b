/* The event loop on socketpairs; built against whichever backend EVENT= picks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
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

static void test_backend_name(void **state)
{
    (void)state;
#ifdef NODELAY_EVENT_poll
    assert_string_equal(event_backend(), "poll");
#else
    assert_string_equal(event_backend(), "epoll");
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_write_interest),
        cmocka_unit_test(test_hangup_reported),
        cmocka_unit_test(test_many_fds_and_swap_delete),
        cmocka_unit_test(test_shared_listener),
        cmocka_unit_test(test_backend_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
