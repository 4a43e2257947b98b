/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's classic flags, -m to -I: item memory, connections, the
 * listeners (TCP, UDP, unix socket), verbosity, threads, the protocol, SASL,
 * the item size limit.
 * Rows of the settings table: settings_table.h includes this file in
 * its place and says what each column means. */
#ifndef NODELAY_SETTINGS_ROWS_CORE_H
#define NODELAY_SETTINGS_ROWS_CORE_H

/* clang-format off */
#define SETTINGS_ROWS_CORE(X) \
X(RUN,  maxbytes,                SIZE, 64u << 20,   'm', "memory-limit",       NULL,                         \
  "num",         MEGS,        0,       0,              "maxbytes",              U,        NULL,              \
  "item memory in megabytes (default: 64); an exact cap", NULL)                                              \
X(FIX,  maxconns,                INT,  1024,        'c', "conn-limit",         NULL,                         \
  "num",         CONNS,       0,       0,              "maxconns",              I,        NULL,              \
  "simultaneous client connections (default: 1024)",                                                         \
  SETTINGS_METRIC("memcached_max_connections",                                                               \
    "Maximum number of clients allowed."))                                                                   \
X(FIX,  port,                    INT,  11211,       'p', "port",               NULL,                         \
  "num",         PORT,        -1,      65535,          "tcpport",               I,        NULL,              \
  "TCP port (default: 11211; 0 = off, -1 = any free port)", NULL)                                            \
X(FIX,  udpport,                 INT,  0,           'U', "udp-port",           NULL,                         \
  "num",         UDPPORT,     -1,      65535,          "udpport",               I,        NULL,              \
  "UDP port (default: 0 = off; UDP replies to forged sources\n"                                              \
  "make any server a reflection amplifier: keep it off on\n"                                                 \
  "untrusted networks)", NULL)                                                                               \
X(FIX,  inter,                   STR,  "127.0.0.1", 'l', "listen",             NULL,                         \
  "addr",        LISTEN,      0,       0,              "inter",                 STR,      NULL,              \
  "interfaces to listen on, comma separated, IPv6 as [addr]:port\n"                                          \
  "(default: 127.0.0.1 -- memcached listens on all; say -l 0.0.0.0)", NULL)                                  \
X(RUN,  verbosity,               INT,  0,           'v', "verbose",            NULL,                         \
  "?",           VERBOSE,     0,       0,              "verbosity",             I,        NULL,              \
  "log errors and start-up; -vv also connections and commands;\n"                                            \
  "-vvv also internal state changes", NULL)                                                                  \
X(NONE, oldest,                  NONE, 0,           0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "oldest",                ZERO,     NULL,              \
  NULL, NULL)                                                                                                \
X(FIX,  evictions,               BOOL, true,        'M', "disable-evictions",  NULL,                         \
  NULL,          OFF,         0,       0,              "evictions",             ONOFF,    NULL,              \
  "answer SERVER_ERROR out of memory instead of evicting", NULL)                                             \
X(FIX,  domain_socket,           STR,  NULL,        's', "unix-socket",        NULL,                         \
  "file",        STR,         0,       0,              "domain_socket",         STR,      NULL,              \
  "UNIX socket to listen on (turns TCP off)", NULL)                                                          \
X(FIX,  umask,                   INT,  0700,        'a', "unix-mask",          NULL,                         \
  "mask",        OCTAL,       0,       0777,           "umask",                 OCT,      NULL,              \
  "permissions of the UNIX socket, octal (default: 700)", NULL)                                              \
X(FIX,  shutdown_command,        BOOL, false,       'A', "enable-shutdown",    NULL,                         \
  NULL,          ON,          0,       0,              "shutdown_command",      YESNO,    NULL,              \
  "allow the shutdown command", NULL)                                                                        \
X(FIX,  growth_factor,           DBL,  1.25,        'f', "slab-growth-factor", NULL,                         \
  "factor",      FACTOR,      0,       0,              "growth_factor",         F2,       SETTINGS_CLASSES,  \
  "slab growth factor (default: 1.25)", NULL)                                                                \
X(FIX,  chunk_size,              INT,  48,          'n', "slab-min-size",      NULL,                         \
  "bytes",       CHUNK,       0,       0,              "chunk_size",            I,        SETTINGS_CLASSES,  \
  "smallest slab chunk (default: 48)", NULL)                                                                 \
X(FIX,  num_threads,             INT,  4,           't', "threads",            NULL,                         \
  "num",         THREADS,     0,       0,              "num_threads",           I,        NULL,              \
  "worker threads, each with its own event loop (default: 4)", NULL)                                         \
X(NONE, num_threads_per_udp,     NONE, 0,           0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "num_threads_per_udp",   THREADS,  NULL,              \
  NULL, NULL)                                                                                                \
X(FIX,  prefix_delimiter,        CHAR, ':',         'D', NULL,                 NULL,                         \
  "char",        DELIM,       0,       0,              "stat_key_prefix",       CHAR,     NULL,              \
  "prefix delimiter for stats detail (default: ':'); turns it on", NULL)                                     \
X(RUN,  detail_enabled,          BOOL, false,       0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "detail_enabled",        YESNO,    NULL,              \
  NULL, NULL)                                                                                                \
X(FIX,  reqs_per_event,          INT,  20,          'R', "max-reqs-per-event", NULL,                         \
  "num",         REQS,        0,       0,              "reqs_per_event",        I,        NULL,              \
  "requests served per connection per turn (default: 20)", NULL)                                             \
X(FIX,  cas_enabled,             BOOL, true,        'C', "disable-cas",        NULL,                         \
  NULL,          OFF,         0,       0,              "cas_enabled",           YESNO,    NULL,              \
  "turn CAS off", NULL)                                                                                      \
X(FIX,  tcp_backlog,             INT,  1024,        'b', "listen-backlog",     NULL,                         \
  "num",         INT,         1,       INT_MAX,        "tcp_backlog",           I,        NULL,              \
  "listen backlog (default: 1024)", NULL)                                                                    \
X(FIX,  binding_protocol,        STR,  "auto",      'B', "protocol",           NULL,                         \
  "name",        PROTOCOL,    0,       0,              "binding_protocol",      PROTOCOL, NULL,              \
  "ascii, binary or auto (default: auto)", NULL)                                                             \
X(FIX,  sasl,                    BOOL, false,       'S', "enable-sasl",        NULL,                         \
  NULL,          ON,          0,       0,              "auth_enabled_sasl",     YESNO,    NULL,              \
  "SASL authentication (binary protocol only): PLAIN against\n"                                              \
  "the file named by $MEMCACHED_SASL_PWDB, read again on SIGHUP", NULL)                                      \
X(FIX,  auth_file,               STR,  NULL,        'Y', "auth-file",          NULL,                         \
  "file",        STR,         0,       0,              "auth_enabled_ascii",    SET,      NULL,              \
  "ascii authentication: lines of user:password, read\n"                                                     \
  "again on SIGHUP (a file that cannot be read keeps the last)", NULL)                                       \
X(FIX,  item_size_max,           SIZE, 1u << 20,    'I', "max-item-size",      NULL,                         \
  "size",        SIZE,        0,       0,              "item_size_max",         U,        NULL,              \
  "largest item, k/m suffix (default: 1m, min 1k, max 1024m)", NULL)
/* clang-format on */

#endif
