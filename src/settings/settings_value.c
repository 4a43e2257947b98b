/* SPDX-License-Identifier: BSD-3-Clause */
/* The generic value readers a table row can name (INT in lo..hi, SIZE with
 * k/m/g, ON/OFF, BOOL, STR, DBL, OCTAL, MB, KB) and the number rules they
 * share with the per-flag hooks. Where memcached silently reads garbage as
 * 0 (atoi), nodelay refuses: `Invalid value for -p: "foo"` (exit 64). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/num.h"
#include "settings/settings_internal.h"

/* Whole-string decimal integer in [min, max]: memcached's strtol rules
 * (num.c), but no white space around it, which a config line or a quoted
 * init-script argument would otherwise slip past. */
int settings_value_long(const char *str, long min, long max, long *out)
{
    if (!str || !*str)
        return -1;
    size_t n = strlen(str);
    if (isspace((unsigned char)str[0]) || isspace((unsigned char)str[n - 1]))
        return -1;
    int64_t v;
    if (!num_safe_i64(str, n, &v) || v < min || v > max)
        return -1;
    *out = (long)v;
    return 0;
}

int settings_value_double(const char *str, double *out)
{
    if (!str || !*str)
        return -1;
    size_t n = strlen(str);
    if (isspace((unsigned char)str[0]) || isspace((unsigned char)str[n - 1]))
        return -1;
    return num_safe_double(str, n, out) ? 0 : -1;
}

/* A byte size with an optional k/m/g suffix (memcached's -I). */
int settings_value_size(const char *str, size_t *out)
{
    if (!str || !*str)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(str, &end, 10);
    if (errno || end == str || str[0] == '-')
        return -1;
    unsigned long long unit = 1;
    if (*end == 'k' || *end == 'K')
        unit = 1024;
    else if (*end == 'm' || *end == 'M')
        unit = 1024 * 1024;
    else if (*end == 'g' || *end == 'G')
        unit = 1024ull * 1024 * 1024;
    if (unit != 1)
        end++;
    if (*end || v > SIZE_MAX / unit)
        return -1;
    *out = (size_t)(v * unit);
    return 0;
}

/* `Invalid value for -p: "foo"` (exit 64): for a flag its letter, for a
 * sub-option its name. */
int settings_value_bad(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val)
{
    char label[64];
    if (r->oname)
        snprintf(label, sizeof label, "%s", name);
    else
        settings_row_label(r, label, sizeof label);
    SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "Invalid value for %s: \"%s\"\n", label, val ? val : "");
}

/* memcached's message for a -o sub-option given without its number. */
int settings_value_need(struct settings_parse_ctx *c, const char *name, const char *val)
{
    if (val)
        return 0;
    SETTINGS_FAIL(c, 1, "Missing numeric argument for %s\n", name);
}

/* An integer for row r, any int; the hook checks memcached's range. */
int settings_value_int(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val, long *n)
{
    if (r->oname && settings_value_need(c, name, val) < 0)
        return -1;
    if (settings_value_long(val, INT_MIN, INT_MAX, n) < 0)
        return settings_value_bad(c, r, name, val);
    return 0;
}

int settings_parse_NOP(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    (void)c, (void)r, (void)name, (void)val;
    return 0;
}

int settings_parse_ON(struct settings_parse_ctx *c, const struct settings_row *r,
                      const char *name, const char *val)
{
    (void)name, (void)val;
    settings_row_set_long(c->s, r, 1);
    return 0;
}

int settings_parse_OFF(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    (void)name, (void)val;
    settings_row_set_long(c->s, r, 0);
    return 0;
}

/* -o x turns it on, -o no_x off. */
int settings_parse_BOOL(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    (void)val;
    settings_row_set_long(c->s, r, strncmp(name, "no_", 3) != 0);
    return 0;
}

/* -o x=on|off (also yes|no, 1|0). */
int settings_parse_SWITCH(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    if (settings_value_need(c, name, val) < 0)
        return -1;
    if (strcmp(val, "on") == 0 || strcmp(val, "yes") == 0 || strcmp(val, "1") == 0)
        settings_row_set_long(c->s, r, 1);
    else if (strcmp(val, "off") == 0 || strcmp(val, "no") == 0 || strcmp(val, "0") == 0)
        settings_row_set_long(c->s, r, 0);
    else
        return settings_value_bad(c, r, name, val);
    return 0;
}

int settings_parse_STR(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    (void)name;
    settings_row_set_str(c->s, r, val);
    return 0;
}

/* An integer in lo..hi, stored times `unit` (INT 1, KB 1024, MB 1 << 20).
 * A -o value must be there; a flag's getopt already saw to it. */
static int settings_parse_scaled(struct settings_parse_ctx *c, const struct settings_row *r,
                                 const char *name, const char *val, bool need, long unit)
{
    long n;
    if (need && settings_value_need(c, name, val) < 0)
        return -1;
    if (settings_value_long(val, r->lo, r->hi, &n) < 0)
        return settings_value_bad(c, r, name, val);
    settings_row_set_long(c->s, r, n * unit);
    return 0;
}

int settings_parse_INT(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    return settings_parse_scaled(c, r, name, val, r->oname != NULL, 1);
}

/* An integer in kilobytes, stored in bytes (memcached's logbuf sizes). */
int settings_parse_KB(struct settings_parse_ctx *c, const struct settings_row *r,
                      const char *name, const char *val)
{
    return settings_parse_scaled(c, r, name, val, true, 1024);
}

int settings_parse_DBL(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    double d;
    if (r->oname && settings_value_need(c, name, val) < 0)
        return -1;
    if (settings_value_double(val, &d) < 0)
        return settings_value_bad(c, r, name, val);
    settings_row_set_double(c->s, r, d);
    return 0;
}

int settings_parse_SIZE(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    size_t n;
    if (settings_value_size(val, &n) < 0)
        return settings_value_bad(c, r, name, val);
    settings_row_set_long(c->s, r, (long)n);
    return 0;
}

int settings_parse_OCTAL(struct settings_parse_ctx *c, const struct settings_row *r,
                         const char *name, const char *val)
{
    char *end;
    errno = 0;
    long n = strtol(val, &end, 8);
    if (errno || *end || !*val || n < r->lo || n > r->hi)
        return settings_value_bad(c, r, name, val);
    settings_row_set_long(c->s, r, n);
    return 0;
}

/* Megabytes in lo..hi, stored in bytes (nodelay's own limits). */
int settings_parse_MB(struct settings_parse_ctx *c, const struct settings_row *r,
                               const char *name, const char *val)
{
    return settings_parse_scaled(c, r, name, val, true, 1L << 20);
}

