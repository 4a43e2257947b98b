/* SPDX-License-Identifier: BSD-3-Clause */
/* Between the settings files: the table as data (settings_rows), the parse
 * context, and the parse and show hooks each row names. */
#ifndef NODELAY_SETTINGS_INTERNAL_H
#define NODELAY_SETTINGS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "settings/settings.h"

#define SETTINGS_EX_USAGE 64

enum settings_store { SETTINGS_STORE_FIX, SETTINGS_STORE_RUN, SETTINGS_STORE_NONE };
enum settings_type {
    SETTINGS_TYPE_INT,
    SETTINGS_TYPE_SIZE,
    SETTINGS_TYPE_BOOL,
    SETTINGS_TYPE_STR,
    SETTINGS_TYPE_DBL,
    SETTINGS_TYPE_CHAR,
    SETTINGS_TYPE_NONE,
};

struct settings_row;

/* memcached's slab_page_size: what -o no_modern sets slab_chunk_max to, and
 * the -I above which items are chunked (slab_chunk_max half of it). */
#define SETTINGS_SLAB_PAGE (1 << 20)

/* What one parse of a command line (or config file) knows beyond the
 * settings: which flags were given explicitly, where messages go. */
struct settings_parse_ctx {
    struct settings *s;
    FILE *out, *err;
    int exit_code;
    bool done;              /* -h, -V, -i or --man: exit 0 */
    bool protocol_given;
    bool chunk_max_given;
    bool udp_given;
    bool port_given;
    bool listen_given;
};

/* A value reader: `name` is the option as given (for -o, the sub-option's
 * name, e.g. "no_lru_crawler"), `val` its value or NULL. Returns 0, or -1
 * after printing memcached's message and setting c->exit_code. */
typedef int settings_parse_fn(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val);
/* A `stats settings` value, written into buf. */
typedef void settings_show_fn(const struct settings *s, const struct settings_row *r, char *buf,
                              size_t n);

/* A `stats settings` row memcached_exporter exports (SETTINGS_METRIC). */
struct settings_metric {
    const char *name, *help;
};
#define SETTINGS_METRIC(name, help) (&(const struct settings_metric){name, help})

struct settings_row {
    const char *field;
    enum settings_store store;
    enum settings_type type;
    size_t off;             /* in struct settings (FIX) or struct settings_runtime (RUN) */
    char sopt;
    const char *lopt, *oname, *arg;
    settings_parse_fn *parse;
    long lo, hi;
    const char *stat;
    settings_show_fn *show;
    const char *note, *help;
    const struct settings_metric *metric;
};

extern const struct settings_row settings_rows[SETTINGS_NROWS];

#define SETTINGS_X_DECL(st, f, t, d, so, lo_, on, a, parse, lo, hi, stat, show, ...) \
    settings_parse_fn settings_parse_##parse;                                     \
    settings_show_fn settings_show_##show;
SETTINGS(SETTINGS_X_DECL)
#undef SETTINGS_X_DECL

/* Generic access to a row's field (RUN rows through their atomics). */
long settings_row_long(const struct settings *s, const struct settings_row *r);
double settings_row_double(const struct settings *s, const struct settings_row *r);
const char *settings_row_str(const struct settings *s, const struct settings_row *r);
void settings_row_set_long(struct settings *s, const struct settings_row *r, long v);
void settings_row_set_double(struct settings *s, const struct settings_row *r, double v);
void settings_row_set_str(struct settings *s, const struct settings_row *r, const char *v);

/* "-m" for a flag with a letter, "--config" for a long-only one, the -o name
 * otherwise (names the option in messages and start-up notes). */
void settings_row_label(const struct settings_row *r, char *buf, size_t n);

/* Print memcached's message for a bad value and fail (parse hooks). */
#define SETTINGS_FAIL(c, code, ...)                                    \
    do {                                                               \
        fprintf((c)->err, __VA_ARGS__);                                \
        (c)->exit_code = (code);                                       \
        return -1;                                                     \
    } while (0)

/* Number rules shared by every reader: whole-string decimal in [min, max];
 * a double; a byte size with k/m/g. 0, or -1 when the string is not one. */
int settings_value_long(const char *str, long min, long max, long *out);
int settings_value_double(const char *str, double *out);
int settings_value_size(const char *str, size_t *out);
/* `Invalid value for -p: "foo"` (exit 64); for -o, the name as given. */
int settings_value_bad(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val);
/* memcached's message for a -o sub-option given without its number. */
int settings_value_need(struct settings_parse_ctx *c, const char *name, const char *val);
/* Any int for row r (after settings_value_need for -o); hooks check range. */
int settings_value_int(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val, long *n);

/* memcached's extstore checks across flags, once every flag is parsed
 * (settings_ext.c): 0, or -1 with the message printed. */
int settings_ext_check(struct settings_parse_ctx *c);

/* Parse one argument list (argv[0] is skipped), as getopt sees it. */
int settings_parse_args(struct settings_parse_ctx *c, int argc, char **argv);
/* Read a config file: each line's flags as if given at that point. */
int settings_config_read(struct settings_parse_ctx *c, const char *path);
/* The same from an open stream named `path` in messages (fuzzing, tests). */
int settings_config_stream(struct settings_parse_ctx *c, FILE *f, const char *path);
/* The checks across flags, once every flag is parsed: 0, or -1 with the
 * message printed and c->exit_code set. */
int settings_check(struct settings_parse_ctx *c);
/* A copy of str that lives as long as the settings (in s->strings): for
 * values parsed out of a temporary, such as one -o list or a config line.
 * NULL if out of memory. (settings_keep.c) */
char *settings_keep(struct settings *s, const char *str);
/* Free every line settings_keep kept. */
void settings_keep_release(struct settings *s);

#endif
