/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* pthread_setname_np */
#include "base/trim.h"

#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif

#include "base/log.h"

#ifdef __GLIBC__
#define TRIMMER_RECHECK_MS 200L

static void *trimmer_main(void *arg)
{
    struct trimmer *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->requested && !t->stop)
            pthread_cond_wait(&t->cond, &t->lock);
        /* a request waits until the server is quiet, looked at again every
         * TRIMMER_RECHECK_MS */
        while (!t->stop && t->ops.quiet && !t->ops.quiet(t->ops.arg)) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += TRIMMER_RECHECK_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&t->cond, &t->lock, &until);
        }
        if (t->stop)
            break;
        t->requested = false;
        if (t->ops.held && t->ops.held(t->ops.arg) > t->held_at_request + TRIMMER_REUSED_BYTES) {
            __atomic_add_fetch(&t->dropped, 1, __ATOMIC_RELAXED);
            continue;
        }
        pthread_mutex_unlock(&t->lock);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        malloc_trim(0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        unsigned long n = __atomic_add_fetch(&t->trims, 1, __ATOMIC_RELAXED);
        log_verbose("returned free memory to the OS (trim %lu, %.1f ms)", n,
                    (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}
#endif

int trimmer_start(struct trimmer *t, const struct trimmer_ops *ops)
{
    memset(t, 0, sizeof *t);
    if (ops)
        t->ops = *ops;
#ifdef __GLIBC__
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    int rc = pthread_create(&t->thread, NULL, trimmer_main, t);
    if (rc != 0) {
        log_error("could not start the memory trimmer: %s", strerror(rc));
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        return -1;
    }
    t->started = true;
    pthread_setname_np(t->thread, TRIMMER_THREAD_NAME); /* for ps, top and the tests */
#endif
    return 0;
}

void trimmer_request(struct trimmer *t)
{
    if (!t->started)
        return;
    size_t held = t->ops.held ? t->ops.held(t->ops.arg) : 0;
    pthread_mutex_lock(&t->lock);
    t->requested = true;
    t->held_at_request = held;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

void trimmer_stop(struct trimmer *t)
{
    if (!t->started)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    t->started = false;
}
