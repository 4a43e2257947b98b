/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS: -Z and the ssl_* options.
 * Rows of the settings table: settings_table.h includes this file in
 * its place and says what each column means. */
#ifndef NODELAY_SETTINGS_ROWS_TLS_H
#define NODELAY_SETTINGS_ROWS_TLS_H

/* clang-format off */
#define SETTINGS_ROWS_TLS(X) \
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
  "3 tlsv1.3 (default: 2)", NULL)
/* clang-format on */

#endif
