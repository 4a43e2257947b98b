/* SPDX-License-Identifier: BSD-3-Clause */
/* The running server, the layer above net/: one struct server, owning
 *   - the worker pool (net/worker_pool.h): the workers and what they
 *     share (options, store, listeners, registry, connection counts, the
 *     trimmer);
 *   - its answers to the protocols, the server_ops (server_ops.c):
 *     shutdown, verbosity, cache_memlimit and the `stats` family composed
 *     from every worker's counters and the store's, with `stats reset`'s
 *     baseline.
 * main.c (start-up, signals, shutdown order) sets it up, fills in the
 * store, registry and listeners of its pool, and starts and stops it;
 * server/daemon.c (-d) runs the process around it. */
#ifndef NODELAY_SERVER_H
#define NODELAY_SERVER_H

#include <pthread.h>
#include <stdbool.h>

#include "net/worker_pool.h"
#include "proto/server_ops.h"
#include "stats/stats_output.h"

struct net_options;
struct proto_options;
struct settings;

struct server {
    struct worker_pool pool;    /* the workers and what they share */
    const struct settings *set; /* `stats settings`, and what the snapshot shows */
    struct server_ops ops;      /* what sessions ask of it (server_ops.c) */
    /* `stats reset`: counters are per-worker single-writer, so instead of
     * zeroing them under the writers' feet it remembers what they were and
     * reports the difference (stats_snapshot_since). */
    pthread_mutex_t reset_lock;
    struct stats_snapshot base;
    bool was_reset;
};

/* Zero *srv and set it up, not running: the pool's options and run-time
 * settings from set (which outlives it), its ops. The caller then fills in
 * srv->pool's store, registry and listeners. Returns 0, or -1. */
int server_init(struct server *srv, const struct settings *set, const struct net_options *opt,
                const struct proto_options *proto);
/* Start the workers (opt->num_threads) and the trimmer. Returns 0, or -1
 * after stopping whatever had started. */
int server_start(struct server *srv);
/* Ask every worker to stop (graceful: let queued replies drain first) and
 * wait for them, then the trimmer. Safe after a failed start. */
void server_stop(struct server *srv, bool graceful);
/* After server_stop (or before any start): what server_init set up. The
 * pool's store, registry and listeners are the caller's to release. */
void server_release(struct server *srv);

#endif
