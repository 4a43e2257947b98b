/* SPDX-License-Identifier: BSD-3-Clause */
/* The table of settings_table.h as data, the defaults, and typed access to a
 * row's field. */
#include <stdlib.h>
#include <string.h>

#include "settings/settings_internal.h"

#define SETTINGS_OFF_FIX(f) offsetof(struct settings, f)
#define SETTINGS_OFF_RUN(f) offsetof(struct settings_runtime, f)
#define SETTINGS_OFF_NONE(f) 0

#define SETTINGS_X_ROW(st, f, t, def, so, lopt_, on, a, parse_, lo_, hi_, stat_, show_, note_, \
                       help_, metric_)                                                          \
    [SETTINGS_ROW_##f] = {.field = #f,                                                          \
                          .store = SETTINGS_STORE_##st,                                         \
                          .type = SETTINGS_TYPE_##t,                                            \
                          .off = SETTINGS_OFF_##st(f),                                          \
                          .sopt = so,                                                           \
                          .lopt = lopt_,                                                        \
                          .oname = on,                                                          \
                          .arg = a,                                                             \
                          .parse = settings_parse_##parse_,                                     \
                          .lo = lo_,                                                            \
                          .hi = hi_,                                                            \
                          .stat = stat_,                                                        \
                          .show = settings_show_##show_,                                        \
                          .note = note_,                                                        \
                          .help = help_,                                                        \
                          .metric = metric_},

const struct settings_row settings_rows[SETTINGS_NROWS] = {SETTINGS(SETTINGS_X_ROW)};

#define SETTINGS_DEF_FIX(f, def) s->f = def;
#define SETTINGS_DEF_RUN(f, def) atomic_init(&s->run.f, def);
#define SETTINGS_DEF_NONE(f, def)
#define SETTINGS_X_DEFAULT(st, f, t, def, ...) SETTINGS_DEF_##st(f, def)

void settings_defaults(struct settings *s)
{
    memset(s, 0, sizeof *s);
    SETTINGS(SETTINGS_X_DEFAULT)
}

void settings_release(struct settings *s)
{
    free(s->inter_alloc);
    s->inter_alloc = NULL;
    settings_keep_release(s);
}

static void *settings_row_ptr(const struct settings *s, const struct settings_row *r)
{
    if (r->store == SETTINGS_STORE_RUN)
        return (char *)settings_runtime_of(s) + r->off;
    return (char *)s + r->off;
}

long settings_row_long(const struct settings *s, const struct settings_row *r)
{
    void *p = settings_row_ptr(s, r);
    bool run = r->store == SETTINGS_STORE_RUN;
    switch (r->type) {
    case SETTINGS_TYPE_INT:
        return run ? atomic_load_explicit((_Atomic int *)p, memory_order_relaxed) : *(int *)p;
    case SETTINGS_TYPE_SIZE:
        return (long)(run ? atomic_load_explicit((_Atomic size_t *)p, memory_order_relaxed)
                          : *(size_t *)p);
    case SETTINGS_TYPE_BOOL:
        return run ? atomic_load_explicit((_Atomic bool *)p, memory_order_relaxed) : *(bool *)p;
    case SETTINGS_TYPE_CHAR:
        return run ? atomic_load_explicit((_Atomic char *)p, memory_order_relaxed) : *(char *)p;
    default:
        return 0;
    }
}

double settings_row_double(const struct settings *s, const struct settings_row *r)
{
    void *p = settings_row_ptr(s, r);
    if (r->type != SETTINGS_TYPE_DBL)
        return (double)settings_row_long(s, r);
    if (r->store == SETTINGS_STORE_RUN)
        return atomic_load_explicit((_Atomic double *)p, memory_order_relaxed);
    return *(double *)p;
}

const char *settings_row_str(const struct settings *s, const struct settings_row *r)
{
    /* no STR row is changed at run time */
    if (r->type != SETTINGS_TYPE_STR || r->store != SETTINGS_STORE_FIX)
        return NULL;
    return *(const char **)settings_row_ptr(s, r);
}

void settings_row_set_long(struct settings *s, const struct settings_row *r, long v)
{
    void *p = settings_row_ptr(s, r);
    bool run = r->store == SETTINGS_STORE_RUN;
    switch (r->type) {
    case SETTINGS_TYPE_INT:
        if (run)
            atomic_store_explicit((_Atomic int *)p, (int)v, memory_order_relaxed);
        else
            *(int *)p = (int)v;
        break;
    case SETTINGS_TYPE_SIZE:
        if (run)
            atomic_store_explicit((_Atomic size_t *)p, (size_t)v, memory_order_relaxed);
        else
            *(size_t *)p = (size_t)v;
        break;
    case SETTINGS_TYPE_BOOL:
        if (run)
            atomic_store_explicit((_Atomic bool *)p, v != 0, memory_order_relaxed);
        else
            *(bool *)p = v != 0;
        break;
    case SETTINGS_TYPE_CHAR:
        if (run)
            atomic_store_explicit((_Atomic char *)p, (char)v, memory_order_relaxed);
        else
            *(char *)p = (char)v;
        break;
    case SETTINGS_TYPE_DBL:
        settings_row_set_double(s, r, (double)v);
        break;
    default:
        break;
    }
}

void settings_row_set_double(struct settings *s, const struct settings_row *r, double v)
{
    void *p = settings_row_ptr(s, r);
    if (r->type != SETTINGS_TYPE_DBL)
        return;
    if (r->store == SETTINGS_STORE_RUN)
        atomic_store_explicit((_Atomic double *)p, v, memory_order_relaxed);
    else
        *(double *)p = v;
}

void settings_row_set_str(struct settings *s, const struct settings_row *r, const char *v)
{
    if (r->type == SETTINGS_TYPE_STR && r->store == SETTINGS_STORE_FIX)
        *(const char **)settings_row_ptr(s, r) = v;
}

void settings_row_label(const struct settings_row *r, char *buf, size_t n)
{
    if (r->sopt)
        snprintf(buf, n, "-%c", r->sopt);
    else if (r->lopt)
        snprintf(buf, n, "--%s", r->lopt);
    else if (r->oname)
        snprintf(buf, n, "-o %s", strncmp(r->oname, "[no_]", 5) == 0 ? r->oname + 5 : r->oname);
    else
        snprintf(buf, n, "%s", r->field);
}

void settings_print_notes(const struct settings *s, FILE *err)
{
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if (!s->given[i] || !r->note)
            continue;
        char label[64];
        settings_row_label(r, label, sizeof label);
        fprintf(err, "nodelay: %s: %s\n", label, r->note);
    }
}
