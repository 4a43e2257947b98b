/* SPDX-License-Identifier: BSD-3-Clause */
/* The running server's side of server_ops (proto/server_ops.h): shutdown,
 * verbosity, cache_memlimit, and the `stats` family composed from every
 * worker's counters and the store's. main.c creates one and puts its ops in
 * the core, whose workers hand them to every session. */
#ifndef NODELAY_SERVER_H
#define NODELAY_SERVER_H

struct core;
struct server;
struct settings;
struct stats_snapshot;

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
