/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's extstore options (-o ext_*), read and checked as memcached
 * 1.6.45 checks them (settings_ext.c). Rows of the settings table:
 * settings_table.h includes this file in its place and says what each
 * column means. */
#ifndef NODELAY_SETTINGS_ROWS_EXT_H
#define NODELAY_SETTINGS_ROWS_EXT_H

/* The flash tier (memcached's extstore, docs/store.md "Flash tier"). Three
 * of memcached's knobs have no counterpart: reads go to a thread pool one
 * at a time, every flash read is copied back into RAM, and the flash
 * writer thread does not sleep between passes. */
#define SETTINGS_NO_FLASH                                                                          \
    "checked as memcached checks it; no effect in nodelay's flash tier"

/* clang-format off */
#define SETTINGS_ROWS_EXT(X) \
X(FIX,  ext_path,                STR,  NULL,        0,   NULL,                 "ext_path",                   \
  "file:size",   EXT_PATH,    0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "flash file and its size (m|g|t|p), once per file;\n"                                                      \
  "items that leave RAM go there (memcached's extstore)", NULL)                                              \
X(FIX,  ext_page_size,           SIZE, 64,          0,   NULL,                 "ext_page_size",              \
  "MB",          EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "flash page, MB (default: 64)", NULL)                                                                      \
X(FIX,  ext_wbuf_size,           SIZE, 4,           0,   NULL,                 "ext_wbuf_size",              \
  "MB",          EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "flash write buffer, MB (default: 4)", NULL)                                                               \
X(FIX,  ext_threads,             SIZE, 1,           0,   NULL,                 "ext_threads",                \
  "num",         EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "flash I/O threads (default: 1)", NULL)                                                                    \
X(FIX,  ext_io_depth,            SIZE, 1,           0,   NULL,                 "ext_io_depth",               \
  "num",         EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "flash reads in flight per thread (default: 1)", NULL)                                                     \
X(FIX,  ext_item_size,           SIZE, 512,         0,   NULL,                 "ext_item_size",              \
  "bytes",       EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "smallest item moved to flash (default: 512)", NULL)                                                       \
X(FIX,  ext_item_age,            SIZE, UINT_MAX,    0,   NULL,                 "ext_item_age",               \
  "seconds",     EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "moved to flash only when idle this long (default: any)", NULL)                                            \
X(FIX,  ext_low_ttl,             SIZE, 0,           0,   NULL,                 "ext_low_ttl",                \
  "seconds",     EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "TTLs under this go to their own pages (default: 0)", NULL)                                                \
X(FIX,  ext_recache_rate,        SIZE, 2000,        0,   NULL,                 "ext_recache_rate",           \
  "num",         EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "one read in N copies a flash item back (default: 2000)", NULL)                                            \
X(FIX,  ext_compact_under,       SIZE, 0,           0,   NULL,                 "ext_compact_under",          \
  "pages",       EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "compact when free pages fall under this", NULL)                                                           \
X(FIX,  ext_drop_under,          SIZE, 0,           0,   NULL,                 "ext_drop_under",             \
  "pages",       EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "drop rather than rewrite under this many free pages", NULL)                                               \
X(FIX,  ext_max_sleep,           SIZE, 1000000,     0,   NULL,                 "ext_max_sleep",              \
  "us",          EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "longest pause of the flash maintainer, us (default: 1000000)", NULL)                                      \
X(FIX,  ext_max_frag,            DBL,  0.8,         0,   NULL,                 "ext_max_frag",               \
  "ratio",       EXT_DBL,     0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "compact pages fuller than this ratio (default: 0.8)", NULL)                                               \
X(FIX,  ext_drop_unread,         BOOL, false,       0,   NULL,                 "ext_drop_unread",            \
  NULL,          ON,          0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "drop unread items rather than compact them", NULL)
/* clang-format on */

#endif
