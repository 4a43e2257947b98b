/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached -o options nodelay accepts with no effect (the note column
 * says what happens instead), and the proxy_* family it refuses (the
 * ext_* options and slab_automove_freeratio are in settings_rows_ext.h).
 * Rows of the settings table: settings_table.h includes this file in
 * its place and says what each column means. */
#ifndef NODELAY_SETTINGS_ROWS_COMPAT_H
#define NODELAY_SETTINGS_ROWS_COMPAT_H

/* clang-format off */
#define SETTINGS_ROWS_COMPAT(X) \
X(NONE, modern,                  NONE, 0,           0,   NULL,                 "modern",                     \
  NULL,          NOP,         0,       0,              NULL,                    NONE,     NULL,              \
  "memcached's future defaults (currently nothing)", NULL)                                                   \
X(NONE, no_modern,               NONE, 0,           0,   NULL,                 "no_modern",                  \
  NULL,          NO_MODERN,   0,       0,              NULL,                    NONE,     NULL,              \
  "memcached 1.4's defaults (no slab mover, crawler, maintainer; jenkins)", NULL)                            \
X(NONE, slab_sizes,              NONE, 0,           0,   NULL,                 "slab_sizes",                 \
  "a-b-c",       SLAB_SIZES,  0,       0,              NULL,                    NONE,     SETTINGS_NO_SLABS, \
  "slab class sizes, increasing", NULL)                                                                      \
X(NONE, no_chunked_items,        NONE, 0,           0,   NULL,                 "no_chunked_items",           \
  NULL,          NOP,         0,       0,              NULL,                    NONE,                        \
  "items are never chunked in nodelay; ignored",                                                             \
  "do not chain chunks for large items", NULL)                                                               \
X(NONE, drop_privileges,         NONE, 0,           0,   NULL,                 "[no_]drop_privileges",       \
  NULL,          NOP,         0,       0,              NULL,                    NONE,                        \
  "nodelay does not sandbox itself with seccomp; ignored",                                                   \
  "seccomp sandbox", NULL)                                                                                   \
X(NONE, relaxed_privileges,      NONE, 0,           0,   NULL,                 "relaxed_privileges",         \
  NULL,          NOP,         0,       0,              NULL,                    NONE,                        \
  "nodelay does not sandbox itself with seccomp; ignored",                                                   \
  "relaxed seccomp sandbox", NULL)                                                                           \
X(NONE, resp_obj_mem_limit,      NONE, 0,           0,   NULL,                 "resp_obj_mem_limit",         \
  "MB",          NOP,         0,       0,              NULL,                    NONE,                        \
  "reply memory is bounded by reply_queue_limit instead; ignored",                                           \
  "reply object memory bound", NULL)                                                                         \
X(NONE, sock_cookie_id,          NONE, 0,           0,   NULL,                 "sock_cookie_id",             \
  "id",          NOP,         0,       0,              NULL,                    NONE,                        \
  "sockets carry no SO_MARK cookie in nodelay; ignored",                                                     \
  "socket cookie for firewalls", NULL)                                                                       \
X(NONE, proxy_opts,              NONE, 0,           0,   NULL,                 "proxy_*",                    \
  "...",         NO_PROXY,    0,       0,              NULL,                    NONE,     NULL,              \
  "refused: nodelay has no built-in proxy", NULL)
/* clang-format on */

#endif
