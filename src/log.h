/* Logging by level, as memcached's -v/-vv/-vvv. The level is read with a
 * relaxed atomic load so `verbosity` can change it at run time; LOG_DEBUG
 * (-vvv) compiles out of release builds' hot paths when NODELAY_NO_DEBUG_LOG
 * is defined. */
#ifndef NODELAY_LOG_H
#define NODELAY_LOG_H

#include <stdio.h>

enum log_level {
    LOG_LEVEL_ERROR = -1, /* always printed */
    LOG_LEVEL_INFO = 1,   /* -v: start-up, errors on connections */
    LOG_LEVEL_VERBOSE = 2,/* -vv: connections and commands */
    LOG_LEVEL_DEBUG = 3,  /* -vvv: state changes */
};

extern int log_verbosity;

void log_set_verbosity(int level);
int log_get_verbosity(void);
void log_write(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define LOG_ENABLED(level) (__atomic_load_n(&log_verbosity, __ATOMIC_RELAXED) >= (level))

#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_info(...)                                                          \
    do { if (LOG_ENABLED(LOG_LEVEL_INFO)) log_write(LOG_LEVEL_INFO, __VA_ARGS__); } while (0)
#define log_verbose(...)                                                       \
    do { if (LOG_ENABLED(LOG_LEVEL_VERBOSE)) log_write(LOG_LEVEL_VERBOSE, __VA_ARGS__); } while (0)
#ifdef NODELAY_NO_DEBUG_LOG
#define log_debug(...) do { } while (0)
#else
#define log_debug(...)                                                         \
    do { if (LOG_ENABLED(LOG_LEVEL_DEBUG)) log_write(LOG_LEVEL_DEBUG, __VA_ARGS__); } while (0)
#endif

#endif
