/* SPDX-License-Identifier: BSD-3-Clause */
/* The settings a running server may change (verbosity, cache_memlimit,
 * stats detail on|off, lru_crawler enable|disable, slabs automove, lru
 * tune): struct settings_runtime, one atomic per RUN row of the settings
 * table, shown live in `stats settings`. Modules that read or change one at
 * run time hold a struct settings_runtime * (with SETTINGS_RUN_GET /
 * SETTINGS_RUN_SET) and include this, not settings.h: everything else
 * reaches them as their own options, fixed at setup. */
#ifndef NODELAY_SETTINGS_RUN_H
#define NODELAY_SETTINGS_RUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "settings/settings_table.h"

/* The C type of each type column. */
#define SETTINGS_CTYPE_INT int
#define SETTINGS_CTYPE_SIZE size_t
#define SETTINGS_CTYPE_BOOL bool
#define SETTINGS_CTYPE_STR const char *
#define SETTINGS_CTYPE_DBL double
#define SETTINGS_CTYPE_CHAR char

#define SETTINGS_RUNFIELD_FIX(type, field)
#define SETTINGS_RUNFIELD_RUN(type, field) _Atomic(SETTINGS_CTYPE_##type) field;
#define SETTINGS_RUNFIELD_NONE(type, field)
#define SETTINGS_X_RUNFIELD(st, f, t, ...) SETTINGS_RUNFIELD_##st(t, f)

struct settings_runtime {
    SETTINGS(SETTINGS_X_RUNFIELD)
};

#define SETTINGS_RUN_GET(r, f) atomic_load_explicit(&(r)->f, memory_order_relaxed)
#define SETTINGS_RUN_SET(r, f, v) atomic_store_explicit(&(r)->f, (v), memory_order_relaxed)

#endif
