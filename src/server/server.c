/* SPDX-License-Identifier: BSD-3-Clause */
/* The running server's life (server/server.h): set up, started and
 * stopped. */
#include "server/server.h"

#include <string.h>

#include "server/server_ops.h"
#include "settings/settings.h"

int server_init(struct server *srv, const struct settings *set, const struct net_options *opt,
                const struct proto_options *proto)
{
    memset(srv, 0, sizeof *srv);
    if (pthread_mutex_init(&srv->reset_lock, NULL) != 0)
        return -1;
    srv->set = set;
    server_ops_init(srv);
    srv->pool.opt = opt;
    srv->pool.proto = proto;
    srv->pool.run = settings_runtime_of(set);
    srv->pool.ops = &srv->ops;
    return 0;
}

int server_start(struct server *srv)
{
    return worker_pool_start(&srv->pool);
}

void server_stop(struct server *srv, bool graceful)
{
    worker_pool_stop(&srv->pool, graceful);
}

void server_release(struct server *srv)
{
    srv->pool.ops = NULL;
    pthread_mutex_destroy(&srv->reset_lock);
}
