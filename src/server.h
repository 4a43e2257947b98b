/* The running server's side of server_ops (proto/server_ops.h): shutdown,
 * verbosity, cache_memlimit, and the `stats` family composed from every
 * worker's counters and the store's. main.c creates one and puts its ops in
 * the core, whose workers hand them to every session. */
#ifndef NODELAY_SERVER_H
#define NODELAY_SERVER_H

struct core;
struct server;
struct stats_snapshot;

/* Sets c->ops. Returns NULL when out of memory. */
struct server *server_create(struct core *c);
/* After the workers stopped: clears c->ops and frees *srv (NULL after). */
void server_destroy(struct server **srv);

/* What every row of the counters table reads, since the last `stats reset`,
 * for a reader outside the protocols (the metrics endpoint walks
 * stats_general_rows / stats_nodelay_rows over it). Takes no worker's lock. */
void server_stats_snapshot(struct server *srv, struct stats_snapshot *out);

#endif
