/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire.h"

#include "keyspace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_buf_reserve(struct lg_buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

void lg_buf_release(struct lg_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- binary header ---- */

enum { BIN_GET = 0x00, BIN_SET = 0x01, BIN_DELETE = 0x04, BIN_NOOP = 0x0a, BIN_GETKQ = 0x0d };

static void bin_header(char *h, uint8_t opcode, uint16_t keylen, uint8_t extlen,
                       uint32_t bodylen)
{
    memset(h, 0, 24);
    h[0] = (char)0x80;
    h[1] = (char)opcode;
    h[2] = (char)(keylen >> 8);
    h[3] = (char)keylen;
    h[4] = (char)extlen;
    h[8] = (char)(bodylen >> 24);
    h[9] = (char)(bodylen >> 16);
    h[10] = (char)(bodylen >> 8);
    h[11] = (char)bodylen;
}

static uint32_t be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static uint16_t be16(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint16_t)(u[0] << 8 | u[1]);
}

static void put_be32(char *p, uint32_t x)
{
    p[0] = (char)(x >> 24);
    p[1] = (char)(x >> 16);
    p[2] = (char)(x >> 8);
    p[3] = (char)x;
}

/* ---- encoders ---- */

int lg_wire_get(struct lg_buf *b, enum lg_proto p, const char *keys, unsigned nkeys)
{
    if (lg_buf_reserve(b, (size_t)nkeys * (LG_KEY_LEN + 32) + 32) != 0)
        return -1;
    char *o = b->p + b->len;
    if (p == LG_TEXT) {
        memcpy(o, "get", 3);
        o += 3;
        for (unsigned i = 0; i < nkeys; i++) {
            *o++ = ' ';
            memcpy(o, keys + (size_t)i * LG_KEY_LEN, LG_KEY_LEN);
            o += LG_KEY_LEN;
        }
        *o++ = '\r';
        *o++ = '\n';
    } else if (p == LG_META) {
        for (unsigned i = 0; i < nkeys; i++) {
            memcpy(o, "mg ", 3);
            memcpy(o + 3, keys + (size_t)i * LG_KEY_LEN, LG_KEY_LEN);
            memcpy(o + 3 + LG_KEY_LEN, " v\r\n", 4);
            o += 7 + LG_KEY_LEN;
        }
    } else if (nkeys == 1) {
        bin_header(o, BIN_GET, LG_KEY_LEN, 0, LG_KEY_LEN);
        memcpy(o + 24, keys, LG_KEY_LEN);
        o += 24 + LG_KEY_LEN;
    } else {
        for (unsigned i = 0; i < nkeys; i++) {
            bin_header(o, BIN_GETKQ, LG_KEY_LEN, 0, LG_KEY_LEN);
            memcpy(o + 24, keys + (size_t)i * LG_KEY_LEN, LG_KEY_LEN);
            o += 24 + LG_KEY_LEN;
        }
        bin_header(o, BIN_NOOP, 0, 0, 0);
        o += 24;
    }
    b->len = (size_t)(o - b->p);
    return 0;
}

int lg_wire_set(struct lg_buf *b, enum lg_proto p, const char *key, uint32_t vlen,
                uint32_t ttl, char **value_at)
{
    if (lg_buf_reserve(b, (size_t)vlen + LG_KEY_LEN + 64) != 0)
        return -1;
    char *o = b->p + b->len;
    if (p == LG_BINARY) {
        bin_header(o, BIN_SET, LG_KEY_LEN, 8, 8 + LG_KEY_LEN + vlen);
        memset(o + 24, 0, 8);
        put_be32(o + 28, ttl);
        memcpy(o + 32, key, LG_KEY_LEN);
        *value_at = o + 32 + LG_KEY_LEN;
        b->len += 32 + LG_KEY_LEN + vlen;
        return 0;
    }
    int n;
    if (p == LG_TEXT)
        n = sprintf(o, "set %.*s 0 %u %u\r\n", LG_KEY_LEN, key, ttl, vlen);
    else if (ttl)
        n = sprintf(o, "ms %.*s %u T%u\r\n", LG_KEY_LEN, key, vlen, ttl);
    else
        n = sprintf(o, "ms %.*s %u\r\n", LG_KEY_LEN, key, vlen);
    *value_at = o + n;
    o[n + vlen] = '\r';
    o[n + vlen + 1] = '\n';
    b->len += (size_t)n + vlen + 2;
    return 0;
}

int lg_wire_delete(struct lg_buf *b, enum lg_proto p, const char *key)
{
    if (lg_buf_reserve(b, LG_KEY_LEN + 32) != 0)
        return -1;
    char *o = b->p + b->len;
    if (p == LG_BINARY) {
        bin_header(o, BIN_DELETE, LG_KEY_LEN, 0, LG_KEY_LEN);
        memcpy(o + 24, key, LG_KEY_LEN);
        b->len += 24 + LG_KEY_LEN;
    } else {
        int n = sprintf(o, "%s %.*s\r\n", p == LG_TEXT ? "delete" : "md", LG_KEY_LEN, key);
        b->len += (size_t)n;
    }
    return 0;
}

/* ---- parsers ---- */

static const char *find_eol(const char *s, size_t len)
{
    if (len == 0)
        return NULL; /* s may be an empty buffer's NULL: memchr must not see it */
    const char *nl = memchr(s, '\n', len);
    if (!nl || nl == s || nl[-1] != '\r')
        return nl ? (const char *)-1 : NULL;
    return nl - 1;
}

static int line_is(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    return n == w && memcmp(s, word, w) == 0;
}

static int line_starts(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    return n >= w && memcmp(s, word, w) == 0;
}

static enum lg_status error_line(const char *s, size_t n)
{
    if (line_starts(s, n, "SERVER_ERROR"))
        return LG_ST_SERVER_ERROR;
    return LG_ST_ERROR;
}

static int is_error_line(const char *s, size_t n)
{
    return line_is(s, n, "ERROR") || line_starts(s, n, "CLIENT_ERROR") ||
           line_starts(s, n, "SERVER_ERROR");
}

static long parse_text_get(const char *buf, size_t len, struct lg_reply *out)
{
    size_t at = 0;
    out->status = LG_ST_OK;
    for (;;) {
        const char *eol = find_eol(buf + at, len - at);
        if (!eol)
            return 0;
        if (eol == (const char *)-1)
            return -1;
        const char *s = buf + at;
        size_t n = (size_t)(eol - s);
        if (line_is(s, n, "END"))
            return (long)(at + n + 2);
        if (is_error_line(s, n)) {
            out->status = error_line(s, n);
            return (long)(at + n + 2);
        }
        if (!line_starts(s, n, "VALUE "))
            return -1;
        /* VALUE <key> <flags> <bytes> [<cas>] */
        const char *k = s + 6;
        const char *sp = memchr(k, ' ', n - 6);
        if (!sp)
            return -1;
        char tmp[64];
        size_t rest = n - (size_t)(sp + 1 - s);
        if (rest >= sizeof(tmp))
            return -1;
        memcpy(tmp, sp + 1, rest);
        tmp[rest] = 0;
        unsigned long flags, bytes;
        if (sscanf(tmp, "%lu %lu", &flags, &bytes) != 2)
            return -1;
        size_t need = at + n + 2 + bytes + 2;
        if (len < need)
            return 0;
        const char *data = s + n + 2;
        if (data[bytes] != '\r' || data[bytes + 1] != '\n')
            return -1;
        if (out->nhits < LG_MAX_MULTI) {
            struct lg_hit *h = &out->hits[out->nhits++];
            h->key = k;
            h->keylen = (size_t)(sp - k);
            h->data = data;
            h->len = bytes;
            h->pos = -1;
        }
        at = need;
    }
}

static long parse_text_simple(enum lg_op op, const char *buf, size_t len, struct lg_reply *out)
{
    const char *eol = find_eol(buf, len);
    if (!eol)
        return 0;
    if (eol == (const char *)-1)
        return -1;
    size_t n = (size_t)(eol - buf);
    if (op == LG_OP_SET && line_is(buf, n, "STORED"))
        out->status = LG_ST_OK;
    else if (op == LG_OP_SET && line_is(buf, n, "NOT_STORED"))
        out->status = LG_ST_NOT_STORED;
    else if (op == LG_OP_DELETE && line_is(buf, n, "DELETED"))
        out->status = LG_ST_OK;
    else if (op == LG_OP_DELETE && line_is(buf, n, "NOT_FOUND"))
        out->status = LG_ST_MISS;
    else if (is_error_line(buf, n))
        out->status = error_line(buf, n);
    else
        return -1;
    return (long)(n + 2);
}

static long parse_meta(enum lg_op op, unsigned nkeys, const char *buf, size_t len,
                       struct lg_reply *out)
{
    size_t at = 0;
    out->status = LG_ST_OK;
    unsigned count = op == LG_OP_GET ? nkeys : 1;
    for (unsigned i = 0; i < count; i++) {
        const char *eol = find_eol(buf + at, len - at);
        if (!eol)
            return 0;
        if (eol == (const char *)-1)
            return -1;
        const char *s = buf + at;
        size_t n = (size_t)(eol - s);
        size_t next = at + n + 2;
        if (is_error_line(s, n)) {
            out->status = error_line(s, n);
        } else if (op == LG_OP_GET && line_starts(s, n, "VA ")) {
            unsigned long bytes = strtoul(s + 3, NULL, 10);
            if (len < next + bytes + 2)
                return 0;
            const char *data = buf + next;
            if (data[bytes] != '\r' || data[bytes + 1] != '\n')
                return -1;
            if (out->nhits < LG_MAX_MULTI) {
                struct lg_hit *h = &out->hits[out->nhits++];
                h->key = NULL;
                h->keylen = 0;
                h->data = data;
                h->len = bytes;
                h->pos = (int)i;
            }
            next += bytes + 2;
        } else if (op == LG_OP_GET && line_is(s, n, "EN")) {
            /* miss */
        } else if (op != LG_OP_GET && line_is(s, n, "HD")) {
            out->status = LG_ST_OK;
        } else if (op == LG_OP_SET && line_is(s, n, "NS")) {
            out->status = LG_ST_NOT_STORED;
        } else if (op == LG_OP_DELETE && line_is(s, n, "NF")) {
            out->status = LG_ST_MISS;
        } else {
            return -1;
        }
        at = next;
    }
    return (long)at;
}

static long parse_binary(enum lg_op op, unsigned nkeys, const char *buf, size_t len,
                         struct lg_reply *out)
{
    size_t at = 0;
    out->status = LG_ST_OK;
    for (;;) {
        if (len - at < 24)
            return 0;
        const char *h = buf + at;
        if ((unsigned char)h[0] != 0x81)
            return -1;
        uint8_t opcode = (uint8_t)h[1];
        uint16_t keylen = be16(h + 2);
        uint8_t extlen = (uint8_t)h[4];
        uint16_t status = be16(h + 6);
        uint32_t bodylen = be32(h + 8);
        if ((uint32_t)keylen + extlen > bodylen)
            return -1;
        if (len - at < 24 + (size_t)bodylen)
            return 0;
        size_t next = at + 24 + bodylen;
        int multi = op == LG_OP_GET && nkeys > 1;
        if (status != 0) {
            if (status == 0x01 && op == LG_OP_DELETE)
                out->status = LG_ST_MISS;
            else if (status == 0x01 && op == LG_OP_GET)
                ; /* miss */
            else if (status == 0x05 || status == 0x02)
                out->status = LG_ST_NOT_STORED;
            else if (status == 0x82)
                out->status = LG_ST_SERVER_ERROR;
            else
                out->status = LG_ST_ERROR;
        } else if (op == LG_OP_GET && opcode != BIN_NOOP) {
            if (out->nhits < LG_MAX_MULTI) {
                struct lg_hit *hit = &out->hits[out->nhits++];
                hit->key = keylen ? h + 24 + extlen : NULL;
                hit->keylen = keylen;
                hit->data = h + 24 + extlen + keylen;
                hit->len = bodylen - extlen - keylen;
                hit->pos = multi ? -1 : 0;
            }
        }
        at = next;
        /* A quiet multiget ends with the NOOP's reply; an error on the NOOP
         * path (server closed) is caught by the caller. */
        if (!multi || opcode == BIN_NOOP)
            return (long)at;
    }
}

long lg_wire_parse(enum lg_proto p, enum lg_op op, unsigned nkeys, const char *buf,
                   size_t len, struct lg_reply *out)
{
    out->nhits = 0;
    switch (p) {
    case LG_TEXT:
        return op == LG_OP_GET ? parse_text_get(buf, len, out)
                               : parse_text_simple(op, buf, len, out);
    case LG_META:
        return parse_meta(op, nkeys, buf, len, out);
    case LG_BINARY:
        return parse_binary(op, nkeys, buf, len, out);
    default:
        return -1;
    }
}
