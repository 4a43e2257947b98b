/* SPDX-License-Identifier: BSD-3-Clause */
/* `stats settings`, walked from the table: every row with a stats name, in
 * table order (memcached 1.6.45's), printed by its show hook. Run-time rows
 * are read from their atomics, so the reply shows what `verbosity`,
 * `cache_memlimit`, `lru_crawler enable` ... last set. */
#include <string.h>

#include "reply/reply.h"
#include "settings/settings_internal.h"

#define SETTINGS_SHOW(name)                                                            \
    void settings_show_##name(const struct settings *s, const struct settings_row *r, \
                              char *buf, size_t n)

SETTINGS_SHOW(NONE)
{
    (void)s, (void)r;
    if (n)
        buf[0] = '\0';
}

SETTINGS_SHOW(U)
{
    snprintf(buf, n, "%lu", (unsigned long)settings_row_long(s, r));
}

SETTINGS_SHOW(I)
{
    snprintf(buf, n, "%ld", settings_row_long(s, r));
}

SETTINGS_SHOW(OCT)
{
    snprintf(buf, n, "%lo", (unsigned long)settings_row_long(s, r));
}

SETTINGS_SHOW(F2)
{
    snprintf(buf, n, "%.2f", settings_row_double(s, r));
}

SETTINGS_SHOW(F3)
{
    snprintf(buf, n, "%.3f", settings_row_double(s, r));
}

/* memcached keeps the ext_* numbers in 32 bits: 2^32 given is 0 shown. */
SETTINGS_SHOW(U32)
{
    snprintf(buf, n, "%u", (unsigned)(uint32_t)settings_row_long(s, r));
}

/* A size given in MB, shown in bytes as memcached's 32 bits hold it. */
SETTINGS_SHOW(MB32)
{
    snprintf(buf, n, "%u", (unsigned)(uint32_t)((uint64_t)settings_row_long(s, r) << 20));
}

SETTINGS_SHOW(CHAR)
{
    snprintf(buf, n, "%c", (char)settings_row_long(s, r));
}

SETTINGS_SHOW(YESNO)
{
    snprintf(buf, n, "%s", settings_row_long(s, r) ? "yes" : "no");
}

SETTINGS_SHOW(ONOFF)
{
    snprintf(buf, n, "%s", settings_row_long(s, r) ? "on" : "off");
}

/* memcached prints an unset string as NULL ... */
SETTINGS_SHOW(STR)
{
    const char *v = settings_row_str(s, r);
    snprintf(buf, n, "%s", v ? v : "NULL");
}

/* ... except memory_file, printed with glibc's "(null)". */
SETTINGS_SHOW(STRNULL)
{
    const char *v = settings_row_str(s, r);
    snprintf(buf, n, "%s", v ? v : "(null)");
}

/* yes when the string is set (auth_enabled_ascii: -Y given). */
SETTINGS_SHOW(SET)
{
    snprintf(buf, n, "%s", settings_row_str(s, r) ? "yes" : "no");
}

/* ssl_min_version 0..3 as memcached names it. */
SETTINGS_SHOW(TLSVER)
{
    static const char *const names[] = {"tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3"};
    long v = settings_row_long(s, r);
    snprintf(buf, n, "%s", v >= 0 && v <= 3 ? names[v] : "unknown");
}

SETTINGS_SHOW(PROTOCOL)
{
    const char *v = settings_row_str(s, r);
    snprintf(buf, n, "%s", !v || strcmp(v, "auto") == 0 ? "auto-negotiate" : v);
}

/* memcached's lines for machinery nodelay does not have. */
SETTINGS_SHOW(ZERO)
{
    (void)s, (void)r;
    snprintf(buf, n, "0");
}

SETTINGS_SHOW(FOUR)
{
    (void)s, (void)r;
    snprintf(buf, n, "4"); /* client_flags_size: flags are 32 bits */
}

/* num_threads_per_udp: every worker serves UDP. */
SETTINGS_SHOW(THREADS)
{
    (void)r;
    snprintf(buf, n, "%d", s->num_threads);
}

/* Every row with a `stats settings` line, its value shown, to emit (name
 * and value) or, when metric is given, every such row with a metric to it. */
static int settings_walk(const struct settings *s, settings_emit_fn *emit,
                         settings_metric_fn *metric, void *arg)
{
    char buf[512];
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if (!r->stat || (metric && !r->metric))
            continue;
        r->show(s, r, buf, sizeof buf);
        int rc = metric ? metric(arg, r->metric->name, r->metric->help, buf)
                        : emit(arg, r->stat, buf);
        if (rc)
            return rc;
    }
    return 0;
}

int settings_stats_emit(const struct settings *s, settings_emit_fn *emit, void *arg)
{
    return settings_walk(s, emit, NULL, arg);
}

int settings_metrics_emit(const struct settings *s, settings_metric_fn *emit, void *arg)
{
    return settings_walk(s, NULL, emit, arg);
}

static int settings_stats_line(void *arg, const char *name, const char *value)
{
    return reply_printf(arg, "STAT %s %s\r\n", name, value) < 0 ? -1 : 0;
}

int stats_settings_compose(const struct settings *s, struct reply_queue *out)
{
    return settings_stats_emit(s, settings_stats_line, out);
}
