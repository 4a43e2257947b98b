/* SPDX-License-Identifier: BSD-3-Clause */
/* The running server's threads (server/server.h): the workers, started
 * and stopped together, and the trimmer with its questions about them. */
#include "server/server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "event/event.h"
#include "net/core.h"
#include "net/net_options.h"
#include "net/worker.h"

/* Set up every worker (not yet running); -1 with errno and c->nworkers
 * the one that failed. */
static int core_init_workers(struct core *c)
{
    for (int i = 0; i < c->opt->num_threads; i++) {
        if (worker_init(&c->workers[i], c, i) < 0)
            return -1;
        c->nworkers++;
    }
    return 0;
}

/* The trimmer's questions (base/trim.h). Quiet: no worker busy in its last second. Every
 * slot of the array is looked at, started or not (a zeroed one is quiet). */
static bool core_quiet(void *arg)
{
    struct core *c = arg;
    for (int i = 0; i < c->opt->num_threads; i++)
        if (__atomic_load_n(&c->workers[i].busy, __ATOMIC_RELAXED))
            return false;
    return true;
}

/* The trimmer's other question: client bytes held now, all workers. */
static size_t core_client_held(void *arg)
{
    struct core *c = arg;
    size_t held = 0;
    for (int i = 0; i < c->opt->num_threads; i++)
        held += __atomic_load_n(&c->workers[i].reply_bytes, __ATOMIC_RELAXED) +
                __atomic_load_n(&c->workers[i].rbuf_bytes, __ATOMIC_RELAXED);
    return held;
}

int core_start(struct core *c)
{
    int n = c->opt->num_threads;
    c->workers = calloc((size_t)n, sizeof *c->workers);
    if (!c->workers)
        return -1;
    c->nworkers = 0;
    c->accepting = 1;
    const struct trimmer_ops trim_ops = {core_quiet, core_client_held, c};
    if (trimmer_start(&c->trimmer, &trim_ops) < 0)
        log_info("freed client memory will not be returned to the OS");
    /* -o io_uring: the ring backend when the kernel allows it, else epoll,
     * said in one line (seccomp policies and io_uring_disabled forbid it) */
    char why[128];
    bool ring = event_select(c->opt->io_uring, why, sizeof why) == 0 && c->opt->io_uring;
    if (c->opt->io_uring && !ring)
        log_error("nodelay: io_uring unavailable (%s), using %s", why, event_backend());
    if (core_init_workers(c) < 0) {
        int err = errno;
        /* The probe's ring was allowed, but the kernel may still refuse a
         * later one (locked-memory or io_uring limits at high -t): then
         * every worker runs on epoll rather than the server not starting. */
        if (!ring) {
            log_error("worker %d: %s", c->nworkers, strerror(err));
            goto fail;
        }
        int failed = c->nworkers;
        for (int i = 0; i < c->nworkers; i++)
            worker_release(&c->workers[i]);
        c->nworkers = 0;
        event_select(false, why, sizeof why);
        log_error("nodelay: io_uring unavailable (worker %d's ring: %s), using %s", failed,
                  strerror(err), event_backend());
        if (core_init_workers(c) < 0) {
            log_error("worker %d: %s", c->nworkers, strerror(errno));
            goto fail;
        }
    }
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&c->workers[i].thread, NULL, worker_main, &c->workers[i]);
        if (rc != 0) {
            log_error("pthread_create: %s", strerror(rc));
            goto fail;
        }
        c->workers[i].started = true;
    }
    return 0;
fail:
    core_stop(c, false);
    return -1;
}

void core_stop(struct core *c, bool graceful)
{
    if (!c->workers)
        return;
    __atomic_store_n(&c->graceful, graceful, __ATOMIC_RELAXED);
    __atomic_store_n(&c->stopping, true, __ATOMIC_RELEASE);
    for (int i = 0; i < c->nworkers; i++)
        if (c->workers[i].started)
            worker_wake(&c->workers[i]);
    for (int i = 0; i < c->nworkers; i++)
        if (c->workers[i].started)
            pthread_join(c->workers[i].thread, NULL);
    for (int i = 0; i < c->nworkers; i++)
        worker_release(&c->workers[i]);
    trimmer_stop(&c->trimmer);
    free(c->workers);
    c->workers = NULL;
    c->nworkers = 0;
}
