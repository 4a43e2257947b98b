/* SPDX-License-Identifier: BSD-3-Clause */
/* The trimmer (base/trim.h): a requested trim waits until the server is
 * quiet, requests made meanwhile become one, one whose freed memory is in
 * use again by then is dropped, and a stop does not wait for quiet. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <time.h>

#include "base/trim.h"

static bool quiet_now;
static size_t held_now;

static bool quiet(void *arg)
{
    (void)arg;
    return __atomic_load_n(&quiet_now, __ATOMIC_RELAXED);
}

static size_t held(void *arg)
{
    (void)arg;
    return __atomic_load_n(&held_now, __ATOMIC_RELAXED);
}

static const struct trimmer_ops ops = {quiet, held, NULL};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static unsigned long trims(struct trimmer *t)
{
    return __atomic_load_n(&t->trims, __ATOMIC_RELAXED);
}

/* Up to 5 s for the trim count to reach n. */
static bool trims_reach(struct trimmer *t, unsigned long n)
{
    for (int i = 0; i < 500 && trims(t) < n; i++)
        sleep_ms(10);
    return trims(t) >= n;
}

/* A trimmer over the fake server, busy and holding `held` bytes; the test
 * is skipped where there is no malloc_trim (nothing starts). */
static void start_busy(struct trimmer *t, const struct trimmer_ops *o, size_t held)
{
    __atomic_store_n(&quiet_now, false, __ATOMIC_RELAXED);
    __atomic_store_n(&held_now, held, __ATOMIC_RELAXED);
    assert_int_equal(trimmer_start(t, o), 0);
    if (!t->started) {
        trimmer_stop(t);
        print_message("no malloc_trim in this C library: the trimmer does not start\n");
        skip();
    }
}

static void test_trim_waits_for_quiet(void **state)
{
    (void)state;
    struct trimmer t;
    start_busy(&t, &ops, 0);
    trimmer_request(&t);
    trimmer_request(&t);
    sleep_ms(600); /* three looks at a busy server */
    assert_int_equal(trims(&t), 0);
    __atomic_store_n(&quiet_now, true, __ATOMIC_RELAXED);
    assert_true(trims_reach(&t, 1));
    sleep_ms(300);
    assert_int_equal(trims(&t), 1); /* the two requests were one */
    trimmer_request(&t);
    assert_true(trims_reach(&t, 2)); /* quiet: at once */
    trimmer_stop(&t);
}

static void test_stop_while_waiting_for_quiet(void **state)
{
    (void)state;
    struct trimmer t;
    start_busy(&t, &ops, 0);
    trimmer_request(&t);
    sleep_ms(50);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    trimmer_stop(&t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_true(b.tv_sec - a.tv_sec < 2);
    assert_int_equal(trims(&t), 0);
}

/* Memory freed at the request but in use again by the time the server is
 * quiet (an attack filled the bound since): nothing to return, so no walk
 * of a large heap. A later request, made once it is freed, trims. */
static void test_request_dropped_when_memory_is_in_use_again(void **state)
{
    (void)state;
    struct trimmer t;
    start_busy(&t, &ops, 1 << 20);
    trimmer_request(&t);
    __atomic_store_n(&held_now, (size_t)1 + (1 << 20) + TRIMMER_REUSED_BYTES, __ATOMIC_RELAXED);
    __atomic_store_n(&quiet_now, true, __ATOMIC_RELAXED);
    for (int i = 0; i < 500 && __atomic_load_n(&t.dropped, __ATOMIC_RELAXED) < 1; i++)
        sleep_ms(10);
    assert_int_equal(__atomic_load_n(&t.dropped, __ATOMIC_RELAXED), 1);
    assert_int_equal(trims(&t), 0);
    __atomic_store_n(&held_now, 0, __ATOMIC_RELAXED);
    trimmer_request(&t);
    assert_true(trims_reach(&t, 1));
    trimmer_stop(&t);
}

static void test_no_quiet_test_trims_at_once(void **state)
{
    (void)state;
    struct trimmer t;
    start_busy(&t, NULL, 0); /* no questions asked: neither counts */
    trimmer_request(&t);
    assert_true(trims_reach(&t, 1));
    trimmer_stop(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trim_waits_for_quiet),
        cmocka_unit_test(test_stop_while_waiting_for_quiet),
        cmocka_unit_test(test_request_dropped_when_memory_is_in_use_again),
        cmocka_unit_test(test_no_quiet_test_trims_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
