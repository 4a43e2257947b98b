/* Giving freed client memory back to the OS, off the request path.
 *
 * Client buffers are many small blocks; once freed, glibc keeps them in its
 * heaps (reused, but never returned), so after an attack the server would
 * stay at its peak. malloc_trim returns the free pages, but it walks every
 * heap and madvises page by page: milliseconds on a heap an attack has
 * fragmented, which a worker calling it would take from every client it
 * serves (the soak counted 355 requests >= 40 ms with the trim on the
 * workers, 76 without it). So workers only ask, and this thread trims. It
 * runs at normal priority on purpose: it takes each heap's lock in turn, and
 * a low-priority thread preempted while holding one would stall the worker
 * that heap belongs to for as long as the scheduler kept it off a CPU. */
#ifndef NODELAY_TRIM_H
#define NODELAY_TRIM_H

#include <pthread.h>
#include <stdbool.h>

/* Its thread's name (/proc/PID/task/TID/comm). */
#define TRIMMER_THREAD_NAME "nodelay-trim"

struct trimmer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool started;
    bool requested; /* lock */
    bool stop;      /* lock */
    unsigned long trims; /* done so far, relaxed atomic (for logs and tests) */
};

/* Start the thread. Returns 0, or -1 (then trimmer_request does nothing and
 * memory is simply not returned). Where malloc_trim does not exist, starts
 * nothing and returns 0. */
int trimmer_start(struct trimmer *t);
/* Ask for a trim soon; requests made while one is pending become one.
 * Never blocks on the trim itself. Any thread. */
void trimmer_request(struct trimmer *t);
/* Stop and join the thread. Safe after a failed or no start. */
void trimmer_stop(struct trimmer *t);

#endif
