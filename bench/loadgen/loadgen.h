/* SPDX-License-Identifier: BSD-3-Clause */
/* The load generator's run configuration, per-thread results, and entry
 * points of its modes (load, fill, replay). */
#ifndef LG_LOADGEN_H
#define LG_LOADGEN_H

#include "hist.h"
#include "keyspace.h"
#include "limbo.h"
#include "wire.h"

#include <stdbool.h>
#include <stdint.h>

struct lg_config {
    const char *host;
    int port;
    int threads;
    int conns;      /* total, spread over threads */
    int depth;      /* requests in flight per connection */
    uint32_t keys;
    uint32_t key_base; /* keys are key_base .. key_base + keys - 1 */
    double zipf;    /* 0 = uniform */
    uint32_t vmin, vmax;
    double get_ratio, del_ratio; /* the rest are sets */
    unsigned multi;  /* keys per get */
    bool multi_random; /* 1..multi per get instead of exactly multi */
    enum lg_proto proto;
    uint64_t requests; /* 0 = use duration */
    double duration;
    double rate;      /* total offered ops/s; 0 = closed loop */
    bool prefill;
    uint32_t ttl;     /* on sets; 0 = none */
    uint64_t seed;
    const char *json_path;
    bool quiet;
    bool trace_slow; /* print requests of 40 ms or more */
    /* soak: each key is owned by one connection, whose in-order replies let it
     * know exactly which versions a get may legally return */
    bool strict;
    /* the floor server's canned values: count hits, check only their key */
    bool no_verify;
    double disconnect_ratio; /* per request: drop the connection abruptly */
};

struct lg_stats {
    uint64_t requests, gets, sets, deletes, keys_requested;
    uint64_t hits, misses, errors, server_errors, not_stored, del_missing;
    uint64_t verify_failures, stale, future, miss_after_ack;
    uint64_t abandoned_seen; /* reads of an abandoned write below the acknowledged version */
    uint64_t abandoned_late; /* ... of them, 2 s or more after the drop */
    uint64_t disconnects, partial_sends, conn_errors, late_sends;
    uint64_t slow40, slow40_50;
    uint64_t self_stalls;    /* summed; self_stall_max stays the last counter */
    uint64_t self_stall_max; /* ns */
    uint64_t abandoned_late_max; /* ns from a drop to a read of its abandoned write (max) */
    struct lg_hist lat;
};

/* Shared by every worker (read-only after set-up, except the strict-mode key
 * state, which each connection touches only for the keys it owns). */
struct lg_shared {
    const struct lg_config *cfg;
    struct lg_dist dist;
    struct lg_values values;
    uint32_t *lo, *hi;   /* strict mode: oldest acceptable / newest sent version */
    uint64_t *taint_until; /* strict mode: a dropped connection may still land a write */
    bool *deleted; /* strict mode: the newest acknowledged write is a delete */
    struct lg_limbo *limbo; /* strict mode: per key, the writes abandoned by drops */
    uint64_t start_ns;
};

uint64_t lg_now_ns(void);
int lg_connect(const char *host, int port, bool nonblocking);

/* Runs cfg->threads workers to completion and merges their stats. */
int lg_run_load(struct lg_shared *sh, struct lg_stats *total, double *elapsed_s);
void lg_stats_merge(struct lg_stats *into, const struct lg_stats *from);
void lg_report(const struct lg_config *cfg, const struct lg_stats *st, double elapsed_s);
/* -s HOST:PORT, split in place (arg is an argv string): 0, or -1 when it
 * has no port. Every subcommand takes the server this way. */
int lg_parse_server(char *arg, const char **host, int *port);

int lg_fill_main(int argc, char **argv);
int lg_replay_main(int argc, char **argv);
int lg_trace_main(int argc, char **argv);
int lg_selftest_main(void);

#endif
