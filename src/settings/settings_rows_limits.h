/* SPDX-License-Identifier: BSD-3-Clause */
/* nodelay's own -o options: per-client reply and memory limits, the
 * TLS handshake timeout, the metrics listener, auth and UDP abuse limits,
 * watch's CPU share, the io_uring backend; and no_hashexpand.
 * Rows of the settings table: settings_table.h includes this file in
 * its place and says what each column means. */
#ifndef NODELAY_SETTINGS_ROWS_LIMITS_H
#define NODELAY_SETTINGS_ROWS_LIMITS_H

/* clang-format off */
#define SETTINGS_ROWS_LIMITS(X) \
X(FIX,  reply_queue_limit,       SIZE, 64u << 20,   0,   NULL,                 "reply_queue_limit",          \
  "MB",          MB,          1,       1L << 20,       NULL,                    NONE,     NULL,              \
  "(nodelay) cut off a client that owes more than this while\n"                                              \
  "its socket takes no more (default: 64); one that takes no\n"                                              \
  "byte for 60 s is cut off whatever it owes", NULL)                                                         \
X(FIX,  client_mem_limit,        SIZE, 0,           0,   NULL,                 "client_mem_limit",           \
  "MB",          MB,          0,       1L << 30,       NULL,                    NONE,     NULL,              \
  "(nodelay) replies and read buffers owed to all clients\n"                                                 \
  "together; past half of it those owing most are not read\n"                                                \
  "and request lines past a client's share are refused\n"                                                    \
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
  "keep the index at its initial size", NULL)
/* clang-format on */

#endif
