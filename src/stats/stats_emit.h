/* SPDX-License-Identifier: BSD-3-Clause */
/* One stat at a time, to whoever renders it.
 *
 * Every stats group hands its rows (name, value) to an emitter instead of
 * writing text: the text protocol's emitter writes "STAT name value\r\n",
 * the binary protocol's writes one packet per row, and a metrics exporter
 * can supply its own. So no group is composed as text and parsed back. */
#ifndef NODELAY_STATS_EMIT_H
#define NODELAY_STATS_EMIT_H

#include <stddef.h>
#include <stdint.h>

struct reply_queue;

/* Returns 0, or -1 to stop (out of memory). */
typedef int (*stats_emit_fn)(void *ctx, const char *name, size_t nname, const char *value,
                             size_t nvalue);

struct stats_emit {
    stats_emit_fn fn;
    void *ctx;
};

int stats_emit_str(const struct stats_emit *e, const char *name, const char *value);
int stats_emit_u64(const struct stats_emit *e, const char *name, uint64_t value);
int stats_emitf(const struct stats_emit *e, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* memcached's text form, appended to q. */
struct stats_emit stats_emit_text(struct reply_queue *q);

#endif
