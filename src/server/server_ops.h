/* SPDX-License-Identifier: BSD-3-Clause */
/* The running server's answers (server_ops.c): the server_ops the
 * protocols call (proto/server_ops.h), and the same counters and settings
 * for a reader outside the protocols, the metrics endpoint. */
#ifndef NODELAY_SERVER_SERVER_OPS_H
#define NODELAY_SERVER_SERVER_OPS_H

#include <stddef.h>

struct server;
struct stats_snapshot;

/* Fill in srv->ops, whose context is srv. */
void server_ops_init(struct server *srv);

/* What every row of the counters table reads, since the last `stats reset`,
 * for a reader outside the protocols (the metrics endpoint walks
 * stats_general_rows / stats_nodelay_rows over it). Takes no worker's lock. */
void server_stats_snapshot(struct server *srv, struct stats_snapshot *out);
/* `stats extstore`'s rows: *out (the caller frees it) holds the *n flash
 * pages (none, NULL, without a flash tier). 0, or -1 out of memory. */
struct store_flash_page;
int server_extstore_pages(struct server *srv, struct store_flash_page **out, size_t *n);

/* The `stats settings` rows memcached_exporter exports, for the metrics
 * endpoint: emit(arg, metric, help, value) per row, as
 * settings_metrics_emit. Returns its result. */
int server_settings_metrics(struct server *srv,
                            int (*emit)(void *arg, const char *metric, const char *help,
                                        const char *value),
                            void *arg);

#endif
