/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's number rules, in one place: every protocol, the store's incr
 * and the settings parser read numbers through these, so an odd input ("+1",
 * "-0", "5\t", 2^32 as flags) gets one answer everywhere memcached gives one.
 *
 * memcached 1.6.45 has two sets of rules, and so do we:
 *   num_safe_*  its safe_strto* helpers (strtoull/strtol then a check of what
 *               follows): classic text arguments (flags, exptime, delta,
 *               verbosity, ...) and the value incr/decr reads;
 *   num_tok_*   its token parser (mcmc_token_get_*): digits only, a '-' only
 *               for signed numbers, nothing after the digits, no overflow:
 *               meta flags (T N R C E J D F) and data lengths.
 * Inputs are (pointer, length), not NUL-terminated. Each returns false on a
 * number memcached refuses, leaving *out untouched. */
#ifndef NODELAY_NUM_H
#define NODELAY_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* strtoull: leading white space, one optional sign, digits, then the end, a
 * NUL or white space. A '-' is refused only when the result would read as
 * negative as a signed number (so "-0" is 0, as in memcached). */
bool num_safe_u64(const char *s, size_t n, uint64_t *out);
/* num_safe_u64, truncated to 32 bits (client flags, verbosity, ...). */
bool num_safe_u32(const char *s, size_t n, uint32_t *out);
/* strtol (64-bit long), refused outside int64. */
bool num_safe_i64(const char *s, size_t n, int64_t *out);
/* num_safe_i64 truncated to 32 bits, as memcached stores a long in int32_t. */
bool num_safe_i32(const char *s, size_t n, int32_t *out);
/* strtod, refusing trailing garbage other than white space. */
bool num_safe_double(const char *s, size_t n, double *out);

/* A token as memcached's admin commands read a double (mc_toktod): under
 * 32 bytes, all of it strtod's, and no range error (1e999, 1e-400). */
bool num_tok_double(const char *s, size_t n, double *out);

/* Strict tokens: [0-9]+ within range, and at most 11 characters for 32
 * bits (a sign included), 22 for 64, as 1.6.45's parser reads them. */
bool num_tok_u64(const char *s, size_t n, uint64_t *out);
bool num_tok_u32(const char *s, size_t n, uint32_t *out);
/* -?[0-9]+ within int32 ("-0" is 0), or a lone "-", which memcached
 * 1.6.45's token parser reads as 0 (`touch k -` touches with no expiry). */
bool num_tok_i32(const char *s, size_t n, int32_t *out);

#endif
