/* SPDX-License-Identifier: BSD-3-Clause */
/* Every flag and every -o sub-option of nodelay: ONE row each. The settings
 * struct and its defaults, getopt's short and long options, the -o dispatch,
 * -h, `stats settings` and the man page are all generated from this table
 * (settings_table.c, settings_parse.c, settings_help.c, settings_stats.c), so
 * adding a flag is adding a row here (and its parse hook if no generic
 * parser fits).
 *
 * Rows are in the order memcached 1.6.45 prints `stats settings`; rows with
 * no stats line follow. -h and the man page list flags in table order.
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

/* The flash tier (memcached's extstore) is not wired in yet: its options are
 * parsed and checked as memcached checks them, and have no effect. */
#define SETTINGS_NO_FLASH_PATH                                                                     \
    "no flash tier in nodelay yet: the file is checked and created as memcached does, "            \
    "then not used; items stay in memory"
#define SETTINGS_NO_FLASH                                                                          \
    "tunes the flash tier, which nodelay does not have yet; checked as memcached checks it, "      \
    "no effect"

/* clang-format off */
#define SETTINGS(X) \
X(RUN,  maxbytes,                SIZE, 64u << 20,   'm', "memory-limit",       NULL,                         \
  "num",         MEGS,        0,       0,              "maxbytes",              U,        NULL,              \
  "item memory in megabytes (default: 64); an exact cap", NULL)                                              \
X(FIX,  maxconns,                INT,  1024,        'c', "conn-limit",         NULL,                         \
  "num",         CONNS,       0,       0,              "maxconns",              I,        NULL,              \
  "simultaneous client connections (default: 1024)",                                                         \
  SETTINGS_METRIC("memcached_max_connections",                                                               \
    "Maximum number of clients allowed."))                                                                   \
X(FIX,  port,                    INT,  11211,       'p', "port",               NULL,                         \
  "num",         PORT,        -1,      65535,          "tcpport",               I,        NULL,              \
  "TCP port (default: 11211; 0 = off, -1 = any free port)", NULL)                                            \
X(FIX,  udpport,                 INT,  0,           'U', "udp-port",           NULL,                         \
  "num",         UDPPORT,     -1,      65535,          "udpport",               I,        NULL,              \
  "UDP port (default: 0 = off; UDP replies to forged sources\n"                                              \
  "make any server a reflection amplifier: keep it off on\n"                                                 \
  "untrusted networks)", NULL)                                                                               \
X(FIX,  inter,                   STR,  "127.0.0.1", 'l', "listen",             NULL,                         \
  "addr",        LISTEN,      0,       0,              "inter",                 STR,      NULL,              \
  "interfaces to listen on, comma separated, IPv6 as [addr]:port\n"                                          \
  "(default: 127.0.0.1 -- memcached listens on all; say -l 0.0.0.0)", NULL)                                  \
X(RUN,  verbosity,               INT,  0,           'v', "verbose",            NULL,                         \
  "?",           VERBOSE,     0,       0,              "verbosity",             I,        NULL,              \
  "log errors and start-up; -vv also connections and commands;\n"                                            \
  "-vvv also internal state changes", NULL)                                                                  \
X(NONE, oldest,                  NONE, 0,           0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "oldest",                ZERO,     NULL,              \
  NULL, NULL)                                                                                                \
X(FIX,  evictions,               BOOL, true,        'M', "disable-evictions",  NULL,                         \
  NULL,          OFF,         0,       0,              "evictions",             ONOFF,    NULL,              \
  "answer SERVER_ERROR out of memory instead of evicting", NULL)                                             \
X(FIX,  domain_socket,           STR,  NULL,        's', "unix-socket",        NULL,                         \
  "file",        STR,         0,       0,              "domain_socket",         STR,      NULL,              \
  "UNIX socket to listen on (turns TCP off)", NULL)                                                          \
X(FIX,  umask,                   INT,  0700,        'a', "unix-mask",          NULL,                         \
  "mask",        OCTAL,       0,       0777,           "umask",                 OCT,      NULL,              \
  "permissions of the UNIX socket, octal (default: 700)", NULL)                                              \
X(FIX,  shutdown_command,        BOOL, false,       'A', "enable-shutdown",    NULL,                         \
  NULL,          ON,          0,       0,              "shutdown_command",      YESNO,    NULL,              \
  "allow the shutdown command", NULL)                                                                        \
X(FIX,  growth_factor,           DBL,  1.25,        'f', "slab-growth-factor", NULL,                         \
  "factor",      FACTOR,      0,       0,              "growth_factor",         F2,       SETTINGS_CLASSES,  \
  "slab growth factor (default: 1.25)", NULL)                                                                \
X(FIX,  chunk_size,              INT,  48,          'n', "slab-min-size",      NULL,                         \
  "bytes",       CHUNK,       0,       0,              "chunk_size",            I,        SETTINGS_CLASSES,  \
  "smallest slab chunk (default: 48)", NULL)                                                                 \
X(FIX,  num_threads,             INT,  4,           't', "threads",            NULL,                         \
  "num",         THREADS,     0,       0,              "num_threads",           I,        NULL,              \
  "worker threads, each with its own event loop (default: 4)", NULL)                                         \
X(NONE, num_threads_per_udp,     NONE, 0,           0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "num_threads_per_udp",   THREADS,  NULL,              \
  NULL, NULL)                                                                                                \
X(FIX,  prefix_delimiter,        CHAR, ':',         'D', NULL,                 NULL,                         \
  "char",        DELIM,       0,       0,              "stat_key_prefix",       CHAR,     NULL,              \
  "prefix delimiter for stats detail (default: ':'); turns it on", NULL)                                     \
X(RUN,  detail_enabled,          BOOL, false,       0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "detail_enabled",        YESNO,    NULL,              \
  NULL, NULL)                                                                                                \
X(FIX,  reqs_per_event,          INT,  20,          'R', "max-reqs-per-event", NULL,                         \
  "num",         REQS,        0,       0,              "reqs_per_event",        I,        NULL,              \
  "requests served per connection per turn (default: 20)", NULL)                                             \
X(FIX,  cas_enabled,             BOOL, true,        'C', "disable-cas",        NULL,                         \
  NULL,          OFF,         0,       0,              "cas_enabled",           YESNO,    NULL,              \
  "turn CAS off", NULL)                                                                                      \
X(FIX,  tcp_backlog,             INT,  1024,        'b', "listen-backlog",     NULL,                         \
  "num",         INT,         1,       INT_MAX,        "tcp_backlog",           I,        NULL,              \
  "listen backlog (default: 1024)", NULL)                                                                    \
X(FIX,  binding_protocol,        STR,  "auto",      'B', "protocol",           NULL,                         \
  "name",        PROTOCOL,    0,       0,              "binding_protocol",      PROTOCOL, NULL,              \
  "ascii, binary or auto (default: auto)", NULL)                                                             \
X(FIX,  sasl,                    BOOL, false,       'S', "enable-sasl",        NULL,                         \
  NULL,          ON,          0,       0,              "auth_enabled_sasl",     YESNO,    NULL,              \
  "SASL authentication (binary protocol only): PLAIN against\n"                                              \
  "the file named by $MEMCACHED_SASL_PWDB, read again on SIGHUP", NULL)                                      \
X(FIX,  auth_file,               STR,  NULL,        'Y', "auth-file",          NULL,                         \
  "file",        STR,         0,       0,              "auth_enabled_ascii",    SET,      NULL,              \
  "ascii authentication: lines of user:password, read\n"                                                     \
  "again on SIGHUP (a file that cannot be read keeps the last)", NULL)                                       \
X(FIX,  item_size_max,           SIZE, 1u << 20,    'I', "max-item-size",      NULL,                         \
  "size",        SIZE,        0,       0,              "item_size_max",         U,        NULL,              \
  "largest item, k/m suffix (default: 1m, min 1k, max 1024m)", NULL)                                         \
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
  "memcached 1.4's reply layout", NULL)                                                                      \
X(FIX,  ssl_enabled,             BOOL, false,       'Z', "enable-ssl",         NULL,                         \
  NULL,          ON,          0,       0,              "ssl_enabled",           YESNO,    NULL,              \
  "TLS on every TCP listener (-l notls:addr exempts one, mtls:addr\n"                                        \
  "requires client certificates); needs ssl_chain_cert and ssl_key", NULL)                                   \
X(FIX,  ssl_chain_cert,          STR,  NULL,        0,   NULL,                 "ssl_chain_cert",             \
  "file",        SSL_STR,     0,       0,              "ssl_chain_cert",        STRNULL,  NULL,              \
  "certificate chain file in PEM format", NULL)                                                              \
X(FIX,  ssl_key,                 STR,  NULL,        0,   NULL,                 "ssl_key",                    \
  "file",        SSL_STR,     0,       0,              "ssl_key",               STRNULL,  NULL,              \
  "private key, if not part of ssl_chain_cert", NULL)                                                        \
X(FIX,  ssl_verify_mode,         INT,  0,           0,   NULL,                 "ssl_verify_mode",            \
  "0-3",         SSL_NUM,     0,       3,              "ssl_verify_mode",       I,        NULL,              \
  "client certificates: 0 none, 1 request, 2 require, 3 once\n"                                              \
  "(default: 0)", NULL)                                                                                      \
X(FIX,  ssl_keyformat,           INT,  1,           0,   NULL,                 "ssl_keyformat",              \
  "n",           SSL_NUM,     INT_MIN, INT_MAX,        "ssl_keyformat",         I,        NULL,              \
  "private key format: 1 PEM, 2 DER (default: 1)", NULL)                                                     \
X(FIX,  ssl_ciphers,             STR,  NULL,        0,   NULL,                 "ssl_ciphers",                \
  "list",        SSL_STR,     0,       0,              "ssl_ciphers",           STR,      NULL,              \
  "OpenSSL cipher list (TLS 1.2 and below)", NULL)                                                           \
X(FIX,  ssl_ca_cert,             STR,  NULL,        0,   NULL,                 "ssl_ca_cert",                \
  "file",        SSL_STR,     0,       0,              "ssl_ca_cert",           STR,      NULL,              \
  "PEM file of the CAs client certificates must come from", NULL)                                            \
X(FIX,  ssl_wbuf_size,           INT,  16 * 1024,   0,   NULL,                 "ssl_wbuf_size",              \
  "KB",          SSL_KB,      0,       INT_MAX / 1024, "ssl_wbuf_size",         I,        NULL,              \
  "replies are gathered into TLS records of up to this many\n"                                               \
  "kilobytes (default: 16, the most TLS allows)", NULL)                                                      \
X(FIX,  ssl_session_cache,       BOOL, false,       0,   NULL,                 "ssl_session_cache",          \
  NULL,          BOOL,        0,       0,              "ssl_session_cache",     YESNO,    NULL,              \
  "server-side session cache, for session resumption", NULL)                                                 \
X(FIX,  ssl_kernel_tls,          BOOL, false,       0,   NULL,                 "ssl_kernel_tls",             \
  NULL,          BOOL,        0,       0,              "ssl_kernel_tls",        YESNO,    NULL,              \
  "kernel TLS for sending, where the kernel has it (the replies to one read still leave in one writev)",     \
  NULL)                                                                                                      \
X(FIX,  ssl_min_version,         INT,  2,           0,   NULL,                 "ssl_min_version",            \
  "0-3",         SSL_NUM,     0,       3,              "ssl_min_version",       TLSVER,   NULL,              \
  "oldest protocol accepted: 0 tlsv1.0, 1 tlsv1.1, 2 tlsv1.2,\n"                                             \
  "3 tlsv1.3 (default: 2)", NULL)                                                                            \
X(FIX,  num_napi_ids,            INT,  0,           'N', "napi-ids",           NULL,                         \
  "num",         INT,         0,       INT_MAX,        "num_napi_ids",          I,                           \
  "nodelay does not map NAPI ids to workers; shown in stats settings only",                                  \
  "NAPI ids", NULL)                                                                                          \
X(FIX,  memory_file,             STR,  NULL,        'e', "memory-file",        NULL,                         \
  "file",        STR,         0,       0,              "memory_file",           STRNULL,  NULL,              \
  "keep item memory in this file (on tmpfs: /dev/shm) and\n"                                                 \
  "restore the cache from it at start, after a stop (SIGTERM,\n"                                             \
  "SIGUSR1, SIGINT, shutdown) or a crash; -m -I -C must match", NULL)                                        \
X(NONE, client_flags_size,       NONE, 0,           0,   NULL,                 NULL,                         \
  NULL,          NOP,         0,       0,              "client_flags_size",     FOUR,     NULL,              \
  NULL, NULL)                                                                                                \
/* no stats settings line from here on */ \
X(FIX,  watch_enabled,           BOOL, true,        'W', "disable-watch",      NULL,                         \
  NULL,          OFF,         0,       0,              NULL,                    NONE,     NULL,              \
  "refuse watch", NULL)                                                                                      \
X(FIX,  daemonize,               BOOL, false,       'd', "daemon",             NULL,                         \
  NULL,          ON,          0,       0,              NULL,                    NONE,     NULL,              \
  "run as a daemon: returns once the server serves, or with\n"                                               \
  "its failure (ignored when systemd starts it as Type=notify)", NULL)                                       \
X(FIX,  pid_file,                STR,  NULL,        'P', "pidfile",            NULL,                         \
  "file",        STR,         0,       0,              NULL,                    NONE,     NULL,              \
  "write the process id here (removed at exit)", NULL)                                                       \
X(FIX,  username,                STR,  NULL,        'u', "user",               NULL,                         \
  "user",        STR,         0,       0,              NULL,                    NONE,     NULL,              \
  "user to run as; required when started as root (-u root keeps root)", NULL)                                \
X(FIX,  lock_memory,             BOOL, false,       'k', "lock-memory",        NULL,                         \
  NULL,          ON,          0,       0,              NULL,                    NONE,     NULL,              \
  "lock all memory (mlockall)", NULL)                                                                        \
X(FIX,  enable_coredumps,        BOOL, false,       'r', "enable-coredumps",   NULL,                         \
  NULL,          ON,          0,       0,              NULL,                    NONE,     NULL,              \
  "raise the core file limit to the maximum", NULL)                                                          \
X(FIX,  large_pages,             BOOL, false,       'L', "enable-largepages",  NULL,                         \
  NULL,          ON,          0,       0,              NULL,                    NONE,                        \
  "segments and the index use transparent huge pages where the kernel gives them, with or without -L",      \
  "large memory pages (memcached's preallocation)", NULL)                                                    \
X(FIX,  config_file,             STR,  NULL,        0,   "config",             NULL,                         \
  "file",        CONFIG,      0,       0,              NULL,                    NONE,     NULL,              \
  "read flags from a file in /etc/memcached.conf's format: one\n"                                            \
  "flag per line, # comments; flags after --config override it", NULL)                                       \
X(FIX,  logfile,                 STR,  NULL,        0,   "logfile",            NULL,                         \
  "file",        STR,         0,       0,              NULL,                    NONE,     NULL,              \
  "with -d, append output here instead of dropping it\n"                                                     \
  "(a config file's `logfile FILE` line, as Debian's start-memcached)", NULL)                                \
X(NONE, help,                    NONE, 0,           'h', "help",               NULL,                         \
  NULL,          HELP,        0,       0,              NULL,                    NONE,     NULL,              \
  "this help", NULL)                                                                                         \
X(NONE, license,                 NONE, 0,           'i', "license",            NULL,                         \
  NULL,          LICENSE,     0,       0,              NULL,                    NONE,     NULL,              \
  "licence", NULL)                                                                                           \
X(NONE, version,                 NONE, 0,           'V', "version",            NULL,                         \
  NULL,          VERSION,     0,       0,              NULL,                    NONE,     NULL,              \
  "version", NULL)                                                                                           \
X(NONE, man,                     NONE, 0,           0,   "man",                NULL,                         \
  NULL,          MAN,         0,       0,              NULL,                    NONE,     NULL,              \
  "print the man page nodelay(1) (groff -man) and exit", NULL)                                               \
X(NONE, extended,                NONE, 0,           'o', "extended",           NULL,                         \
  "list",        EXTENDED,    0,       0,              NULL,                    NONE,     NULL,              \
  "comma-separated sub-options (below)", NULL)                                                               \
X(FIX,  reply_queue_limit,       SIZE, 64u << 20,   0,   NULL,                 "reply_queue_limit",          \
  "MB",          MB,          1,       1L << 20,       NULL,                    NONE,     NULL,              \
  "(nodelay) cut off a client that owes more than this while\n"                                              \
  "its socket takes no more (default: 64); one that takes no\n"                                              \
  "byte for 60 s is cut off whatever it owes", NULL)                                                         \
X(FIX,  client_mem_limit,        SIZE, 0,           0,   NULL,                 "client_mem_limit",           \
  "MB",          MB,          0,       1L << 30,       NULL,                    NONE,     NULL,              \
  "(nodelay) replies and read buffers owed to all clients\n"                                                 \
  "together; past it those owing most are not read\n"                                                        \
  "(default: 0 = half of -m, at least 32)", NULL)                                                            \
X(FIX,  ssl_handshake_timeout,   INT,  5,           0,   NULL,                 "ssl_handshake_timeout",      \
  "s",           INT,         1,       3600,           NULL,                    NONE,     NULL,              \
  "(nodelay) cut off a TLS client whose handshake is not done\n"                                             \
  "after this many seconds (default: 5)", NULL)                                                              \
X(FIX,  metrics_listen,          STR,  NULL,        0,   NULL,                 "metrics_listen",             \
  "[addr:]port", STR,         0,       0,              NULL,                    NONE,     NULL,              \
  "(nodelay) serve Prometheus /metrics there; the address\n"                                                 \
  "defaults to 127.0.0.1 (default: off)", NULL)                                                              \
X(FIX,  auth_fail_limit,         INT,  5,           0,   NULL,                 "auth_fail_limit",            \
  "n",           INT,         0,       1000000,        NULL,                    NONE,     NULL,              \
  "(nodelay) close a connection at its nth failed -Y/SASL\n"                                                 \
  "password; refuse an address failing 4n times a\n"                                                         \
  "minute until the minute is over (default: 5; 0 = off)", NULL)                                             \
X(FIX,  udp_amplification,       INT,  10,          0,   NULL,                 "udp_amplification",          \
  "n",           INT,         0,       1000000,        NULL,                    NONE,     NULL,              \
  "(nodelay) over UDP, answer a datagram with at most n\n"                                                   \
  "times its size (else SERVER_ERROR), but for loopback\n"                                                   \
  "sources (udp_trust_loopback); dumps and watch get\n"                                                      \
  "nothing (default: 10; 0 = no bound)", NULL)                                                               \
X(FIX,  watch_cpu_percent,       INT,  10,          0,   NULL,                 "watch_cpu_percent",          \
  "pct",         INT,         1,       100,            NULL,                    NONE,     NULL,              \
  "(nodelay) the share of one CPU, in percent, that turning\n"                                               \
  "watch events into lines may take; past it lines are\n"                                                    \
  "skipped and counted (default: 10)", NULL)                                                                 \
X(FIX,  udp_trust_loopback,      BOOL, true,        0,   NULL,                 "udp_trust_loopback",         \
  "on|off",      SWITCH,      0,       0,              NULL,                    NONE,     NULL,              \
  "(nodelay) over UDP, a datagram from a loopback address\n"                                                 \
  "(127.0.0.0/8, ::1), which only this host can send, is\n"                                                  \
  "answered with up to 4 MiB whatever its size; off:\n"                                                      \
  "udp_amplification bounds it too (default: on)", NULL)                                                     \
X(FIX,  io_uring,                BOOL, true,        0,   NULL,                 "io_uring",                   \
  "on|off",      SWITCH,      0,       0,              NULL,                    NONE,     NULL,              \
  "(nodelay) the io_uring event backend, where the build has\n"                                              \
  "it (-V lists the backends) and the kernel allows it (else\n"                                              \
  "epoll, said in one line at start-up); off: epoll (default: on)", NULL)                                    \
X(FIX,  io_uring_multishot,      BOOL, true,        0,   NULL,                 "io_uring_multishot",         \
  "on|off",      SWITCH,      0,       0,              NULL,                    NONE,     NULL,              \
  "(nodelay) on io_uring, an idle connection's receive stays\n"                                              \
  "started across its requests (multishot, where the kernel\n"                                               \
  "can bound what it delivers: Linux 6.17+); off: one receive\n"                                             \
  "per request (default: on)", NULL)                                                                         \
X(FIX,  hash_expand,             BOOL, true,        0,   NULL,                 "no_hashexpand",              \
  NULL,          BOOL,        0,       0,              NULL,                    NONE,                        \
  "the index still grows as it fills; ignored",                                                              \
  "keep the index at its initial size", NULL)                                                                \
X(NONE, modern,                  NONE, 0,           0,   NULL,                 "modern",                     \
  NULL,          NOP,         0,       0,              NULL,                    NONE,     NULL,              \
  "memcached's future defaults (currently nothing)", NULL)                                                   \
X(NONE, no_modern,               NONE, 0,           0,   NULL,                 "no_modern",                  \
  NULL,          NO_MODERN,   0,       0,              NULL,                    NONE,     NULL,              \
  "memcached 1.4's defaults (no slab mover, crawler, maintainer; jenkins)", NULL)                            \
X(NONE, slab_sizes,              NONE, 0,           0,   NULL,                 "slab_sizes",                 \
  "a-b-c",       SLAB_SIZES,  0,       0,              NULL,                    NONE,     SETTINGS_NO_SLABS, \
  "slab class sizes, increasing", NULL)                                                                      \
X(NONE, slab_automove_freeratio, NONE, 0,           0,   NULL,                 "slab_automove_freeratio",    \
  "f",           NOP,         0,       0,              NULL,                    NONE,     SETTINGS_NO_SLABS, \
  "free memory kept by the slab mover", NULL)                                                                \
X(NONE, no_chunked_items,        NONE, 0,           0,   NULL,                 "no_chunked_items",           \
  NULL,          NOP,         0,       0,              NULL,                    NONE,                        \
  "items are never chunked in nodelay; ignored",                                                             \
  "do not chain chunks for large items", NULL)                                                               \
X(NONE, drop_privileges,         NONE, 0,           0,   NULL,                 "[no_]drop_privileges",       \
  NULL,          NOP,         0,       0,              NULL,                    NONE,                        \
  "nodelay does not sandbox itself with seccomp; ignored",                                                   \
  "seccomp sandbox", NULL)                                                                                   \
X(NONE, relaxed_privileges,      NONE, 0,           0,   NULL,                 "relaxed_privileges",         \
  NULL,          NOP,         0,       0,              NULL,                    NONE,                        \
  "nodelay does not sandbox itself with seccomp; ignored",                                                   \
  "relaxed seccomp sandbox", NULL)                                                                           \
X(NONE, resp_obj_mem_limit,      NONE, 0,           0,   NULL,                 "resp_obj_mem_limit",         \
  "MB",          NOP,         0,       0,              NULL,                    NONE,                        \
  "reply memory is bounded by reply_queue_limit instead; ignored",                                           \
  "reply object memory bound", NULL)                                                                         \
X(NONE, sock_cookie_id,          NONE, 0,           0,   NULL,                 "sock_cookie_id",             \
  "id",          NOP,         0,       0,              NULL,                    NONE,                        \
  "sockets carry no SO_MARK cookie in nodelay; ignored",                                                     \
  "socket cookie for firewalls", NULL)                                                                       \
X(FIX,  ext_path,                STR,  NULL,        0,   NULL,                 "ext_path",                   \
  "file:size",   EXT_PATH,    0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH_PATH,                                                                                    \
  "flash file and its size (m|g|t|p), once per file;\n"                                                      \
  "items that leave RAM go there (memcached's extstore)", NULL)                                              \
X(FIX,  ext_page_size,           SIZE, 64,          0,   NULL,                 "ext_page_size",              \
  "MB",          EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "flash page, MB (default: 64)", NULL)                                                                      \
X(FIX,  ext_wbuf_size,           SIZE, 4,           0,   NULL,                 "ext_wbuf_size",              \
  "MB",          EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "flash write buffer, MB (default: 4)", NULL)                                                               \
X(FIX,  ext_threads,             SIZE, 1,           0,   NULL,                 "ext_threads",                \
  "num",         EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "flash I/O threads (default: 1)", NULL)                                                                    \
X(FIX,  ext_io_depth,            SIZE, 1,           0,   NULL,                 "ext_io_depth",               \
  "num",         EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "flash reads in flight per thread (default: 1)", NULL)                                                     \
X(FIX,  ext_item_size,           SIZE, 512,         0,   NULL,                 "ext_item_size",              \
  "bytes",       EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "smallest item moved to flash (default: 512)", NULL)                                                       \
X(FIX,  ext_item_age,            SIZE, UINT_MAX,    0,   NULL,                 "ext_item_age",               \
  "seconds",     EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "moved to flash only when idle this long (default: any)", NULL)                                            \
X(FIX,  ext_low_ttl,             SIZE, 0,           0,   NULL,                 "ext_low_ttl",                \
  "seconds",     EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "TTLs under this go to their own pages (default: 0)", NULL)                                                \
X(FIX,  ext_recache_rate,        SIZE, 2000,        0,   NULL,                 "ext_recache_rate",           \
  "num",         EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "one read in N copies a flash item back (default: 2000)", NULL)                                            \
X(FIX,  ext_compact_under,       SIZE, 0,           0,   NULL,                 "ext_compact_under",          \
  "pages",       EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "compact when free pages fall under this", NULL)                                                           \
X(FIX,  ext_drop_under,          SIZE, 0,           0,   NULL,                 "ext_drop_under",             \
  "pages",       EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "drop rather than rewrite under this many free pages", NULL)                                               \
X(FIX,  ext_max_sleep,           SIZE, 1000000,     0,   NULL,                 "ext_max_sleep",              \
  "us",          EXT_U,       0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "longest pause of the flash maintainer, us (default: 1000000)", NULL)                                      \
X(FIX,  ext_max_frag,            DBL,  0.8,         0,   NULL,                 "ext_max_frag",               \
  "ratio",       EXT_DBL,     0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "compact pages fuller than this ratio (default: 0.8)", NULL)                                               \
X(FIX,  ext_drop_unread,         BOOL, false,       0,   NULL,                 "ext_drop_unread",            \
  NULL,          ON,          0,       0,              NULL,                    NONE,                        \
  SETTINGS_NO_FLASH,                                                                                         \
  "drop unread items rather than compact them", NULL)                                                        \
X(NONE, proxy_opts,              NONE, 0,           0,   NULL,                 "proxy_*",                    \
  "...",         NO_PROXY,    0,       0,              NULL,                    NONE,     NULL,              \
  "refused: nodelay has no built-in proxy", NULL)
/* clang-format on */

#endif
