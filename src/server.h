/* The running server's side of server_ops (proto/server_ops.h): shutdown,
 * verbosity, cache_memlimit, and the `stats` family composed from every
 * worker's counters and the store's. main.c creates one and puts its ops in
 * the core, whose workers hand them to every session. */
#ifndef NODELAY_SERVER_H
#define NODELAY_SERVER_H

struct core;
struct server;

/* Sets c->ops. Returns NULL when out of memory. */
struct server *server_create(struct core *c);
/* After the workers stopped: clears c->ops and frees *srv (NULL after). */
void server_destroy(struct server **srv);

#endif
