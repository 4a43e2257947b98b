/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging by level, as memcached's -v/-vv/-vvv. Every level is compiled
 * into every build: below its level a log call costs one relaxed load and a
 * branch predicted not taken (LOG_ENABLED), so `verbosity` can raise the
 * level of a running release server and -vvv shows what memcached's does.
 * What each level prints is memcached 1.6.45's (docs/observability.md "Logging"). */
#ifndef NODELAY_LOG_H
#define NODELAY_LOG_H

#include <stdio.h>

enum log_level {
    LOG_LEVEL_ERROR = -1, /* always printed */
    LOG_LEVEL_INFO = 1,   /* -v: start-up, errors on connections */
    LOG_LEVEL_VERBOSE = 2,/* -vv: connections, commands and their replies */
    LOG_LEVEL_DEBUG = 3,  /* -vvv: lookups and connection state changes */
};

extern int log_verbosity;

void log_set_verbosity(int level);
int log_get_verbosity(void);
void log_write(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define LOG_ENABLED(level)                                                     \
    __builtin_expect(__atomic_load_n(&log_verbosity, __ATOMIC_RELAXED) >= (level), 0)

#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_info(...)                                                          \
    do { if (LOG_ENABLED(LOG_LEVEL_INFO)) log_write(LOG_LEVEL_INFO, __VA_ARGS__); } while (0)
#define log_verbose(...)                                                       \
    do { if (LOG_ENABLED(LOG_LEVEL_VERBOSE)) log_write(LOG_LEVEL_VERBOSE, __VA_ARGS__); } while (0)
#define log_debug(...)                                                         \
    do { if (LOG_ENABLED(LOG_LEVEL_DEBUG)) log_write(LOG_LEVEL_DEBUG, __VA_ARGS__); } while (0)

#endif
