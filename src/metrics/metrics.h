/* SPDX-License-Identifier: BSD-3-Clause */
/* The Prometheus endpoint (-o metrics_listen=ADDR:PORT): /metrics in the
 * Prometheus text format, on its own HTTP thread (libmicrohttpd).
 *
 * The page is generated from what `stats`, `stats settings`, `stats items`
 * and `stats nodelay` print, which come from the counters table: memcached's
 * fields under memcached_exporter's metric names (so its dashboards work
 * unchanged), every other numeric field as nodelay_<name>, and the request
 * service-time histograms of stats/stats_hist.h. A scrape reads the workers'
 * counters the way `stats` does (relaxed loads, never a worker's lock), so
 * it costs workers nothing; with the endpoint off nothing runs at all.
 * docs/observability.md "Prometheus endpoint".
 */
#ifndef NODELAY_METRICS_H
#define NODELAY_METRICS_H

#include <stdbool.h>
#include <stddef.h>

/* The endpoint's connections (metrics_guard.h): at most this many live, the
 * longest-waiting pushed out for a newcomer, each request read and answered
 * within METRICS_DEADLINE_S of its connection being ready for it. A scrape
 * takes milliseconds; Prometheus waits 10 s by default. */
#define METRICS_CONNECTIONS 256
#define METRICS_DEADLINE_S 3
/* Descriptors the endpoint may hold: twice its connections (one shut but
 * not yet closed per live one), its listener, epoll and wake-up pipe. */
#define METRICS_FDS (2 * METRICS_CONNECTIONS + 4)

struct reply_queue;
struct server;

/* Whether this build has libmicrohttpd (else -o metrics_listen is refused). */
bool metrics_available(void);

/* Start serving on `listen` ("PORT", "ADDR:PORT", "[ADDR6]:PORT"; an address
 * left out means 127.0.0.1) the counters and settings of srv, which must
 * outlive metrics_stop. Returns 0, or -1 with a message in err. */
int metrics_start(const char *listen, struct server *srv, char *err, size_t errlen);
void metrics_stop(void);

/* The /metrics page (no socket involved, so tests compose it directly).
 * Returns 0, or -1 when out of memory. */
int metrics_compose(struct server *srv, struct reply_queue *out);

#endif
