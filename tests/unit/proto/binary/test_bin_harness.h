/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the binary protocol's unit tests: a session over a real store,
 * request builders and a response reader. No sockets: bytes go through
 * proto_process (and the sink, as a connection would use it) and the reply
 * queue is drained into a buffer. */
#ifndef NODELAY_TEST_BIN_HARNESS_H
#define NODELAY_TEST_BIN_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "reply/reply.h"
#include "proto/binary/binary.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "stats/stats.h"
#include "store/store.h"

struct th {
    struct store *store;
    struct store_ctx *ctx;
    struct settings settings;
    struct options opt; /* from settings, as main.c makes them */
    struct stats_thread stats;
    struct session s;
    bool closed;
    /* what the "client" has sent but the protocol has not consumed */
    char *in;
    size_t nin, capin;
    /* what the "client" has received */
    unsigned char *out;
    size_t nout, capout;
};

struct th_resp {
    uint8_t magic, opcode, extlen;
    uint16_t keylen, status;
    uint32_t bodylen, opaque;
    uint64_t cas;
    const unsigned char *ext, *key, *value;
    size_t nvalue;
};

static inline void th_grow(void **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need)
        ncap *= 2;
    *p = realloc(*p, ncap);
    if (!*p)
        abort();
    *cap = ncap;
}

static inline void th_drain(struct th *t)
{
    struct iovec iov[64];
    while (reply_pending(&t->s.reply) > 0) {
        int n = reply_iov(&t->s.reply, iov, 64);
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            th_grow((void **)&t->out, &t->capout, t->nout + iov[i].iov_len);
            memcpy(t->out + t->nout, iov[i].iov_base, iov[i].iov_len);
            t->nout += iov[i].iov_len;
            total += iov[i].iov_len;
        }
        reply_consume(&t->s.reply, total);
    }
}

/* Settings for a binary session; tweak t->settings, then th_session(). */
static inline struct th *th_create(void)
{
    struct th *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    clock_setup();
    settings_defaults(&t->settings);
    t->settings.binding_protocol = "binary";
    return t;
}

/* (Re)start: a fresh store made from t->settings, and a fresh session. */
static inline void th_session(struct th *t)
{
    if (t->store) {
        proto_release(&t->s);
        store_ctx_destroy(&t->ctx);
        store_destroy(&t->store);
    }
    struct store_options opt = {
        .mem_limit = 8u << 20,
        .item_size_max = t->settings.item_size_max,
        .evictions = t->settings.evictions,
        .cas_enabled = t->settings.cas_enabled,
    };
    if (store_create(&t->store, &opt) != 0)
        abort();
    t->ctx = store_ctx_create(t->store);
    if (!t->ctx)
        abort();
    options_from_settings(&t->settings, &t->opt);
    session_init(&t->s, t->ctx, &t->stats, &t->opt.proto, settings_runtime_of(&t->settings));
    t->closed = false;
    t->nin = 0;
    t->nout = 0;
}

static inline void th_destroy(struct th *t)
{
    proto_release(&t->s);
    store_ctx_destroy(&t->ctx);
    store_destroy(&t->store);
    free(t->in);
    free(t->out);
    free(t);
}

/* Send bytes in pieces of at most `step` (0 = all at once), as reads would
 * deliver them; the sink is used whenever the protocol offers one. */
static inline void th_send_step(struct th *t, const void *data, size_t len, size_t step)
{
    const char *p = data;
    size_t off = 0;
    while (!t->closed && (off < len || t->nin > 0)) {
        size_t chunk = len - off;
        if (step && chunk > step)
            chunk = step;
        if (t->s.sink_len > 0 && chunk > 0) {
            size_t n = chunk < t->s.sink_len ? chunk : t->s.sink_len;
            memcpy(t->s.sink, p + off, n);
            off += n;
            proto_sink_filled(&t->s, n);
            th_drain(t);
            continue;
        }
        th_grow((void **)&t->in, &t->capin, t->nin + chunk + 1);
        memcpy(t->in + t->nin, p + off, chunk);
        t->nin += chunk;
        off += chunk;
        size_t consumed = 0;
        enum proto_status st = proto_process(&t->s, t->in, t->nin, &consumed);
        memmove(t->in, t->in + consumed, t->nin - consumed);
        t->nin -= consumed;
        th_drain(t);
        if (st == PROTO_CLOSE)
            t->closed = true;
        else if (st == PROTO_OK && chunk == 0)
            break;
    }
}

static inline void th_send(struct th *t, const void *data, size_t len)
{
    th_send_step(t, data, len, 0);
}

/* Build a request into buf; returns its length. */
static inline size_t th_req(unsigned char *buf, uint8_t op, const void *ext, uint8_t extlen,
                            const char *key, const void *val, size_t nval, uint64_t cas)
{
    size_t nkey = key ? strlen(key) : 0;
    memset(buf, 0, BIN_HEADER_LEN);
    buf[0] = BIN_MAGIC_REQ;
    buf[1] = op;
    bin_store16(buf + 2, (uint16_t)nkey);
    buf[4] = extlen;
    bin_store32(buf + 8, (uint32_t)(extlen + nkey + nval));
    memcpy(buf + 12, "\xde\xad\xbe\xef", 4);
    bin_store64(buf + 16, cas);
    size_t off = BIN_HEADER_LEN;
    if (extlen)
        memcpy(buf + off, ext, extlen);
    off += extlen;
    if (nkey)
        memcpy(buf + off, key, nkey);
    off += nkey;
    if (nval)
        memcpy(buf + off, val, nval);
    return off + nval;
}

/* A raw header with arbitrary lengths (for malformed requests). */
static inline size_t th_raw(unsigned char *buf, uint8_t magic, uint8_t op, uint16_t keylen,
                            uint8_t extlen, uint32_t bodylen)
{
    memset(buf, 0, BIN_HEADER_LEN);
    buf[0] = magic;
    buf[1] = op;
    bin_store16(buf + 2, keylen);
    buf[4] = extlen;
    bin_store32(buf + 8, bodylen);
    return BIN_HEADER_LEN;
}

/* Send one request built from these parts. */
static inline void th_do(struct th *t, uint8_t op, const void *ext, uint8_t extlen,
                         const char *key, const void *val, size_t nval, uint64_t cas)
{
    unsigned char *buf = malloc(BIN_HEADER_LEN + extlen + 256 + nval);
    if (!buf)
        abort();
    size_t n = th_req(buf, op, ext, extlen, key, val, nval, cas);
    th_send(t, buf, n);
    free(buf);
}

static inline void th_set(struct th *t, uint8_t op, const char *key, const char *val,
                          uint32_t flags, uint32_t exptime, uint64_t cas)
{
    unsigned char ext[8];
    bin_store32(ext, flags);
    bin_store32(ext + 4, exptime);
    th_do(t, op, ext, 8, key, val, strlen(val), cas);
}

static inline void th_arith(struct th *t, uint8_t op, const char *key, uint64_t delta,
                            uint64_t initial, uint32_t exptime, uint64_t cas)
{
    unsigned char ext[20];
    bin_store64(ext, delta);
    bin_store64(ext + 8, initial);
    bin_store32(ext + 16, exptime);
    th_do(t, op, ext, 20, key, NULL, 0, cas);
}

/* Take the next response from what was received; false when none is whole. */
static inline bool th_next(struct th *t, size_t *pos, struct th_resp *r)
{
    if (t->nout - *pos < BIN_HEADER_LEN)
        return false;
    const unsigned char *p = t->out + *pos;
    r->magic = p[0];
    r->opcode = p[1];
    r->keylen = (uint16_t)(p[2] << 8 | p[3]);
    r->extlen = p[4];
    r->status = (uint16_t)(p[6] << 8 | p[7]);
    r->bodylen = bin_load32(p + 8);
    memcpy(&r->opaque, p + 12, 4);
    r->cas = bin_load64(p + 16);
    if (t->nout - *pos < BIN_HEADER_LEN + (size_t)r->bodylen)
        return false;
    r->ext = p + BIN_HEADER_LEN;
    r->key = r->ext + r->extlen;
    r->value = r->key + r->keylen;
    r->nvalue = r->bodylen - r->extlen - r->keylen;
    *pos += BIN_HEADER_LEN + r->bodylen;
    return true;
}

/* Forget what was received so far. */
static inline void th_clear(struct th *t)
{
    t->nout = 0;
}

#endif
