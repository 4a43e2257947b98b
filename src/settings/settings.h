/* SPDX-License-Identifier: BSD-3-Clause */
/* nodelay's settings: the struct generated from the one table of flags
 * (settings_table.h), its run-time part, and what start-up does with it.
 *
 * Everything in struct settings is read-only once start-up has parsed the
 * command line; modules take a const struct settings *. The few values that
 * memcached lets a client change at run time (verbosity, cache_memlimit,
 * stats detail on|off, lru_crawler enable|disable, slabs automove, lru tune)
 * are in struct settings_runtime (settings_run.h), atomics read with
 * SETTINGS_GET and written with SETTINGS_SET, so `stats settings` shows
 * their current values.
 *
 * Only settings_*.c, main.c (parse, then options.c maps the settings to
 * each module's options) and server.c (`stats settings`) include this:
 * every other module gets its own options at setup and, for the values
 * that change at run time, a struct settings_runtime *. */
#ifndef NODELAY_SETTINGS_H
#define NODELAY_SETTINGS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "settings/settings_run.h"
#include "settings/settings_table.h"

#define SETTINGS_FIELD_FIX(type, field) SETTINGS_CTYPE_##type field;
#define SETTINGS_FIELD_RUN(type, field)
#define SETTINGS_FIELD_NONE(type, field)

#define SETTINGS_X_FIELD(st, f, t, ...) SETTINGS_FIELD_##st(t, f)
#define SETTINGS_X_ROWID(st, f, ...) SETTINGS_ROW_##f,

/* Row ids, in table order. */
enum settings_row_id { SETTINGS(SETTINGS_X_ROWID) SETTINGS_NROWS };

struct settings {
    SETTINGS(SETTINGS_X_FIELD)
    struct settings_runtime run;
    /* parsing state, not settings */
    char *inter_alloc;                 /* owns `inter` when several -l were joined */
    char *strings;                     /* owns the config file's values */
    unsigned char given[SETTINGS_NROWS]; /* rows the user gave (start-up notes) */
};

/* The run-time part is the one mutable part of a settings struct that
 * everyone else holds const; every struct settings is created writable
 * (main's, a test's), so writing through this is defined. */
static inline struct settings_runtime *settings_runtime_of(const struct settings *s)
{
    return (struct settings_runtime *)&s->run;
}
#define SETTINGS_GET(s, f) SETTINGS_RUN_GET(&(s)->run, f)
#define SETTINGS_SET(s, f, v) SETTINGS_RUN_SET(settings_runtime_of(s), f, v)

/* Fill *s with the defaults. */
void settings_defaults(struct settings *s);

/* Parse memcached's command line into *s (which holds the defaults);
 * `--config FILE` reads flags from FILE at that point of the command line.
 * Returns SETTINGS_RUN to start the server; otherwise the process should exit
 * with *exit_code: after -h/-V/-i/--man (0) or after a bad flag, whose message
 * was printed to `err`. Help, version and the man page go to `out`. */
enum settings_result { SETTINGS_RUN, SETTINGS_EXIT };
enum settings_result settings_parse(struct settings *s, int argc, char **argv, FILE *out,
                                    FILE *err, int *exit_code);
/* Free what parsing allocated. */
void settings_release(struct settings *s);

/* -h text; the man page nodelay(1) in groff -man. */
void settings_print_help(FILE *out);
void settings_print_man(FILE *out);

/* The files -o ext_path named, in order (at most max; memcached's checks
 * have passed): each path and its size in bytes. */
#define SETTINGS_EXT_FILES_MAX 16
struct settings_ext_file {
    char path[4096];
    uint64_t size;
};
int settings_ext_files(const struct settings *s, struct settings_ext_file *out, int max);

/* The run-time ext_* values (what `extstore` changes) now, from a struct
 * settings_runtime: a flash_tuning_src's reader (base/flash_tuning.h). */
struct flash_tuning;
void settings_flash_tuning(const void *run, struct flash_tuning *out);

/* One line per accepted-but-inert option the user gave, naming it and what
 * happens instead ("nodelay: -o ext_*: no extstore in nodelay; ..."). */
void settings_print_notes(const struct settings *s, FILE *err);

/* `stats settings`: calls emit(arg, name, value) per line, in memcached
 * 1.6.45's order, with current values of the run-time part. Returns the
 * first nonzero emit result, else 0. */
typedef int settings_emit_fn(void *arg, const char *name, const char *value);
int settings_stats_emit(const struct settings *s, settings_emit_fn *emit, void *arg);

/* The rows memcached_exporter exports (their SETTINGS_METRIC): calls
 * emit(arg, metric, help, value) per row, value as `stats settings` prints
 * it, in the same order. Returns the first nonzero emit result, else 0. */
typedef int settings_metric_fn(void *arg, const char *metric, const char *help,
                               const char *value);
int settings_metrics_emit(const struct settings *s, settings_metric_fn *emit, void *arg);

struct reply_queue;
/* The same as "STAT name value\r\n" lines appended to a reply queue (no END). */
int stats_settings_compose(const struct settings *s, struct reply_queue *out);

#endif
