/* SPDX-License-Identifier: BSD-3-Clause */
/* Request service time per command family, from the request line parsed to
 * its reply queued (a value that arrives in a later read is waited for
 * inside that time), as Prometheus histograms.
 *
 * Each thread records into its own buckets (single writer, relaxed stores;
 * registered on its first request), a scrape sums them with relaxed loads.
 * Timing is on only while the endpoint is configured (metrics_hist_on): with
 * it off a request pays one predicted branch. */
#ifndef NODELAY_METRICS_HIST_H
#define NODELAY_METRICS_HIST_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

enum metrics_family {
    METRICS_GET,    /* get gets gat gats */
    METRICS_SET,    /* set add replace append prepend cas */
    METRICS_DELETE,
    METRICS_ARITH,  /* incr decr */
    METRICS_META,   /* mg ms md ma mn me */
    METRICS_OTHER,
    METRICS_FAMILIES
};

/* Upper bounds, in nanoseconds, of the finite buckets. */
#define METRICS_HIST_BUCKETS 19

extern bool metrics_hist_on;

static inline bool metrics_timing(void)
{
    return __builtin_expect(__atomic_load_n(&metrics_hist_on, __ATOMIC_RELAXED), 0);
}

static inline uint64_t metrics_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Record one request of family f that took ns nanoseconds. */
void metrics_hist_record(enum metrics_family f, uint64_t ns);

/* Sums over every thread, for the page. counts[i] is bucket i alone (not
 * cumulative); counts[METRICS_HIST_BUCKETS] is above the last bound. */
struct metrics_hist_sum {
    uint64_t counts[METRICS_HIST_BUCKETS + 1];
    uint64_t count;
    uint64_t sum_ns;
};
void metrics_hist_sum(enum metrics_family f, struct metrics_hist_sum *out);
extern const uint64_t metrics_hist_bounds_ns[METRICS_HIST_BUCKETS];
extern const char *const metrics_family_names[METRICS_FAMILIES];

/* The family of a text command word (classic or meta). */
enum metrics_family metrics_family_of(const char *cmd, size_t len);

#endif
