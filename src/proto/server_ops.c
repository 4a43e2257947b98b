/* SPDX-License-Identifier: BSD-3-Clause */
#include "proto/server_ops.h"

#include <stdio.h>

static void server_ops_none_shutdown(void *ctx, bool graceful)
{
    (void)ctx;
    (void)graceful;
}

static void server_ops_none_verbosity(void *ctx, unsigned level)
{
    (void)ctx;
    (void)level;
}

static int server_ops_none_memlimit(void *ctx, size_t megabytes)
{
    (void)ctx;
    (void)megabytes;
    return -1;
}

static enum server_stats_rc server_ops_none_stats(void *ctx, const char *args, size_t len,
                                                  struct server_stats_out *out)
{
    (void)ctx;
    (void)args;
    (void)len;
    (void)out;
    return SERVER_STATS_UNKNOWN;
}

static void server_ops_none_detail(void *ctx, const char *key, size_t nkey, char op, bool hit)
{
    (void)ctx;
    (void)key;
    (void)nkey;
    (void)op;
    (void)hit;
}

static int server_ops_none_refresh_certs(void *ctx, char *msg, size_t n)
{
    (void)ctx;
    snprintf(msg, n, "Error TLS not enabled");
    return -1;
}

const struct server_ops server_ops_none = {
    .ctx = NULL,
    .shutdown = server_ops_none_shutdown,
    .set_verbosity = server_ops_none_verbosity,
    .set_memlimit = server_ops_none_memlimit,
    .stats = server_ops_none_stats,
    .stats_detail = server_ops_none_detail,
    .refresh_certs = server_ops_none_refresh_certs,
};
