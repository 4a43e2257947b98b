/* SPDX-License-Identifier: BSD-3-Clause */
/* The endpoint's connection guard on socketpairs: past its limit the
 * longest-waiting connection is shut down for a newcomer, a request past
 * its deadline is shut down however recently it sent a byte, a reply sent
 * gives a fresh deadline, and a closed slot is forgotten (its descriptor
 * never shut again). A shut socket's peer reads end of file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "metrics/metrics_guard.h"

#define MS 1000000ull

struct pair {
    int ours, peer;
};

static struct pair pair_open(void)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    return (struct pair){sv[0], sv[1]};
}

static void pair_close(struct pair p)
{
    close(p.ours);
    close(p.peer);
}

/* Whether the guard shut our end: the peer reads end of file (an open one
 * would find nothing to read yet). */
static bool pair_shut(struct pair p)
{
    char b;
    ssize_t n = read(p.peer, &b, 1);
    return n == 0;
}

/* A count the sweeper may be writing: read under the guard's lock. */
static uint64_t counted(struct metrics_guard *g, const uint64_t *field)
{
    pthread_mutex_lock(&g->lock);
    uint64_t v = *field;
    pthread_mutex_unlock(&g->lock);
    return v;
}

static unsigned live(struct metrics_guard *g)
{
    pthread_mutex_lock(&g->lock);
    unsigned v = g->live;
    pthread_mutex_unlock(&g->lock);
    return v;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_the_longest_waiting_makes_room(void **state)
{
    struct metrics_guard *g = *state;
    assert_int_equal(metrics_guard_setup(g, 3, 6, 60000 * MS), 0);
    struct pair p[5];
    struct metrics_guard_conn *c[5];
    for (int i = 0; i < 5; i++) {
        p[i] = pair_open();
        c[i] = metrics_guard_open(g, p[i].ours);
        assert_non_null(c[i]);
        sleep_ms(2); /* distinct arrival times */
    }
    /* 4 and 5 pushed out 1 and 2, the oldest; the newcomers are kept */
    assert_true(pair_shut(p[0]));
    assert_true(pair_shut(p[1]));
    for (int i = 2; i < 5; i++)
        assert_false(pair_shut(p[i]));
    assert_int_equal(counted(g, &g->pushed_out), 2);
    assert_int_equal(live(g), 3);
    for (int i = 0; i < 5; i++)
        metrics_guard_close(g, c[i]), c[i] = NULL;
    assert_int_equal(live(g), 0);
    metrics_guard_teardown(g);
    for (int i = 0; i < 5; i++)
        pair_close(p[i]);
}

static void test_a_ready_connection_is_the_newest(void **state)
{
    struct metrics_guard *g = *state;
    assert_int_equal(metrics_guard_setup(g, 2, 4, 60000 * MS), 0);
    struct pair a = pair_open(), b = pair_open(), n = pair_open();
    struct metrics_guard_conn *ca = metrics_guard_open(g, a.ours);
    sleep_ms(2);
    struct metrics_guard_conn *cb = metrics_guard_open(g, b.ours);
    sleep_ms(2);
    metrics_guard_ready(g, ca); /* a's reply sent: its wait starts again */
    struct metrics_guard_conn *cn = metrics_guard_open(g, n.ours);
    assert_false(pair_shut(a));
    assert_true(pair_shut(b));
    assert_false(pair_shut(n));
    metrics_guard_close(g, ca);
    metrics_guard_close(g, cb);
    metrics_guard_close(g, cn);
    metrics_guard_teardown(g);
    pair_close(a);
    pair_close(b);
    pair_close(n);
}

static void test_a_request_past_its_deadline_is_shut(void **state)
{
    struct metrics_guard *g = *state;
    assert_int_equal(metrics_guard_setup(g, 8, 16, 300 * MS), 0);
    struct pair slow = pair_open(), served = pair_open();
    uint64_t t0 = metrics_guard_now();
    struct metrics_guard_conn *cs = metrics_guard_open(g, slow.ours);
    struct metrics_guard_conn *cv = metrics_guard_open(g, served.ours);
    /* the slow one keeps sending (which the guard never counts as
     * progress); the served one has a reply sent every 20 ms */
    bool shut = false;
    uint64_t last = t0, gap = 0;
    for (int i = 0; i < 200 && !shut; i++) {
        sleep_ms(20);
        send(slow.peer, "x", 1, MSG_NOSIGNAL);
        metrics_guard_ready(g, cv);
        uint64_t now = metrics_guard_now();
        gap = now - last > gap ? now - last : gap;
        last = now;
        shut = pair_shut(slow);
        if (shut)
            assert_true(now - t0 >= 300 * MS); /* never before its deadline */
    }
    assert_true(shut);
    /* a stall of this thread longer than the deadline (a loaded machine)
     * cuts the served one too, and counts it */
    if (gap < 300 * MS) {
        assert_false(pair_shut(served));
        assert_int_equal(counted(g, &g->timed_out), 1);
    } else {
        uint64_t n = counted(g, &g->timed_out);
        assert_true(n == 1 || n == 2);
    }
    metrics_guard_close(g, cs);
    metrics_guard_close(g, cv);
    metrics_guard_teardown(g);
    pair_close(slow);
    pair_close(served);
}

static void test_a_closed_slot_is_forgotten(void **state)
{
    struct metrics_guard *g = *state;
    assert_int_equal(metrics_guard_setup(g, 1, 2, 100 * MS), 0);
    struct pair a = pair_open();
    struct metrics_guard_conn *ca = metrics_guard_open(g, a.ours);
    metrics_guard_close(g, ca); /* the library closed it before any deadline */
    sleep_ms(300);              /* the sweeper has passed its old deadline */
    assert_false(pair_shut(a)); /* a descriptor it no longer owns stays open */
    assert_int_equal(counted(g, &g->timed_out), 0);
    assert_int_equal(live(g), 0);
    /* every slot taken: a newcomer is shut at once and not kept */
    struct pair b = pair_open(), c = pair_open(), d = pair_open();
    struct metrics_guard_conn *cb = metrics_guard_open(g, b.ours);
    struct metrics_guard_conn *cc = metrics_guard_open(g, c.ours); /* pushes b out */
    assert_non_null(cb);
    assert_non_null(cc);
    assert_null(metrics_guard_open(g, d.ours));
    assert_true(pair_shut(d));
    metrics_guard_close(g, cb);
    metrics_guard_close(g, cc);
    metrics_guard_teardown(g);
    pair_close(a);
    pair_close(b);
    pair_close(c);
    pair_close(d);
}

/* The guard lives on the heap and is torn down here, so a failed test
 * leaves no sweeper thread behind on a dead stack frame. */
static int guard_new(void **state)
{
    *state = calloc(1, sizeof(struct metrics_guard));
    return *state ? 0 : -1;
}

static int guard_free(void **state)
{
    metrics_guard_teardown(*state);
    free(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_longest_waiting_makes_room, guard_new, guard_free),
        cmocka_unit_test_setup_teardown(test_a_ready_connection_is_the_newest, guard_new,
                                        guard_free),
        cmocka_unit_test_setup_teardown(test_a_request_past_its_deadline_is_shut, guard_new,
                                        guard_free),
        cmocka_unit_test_setup_teardown(test_a_closed_slot_is_forgotten, guard_new, guard_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
