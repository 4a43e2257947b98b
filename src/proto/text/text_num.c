/* Numbers as memcached reads them (its safe_strto* helpers over strtoull,
 * strtol, strtod), so that odd inputs ("+1", "-0", "5\t", 2^32 as flags)
 * get exactly memcached's answers. Tokens are not NUL-terminated. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "proto/text/text_internal.h"

/* Sign and magnitude of a decimal token. Leading whitespace and one sign are
 * accepted; after the digits only the end, a NUL or whitespace may follow
 * (strto* stop there and memcached then checks isspace(*end) or NUL). */
static bool text_num_scan(const struct text_token *t, bool *neg, uint64_t *mag, bool *overflow)
{
    size_t i = 0, n = t->len;
    const unsigned char *p = (const unsigned char *)t->s;
    while (i < n && isspace(p[i]))
        i++;
    *neg = false;
    if (i < n && (p[i] == '+' || p[i] == '-')) {
        *neg = p[i] == '-';
        i++;
    }
    size_t start = i;
    uint64_t v = 0;
    *overflow = false;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        unsigned d = p[i] - '0';
        if (v > (UINT64_MAX - d) / 10)
            *overflow = true;
        v = v * 10 + d;
        i++;
    }
    if (i == start)
        return false;
    if (i < n && !isspace(p[i]) && p[i] != '\0') /* strto* stop at a NUL too */
        return false;
    *mag = v;
    return true;
}

bool text_parse_u64(const struct text_token *t, uint64_t *out)
{
    bool neg, overflow;
    uint64_t mag;
    if (!text_num_scan(t, &neg, &mag, &overflow) || overflow)
        return false;
    uint64_t v = neg ? (uint64_t)0 - mag : mag;
    if (neg && (int64_t)v < 0)
        return false;
    *out = v;
    return true;
}

bool text_parse_u32(const struct text_token *t, uint32_t *out)
{
    uint64_t v;
    if (!text_parse_u64(t, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

bool text_parse_i64(const struct text_token *t, int64_t *out)
{
    bool neg, overflow;
    uint64_t mag;
    if (!text_num_scan(t, &neg, &mag, &overflow) || overflow)
        return false;
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1)
            return false;
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    } else {
        if (mag > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)mag;
    }
    return true;
}

bool text_parse_i32(const struct text_token *t, int32_t *out)
{
    int64_t v;
    if (!text_parse_i64(t, &v))
        return false;
    *out = (int32_t)(uint32_t)(uint64_t)v; /* memcached stores a long in an int32_t */
    return true;
}

bool text_parse_double(const struct text_token *t, double *out)
{
    char buf[64];
    if (t->len == 0 || t->len >= sizeof buf)
        return false;
    memcpy(buf, t->s, t->len);
    buf[t->len] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (end == buf || (*end != '\0' && !isspace((unsigned char)*end)))
        return false;
    *out = d;
    return true;
}

char *text_u64toa(uint64_t v, char *p)
{
    char tmp[TEXT_U64_MAX_DIGITS];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}
