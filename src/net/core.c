#include "net/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "event/event.h"
#include "log.h"
#include "net/worker.h"
#include "net/net_options.h"

int core_start(struct core *c)
{
    int n = c->opt->num_threads;
    c->workers = calloc((size_t)n, sizeof *c->workers);
    if (!c->workers)
        return -1;
    c->nworkers = 0;
    c->accepting = 1;
    if (trimmer_start(&c->trimmer) < 0)
        log_info("freed client memory will not be returned to the OS");
    /* -o io_uring: the ring backend when the kernel allows it, else epoll,
     * said in one line (seccomp policies and io_uring_disabled forbid it) */
    char why[128];
    if (event_select(c->opt->io_uring, why, sizeof why) < 0)
        log_error("nodelay: io_uring unavailable (%s), using %s", why, event_backend());
    for (int i = 0; i < n; i++) {
        if (worker_init(&c->workers[i], c, i) < 0)
            goto fail;
        c->nworkers++;
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
