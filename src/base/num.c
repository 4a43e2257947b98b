/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's number rules (see num.h). */
#include "base/num.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* isspace() in the C locale, without the locale lookup. */
static bool num_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Decimal digits from s[*i]; false when there are none. *overflow is set
 * (and scanning goes on, as strto* does) when the value passes 2^64-1. */
static bool num_digits(const char *s, size_t n, size_t *i, uint64_t *v, bool *overflow)
{
    size_t start = *i;
    *v = 0;
    *overflow = false;
    for (; *i < n && s[*i] >= '0' && s[*i] <= '9'; (*i)++) {
        unsigned d = (unsigned)(s[*i] - '0');
        if (*v > (UINT64_MAX - d) / 10)
            *overflow = true;
        *v = *v * 10 + d;
    }
    return *i > start;
}

/* strto*'s scan: white space, sign, digits; then memcached accepts only the
 * end, a NUL (strto* stop there) or white space. */
static bool num_safe_scan(const char *s, size_t n, bool *neg, uint64_t *mag)
{
    size_t i = 0;
    while (i < n && num_space((unsigned char)s[i]))
        i++;
    *neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        *neg = s[i++] == '-';
    bool overflow;
    if (!num_digits(s, n, &i, mag, &overflow) || overflow) /* ERANGE */
        return false;
    return i == n || s[i] == '\0' || num_space((unsigned char)s[i]);
}

bool num_safe_u64(const char *s, size_t n, uint64_t *out)
{
    bool neg;
    uint64_t mag;
    if (!num_safe_scan(s, n, &neg, &mag))
        return false;
    /* strtoull negates; memcached refuses only what then looks negative */
    uint64_t v = neg ? (uint64_t)0 - mag : mag;
    if (neg && (int64_t)v < 0)
        return false;
    *out = v;
    return true;
}

bool num_safe_u32(const char *s, size_t n, uint32_t *out)
{
    uint64_t v;
    if (!num_safe_u64(s, n, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

bool num_safe_i64(const char *s, size_t n, int64_t *out)
{
    bool neg;
    uint64_t mag;
    if (!num_safe_scan(s, n, &neg, &mag))
        return false;
    if (mag > (uint64_t)INT64_MAX + (neg ? 1 : 0))
        return false;
    *out = neg ? (int64_t)((uint64_t)0 - mag) : (int64_t)mag;
    return true;
}

bool num_safe_i32(const char *s, size_t n, int32_t *out)
{
    int64_t v;
    if (!num_safe_i64(s, n, &v))
        return false;
    *out = (int32_t)(uint32_t)(uint64_t)v;
    return true;
}

bool num_safe_double(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (end == buf || (*end != '\0' && !num_space((unsigned char)*end)))
        return false;
    *out = d;
    return true;
}

bool num_tok_double(const char *s, size_t n, double *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    if (errno == ERANGE || end != buf + n)
        return false;
    *out = d;
    return true;
}

/* The longest token 1.6.45's parser reads as a number of each width,
 * whatever its value (leading zeros count): 32-bit ones, their sign
 * included, and 64-bit ones. */
#define NUM_TOK_MAX32 11
#define NUM_TOK_MAX64 22

bool num_tok_u64(const char *s, size_t n, uint64_t *out)
{
    if (n > NUM_TOK_MAX64)
        return false;
    size_t i = 0;
    uint64_t v;
    bool overflow;
    if (!num_digits(s, n, &i, &v, &overflow) || overflow || i != n)
        return false;
    *out = v;
    return true;
}

bool num_tok_u32(const char *s, size_t n, uint32_t *out)
{
    uint64_t v;
    if (n > NUM_TOK_MAX32 || !num_tok_u64(s, n, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool num_tok_i32(const char *s, size_t n, int32_t *out)
{
    bool neg = n > 0 && s[0] == '-';
    uint64_t mag;
    if (n > NUM_TOK_MAX32)
        return false;
    if (neg && n == 1) { /* 1.6.45 reads a sign without digits as 0 */
        *out = 0;
        return true;
    }
    if (!num_tok_u64(s + neg, n - neg, &mag) || mag > (uint64_t)INT32_MAX + neg)
        return false;
    *out = neg ? (int32_t)(0 - (int64_t)mag) : (int32_t)mag;
    return true;
}
