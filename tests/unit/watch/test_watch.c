/* SPDX-License-Identifier: BSD-3-Clause */
/* watch streams without sockets: class names, the producers' record ring,
 * the pump, the bounded buffer, skipped= reports (a full watcher buffer or
 * a full ring), the wake-up pipe, and the histogram families of
 * metrics_hist. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "event/event.h"
#include "stats/stats_hist.h"
#include "reply/reply.h"
#include "watch/watch.h"
#include "watch/watch_ring.h"

/* Everything pending in q as one string (consumed). */
static char *drain(struct reply_queue *q)
{
    size_t n = reply_pending(q);
    char *out = calloc(1, n + 1);
    assert_non_null(out);
    size_t off = 0;
    struct iovec iov[64];
    while (reply_pending(q) > 0) {
        int k = reply_iov(q, iov, 64);
        size_t got = 0;
        for (int i = 0; i < k; i++) {
            memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
            got += iov[i].iov_len;
        }
        reply_consume(q, got);
    }
    return out;
}

/* What the connection gives watch_refill: copy into its reply queue. */
static int copy_to(void *ctx, const void *data, size_t n)
{
    return reply_copy(ctx, data, n);
}

static size_t refill(struct watcher *w, struct reply_queue *q)
{
    return watch_refill(w, reply_pending(q), copy_to, q);
}

static size_t count_lines(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void test_flag_names_as_memcached(void **state)
{
    (void)state;
    assert_int_equal(watch_flag_parse("fetchers", 8), WATCH_FETCHERS);
    assert_int_equal(watch_flag_parse("mutations", 9), WATCH_MUTATIONS);
    assert_int_equal(watch_flag_parse("evictions", 9), WATCH_EVICTIONS);
    assert_int_equal(watch_flag_parse("connevents", 10), WATCH_CONNEVENTS);
    assert_int_equal(watch_flag_parse("deletions", 9), WATCH_DELETIONS);
    assert_int_equal(watch_flag_parse("proxyreqs", 9), WATCH_PROXY);
    /* a prefix matches the first name in memcached's order */
    assert_int_equal(watch_flag_parse("f", 1), WATCH_FETCHERS);
    assert_int_equal(watch_flag_parse("e", 1), WATCH_EVICTIONS);
    assert_int_equal(watch_flag_parse("bogus", 5), 0);
    assert_int_equal(watch_flag_parse("fetchersx", 9), 0);
    assert_int_equal(watch_flag_parse("", 0), 0);
}

static void test_lines_reach_only_their_class(void **state)
{
    (void)state;
    struct event_loop *loop;
    assert_int_equal(event_loop_create(&loop), 0);
    int tag;
    struct watcher *w;
    assert_int_equal(watch_add(WATCH_MUTATIONS, 4096, loop, &tag, &w), WATCH_ADD_OK);
    assert_true(watch_active(WATCH_MUTATIONS));
    assert_false(watch_active(WATCH_FETCHERS));
    watch_item_get("k", 1, WATCH_GET_FOUND, 1, 5, 3);
    watch_item_store("a b", 3, WATCH_STORE_STORED, "set", 0, 1, 5, 3);
    /* records wait in this thread's ring until a pump formats them */
    struct event_fired ev[4];
    assert_int_equal(event_wait(loop, ev, 4, 0), 0);
    watch_pump();
    /* the pipe says there is something to send */
    int n = event_wait(loop, ev, 4, 1000);
    assert_int_equal(n, 1);
    assert_ptr_equal(ev[0].ptr, &tag);
    watch_ack(w); /* what the worker does when the pipe fires */
    struct reply_queue q;
    reply_init(&q);
    assert_true(refill(w, &q) > 0);
    char *s = drain(&q);
    assert_non_null(strstr(s, " type=item_store key=a%20b status=stored cmd=set ttl=0 clsid=1 cfd=5 size=3\n"));
    assert_null(strstr(s, "item_get"));
    free(s);
    /* drained: the pipe is quiet until the next line */
    assert_int_equal(event_wait(loop, ev, 4, 0), 0);
    reply_release(&q);
    watch_remove(&w);
    assert_null(w);
    assert_false(watch_active(WATCH_MUTATIONS));
    event_loop_destroy(&loop);
}

static void test_full_buffer_skips_then_reports(void **state)
{
    (void)state;
    struct event_loop *loop;
    assert_int_equal(event_loop_create(&loop), 0);
    int tag;
    struct watcher *w;
    struct watch_counters before, after;
    watch_counters_get(&before);
    assert_int_equal(watch_add(WATCH_FETCHERS, 1024, loop, &tag, &w), WATCH_ADD_OK);
    for (int i = 0; i < 100; i++)
        watch_item_get("key", 3, WATCH_GET_NOT_FOUND, 0, 7, 0);
    uint64_t sent = 0, skipped = 0;
    for (int tries = 0; tries < 2000 && sent + skipped < 100; tries++) {
        watch_pump(); /* within its budget: a slow machine may need more than one */
        watch_counters_get(&after);
        sent = after.log_watcher_sent - before.log_watcher_sent;
        skipped = after.log_watcher_skipped - before.log_watcher_skipped;
        if (sent + skipped < 100)
            usleep(1000);
    }
    assert_int_equal(sent + skipped, 100);
    assert_true(skipped > 0);
    assert_int_equal(after.log_watchers, 1);
    struct reply_queue q;
    reply_init(&q);
    refill(w, &q);
    char *s = drain(&q);
    assert_int_equal(count_lines(s, "type=item_get"), sent);
    assert_null(strstr(s, "skipped="));
    free(s);
    /* room again: the next line is preceded by the count of those lost */
    watch_item_get("key", 3, WATCH_GET_NOT_FOUND, 0, 7, 0);
    refill(w, &q); /* pumps */
    s = drain(&q);
    char want[64];
    snprintf(want, sizeof want, "skipped=%llu\nts=", (unsigned long long)skipped);
    assert_int_equal(strncmp(s, want, strlen(want)), 0);
    free(s);
    reply_release(&q);
    watch_remove(&w);
    event_loop_destroy(&loop);
}

static void test_refill_bounded_by_what_is_owed(void **state)
{
    (void)state;
    struct event_loop *loop;
    assert_int_equal(event_loop_create(&loop), 0);
    int tag;
    struct watcher *w;
    assert_int_equal(watch_add(WATCH_FETCHERS, 2048, loop, &tag, &w), WATCH_ADD_OK);
    struct reply_queue q;
    reply_init(&q);
    char big[2048];
    memset(big, 'x', sizeof big);
    assert_int_equal(reply_copy(&q, big, sizeof big), 0); /* the socket is behind */
    watch_item_get("k", 1, WATCH_GET_FOUND, 1, 1, 1);
    assert_int_equal(refill(w, &q), 0);
    assert_int_equal(reply_pending(&q), sizeof big);
    free(drain(&q)); /* it drained */
    assert_true(refill(w, &q) > 0);
    reply_release(&q);
    watch_remove(&w);
    event_loop_destroy(&loop);
}

static void test_too_many_watchers(void **state)
{
    (void)state;
    struct event_loop *loop;
    assert_int_equal(event_loop_create(&loop), 0);
    int tag;
    struct watcher *ws[WATCH_MAX_WATCHERS + 1];
    for (int i = 0; i < WATCH_MAX_WATCHERS; i++)
        assert_int_equal(watch_add(WATCH_FETCHERS, 1024, loop, &tag, &ws[i]), WATCH_ADD_OK);
    assert_int_equal(watch_add(WATCH_FETCHERS, 1024, loop, &tag, &ws[WATCH_MAX_WATCHERS]),
                     WATCH_ADD_TOO_MANY);
    assert_null(ws[WATCH_MAX_WATCHERS]);
    for (int i = 0; i < WATCH_MAX_WATCHERS; i++)
        watch_remove(&ws[i]);
    event_loop_destroy(&loop);
}

static void test_ring_keeps_order_wraps_and_refuses_when_full(void **state)
{
    (void)state;
    struct watch_ring *r = watch_ring_new(2 * WATCH_RING_REC_MAX);
    assert_non_null(r);
    char rec[WATCH_RING_REC_MAX], out[WATCH_RING_REC_MAX];
    assert_int_equal(watch_ring_pop(r, out), 0);
    assert_true(watch_ring_empty(r));
    /* many times round the buffer, records of every length, split or not */
    unsigned next_in = 0, next_out = 0;
    for (int round = 0; round < 200; round++) {
        size_t len = 1 + (size_t)(round * 37) % 300;
        int pushed = 0;
        for (;;) {
            memset(rec, (char)next_in, len);
            if (!watch_ring_push(r, rec, 1, rec + 1, len - 1))
                break;
            next_in++;
            pushed++;
        }
        /* full: room for no record of this length, and it said so */
        assert_true(pushed > 0 || round > 0);
        assert_false(watch_ring_empty(r));
        for (int k = 0; k < pushed / 2 + 1; k++) {
            size_t n = watch_ring_pop(r, out);
            assert_true(n > 0);
            assert_int_equal((unsigned char)out[0], (unsigned char)next_out);
            assert_int_equal((unsigned char)out[n - 1], (unsigned char)next_out);
            next_out++;
        }
    }
    while (watch_ring_pop(r, out) > 0)
        next_out++;
    assert_int_equal(next_in, next_out);
    assert_true(watch_ring_empty(r));
    /* a record over the limit is refused, the ring untouched */
    assert_false(watch_ring_push(r, rec, WATCH_RING_REC_MAX, rec, 1));
    assert_true(watch_ring_empty(r));
    free(r);
}

/* A thread with a ring of its own (watch_configure applies to new rings). */
static void *flood(void *arg)
{
    int n = *(int *)arg;
    for (int i = 0; i < n; i++)
        watch_item_get("flood", 5, WATCH_GET_FOUND, 1, 9, 10);
    return NULL;
}

static void test_full_ring_drops_and_watchers_hear_of_it(void **state)
{
    (void)state;
    struct event_loop *loop;
    assert_int_equal(event_loop_create(&loop), 0);
    int tag;
    struct watcher *w, *other;
    assert_int_equal(watch_add(WATCH_FETCHERS, 256 * 1024, loop, &tag, &w), WATCH_ADD_OK);
    assert_int_equal(watch_add(WATCH_MUTATIONS, 256 * 1024, loop, &tag, &other), WATCH_ADD_OK);
    struct watch_counters before, after;
    watch_counters_get(&before);
    /* the smallest ring: the producer never waits, it drops what does not fit */
    watch_configure(2 * WATCH_RING_REC_MAX, 10);
    int n = 1000;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, flood, &n), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    watch_configure(64 * 1024, 10);
    watch_counters_get(&after);
    uint64_t written = after.log_worker_written - before.log_worker_written;
    uint64_t dropped = after.log_worker_dropped - before.log_worker_dropped;
    assert_int_equal(written + dropped, n);
    assert_true(dropped > 0);
    assert_true(written * 48 <= 2 * WATCH_RING_REC_MAX); /* what the ring held */
    /* the pump delivers what was kept and counts what was dropped against
     * the watchers of that class only; it runs within its CPU budget (slow
     * under a sanitizer on a busy machine), so give it the time to place
     * every kept record */
    for (int tries = 0; tries < 2000; tries++) {
        watch_pump();
        watch_counters_get(&after);
        if (after.log_watcher_sent - before.log_watcher_sent >= written)
            break;
        usleep(1000);
    }
    struct reply_queue q;
    reply_init(&q);
    refill(w, &q);
    char *s = drain(&q);
    char want[64];
    snprintf(want, sizeof want, "skipped=%llu\n", (unsigned long long)dropped);
    assert_non_null(strstr(s, want));
    assert_int_equal(count_lines(s, "type=item_get key=flood "), written);
    free(s);
    refill(other, &q);
    assert_int_equal(reply_pending(&q), 0);
    watch_counters_get(&after);
    assert_int_equal(after.log_watcher_skipped - before.log_watcher_skipped, dropped);
    reply_release(&q);
    watch_remove(&w);
    watch_remove(&other);
    event_loop_destroy(&loop);
}

static void test_pump_skips_without_formatting_for_full_buffers(void **state)
{
    (void)state;
    struct event_loop *loop;
    assert_int_equal(event_loop_create(&loop), 0);
    int tag;
    struct watcher *w;
    assert_int_equal(watch_add(WATCH_FETCHERS, 512, loop, &tag, &w), WATCH_ADD_OK);
    struct watch_counters before, after;
    watch_counters_get(&before);
    /* a watcher that never reads: its buffer fills, every later line is
     * skipped, and the watcher's memory stays its buffer */
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 100; i++)
            watch_item_get("never-read", 10, WATCH_GET_FOUND, 1, 3, 4);
        watch_pump();
    }
    /* the pump runs within its CPU budget (slow under a sanitizer): give
     * it the time to see every record */
    uint64_t sent = 0, skipped = 0;
    for (int tries = 0; tries < 2000 && sent + skipped < 5000; tries++) {
        watch_pump();
        watch_counters_get(&after);
        sent = after.log_watcher_sent - before.log_watcher_sent;
        skipped = after.log_watcher_skipped - before.log_watcher_skipped;
        if (sent + skipped < 5000)
            usleep(1000);
    }
    /* records a full ring dropped (a slow pump) count as skipped too */
    assert_int_equal(sent + skipped, 5000);
    assert_true(sent * 60 <= 512);
    watch_remove(&w);
    event_loop_destroy(&loop);
}

static void test_histogram_families_and_buckets(void **state)
{
    (void)state;
    assert_int_equal(metrics_family_of("gets", 4), METRICS_GET);
    assert_int_equal(metrics_family_of("prepend", 7), METRICS_SET);
    assert_int_equal(metrics_family_of("delete", 6), METRICS_DELETE);
    assert_int_equal(metrics_family_of("decr", 4), METRICS_ARITH);
    assert_int_equal(metrics_family_of("mg", 2), METRICS_META);
    assert_int_equal(metrics_family_of("stats", 5), METRICS_OTHER);
    struct metrics_hist_sum h;
    metrics_hist_record(METRICS_ARITH, 1000);       /* on the first bound: bucket 0 */
    metrics_hist_record(METRICS_ARITH, 1001);       /* just above: bucket 1 */
    metrics_hist_record(METRICS_ARITH, 5000000000u); /* past the last bound */
    metrics_hist_sum(METRICS_ARITH, &h);
    assert_int_equal(h.count, 3);
    assert_int_equal(h.counts[0], 1);
    assert_int_equal(h.counts[1], 1);
    assert_int_equal(h.counts[METRICS_HIST_BUCKETS], 1);
    assert_int_equal(h.sum_ns, 1000 + 1001 + 5000000000u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flag_names_as_memcached),
        cmocka_unit_test(test_lines_reach_only_their_class),
        cmocka_unit_test(test_full_buffer_skips_then_reports),
        cmocka_unit_test(test_refill_bounded_by_what_is_owed),
        cmocka_unit_test(test_too_many_watchers),
        cmocka_unit_test(test_ring_keeps_order_wraps_and_refuses_when_full),
        cmocka_unit_test(test_full_ring_drops_and_watchers_hear_of_it),
        cmocka_unit_test(test_pump_skips_without_formatting_for_full_buffers),
        cmocka_unit_test(test_histogram_families_and_buckets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
