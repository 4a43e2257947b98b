/* SPDX-License-Identifier: BSD-3-Clause */
/* Giving freed client memory back to the OS, off the request path, and
 * only while the server is quiet.
 *
 * Client buffers are many small blocks; once freed, glibc keeps them in its
 * heaps (reused, but never returned), so after an attack the server would
 * stay at its peak. malloc_trim returns the free pages, but it walks every
 * heap and madvises page by page, holding each heap's lock meanwhile: on a
 * heap an attack has fragmented that is 30-80 ms, and the worker whose heap
 * it is waits for it at its next malloc or free. On the workers it took
 * that time from every ready connection (the soak counted 355 requests
 * >= 40 ms with the trim there, 76 without); on a thread of its own it
 * still stalled every connection of a worker at once, in step with each
 * trim (soak, December 2026: stalls of 50-110 ms at each trim's second,
 * none with trims off). So workers only ask, and this thread trims once
 * the server is quiet (quiet_fn: core.c asks whether any worker moved more
 * than a few requests' bytes in its last second). Meanwhile the freed
 * memory is reused by the allocator, so RSS stays within its bound
 * (README, "Memory is bounded"); it goes back once the load pauses. It runs
 * at normal priority: a low-priority thread preempted while holding a
 * heap's lock would stall that heap's worker for as long as the scheduler
 * kept it off a CPU. */
#ifndef NODELAY_TRIM_H
#define NODELAY_TRIM_H

#include <pthread.h>
#include <stdbool.h>

/* Its thread's name (/proc/PID/task/TID/comm). */
#define TRIMMER_THREAD_NAME "nodelay-trim"

/* A trim that waits for quiet may find the memory freed at its request in
 * use again (an attack that filled the bound since): it is then dropped, as
 * it would walk a large heap for little. This far above the client bytes
 * held at the request counts as in use again. */
#define TRIMMER_REUSED_BYTES ((size_t)8 << 20)

/* What the trimmer asks the server (NULL members: always quiet, never
 * reused). quiet: no one busy would wait for a heap's lock now; held: the
 * client bytes held now (reply queues and read buffers). */
struct trimmer_ops {
    bool (*quiet)(void *arg);
    size_t (*held)(void *arg);
    void *arg;
};

struct trimmer {
    pthread_t thread;
    struct trimmer_ops ops;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool started;
    bool requested;       /* lock */
    bool stop;            /* lock */
    size_t held_at_request; /* lock: ops.held at the latest request */
    unsigned long trims;   /* done so far, relaxed atomic (for logs and tests) */
    unsigned long dropped; /* requests dropped as reused, relaxed atomic */
};

/* Start the thread (ops copied). Returns 0, or -1 (then trimmer_request
 * does nothing and memory is simply not returned). Where malloc_trim does
 * not exist, starts nothing and returns 0. */
int trimmer_start(struct trimmer *t, const struct trimmer_ops *ops);
/* Ask for a trim once the server is quiet; requests made while one is
 * pending become one (the latest one's held bytes count). Never blocks on
 * the trim itself. Any thread. */
void trimmer_request(struct trimmer *t);
/* Stop and join the thread. Safe after a failed or no start. */
void trimmer_stop(struct trimmer *t);

#endif
