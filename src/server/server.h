/* SPDX-License-Identifier: BSD-3-Clause */
/* The running server, the layer above net/, in three pieces:
 *   - struct core (net/core.h): its state, what every worker shares
 *     (options, store, listeners, registry, the workers, the trimmer,
 *     connection counts). main.c fills it in; workers and connections
 *     read it, which is why it is declared in net/.
 *   - core_start / core_stop (server/core.c): its threads, the workers and
 *     the trimmer, with the trimmer's questions about the workers.
 *   - struct server (server/server.c): its answers to the protocols, the
 *     server_ops (proto/server_ops.h): shutdown, verbosity, cache_memlimit,
 *     and the `stats` family composed from every worker's counters and the
 *     store's. main.c creates one and puts its ops in the core, whose
 *     workers hand them to every session.
 * main.c (start-up, signals, shutdown order) and server/daemon.c (-d)
 * run the process around them. */
#ifndef NODELAY_SERVER_H
#define NODELAY_SERVER_H

#include <stdbool.h>

struct core;
struct server;
struct settings;
struct stats_snapshot;

/* Start nworkers threads (opt->num_threads), each watching every
 * listener, and the trimmer. Returns 0, or -1 after stopping whatever had
 * started. */
int core_start(struct core *c);
/* Ask every worker to stop (graceful: let queued replies drain first) and
 * wait for them, then the trimmer. Safe to call once after core_start
 * succeeded. */
void core_stop(struct core *c, bool graceful);

/* Sets c->ops. set: what `stats settings` shows and the snapshot reads
 * (it outlives the server). Returns NULL when out of memory. */
struct server *server_create(struct core *c, const struct settings *set);
/* After the workers stopped: clears c->ops and frees *srv (NULL after). */
void server_destroy(struct server **srv);

/* What every row of the counters table reads, since the last `stats reset`,
 * for a reader outside the protocols (the metrics endpoint walks
 * stats_general_rows / stats_nodelay_rows over it). Takes no worker's lock. */
void server_stats_snapshot(struct server *srv, struct stats_snapshot *out);

/* The `stats settings` rows memcached_exporter exports, for the metrics
 * endpoint: emit(arg, metric, help, value) per row, as
 * settings_metrics_emit. Returns its result. */
int server_settings_metrics(struct server *srv,
                            int (*emit)(void *arg, const char *metric, const char *help,
                                        const char *value),
                            void *arg);

#endif
