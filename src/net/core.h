/* SPDX-License-Identifier: BSD-3-Clause */
/* struct core: what every worker shares, the running server's state
 * (server/server.h says how its pieces fit). main.c fills it in,
 * server/core.c starts and stops its threads, and the workers and their
 * connections read it here, below server/, so net/ never includes server/. */
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

#endif
