/* SPDX-License-Identifier: BSD-3-Clause */
#include "stats/stats_emit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reply/reply.h"

/* Long enough for any value nodelay prints but `stats detail dump`, which
 * is handed over whole with stats_emit_str. */
#define STATS_EMIT_VALUE_MAX 256

int stats_emit_str(const struct stats_emit *e, const char *name, const char *value)
{
    return e->fn(e->ctx, name, strlen(name), value, strlen(value));
}

int stats_emit_u64(const struct stats_emit *e, const char *name, uint64_t value)
{
    return stats_emitf(e, name, "%llu", (unsigned long long)value);
}

int stats_emitf(const struct stats_emit *e, const char *name, const char *fmt, ...)
{
    char buf[STATS_EMIT_VALUE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    return e->fn(e->ctx, name, strlen(name), buf, len);
}

static int stats_emit_text_row(void *ctx, const char *name, size_t nname, const char *value,
                               size_t nvalue)
{
    struct reply_queue *q = ctx;
    size_t len = 5 + nname + 1 + nvalue + 2;
    char *p = reply_reserve(q, len);
    if (!p)
        return -1;
    memcpy(p, "STAT ", 5);
    memcpy(p + 5, name, nname);
    p[5 + nname] = ' ';
    memcpy(p + 6 + nname, value, nvalue);
    memcpy(p + 6 + nname + nvalue, "\r\n", 2);
    reply_commit(q, len);
    return 0;
}

struct stats_emit stats_emit_text(struct reply_queue *q)
{
    return (struct stats_emit){.fn = stats_emit_text_row, .ctx = q};
}
