/* SPDX-License-Identifier: BSD-3-Clause */
/* base64 for binary keys (the meta b flag): RFC 4648 alphabet, padded. */
#include "proto/meta/meta_base64.h"

#include <stdint.h>

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t meta_base64_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = B64[v >> 18];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = B64[(v >> 6) & 63];
        out[o++] = B64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = B64[v >> 18];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = B64[v >> 18];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = B64[(v >> 6) & 63];
        out[o++] = '=';
    }
    return o;
}

/* 0..63 for the alphabet, 0 for '=' (padding reads as zero bits), -1 for
 * anything else. */
static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    if (c == '=')
        return 0;
    return -1;
}

/* memcached's decoder rules, so a malformed key means the same item on both
 * servers: characters outside the alphabet are skipped; the rest must come
 * in whole groups of four; decoding stops after the first group holding
 * padding, which drops one or two bytes (three or four '=' is an error). */
size_t meta_base64_decode(const char *in, size_t n, unsigned char *out, size_t outmax)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += b64_value(in[i]) >= 0;
    if (count == 0 || count % 4 != 0)
        return 0;

    size_t o = 0, got = 0, pad = 0;
    int block[4];
    for (size_t i = 0; i < n; i++) {
        int v = b64_value(in[i]);
        if (v < 0)
            continue;
        pad += in[i] == '=';
        block[got++] = v;
        if (got < 4)
            continue;
        got = 0;
        if (o + 3 > outmax)
            return 0;
        out[o++] = (unsigned char)(block[0] << 2 | block[1] >> 4);
        out[o++] = (unsigned char)(block[1] << 4 | block[2] >> 2);
        out[o++] = (unsigned char)(block[2] << 6 | block[3]);
        if (pad) {
            if (pad > 2)
                return 0;
            o -= pad;
            break;
        }
    }
    return o;
}

bool meta_base64_key_plain(const char *key, size_t nkey)
{
    for (size_t i = 0; i < nkey; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c <= ' ' || c >= 0x7f)
            return false;
    }
    return true;
}
