/* SPDX-License-Identifier: BSD-3-Clause */
/* The worker pool: the worker threads and what they share, the listeners,
 * the connection count and the stop flags, with what each session is
 * handed (options, store, run-time settings, server operations), and the
 * trimmer that returns the memory their clients freed. Its owner
 * (server/server.h) fills in the pointers and the listeners, starts and
 * stops it here; the workers and their connections read it. */
#ifndef NODELAY_WORKER_POOL_H
#define NODELAY_WORKER_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/trim.h"
#include "net/listener.h"
#include "stats/registry.h"

struct net_options;
struct proto_options;
struct server_ops;
struct settings_runtime;
struct store;
struct worker;

struct worker_pool {
    const struct net_options *opt;
    const struct proto_options *proto; /* handed to every session */
    struct settings_runtime *run;      /* verbosity, maxbytes, detail... change at run time */
    struct store *store;
    struct listener_set listeners;
    struct registry registry;
    const struct server_ops *ops; /* what sessions ask of the server */
    struct worker *workers;
    int nworkers;
    struct trimmer trimmer;   /* returns freed client memory, off the workers */
    int curr_conns;           /* client connections, atomic (the -c limit) */
    int accepting;            /* 1 unless accept hit the fd limit, atomic */
    unsigned listen_disabled; /* times accept was paused on EMFILE, atomic */
    bool stopping;            /* atomic */
    bool graceful;            /* atomic */
};

/* Start the trimmer and opt->num_threads workers, each watching every
 * listener, on the backend -o io_uring asks for when the kernel allows it
 * (else epoll, said in one line). Returns 0, or -1 after stopping
 * whatever had started. */
int worker_pool_start(struct worker_pool *p);
/* Wake every worker for a turn, from a worker: after cache_memlimit, so
 * that an idle one lets its open segments go (store_ctx_follow_limit)
 * now, not at its next event or second. */
void worker_pool_wake(struct worker_pool *p);
/* Ask every worker to stop (graceful: let queued replies drain first) and
 * wait for them, then the trimmer. Safe after a failed start, and more
 * than once. */
void worker_pool_stop(struct worker_pool *p, bool graceful);

#endif
