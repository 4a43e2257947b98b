/* SPDX-License-Identifier: BSD-3-Clause */
/* The worker pool (net/worker_pool.h): its workers set up on one backend,
 * started and stopped together, and the trimmer with its questions about
 * them. */
#include "net/worker_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "event/event.h"
#include "net/net_options.h"
#include "net/worker.h"

/* Set up every worker (not yet running); -1 with errno and p->nworkers
 * the one that failed. */
static int worker_pool_init_workers(struct worker_pool *p)
{
    for (int i = 0; i < p->opt->num_threads; i++) {
        if (worker_init(&p->workers[i], p, i) < 0)
            return -1;
        p->nworkers++;
    }
    return 0;
}

/* The trimmer's questions (base/trim.h). Quiet: no worker busy in its last
 * second. Every slot of the array is looked at, started or not (a zeroed
 * one is quiet). */
static bool worker_pool_quiet(void *arg)
{
    struct worker_pool *p = arg;
    for (int i = 0; i < p->opt->num_threads; i++)
        if (__atomic_load_n(&p->workers[i].busy, __ATOMIC_RELAXED))
            return false;
    return true;
}

/* The trimmer's other question: client bytes held now, all workers. */
static size_t worker_pool_client_held(void *arg)
{
    struct worker_pool *p = arg;
    size_t held = 0;
    for (int i = 0; i < p->opt->num_threads; i++)
        held += __atomic_load_n(&p->workers[i].reply_bytes, __ATOMIC_RELAXED) +
                __atomic_load_n(&p->workers[i].rbuf_bytes, __ATOMIC_RELAXED);
    return held;
}

int worker_pool_start(struct worker_pool *p)
{
    int n = p->opt->num_threads;
    p->workers = calloc((size_t)n, sizeof *p->workers);
    if (!p->workers)
        return -1;
    p->nworkers = 0;
    p->accepting = 1;
    const struct trimmer_ops trim_ops = {worker_pool_quiet, worker_pool_client_held, p};
    if (trimmer_start(&p->trimmer, &trim_ops) < 0)
        log_info("freed client memory will not be returned to the OS");
    /* -o io_uring: the ring backend when the kernel allows it, else epoll,
     * said in one line (seccomp policies and io_uring_disabled forbid it) */
    char why[128];
    bool ring = event_select(p->opt->io_uring, why, sizeof why) == 0 && p->opt->io_uring;
    if (p->opt->io_uring && !ring)
        log_error("nodelay: io_uring unavailable (%s), using %s", why, event_backend());
    if (worker_pool_init_workers(p) < 0) {
        int err = errno;
        /* The probe's ring was allowed, but the kernel may still refuse a
         * later one (locked-memory or io_uring limits at high -t): then
         * every worker runs on epoll rather than the server not starting. */
        if (!ring) {
            log_error("worker %d: %s", p->nworkers, strerror(err));
            goto fail;
        }
        int failed = p->nworkers;
        for (int i = 0; i < p->nworkers; i++)
            worker_release(&p->workers[i]);
        p->nworkers = 0;
        event_select(false, why, sizeof why);
        log_error("nodelay: io_uring unavailable (worker %d's ring: %s), using %s", failed,
                  strerror(err), event_backend());
        if (worker_pool_init_workers(p) < 0) {
            log_error("worker %d: %s", p->nworkers, strerror(errno));
            goto fail;
        }
    }
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]);
        if (rc != 0) {
            log_error("pthread_create: %s", strerror(rc));
            goto fail;
        }
        p->workers[i].started = true;
    }
    return 0;
fail:
    worker_pool_stop(p, false);
    return -1;
}

void worker_pool_wake(struct worker_pool *p)
{
    /* Every worker's pipe is made before any thread starts (a worker
     * calls this), so `started`, which the starting thread writes, is not
     * read: a wake of one not yet running is drained at its first turn. */
    for (int i = 0; i < p->nworkers; i++)
        worker_wake(&p->workers[i]);
}

void worker_pool_stop(struct worker_pool *p, bool graceful)
{
    if (!p->workers)
        return;
    __atomic_store_n(&p->graceful, graceful, __ATOMIC_RELAXED);
    __atomic_store_n(&p->stopping, true, __ATOMIC_RELEASE);
    for (int i = 0; i < p->nworkers; i++)
        if (p->workers[i].started)
            worker_wake(&p->workers[i]);
    for (int i = 0; i < p->nworkers; i++)
        if (p->workers[i].started)
            pthread_join(p->workers[i].thread, NULL);
    for (int i = 0; i < p->nworkers; i++)
        worker_release(&p->workers[i]);
    trimmer_stop(&p->trimmer);
    free(p->workers);
    p->workers = NULL;
    p->nworkers = 0;
}
