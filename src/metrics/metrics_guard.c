/* SPDX-License-Identifier: BSD-3-Clause */
#include "metrics/metrics_guard.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

uint64_t metrics_guard_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Caller holds the lock. */
static void guard_shut(struct metrics_guard *g, struct metrics_guard_conn *c)
{
    shutdown(c->fd, SHUT_RDWR);
    c->shut = true;
    g->live--;
}

/* The sweeper: sleeps until the earliest deadline of a live connection
 * (indefinitely with none: metrics_guard_open wakes it), then shuts every
 * connection past its own. */
static void *guard_sweep(void *arg)
{
    struct metrics_guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        uint64_t now = metrics_guard_now(), next = UINT64_MAX;
        for (unsigned i = 0; i < g->cap; i++) {
            struct metrics_guard_conn *c = &g->conn[i];
            if (!c->used || c->shut)
                continue;
            uint64_t due = c->since_ns + g->deadline_ns;
            if (due <= now) {
                guard_shut(g, c);
                g->timed_out++;
            } else if (due < next) {
                next = due;
            }
        }
        g->idle = next == UINT64_MAX;
        if (g->idle) {
            pthread_cond_wait(&g->wake, &g->lock);
        } else {
            struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
            pthread_cond_timedwait(&g->wake, &g->lock, &ts);
        }
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int metrics_guard_setup(struct metrics_guard *g, unsigned limit, unsigned cap,
                        uint64_t deadline_ns)
{
    *g = (struct metrics_guard){.limit = limit, .cap = cap < limit ? limit : cap,
                                .deadline_ns = deadline_ns};
    g->conn = calloc(g->cap, sizeof *g->conn);
    if (!g->conn)
        return -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&g->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) {
        free(g->conn);
        return -1;
    }
    pthread_mutex_init(&g->lock, NULL);
    if (pthread_create(&g->sweeper, NULL, guard_sweep, g) != 0) {
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->wake);
        free(g->conn);
        return -1;
    }
    g->running = true;
    return 0;
}

void metrics_guard_teardown(struct metrics_guard *g)
{
    if (!g->running)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = true;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->sweeper, NULL);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->wake);
    free(g->conn);
    g->conn = NULL;
    g->running = false;
}

struct metrics_guard_conn *metrics_guard_open(struct metrics_guard *g, int fd)
{
    struct metrics_guard_conn *slot = NULL, *oldest = NULL;
    pthread_mutex_lock(&g->lock);
    for (unsigned i = 0; i < g->cap; i++) {
        struct metrics_guard_conn *c = &g->conn[i];
        if (!c->used) {
            if (!slot)
                slot = c;
        } else if (!c->shut && (!oldest || c->since_ns < oldest->since_ns)) {
            oldest = c;
        }
    }
    if (slot) {
        *slot = (struct metrics_guard_conn){.fd = fd, .since_ns = metrics_guard_now(), .used = true};
        g->live++;
        if (g->live > g->limit && oldest) {
            guard_shut(g, oldest); /* room for the newcomer */
            g->pushed_out++;
        }
        if (g->idle) { /* the sweeper waits for a first deadline */
            g->idle = false;
            pthread_cond_signal(&g->wake);
        }
    } else {
        shutdown(fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&g->lock);
    return slot;
}

void metrics_guard_ready(struct metrics_guard *g, struct metrics_guard_conn *c)
{
    pthread_mutex_lock(&g->lock);
    c->since_ns = metrics_guard_now(); /* the sweeper finds it not due and waits on */
    pthread_mutex_unlock(&g->lock);
}

void metrics_guard_close(struct metrics_guard *g, struct metrics_guard_conn *c)
{
    pthread_mutex_lock(&g->lock);
    if (!c->shut)
        g->live--;
    *c = (struct metrics_guard_conn){.fd = -1};
    pthread_mutex_unlock(&g->lock);
}
