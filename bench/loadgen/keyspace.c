/* SPDX-License-Identifier: BSD-3-Clause */
#include "keyspace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int lg_dist_init(struct lg_dist *d, uint32_t n, double zipf_s)
{
    d->n = n ? n : 1;
    d->cdf = NULL;
    if (zipf_s <= 0)
        return 0;
    d->cdf = malloc(sizeof(double) * d->n);
    if (!d->cdf)
        return -1;
    double sum = 0;
    for (uint32_t i = 0; i < d->n; i++) {
        sum += 1.0 / pow((double)(i + 1), zipf_s);
        d->cdf[i] = sum;
    }
    for (uint32_t i = 0; i < d->n; i++)
        d->cdf[i] /= sum;
    return 0;
}

void lg_dist_release(struct lg_dist *d)
{
    free(d->cdf);
    d->cdf = NULL;
}

uint32_t lg_dist_pick(const struct lg_dist *d, struct lg_rng *r)
{
    if (!d->cdf)
        return (uint32_t)(lg_rng_next(r) % d->n);
    double u = lg_rng_unit(r);
    uint32_t lo = 0, hi = d->n - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Rank 0 is the most popular; scatter ranks over the key space so hot keys
     * do not all sit next to each other (and in one server hash region). */
    return (uint32_t)(((uint64_t)lo * 2654435761u) % d->n);
}

void lg_key_format(char *dst, uint32_t k)
{
    memcpy(dst, "key:", 4);
    for (int i = 13; i >= 4; i--) {
        dst[i] = (char)('0' + k % 10);
        k /= 10;
    }
}

int64_t lg_key_parse(const char *s, size_t len)
{
    if (len != LG_KEY_LEN || memcmp(s, "key:", 4) != 0)
        return -1;
    int64_t k = 0;
    for (size_t i = 4; i < LG_KEY_LEN; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        k = k * 10 + (s[i] - '0');
    }
    return k;
}

int lg_values_init(struct lg_values *v, uint32_t vmin, uint32_t vmax)
{
    v->vmin = vmin;
    v->vmax = vmax < vmin ? vmin : vmax;
    v->pattern = malloc((size_t)v->vmax + 4096);
    if (!v->pattern)
        return -1;
    struct lg_rng r = { 12345 };
    for (size_t i = 0; i < (size_t)v->vmax + 4096; i++)
        v->pattern[i] = (char)('!' + lg_rng_next(&r) % 94); /* printable */
    return 0;
}

void lg_values_release(struct lg_values *v)
{
    free(v->pattern);
    v->pattern = NULL;
}

uint32_t lg_value_len(const struct lg_values *v, uint32_t key, uint32_t ver)
{
    if (v->vmax == v->vmin)
        return v->vmin;
    return v->vmin + (uint32_t)(lg_mix(key, ver) % (v->vmax - v->vmin + 1));
}

static const char hexdig[] = "0123456789abcdef";

static void put_hex8(char *dst, uint32_t x)
{
    for (int i = 7; i >= 0; i--) {
        dst[i] = hexdig[x & 15];
        x >>= 4;
    }
}

static int get_hex8(const char *s, uint32_t *out)
{
    uint32_t x = 0;
    for (int i = 0; i < 8; i++) {
        char c = s[i];
        uint32_t d;
        if (c >= '0' && c <= '9')
            d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else
            return -1;
        x = x << 4 | d;
    }
    *out = x;
    return 0;
}

static void value_header(char *hdr, uint32_t key, uint32_t ver)
{
    put_hex8(hdr, key);
    hdr[8] = ':';
    put_hex8(hdr + 9, ver);
    hdr[17] = ':';
}

void lg_value_write(const struct lg_values *v, char *dst, uint32_t key, uint32_t ver)
{
    uint32_t len = lg_value_len(v, key, ver);
    char hdr[LG_VALUE_HDR];
    value_header(hdr, key, ver);
    if (len <= LG_VALUE_HDR) {
        memcpy(dst, hdr, len);
        return;
    }
    memcpy(dst, hdr, LG_VALUE_HDR);
    size_t off = lg_mix(ver, key) % 4096;
    memcpy(dst + LG_VALUE_HDR, v->pattern + off, len - LG_VALUE_HDR);
}

enum lg_verify lg_value_check(const struct lg_values *v, uint32_t key,
                              const char *data, size_t len, uint32_t *ver)
{
    char hdr[LG_VALUE_HDR];
    if (len < LG_VALUE_HDR) {
        /* Too short to carry a version: only the key prefix can be checked. */
        value_header(hdr, key, 0);
        *ver = 0;
        size_t n = len < 8 ? len : 8;
        if (memcmp(data, hdr, n) != 0)
            return LG_VERIFY_WRONG_KEY;
        return len >= v->vmin && len <= v->vmax ? LG_VERIFY_OK : LG_VERIFY_BAD_LENGTH;
    }
    uint32_t k, vr;
    if (get_hex8(data, &k) != 0 || data[8] != ':' || get_hex8(data + 9, &vr) != 0 ||
        data[17] != ':')
        return LG_VERIFY_CORRUPT;
    if (k != key)
        return LG_VERIFY_WRONG_KEY;
    *ver = vr;
    if (len != lg_value_len(v, key, vr))
        return LG_VERIFY_BAD_LENGTH;
    size_t off = lg_mix(vr, key) % 4096;
    if (memcmp(data + LG_VALUE_HDR, v->pattern + off, len - LG_VALUE_HDR) != 0)
        return LG_VERIFY_CORRUPT;
    return LG_VERIFY_OK;
}
