/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: the resumable request loop.
 *
 * Each call consumes whole requests (header + extras + key) and any value
 * bytes that have arrived; a value is received straight into its reserved
 * item memory (or into the SASL buffer, or discarded), and when the buffered
 * bytes run out the rest is offered to the connection as s->sink so it can
 * read there directly. */
#include "proto/binary/binary.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "proto/proto.h"
#include "proto/proto_flash.h"
#include "proto/session.h"
#include "stats/stats.h"
#include "stats/stats_hist.h"

static void bin_recv_done(struct session *s)
{
    struct bin_state *st = bin_of(s);
    enum bin_recv what = st->recv;
    st->recv = BIN_RECV_NONE;
    s->sink = NULL;
    s->sink_len = 0;
    if (what == BIN_RECV_STORE)
        bin_update_complete(s);
    else if (what == BIN_RECV_SASL)
        bin_sasl_complete(s);
    if (st->timing_start) {
        metrics_hist_record((enum metrics_family)st->timing_family,
                            metrics_now_ns() - st->timing_start);
        st->timing_start = 0;
    }
}

/* The histogram family of a request, as the text commands' (metrics_family_of). */
static enum metrics_family bin_family(const struct bin_header *h, enum bin_kind kind)
{
    switch (kind) {
    case BIN_KIND_GET:
        return METRICS_GET;
    case BIN_KIND_TOUCH: {
        bool quiet;
        /* touch is "other" in text; gat is a get */
        return bin_opcode_base(h->opcode, &quiet) == BIN_OP_TOUCH ? METRICS_OTHER : METRICS_GET;
    }
    case BIN_KIND_UPDATE:
    case BIN_KIND_APPEND:
        return METRICS_SET;
    case BIN_KIND_DELETE:
        return METRICS_DELETE;
    case BIN_KIND_ARITH:
        return METRICS_ARITH;
    default:
        return METRICS_OTHER;
    }
}

/* Take value bytes from p; returns how many were used. */
static size_t bin_recv_feed(struct session *s, const char *p, size_t avail)
{
    struct bin_state *st = bin_of(s);
    size_t want = st->need - st->filled;
    size_t n = avail < want ? avail : want;
    /* an upload cut off for others: drop the rest, the commit refuses it */
    if (st->recv == BIN_RECV_STORE && st->res.value)
        store_upload_alive(s->store, &st->res, n > 0);
    if (n > 0) {
        if (st->recv == BIN_RECV_STORE && st->res.value)
            memcpy(st->res.value + st->filled, p, n);
        else if (st->recv == BIN_RECV_SASL && !st->sasl_overflow)
            memcpy(st->sasl_data + st->filled, p, n);
        st->filled += n;
    }
    if (st->filled == st->need) {
        bin_recv_done(s);
    } else if (st->recv == BIN_RECV_STORE && st->res.value) {
        /* The rest may be read straight into item memory. */
        s->sink = st->res.value + st->filled;
        s->sink_len = st->need - st->filled;
    }
    return n;
}

void bin_sink_filled(struct session *s, size_t n)
{
    struct bin_state *st = bin_of(s);
    if (st->recv != BIN_RECV_STORE || n > s->sink_len)
        return;
    st->filled += n;
    s->sink += n;
    s->sink_len -= n;
    if (st->res.value && !store_upload_alive(s->store, &st->res, n > 0)) {
        s->sink = NULL; /* cut off: its memory is gone, drop the rest */
        s->sink_len = 0;
    }
    if (st->filled == st->need)
        bin_recv_done(s);
}

void bin_tick(struct session *s)
{
    struct bin_state *st = bin_of(s);
    if (st->recv == BIN_RECV_STORE && st->res.value &&
        !store_upload_alive(s->store, &st->res, false)) {
        s->sink = NULL;
        s->sink_len = 0;
    }
}

/* A request that ends the connection: reply, then close. */
static enum proto_status bin_fatal(struct session *s, const struct bin_header *h,
                                   uint16_t status)
{
    bin_reply_error(s, h->opcode, h->opaque, status);
    log_info("binary protocol error (opcode %02x), closing connection", h->opcode);
    return PROTO_CLOSE;
}

static bool bin_allowed_unauthenticated(uint8_t opcode)
{
    return opcode == BIN_OP_SASL_LIST_MECHS || opcode == BIN_OP_SASL_AUTH ||
           opcode == BIN_OP_SASL_STEP || opcode == BIN_OP_VERSION;
}

/* Flash (proto_flash.h): probe the key of a request that needs the key's
 * item (a set only with a CAS to check), before it has any effect. */
static enum store_probe bin_flash_probe(struct session *s, const struct bin_header *h,
                                        const unsigned char *p)
{
    bool quiet;
    switch (bin_classify(h)) {
    case BIN_KIND_UPDATE:
        if (h->cas == 0 && bin_opcode_base(h->opcode, &quiet) == BIN_OP_SET)
            return STORE_PROBE_READY; /* replaces what was there unseen */
        break;
    case BIN_KIND_GET:
    case BIN_KIND_TOUCH:
    case BIN_KIND_APPEND:
    case BIN_KIND_DELETE:
    case BIN_KIND_ARITH:
        break;
    default:
        return STORE_PROBE_READY;
    }
    return proto_flash_probe(s, (const char *)p + BIN_HEADER_LEN + h->extlen, h->keylen);
}

/* Requests probed ahead of one that waits, at most: the store brings what
 * it reads back into RAM, where a long batch's later reads could push out
 * its first ones before they run (the first waits again, or misses). */
#define BIN_FLASH_AHEAD 32

/* The request at p[0..avail) waits: probe the keys of the gets pipelined
 * after it (a run of GETKQs is the binary multiget), up to the first
 * other request or incomplete one, so that their reads go out with its
 * own. */
static void bin_flash_ahead(struct session *s, const unsigned char *p, size_t avail)
{
    struct bin_header h;
    bin_header_decode(p, &h);
    size_t off = (size_t)BIN_HEADER_LEN + h.bodylen;
    for (int n = 0; n < BIN_FLASH_AHEAD && off < avail && avail - off >= BIN_HEADER_LEN; n++) {
        bin_header_decode(p + off, &h);
        size_t whole = (size_t)BIN_HEADER_LEN + h.bodylen;
        if (h.magic != BIN_MAGIC_REQ || bin_lengths_inconsistent(&h) ||
            h.keylen > STORE_KEY_MAX || avail - off < whole || bin_classify(&h) != BIN_KIND_GET)
            return;
        proto_flash_probe(s, (const char *)p + off + BIN_HEADER_LEN + h.extlen, h.keylen);
        off += whole;
    }
}

/* One request at p. *used = 0 with PROTO_OK means more bytes are needed;
 * with PROTO_WAIT, it waits for flash. */
static enum proto_status bin_request(struct session *s, const unsigned char *p, size_t avail,
                                     size_t *used, bool flash)
{
    struct bin_header h;
    bin_header_decode(p, &h);
    *used = 0;

    /* The checks that close the connection need only the header, so a
     * hostile length never makes us wait for (or buffer) its bytes. */
    uint16_t refuse = 0;
    if (h.magic != BIN_MAGIC_REQ)
        ;
    else if (bin_lengths_inconsistent(&h))
        refuse = BIN_STATUS_UNKNOWN_COMMAND;
    else if (s->opt->sasl && !bin_of(s)->sasl_authed && !bin_allowed_unauthenticated(h.opcode))
        refuse = BIN_STATUS_AUTH_ERROR;
    else if (h.keylen > STORE_KEY_MAX)
        refuse = BIN_STATUS_EINVAL;
    size_t head = (size_t)BIN_HEADER_LEN + h.extlen + h.keylen;
    bool closing = h.magic != BIN_MAGIC_REQ || refuse;
    if (!closing && avail < head)
        return PROTO_OK;
    if (flash && !closing && bin_flash_probe(s, &h, p) == STORE_PROBE_WAIT) {
        if (avail >= (size_t)BIN_HEADER_LEN + h.bodylen)
            bin_flash_ahead(s, p, avail);
        return PROTO_WAIT;
    }
    /* once per request, as memcached dumps each header it reads */
    if (LOG_ENABLED(LOG_LEVEL_VERBOSE)) {
        bin_log_header(s->cfd, false, p);
        /* memcached asks this of every command under -S, once the lengths
         * are consistent (dispatch_bin_command) */
        if (s->opt->sasl && h.magic == BIN_MAGIC_REQ && !bin_lengths_inconsistent(&h))
            log_write(LOG_LEVEL_VERBOSE, "authenticated() in cmd 0x%02x is %s", h.opcode,
                      bin_of(s)->sasl_authed || bin_allowed_unauthenticated(h.opcode) ? "true"
                                                                                 : "false");
    }
    if (h.magic != BIN_MAGIC_REQ) {
        log_info("invalid binary magic %02x, closing connection", h.magic);
        return PROTO_CLOSE;
    }
    if (refuse)
        return bin_fatal(s, &h, refuse);
    *used = head;
    bin_of(s)->avail = avail - head;

    enum bin_kind kind = bin_classify(&h);
    if (kind == BIN_KIND_INVALID)
        return bin_fatal(s, &h, BIN_STATUS_EINVAL);
    const unsigned char *ext = p + BIN_HEADER_LEN;
    const char *key = (const char *)p + BIN_HEADER_LEN + h.extlen;
    if (LOG_ENABLED(LOG_LEVEL_VERBOSE)) {
        bool quiet;
        bin_log_command(s->cfd, bin_opcode_base(h.opcode, &quiet), key, h.keylen, ext,
                        bin_value_len(&h));
    }
    if (!metrics_timing())
        return bin_exec(s, &h, kind, ext, key);
    /* Service time (stats/stats_hist.h), to the reply queued: for a store,
     * when its value has arrived (bin_recv_done). */
    uint64_t t0 = metrics_now_ns();
    enum proto_status rc = bin_exec(s, &h, kind, ext, key);
    enum metrics_family f = bin_family(&h, kind);
    if (bin_of(s)->recv == BIN_RECV_STORE) {
        bin_of(s)->timing_start = t0;
        bin_of(s)->timing_family = (uint8_t)f;
    } else {
        metrics_hist_record(f, metrics_now_ns() - t0);
    }
    return rc;
}

/* bin_process, made twice as text_process is: no flash code runs without
 * a flash tier. */
static inline __attribute__((always_inline)) enum proto_status
bin_run(struct session *s, const char *buf, size_t len, size_t *consumed, const bool flash)
{
    struct bin_state *st = bin_of(s);
    int budget = s->opt->reqs_per_event;
    int done = 0;
    size_t off = 0;
    enum proto_status rc = PROTO_OK;

    s->sink = NULL;
    s->sink_len = 0;
    for (;;) {
        if (st->failed) {
            /* a finished value's reply could not be queued, or SASL
             * guessing was cut off (bin_sasl.c) */
            rc = PROTO_CLOSE;
            break;
        }
        if (st->recv != BIN_RECV_NONE) {
            off += bin_recv_feed(s, buf + off, len - off);
            if (st->recv != BIN_RECV_NONE)
                break; /* the value is still arriving */
            if (flash)
                session_flash_done(s);
            continue;
        }
        if (len - off < BIN_HEADER_LEN)
            break;
        if (budget > 0 && done >= budget) {
            rc = PROTO_YIELD;
            break;
        }
        /* Owing more than the connection allows: the rest waits until the
         * queue drains (a run of GETQs is a multiget, paused the same way). */
        if (reply_pending(&s->reply) > s->reply_allow) {
            rc = PROTO_PAUSE;
            break;
        }
        size_t used;
        rc = bin_request(s, (const unsigned char *)buf + off, len - off, &used, flash);
        off += used;
        if (rc != PROTO_OK || used == 0)
            break;
        if (flash && st->recv == BIN_RECV_NONE)
            session_flash_done(s);
        done++;
    }
    *consumed = off;
    return rc;
}

enum proto_status bin_process(struct session *s, const char *buf, size_t len,
                              size_t *consumed)
{
    return s->flash ? bin_run(s, buf, len, consumed, true) : bin_run(s, buf, len, consumed, false);
}

void bin_state_release(struct session *s)
{
    struct bin_state *st = bin_of(s);
    if (st->recv == BIN_RECV_STORE)
        store_abort(s->store, &st->res);
    st->recv = BIN_RECV_NONE;
    free(st->sasl_data);
    st->sasl_data = NULL;
}
