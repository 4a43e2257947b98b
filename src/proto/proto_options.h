/* SPDX-License-Identifier: BSD-3-Clause */
/* What the protocols read of the settings: fixed at start-up, filled from
 * the settings table by options.c (a field here has its row's name and C
 * type, checked there at build time). A session holds a pointer to one and
 * to the run-time values (settings_run.h). */
#ifndef NODELAY_PROTO_OPTIONS_H
#define NODELAY_PROTO_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#define PROTO_OPTIONS(X)                                                                           \
    X(int, reqs_per_event)         /* -R: requests per read before yielding */                    \
    X(size_t, item_size_max)       /* -I */                                                        \
    X(bool, cas_enabled)           /* not -C */                                                    \
    X(bool, flush_enabled)         /* not -F */                                                    \
    X(bool, dump_enabled)          /* not -X: lru_crawler metadump, mgdump */                     \
    X(bool, shutdown_command)      /* -A */                                                        \
    X(bool, watch_enabled)         /* not -W */                                                    \
    X(int, watcher_logbuf_size)    /* KB a watcher buffers */                                      \
    X(bool, sasl)                  /* -S */                                                        \
    X(const char *, auth_file)     /* -Y, or NULL */                                               \
    X(int, auth_fail_limit)        /* failed logins before a connection is closed */              \
    X(const char *, binding_protocol) /* -B: auto, ascii or binary */                             \
    X(bool, slab_reassign)         /* `slabs reassign` allowed */                                  \
    X(bool, lru_maintainer_thread) /* `lru mode`, `lru temp_ttl` allowed */

#define PROTO_OPTIONS_FIELD(type, name) type name;
struct proto_options {
    PROTO_OPTIONS(PROTO_OPTIONS_FIELD)
};
#undef PROTO_OPTIONS_FIELD

#endif
