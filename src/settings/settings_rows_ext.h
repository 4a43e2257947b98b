/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's extstore options (-o ext_*), read and checked as memcached
 * 1.6.45 checks them (settings_ext.c), in two runs of rows: the ones
 * `stats settings` prints, in memcached's order and place (after
 * inline_ascii_response; slab_automove_freeratio is among them there, as it
 * is an extstore option in memcached), and the ones it does not print, at
 * the end of the table. The values the `extstore` command changes are RUN
 * rows; the flash tier reads them through settings_flash_tuning
 * (base/flash_tuning.h). Rows of the settings table: settings_table.h
 * includes this file in its place and says what each column means. */
#ifndef NODELAY_SETTINGS_ROWS_EXT_H
#define NODELAY_SETTINGS_ROWS_EXT_H

/* The flash tier (docs/store-flash.md) acts on all of these. */

/* clang-format off */
#define SETTINGS_ROWS_EXT_STATS(X) \
X(RUN,  ext_item_size,           SIZE, 512,         0,   NULL,                 "ext_item_size",              \
  "bytes",       EXT_U,       0,       0,              "ext_item_size",         U32,                         \
  NULL,                                                                                                      \
  "smallest item moved to flash (default: 512)", NULL)                                                       \
X(RUN,  ext_item_age,            SIZE, UINT_MAX,    0,   NULL,                 "ext_item_age",               \
  "seconds",     EXT_U,       0,       0,              "ext_item_age",          U32,                         \
  NULL,                                                                                                      \
  "idle this long, moved to flash while RAM is free\n"                                                      \
  "(default: never; any age once RAM is full)", NULL)                                                        \
X(RUN,  ext_low_ttl,             SIZE, 0,           0,   NULL,                 "ext_low_ttl",                \
  "seconds",     EXT_U,       0,       0,              "ext_low_ttl",           U32,                         \
  NULL,                                                                                                      \
  "TTLs under this go to their own pages (default: 0)", NULL)                                                \
X(RUN,  ext_recache_rate,        SIZE, 2000,        0,   NULL,                 "ext_recache_rate",           \
  "num",         EXT_U,       0,       0,              "ext_recache_rate",      U32,                         \
  NULL,                                                                                                      \
  "one read in N copies a flash item back (default: 2000)", NULL)                                            \
X(FIX,  ext_wbuf_size,           SIZE, 4,           0,   NULL,                 "ext_wbuf_size",              \
  "MB",          EXT_U,       0,       0,              "ext_wbuf_size",         MB32,                        \
  NULL,                                                                                                      \
  "flash write buffer, MB (default: 4); a file of over\n"                                                  \
  "524,288 of them writes larger segments", NULL)                                                           \
X(RUN,  ext_compact_under,       SIZE, 0,           0,   NULL,                 "ext_compact_under",          \
  "pages",       EXT_U,       0,       0,              "ext_compact_under",     U32,                         \
  NULL,                                                                                                      \
  "compact when free pages fall under this\n"                                                               \
  "(default: 1% of the last file's pages, at least 1),\n"                                                   \
  "and at least 2 segments above the writers' reserve", NULL)                                               \
X(RUN,  ext_drop_under,          SIZE, 0,           0,   NULL,                 "ext_drop_under",             \
  "pages",       EXT_U,       0,       0,              "ext_drop_under",        U32,                         \
  NULL,                                                                                                      \
  "drop unread items under this many free pages\n"                                                         \
  "(default: as ext_compact_under's)", NULL)                                                                 \
X(RUN,  ext_max_sleep,           SIZE, 1000000,     0,   NULL,                 "ext_max_sleep",              \
  "us",          EXT_U,       0,       0,              "ext_max_sleep",         U32,                         \
  NULL,                                                                                                      \
  "longest idle pause of the flash threads, us\n"                                                           \
  "(compaction, idle flush; default: 1000000)", NULL)                                                       \
X(RUN,  ext_max_frag,            DBL,  0.8,         0,   NULL,                 "ext_max_frag",               \
  "ratio",       EXT_DBL,     0,       0,              "ext_max_frag",          F2,                          \
  NULL,                                                                                                      \
  "compact pages less live than this ratio (default: 0.8)", NULL)                                           \
X(RUN,  slab_automove_freeratio, DBL,  0.01,        0,   NULL,                 "slab_automove_freeratio",    \
  "f",           EXT_DBL,     0,       0,              "slab_automove_freeratio", F3,   SETTINGS_NO_SLABS,   \
  "free memory kept by the slab mover", NULL)                                                                \
X(RUN,  ext_drop_unread,         BOOL, false,       0,   NULL,                 "ext_drop_unread",            \
  NULL,          ON,          0,       0,              "ext_drop_unread",       YESNO,                       \
  NULL,                                                                                                      \
  "drop unread items rather than compact them", NULL)

#define SETTINGS_ROWS_EXT(X) \
X(FIX,  ext_path,                STR,  NULL,        0,   NULL,                 "ext_path",                   \
  "file:size",   EXT_PATH,    0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "flash file and its size (m|g|t|p), once per file;\n"                                                     \
  "items idle ext_item_age, or leaving a full RAM,\n"                                                       \
  "go there (memcached's extstore)", NULL)                                                                   \
X(FIX,  ext_page_size,           SIZE, 64,          0,   NULL,                 "ext_page_size",              \
  "MB",          EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "flash page, MB (default: 64)", NULL)                                                                      \
X(FIX,  ext_threads,             SIZE, 1,           0,   NULL,                 "ext_threads",                \
  "num",         EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "flash read threads, for reads not on a worker's io_uring (default: 1)", NULL)                             \
X(FIX,  ext_io_depth,            SIZE, 1,           0,   NULL,                 "ext_io_depth",               \
  "num",         EXT_U,       0,       0,              NULL,                    NONE,                        \
  NULL,                                                                                                      \
  "queued flash reads a read thread takes at once (default: 1)", NULL)
/* clang-format on */

#endif
