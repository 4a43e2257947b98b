/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-thread service-time histograms (stats_hist.h). */
#include "stats/stats_hist.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

bool metrics_hist_on;

const uint64_t metrics_hist_bounds_ns[METRICS_HIST_BUCKETS] = {
    1000,     2500,     5000,      10000,     25000,     50000,     100000,
    250000,   500000,   1000000,   2500000,   5000000,   10000000,  25000000,
    50000000, 100000000, 250000000, 500000000, 1000000000,
};

const char *const metrics_family_names[METRICS_FAMILIES] = {
    "get", "set", "delete", "arith", "meta", "other",
};

struct metrics_thread_hist {
    uint64_t counts[METRICS_FAMILIES][METRICS_HIST_BUCKETS + 1];
    uint64_t sum_ns[METRICS_FAMILIES];
    struct metrics_thread_hist *next;
};

/* Every thread's histograms, kept until exit so a scrape after a thread
 * ends still counts its requests. Pushed under the lock, walked without it
 * (a node is complete before it is published, and never unlinked). */
static pthread_mutex_t hist_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metrics_thread_hist *hist_all;
static __thread struct metrics_thread_hist *hist_mine;

static struct metrics_thread_hist *metrics_hist_thread(void)
{
    if (hist_mine)
        return hist_mine;
    struct metrics_thread_hist *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    pthread_mutex_lock(&hist_lock);
    h->next = hist_all;
    __atomic_store_n(&hist_all, h, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&hist_lock);
    hist_mine = h;
    return h;
}

static void add(uint64_t *p, uint64_t n)
{
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

void metrics_hist_record(enum metrics_family f, uint64_t ns)
{
    struct metrics_thread_hist *h = metrics_hist_thread();
    if (!h)
        return;
    unsigned b = 0;
    while (b < METRICS_HIST_BUCKETS && ns > metrics_hist_bounds_ns[b])
        b++;
    add(&h->counts[f][b], 1);
    add(&h->sum_ns[f], ns);
}

void metrics_hist_sum(enum metrics_family f, struct metrics_hist_sum *out)
{
    memset(out, 0, sizeof *out);
    for (struct metrics_thread_hist *h = __atomic_load_n(&hist_all, __ATOMIC_ACQUIRE); h;
         h = h->next) {
        for (unsigned b = 0; b <= METRICS_HIST_BUCKETS; b++) {
            uint64_t n = __atomic_load_n(&h->counts[f][b], __ATOMIC_RELAXED);
            out->counts[b] += n;
            out->count += n;
        }
        out->sum_ns += __atomic_load_n(&h->sum_ns[f], __ATOMIC_RELAXED);
    }
}

enum metrics_family metrics_family_of(const char *cmd, size_t len)
{
#define IS(lit) (len == sizeof(lit) - 1 && memcmp(cmd, lit, len) == 0)
    if (IS("get") || IS("gets") || IS("gat") || IS("gats"))
        return METRICS_GET;
    if (IS("set") || IS("add") || IS("replace") || IS("append") || IS("prepend") || IS("cas"))
        return METRICS_SET;
    if (IS("delete"))
        return METRICS_DELETE;
    if (IS("incr") || IS("decr"))
        return METRICS_ARITH;
    if (IS("mg") || IS("ms") || IS("md") || IS("ma") || IS("mn") || IS("me"))
        return METRICS_META;
    return METRICS_OTHER;
#undef IS
}
