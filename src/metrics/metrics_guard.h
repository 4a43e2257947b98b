/* SPDX-License-Identifier: BSD-3-Clause */
/* What keeps the endpoint's connections from being held by clients that
 * never finish a request (a header byte every few seconds, or nothing):
 *
 *   - a deadline for a whole request: from the moment a connection is ready
 *     for one (accepted, or its last reply sent) its request must be read
 *     and its reply sent within `deadline_ns`, however steadily it trickles;
 *   - room for a new connection always: past `limit` live connections, the
 *     one that has waited longest is pushed out to admit the newcomer, so
 *     no set of slow clients, from one address or many, can keep an honest
 *     scraper out; it only needs its own request to arrive before `limit`
 *     newer connections do.
 *
 * A connection past its deadline or pushed out is shut down (shutdown(2)),
 * which the HTTP library sees as the peer leaving and then closes itself:
 * the guard never closes a descriptor. The library tells the guard of a
 * connection before it closes the descriptor (metrics_guard_close), so a
 * number the kernel hands to a later connection is never shut by mistake.
 * Independent of the HTTP library, so a unit test stands it up on
 * socketpairs. */
#ifndef NODELAY_METRICS_GUARD_H
#define NODELAY_METRICS_GUARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct metrics_guard_conn {
    int fd;
    uint64_t since_ns; /* when it became ready for its current request */
    bool used;         /* a connection the library has not closed yet */
    bool shut;         /* shut down (pushed out or late): no longer counted */
};

struct metrics_guard {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* on CLOCK_MONOTONIC */
    pthread_t sweeper;   /* shuts connections past their deadline */
    bool running, stop, idle;
    unsigned limit, live; /* live: used and not shut */
    unsigned cap;         /* slots: room for connections shut but not closed yet */
    uint64_t deadline_ns;
    uint64_t pushed_out, timed_out; /* for tests and logs */
    struct metrics_guard_conn *conn;
};

/* Keep at most `limit` live connections, in `cap` (>= limit) slots, the
 * library's own connection limit; each request within deadline_ns.
 * Returns 0, or -1 (out of memory, no thread) with nothing to undo. */
int metrics_guard_setup(struct metrics_guard *g, unsigned limit, unsigned cap,
                        uint64_t deadline_ns);
void metrics_guard_teardown(struct metrics_guard *g);

/* A connection accepted on fd: its slot (for the calls below), or NULL
 * when every slot is taken, in which case it is shut down at once. */
struct metrics_guard_conn *metrics_guard_open(struct metrics_guard *g, int fd);
/* Its reply was sent: a fresh deadline for the next request. */
void metrics_guard_ready(struct metrics_guard *g, struct metrics_guard_conn *c);
/* The library is about to close its descriptor: forget it. */
void metrics_guard_close(struct metrics_guard *g, struct metrics_guard_conn *c);

/* The monotonic clock the guard reads, in nanoseconds. */
uint64_t metrics_guard_now(void);

#endif
