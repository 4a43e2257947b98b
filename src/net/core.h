/* SPDX-License-Identifier: BSD-3-Clause */
/* The running server: what every worker shares. Built by main.c, read by
 * workers and by server.c (the server_ops protocols call). */
#ifndef NODELAY_CORE_H
#define NODELAY_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "net/listener.h"
#include "base/trim.h"
#include "stats/registry.h"

struct server_ops;
struct net_options;
struct proto_options;
struct settings_runtime;
struct store;
struct worker;

struct core {
    const struct net_options *opt;
    const struct proto_options *proto; /* handed to every session */
    struct settings_runtime *run;      /* verbosity, maxbytes, detail... change at run time */
    struct store *store;
    struct listener_set listeners;
    struct registry registry;
    const struct server_ops *ops; /* what sessions ask of the server (server.c's) */
    struct worker *workers;
    int nworkers;
    struct trimmer trimmer;   /* returns freed client memory, off the workers */
    int curr_conns;           /* client connections, atomic (the -c limit) */
    int accepting;            /* 1 unless accept hit the fd limit, atomic */
    unsigned listen_disabled; /* times accept was paused on EMFILE, atomic */
    bool stopping;            /* atomic */
    bool graceful;            /* atomic */
};

/* Start nworkers threads (opt->num_threads), each watching every
 * listener. Returns 0, or -1 after stopping whatever had started. */
int core_start(struct core *c);
/* Ask every worker to stop (graceful: let queued replies drain first) and
 * wait for them. Safe to call once after core_start succeeded. */
void core_stop(struct core *c, bool graceful);

#endif
