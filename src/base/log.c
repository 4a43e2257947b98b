/* SPDX-License-Identifier: BSD-3-Clause */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

int log_verbosity;

void log_set_verbosity(int level)
{
    __atomic_store_n(&log_verbosity, level, __ATOMIC_RELAXED);
}

int log_get_verbosity(void)
{
    return __atomic_load_n(&log_verbosity, __ATOMIC_RELAXED);
}

void log_write(enum log_level level, const char *fmt, ...)
{
    (void)level;
    /* One fprintf per line: stdio locks the stream, so lines from several
     * workers never interleave mid-line. memcached logs to stderr too. */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
