/* SPDX-License-Identifier: BSD-3-Clause */
/* The row arrays built from stats_table.h, and walking them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "stats/stats_output.h"

#define STATS_OFF_WORKER(f) offsetof(struct stats_snapshot, t.f)
#define STATS_OFF_STORE(f) offsetof(struct stats_snapshot, store.f)
#define STATS_OFF_SNAP(f) offsetof(struct stats_snapshot, f)
#define STATS_OFF_CONST(f) 0
#define STATS_VAL_WORKER(f) 0
#define STATS_VAL_STORE(f) 0
#define STATS_VAL_SNAP(f) 0
#define STATS_VAL_CONST(f) (f)

#define STATS_ROW(name, src, field, fmt, kind, when, metric, help)                                 \
    {#name, metric, help, STATS_SRC_##src, STATS_FMT_##fmt, STATS_KIND_##kind,                     \
     STATS_WHEN_##when, STATS_OFF_##src(field), STATS_VAL_##src(field)},

static const struct stats_row stats_general_list[] = {STATS_GENERAL(STATS_ROW)};
static const struct stats_row stats_nodelay_list[] = {STATS_NODELAY(STATS_ROW)};
#undef STATS_ROW

const struct stats_rows stats_general_rows = {
    stats_general_list, sizeof stats_general_list / sizeof stats_general_list[0]};
const struct stats_rows stats_nodelay_rows = {
    stats_nodelay_list, sizeof stats_nodelay_list / sizeof stats_nodelay_list[0]};

/* Each row's field has the type its format reads, checked at build time. */
#define STATS_TYPE_U64 uint64_t
#define STATS_TYPE_I64 int64_t
#define STATS_TYPE_STR const char *
#define STATS_TYPE_TIMEVAL struct timeval
#define STATS_TYPE_F2 double
#define STATS_FIELD_OF(member) (((struct stats_snapshot *)0)->member)
#define STATS_CHECK_TYPE(member, fmt)                                                              \
    _Static_assert(__builtin_types_compatible_p(__typeof__(STATS_FIELD_OF(member)),                \
                                                STATS_TYPE_##fmt),                                 \
                   #member " does not have the type its format reads");
#define STATS_CHECK_WORKER(f, fmt) STATS_CHECK_TYPE(t.f, fmt)
#define STATS_CHECK_STORE(f, fmt) STATS_CHECK_TYPE(store.f, fmt)
#define STATS_CHECK_SNAP(f, fmt) STATS_CHECK_TYPE(f, fmt)
#define STATS_CHECK_CONST(f, fmt)
#define STATS_CHECK(name, src, field, fmt, ...) STATS_CHECK_##src(field, fmt)
STATS_GENERAL(STATS_CHECK)
STATS_NODELAY(STATS_CHECK)
#undef STATS_CHECK

bool stats_row_shown(const struct stats_row *r, const struct stats_snapshot *s)
{
    return r->when == STATS_WHEN_ALWAYS || (s->shown >> r->when & 1u);
}

static const void *stats_row_field(const struct stats_row *r, const struct stats_snapshot *s)
{
    return (const char *)s + r->offset;
}

static uint64_t stats_row_u64(const struct stats_row *r, const struct stats_snapshot *s)
{
    if (r->src == STATS_SRC_CONST)
        return r->value;
    uint64_t v;
    memcpy(&v, stats_row_field(r, s), sizeof v);
    return v;
}

const char *stats_row_text(const struct stats_row *r, const struct stats_snapshot *s, char *buf,
                           size_t *len)
{
    int n = 0;
    switch (r->fmt) {
    case STATS_FMT_U64:
        n = snprintf(buf, STATS_VALUE_MAX, "%" PRIu64, stats_row_u64(r, s));
        break;
    case STATS_FMT_I64: {
        int64_t v;
        memcpy(&v, stats_row_field(r, s), sizeof v);
        n = snprintf(buf, STATS_VALUE_MAX, "%" PRId64, v);
        break;
    }
    case STATS_FMT_TIMEVAL: {
        struct timeval tv;
        memcpy(&tv, stats_row_field(r, s), sizeof tv);
        n = snprintf(buf, STATS_VALUE_MAX, "%ld.%06ld", (long)tv.tv_sec, (long)tv.tv_usec);
        break;
    }
    case STATS_FMT_F2: {
        double d;
        memcpy(&d, stats_row_field(r, s), sizeof d);
        n = snprintf(buf, STATS_VALUE_MAX, "%.2f", d);
        break;
    }
    case STATS_FMT_STR: {
        const char *str;
        memcpy(&str, stats_row_field(r, s), sizeof str);
        str = str ? str : "";
        *len = strlen(str);
        return str;
    }
    }
    *len = n < 0 ? 0 : (size_t)n;
    return buf;
}

double stats_row_number(const struct stats_row *r, const struct stats_snapshot *s)
{
    switch (r->fmt) {
    case STATS_FMT_U64:
        return (double)stats_row_u64(r, s);
    case STATS_FMT_I64: {
        int64_t v;
        memcpy(&v, stats_row_field(r, s), sizeof v);
        return (double)v;
    }
    case STATS_FMT_TIMEVAL: {
        struct timeval tv;
        memcpy(&tv, stats_row_field(r, s), sizeof tv);
        return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
    }
    case STATS_FMT_F2: {
        double d;
        memcpy(&d, stats_row_field(r, s), sizeof d);
        return d;
    }
    case STATS_FMT_STR:
        break;
    }
    return 0;
}

int stats_rows_emit(const struct stats_rows *rows, const struct stats_snapshot *s,
                    const struct stats_emit *e)
{
    char buf[STATS_VALUE_MAX];
    for (size_t i = 0; i < rows->n; i++) {
        const struct stats_row *r = &rows->row[i];
        if (!stats_row_shown(r, s))
            continue;
        size_t len;
        const char *v = stats_row_text(r, s, buf, &len);
        if (e->fn(e->ctx, r->name, strlen(r->name), v, len) != 0)
            return -1;
    }
    return 0;
}

static void stats_rows_since(const struct stats_rows *rows, struct stats_snapshot *s,
                             const struct stats_snapshot *now, const struct stats_snapshot *base)
{
    for (size_t i = 0; i < rows->n; i++) {
        const struct stats_row *r = &rows->row[i];
        if (r->kind != STATS_KIND_COUNTER || r->src == STATS_SRC_CONST || r->fmt != STATS_FMT_U64)
            continue;
        uint64_t v = stats_row_u64(r, now) - stats_row_u64(r, base);
        memcpy((char *)s + r->offset, &v, sizeof v);
    }
}

void stats_snapshot_since(struct stats_snapshot *s, const struct stats_snapshot *base)
{
    /* From a copy: a field two rows read (hash_bytes) is subtracted once. */
    struct stats_snapshot now = *s;
    stats_rows_since(&stats_general_rows, s, &now, base);
    stats_rows_since(&stats_nodelay_rows, s, &now, base);
    /* the per-class counters too, as memcached's reset clears its
     * slab_stats and itemstats */
    for (unsigned k = 0; k < STATS_CLASSES; k++) {
#define STATS_SINCE_CLS(f) s->t.cls[k].f -= base->t.cls[k].f;
        STATS_CLASS_COUNTERS(STATS_SINCE_CLS)
#undef STATS_SINCE_CLS
        struct store_class_stats *c = &s->cls[k];
        const struct store_class_stats *b = &base->cls[k];
        bool evicted_since = c->evicted > b->evicted;
#define STATS_SINCE_EVENT(f) c->f -= b->f;
        STORE_CLASS_EVENTS(STATS_SINCE_EVENT)
#undef STATS_SINCE_EVENT
        if (!evicted_since)
            c->evicted_time = 0; /* the age of the last eviction, if one came since */
    }
}
