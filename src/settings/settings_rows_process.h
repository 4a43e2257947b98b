/* SPDX-License-Identifier: BSD-3-Clause */
/* The process: NAPI ids, the memory file, watch, daemon, pid file,
 * user, memory locking, core dumps, large pages, the config and log files,
 * and the actions (-h, -i, -V, --man, -o).
 * Rows of the settings table: settings_table.h includes this file in
 * its place and says what each column means. */
#ifndef NODELAY_SETTINGS_ROWS_PROCESS_H
#define NODELAY_SETTINGS_ROWS_PROCESS_H

/* clang-format off */
#define SETTINGS_ROWS_PROCESS(X) \
X(FIX,  num_napi_ids,            INT,  0,           'N', "napi-ids",           NULL,                         \
  "num",         INT,         0,       INT_MAX,        "num_napi_ids",          I,                           \
  "nodelay does not map NAPI ids to workers; shown in stats settings only",                                  \
  "NAPI ids", NULL)                                                                                          \
X(FIX,  memory_file,             STR,  NULL,        'e', "memory-file",        NULL,                         \
  "file",        STR,         0,       0,              "memory_file",           STRNULL,  NULL,              \
  "keep item memory in this file (on tmpfs: /dev/shm) and\n"                                                 \
  "restore the cache from it at start, after a stop (SIGTERM,\n"                                             \
  "SIGUSR1, SIGINT, shutdown) or a crash; -m -I -C must match\n"                                             \
  "(and ext_path's files and sizes, for the flash items)", NULL)                                        \
X(NONE, client_flags_size,       NONE, 0,           0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "client_flags_size",     FOUR,     NULL,              \
  NULL, NULL)                                                                                                \
/* no stats settings line from here on */ \
X(FIX,  watch_enabled,           BOOL, true,        'W', "disable-watch",      NULL,                         \
  NULL,          OFF,         0,       0,              NULL,                    NONE,     NULL,              \
  "refuse watch", NULL)                                                                                      \
X(FIX,  daemonize,               BOOL, false,       'd', "daemon",             NULL,                         \
  NULL,          ON,          0,       0,              NULL,                    NONE,     NULL,              \
  "run as a daemon: returns once the server serves, or with\n"                                               \
  "its failure (ignored when systemd starts it as Type=notify)", NULL)                                       \
X(FIX,  pid_file,                STR,  NULL,        'P', "pidfile",            NULL,                         \
  "file",        STR,         0,       0,              NULL,                    NONE,     NULL,              \
  "write the process id here (removed at exit)", NULL)                                                       \
X(FIX,  username,                STR,  NULL,        'u', "user",               NULL,                         \
  "user",        STR,         0,       0,              NULL,                    NONE,     NULL,              \
  "user to run as; required when started as root (-u root keeps root)", NULL)                                \
X(FIX,  lock_memory,             BOOL, false,       'k', "lock-memory",        NULL,                         \
  NULL,          ON,          0,       0,              NULL,                    NONE,     NULL,              \
  "lock all memory (mlockall)", NULL)                                                                        \
X(FIX,  enable_coredumps,        BOOL, false,       'r', "enable-coredumps",   NULL,                         \
  NULL,          ON,          0,       0,              NULL,                    NONE,     NULL,              \
  "raise the core file limit to the maximum", NULL)                                                          \
X(FIX,  large_pages,             BOOL, false,       'L', "enable-largepages",  NULL,                         \
  NULL,          ON,          0,       0,              NULL,                    NONE,                        \
  "segments and the index use transparent huge pages where the kernel gives them, with or without -L",      \
  "large memory pages (nodelay uses them with or without -L)", NULL)                                         \
X(FIX,  config_file,             STR,  NULL,        0,   "config",             NULL,                         \
  "file",        CONFIG,      0,       0,              NULL,                    NONE,     NULL,              \
  "read flags from a file in /etc/memcached.conf's format: one\n"                                            \
  "flag per line, # comments; flags after --config override it", NULL)                                       \
X(FIX,  logfile,                 STR,  NULL,        0,   "logfile",            NULL,                         \
  "file",        STR,         0,       0,              NULL,                    NONE,     NULL,              \
  "with -d, append output here instead of dropping it\n"                                                     \
  "(a config file's `logfile FILE` line, as Debian's start-memcached)", NULL)                                \
X(NONE, help,                    NONE, 0,           'h', "help",               NULL,                         \
  NULL,          HELP,        0,       0,              NULL,                    NONE,     NULL,              \
  "this help", NULL)                                                                                         \
X(NONE, license,                 NONE, 0,           'i', "license",            NULL,                         \
  NULL,          LICENSE,     0,       0,              NULL,                    NONE,     NULL,              \
  "licence", NULL)                                                                                           \
X(NONE, version,                 NONE, 0,           'V', "version",            NULL,                         \
  NULL,          VERSION,     0,       0,              NULL,                    NONE,     NULL,              \
  "version", NULL)                                                                                           \
X(NONE, man,                     NONE, 0,           0,   "man",                NULL,                         \
  NULL,          MAN,         0,       0,              NULL,                    NONE,     NULL,              \
  "print the man page nodelay(1) (groff -man) and exit", NULL)                                               \
X(NONE, extended,                NONE, 0,           'o', "extended",           NULL,                         \
  "list",        EXTENDED,    0,       0,              NULL,                    NONE,     NULL,              \
  "comma-separated sub-options (below)", NULL)
/* clang-format on */

#endif
