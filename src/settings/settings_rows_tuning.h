/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's -o tuning of its store and logger: slabs and the slab
 * mover, the LRU with its crawler and maintainer, the hash, the idle
 * timeout, the log buffers. Most act in nodelay's own way or not at all
 * (the note column says which).
 * Rows of the settings table: settings_table.h includes this file in
 * its place and says what each column means. */
#ifndef NODELAY_SETTINGS_ROWS_TUNING_H
#define NODELAY_SETTINGS_ROWS_TUNING_H

/* clang-format off */
#define SETTINGS_ROWS_TUNING(X) \
X(FIX,  maxconns_fast,           BOOL, true,        0,   NULL,                 "[no_]maxconns_fast",         \
  NULL,          BOOL,        0,       0,              "maxconns_fast",         YESNO,    NULL,              \
  "reject connections over -c at once (nodelay always does;\n"                                               \
  "the flag decides whether stats shows rejected_connections)", NULL)                                        \
X(FIX,  hashpower_init,          INT,  0,           0,   NULL,                 "hashpower",                  \
  "n",           HASHPOWER,   0,       0,              "hashpower_init",        I,        NULL,              \
  "initial index size 2^n, 12..32", NULL)                                                                    \
X(FIX,  slab_reassign,           BOOL, true,        0,   NULL,                 "[no_]slab_reassign",         \
  NULL,          BOOL,        0,       0,              "slab_reassign",         YESNO,    SETTINGS_NO_SLABS, \
  "allow slabs reassign", NULL)                                                                              \
X(RUN,  slab_automove,           INT,  1,           0,   NULL,                 "[no_]slab_automove",         \
  "?0|1|2",      AUTOMOVE,    0,       0,              "slab_automove",         I,        SETTINGS_NO_SLABS, \
  "slab page mover level", NULL)                                                                             \
X(RUN,  slab_automove_ratio,     DBL,  0.8,         0,   NULL,                 "slab_automove_ratio",        \
  "ratio",       DBL,         0,       0,              "slab_automove_ratio",   F2,       SETTINGS_NO_SLABS, \
  "slab page mover ratio", NULL)                                                                             \
X(RUN,  slab_automove_window,    INT,  10,          0,   NULL,                 "slab_automove_window",       \
  "n",           WINDOW,      0,       0,              "slab_automove_window",  I,        SETTINGS_NO_SLABS, \
  "slab page mover window", NULL)                                                                            \
X(FIX,  slab_chunk_max,          INT,  512 * 1024,  0,   NULL,                 "slab_chunk_max",             \
  "KB",          CHUNK_MAX,   0,       0,              "slab_chunk_max",        I,        SETTINGS_CLASSES,  \
  "largest slab chunk, KB (default 512, -I when -I is smaller,\n"                                            \
  "1024 with no_modern)", NULL)                                                                              \
X(RUN,  lru_crawler,             BOOL, true,        0,   NULL,                 "[no_]lru_crawler",           \
  NULL,          BOOL,        0,       0,              "lru_crawler",           YESNO,    NULL,              \
  "allow lru_crawler crawl/metadump (the store needs no crawler;\n"                                          \
  "lru_crawler enable|disable switch it at run time)",                                                       \
  SETTINGS_METRIC("memcached_lru_crawler_enabled",                                                           \
    "Whether the LRU crawler is enabled."))                                                                  \
X(FIX,  lru_crawler_sleep,       INT,  100,         0,   NULL,                 "lru_crawler_sleep",          \
  "us",          CRAWL_SLEEP, 0,       0,              "lru_crawler_sleep",     I,                           \
  "nodelay has no crawler thread to pace; shown in stats settings only",                                     \
  "crawler sleep between items",                                                                             \
  SETTINGS_METRIC("memcached_lru_crawler_sleep",                                                             \
    "Microseconds to sleep between LRU crawls."))                                                            \
X(FIX,  lru_crawler_tocrawl,     INT,  0,           0,   NULL,                 "lru_crawler_tocrawl",        \
  "n",           INT,         0,       INT_MAX,        "lru_crawler_tocrawl",   I,                           \
  "nodelay has no crawler thread to pace; shown in stats settings only",                                     \
  "crawler items per class per run",                                                                         \
  SETTINGS_METRIC("memcached_lru_crawler_to_crawl",                                                          \
    "Max items to crawl per slab per run."))                                                                 \
X(FIX,  tail_repair_time,        INT,  0,           0,   NULL,                 "tail_repair_time",           \
  "s",           TAIL_REPAIR, 0,       0,              "tail_repair_time",      I,                           \
  "nodelay has no LRU tail to repair; shown in stats settings only",                                         \
  "force-free items stuck at the LRU tail", NULL)                                                            \
X(FIX,  flush_enabled,           BOOL, true,        'F', "disable-flush-all",  NULL,                         \
  NULL,          OFF,         0,       0,              "flush_enabled",         YESNO,    NULL,              \
  "refuse flush_all", NULL)                                                                                  \
X(FIX,  dump_enabled,            BOOL, true,        'X', "disable-dumping",    NULL,                         \
  NULL,          OFF,         0,       0,              "dump_enabled",          YESNO,    NULL,              \
  "refuse stats cachedump, stats detail and lru_crawler dumps", NULL)                                        \
X(FIX,  hash_algorithm,          STR,  "murmur3",   0,   NULL,                 "hash_algorithm",             \
  "name",        HASH,        0,       0,              "hash_algorithm",        STR,                         \
  "the index always hashes with xxHash; shown in stats settings only",                                       \
  "jenkins, murmur3 or xxh3", NULL)                                                                          \
X(FIX,  lru_maintainer_thread,   BOOL, true,        0,   NULL,                 "[no_]lru_maintainer",        \
  NULL,          MAINTAINER,  0,       0,              "lru_maintainer_thread", YESNO,    SETTINGS_NO_LRU,   \
  "LRU maintainer (lru mode and temporary_ttl need it)",                                                     \
  SETTINGS_METRIC("memcached_lru_crawler_maintainer_thread",                                                 \
    "Split LRU mode and background threads."))                                                               \
X(RUN,  lru_segmented,           BOOL, true,        0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "lru_segmented",         YESNO,    NULL,              \
  NULL, NULL)                                                                                                \
X(RUN,  hot_lru_pct,             INT,  20,          0,   NULL,                 "hot_lru_pct",                \
  "pct",         LRU_PCT,     0,       0,              "hot_lru_pct",           I,        SETTINGS_NO_LRU,   \
  "memory share of the hot LRU",                                                                             \
  SETTINGS_METRIC("memcached_lru_crawler_hot_percent",                                                       \
    "Percent of slab memory reserved for HOT LRU."))                                                         \
X(RUN,  warm_lru_pct,            INT,  40,          0,   NULL,                 "warm_lru_pct",               \
  "pct",         LRU_PCT,     0,       0,              "warm_lru_pct",          I,        SETTINGS_NO_LRU,   \
  "memory share of the warm LRU",                                                                            \
  SETTINGS_METRIC("memcached_lru_crawler_warm_percent",                                                      \
    "Percent of slab memory reserved for WARM LRU."))                                                        \
X(RUN,  hot_max_factor,          DBL,  0.2,         0,   NULL,                 "hot_max_factor",             \
  "f",           AGE_FACTOR,  0,       0,              "hot_max_factor",        F2,       SETTINGS_NO_LRU,   \
  "hot LRU age factor",                                                                                      \
  SETTINGS_METRIC("memcached_lru_crawler_hot_max_factor",                                                    \
    "Set idle age of HOT LRU to COLD age * this"))                                                           \
X(RUN,  warm_max_factor,         DBL,  2.0,         0,   NULL,                 "warm_max_factor",            \
  "f",           AGE_FACTOR,  0,       0,              "warm_max_factor",       F2,       SETTINGS_NO_LRU,   \
  "warm LRU age factor",                                                                                     \
  SETTINGS_METRIC("memcached_lru_crawler_warm_max_factor",                                                   \
    "Set idle age of WARM LRU to COLD age * this"))                                                          \
X(RUN,  temp_lru,                BOOL, false,       0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "temp_lru",              YESNO,    NULL,              \
  NULL, NULL)                                                                                                \
X(RUN,  temporary_ttl,           INT,  61,          0,   NULL,                 "temporary_ttl",              \
  "s",           TEMP_TTL,    0,       INT_MAX,        "temporary_ttl",         I,        NULL,              \
  "items with a shorter TTL are kept from eviction (turns temp_lru on)", NULL)                               \
X(FIX,  idle_timeout,            INT,  0,           0,   NULL,                 "idle_timeout",               \
  "s",           INT,         0,       INT_MAX,        "idle_timeout",          I,        NULL,              \
  "close connections idle this long (default: 0 = never)", NULL)                                             \
X(FIX,  watcher_logbuf_size,     INT,  256 * 1024,  0,   NULL,                 "watcher_logbuf_size",        \
  "KB",          KB,          1,       INT_MAX / 1024, "watcher_logbuf_size",   I,        NULL,              \
  "per-watcher buffer of a watch stream; lines past it are\n"                                                \
  "skipped and counted (default: 256)", NULL)                                                                \
X(FIX,  worker_logbuf_size,      INT,  64 * 1024,   0,   NULL,                 "worker_logbuf_size",         \
  "KB",          KB,          1,       INT_MAX / 1024, "worker_logbuf_size",    I,        NULL,              \
  "per-thread ring of watch events waiting to be\n"                                                          \
  "formatted; events past it are dropped and counted\n"                                                      \
  "(default: 64)", NULL)                                                                                     \
X(FIX,  read_buf_mem_limit,      INT,  0,           0,   NULL,                 "read_buf_mem_limit",         \
  "MB",          READ_BUF,    0,       INT_MAX,        "read_buf_mem_limit",    I,        NULL,              \
  "bound on all read buffers together (default: 0 = none)", NULL)                                            \
X(FIX,  track_sizes,             BOOL, false,       0,   NULL,                 "track_sizes",                \
  NULL,          BOOL,        0,       0,              "track_sizes",           YESNO,    NULL,              \
  "per-size item counts for stats sizes", NULL)                                                              \
X(FIX,  inline_ascii_response,   BOOL, false,       0,   NULL,                 "[no_]inline_ascii_resp",     \
  NULL,          BOOL,        0,       0,              "inline_ascii_response", YESNO,                       \
  "replies are always composed in place; shown in stats settings only",                                      \
  "memcached 1.4's reply layout", NULL)
/* clang-format on */

#endif
