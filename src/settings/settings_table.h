/* SPDX-License-Identifier: BSD-3-Clause */
/* Every flag and every -o sub-option of nodelay: ONE row each. The settings
 * struct and its defaults, getopt's short and long options, the -o dispatch,
 * -h, `stats settings` and the man page are all generated from this table
 * (settings_table.c, settings_parse.c, settings_help.c, settings_stats.c), so
 * adding a flag is adding a row (and its parse hook if no generic parser
 * fits).
 *
 * Rows are in the order memcached 1.6.45 prints `stats settings`; rows with
 * no stats line follow. -h and the man page list flags in table order.
 * The rows live in settings_rows_*.h, one file per run of rows on one topic,
 * included below in table order: that order fixes the output, so the files
 * split it where a topic ends rather than regroup it.
 *
 * A row is one X(...) over three lines or more, columns aligned down the table:
 *   X(store, field, type, default, short, long, oname,
 *     arg, parse, lo, hi, stat, show, note,
 *     help, metric)
 * with long strings (note, help, a metric's help) as adjacent literals,
 * broken after each "\n" and at a space where a line is still too long.
 *   store    FIX   read-only after start-up, a field of struct settings
 *            RUN   changed at run time (verbosity, cache_memlimit, lru ...): a
 *                  field of struct settings_runtime, kept in atomics
 *            NONE  no field: an action, a -o name family, a derived stats line
 *   field    the C field (and the row's id: SETTINGS_ROW_<field>)
 *   type     INT, SIZE (size_t), BOOL, STR (const char *), DBL, CHAR; NONE
 *   default  the value before any flag
 *   short    the option letter, or 0;  long: "--name" without dashes, or NULL
 *   oname    the -o name, or NULL. "[no_]x" takes x and no_x (no_ turns a BOOL
 *            off); "x_*" takes every name that starts with x_
 *   arg      what the value is called in -h, NULL for none; "?x": optional
 *   parse    the value reader: settings_parse_<parse> (settings_parse.c):
 *            generic INT (lo..hi), SIZE (k/m/g), ON/OFF (a flag that sets a
 *            BOOL), BOOL (-o [no_]x), STR, DBL, OCTAL, NOP; or a hook that
 *            keeps memcached's own message and exit code for that flag
 *   stat     the `stats settings` name, or NULL
 *   show     how the value prints there: settings_show_<show> (settings_stats.c)
 *   note     set on options nodelay accepts but does not act on: what
 *            happens instead. Printed once at start-up when the option is
 *            given, marked (compat) in -h, listed in the man page.
 *   help     the -h and man page text ("\n" starts an indented line)
 *   metric   SETTINGS_METRIC(name, help): the row's `stats settings` value on
 *            /metrics under memcached_exporter's name and # HELP (yes/no as
 *            1/0, a gauge; a row with a stat name), or NULL: not exported
 */
#ifndef NODELAY_SETTINGS_TABLE_H
#define NODELAY_SETTINGS_TABLE_H

#include <limits.h>

#define SETTINGS_NO_SLABS                                                                          \
    "nodelay has no slab classes (one segment store); shown in stats settings only"
#define SETTINGS_CLASSES                                                                           \
    "no slabs in nodelay (one segment store); sets the size classes stats items/slabs report"
#define SETTINGS_NO_LRU                                                                            \
    "nodelay has no segmented LRU (segments are evicted whole, with a second chance); "            \
    "shown in stats settings only"

#include "settings/settings_rows_core.h"
#include "settings/settings_rows_tuning.h"
#include "settings/settings_rows_tls.h"
#include "settings/settings_rows_process.h"
#include "settings/settings_rows_limits.h"
#include "settings/settings_rows_compat.h"
#include "settings/settings_rows_ext.h"

#define SETTINGS(X)                                                                                \
    SETTINGS_ROWS_CORE(X)                                                                          \
    SETTINGS_ROWS_TUNING(X)                                                                        \
    SETTINGS_ROWS_EXT_STATS(X)                                                                     \
    SETTINGS_ROWS_TLS(X)                                                                           \
    SETTINGS_ROWS_PROCESS(X)                                                                       \
    SETTINGS_ROWS_LIMITS(X)                                                                        \
    SETTINGS_ROWS_COMPAT(X)                                                                        \
    SETTINGS_ROWS_EXT(X)

#endif
