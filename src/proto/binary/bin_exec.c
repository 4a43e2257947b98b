/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: the opcodes, run against the store.
 *
 * Replies follow memcached's proto_bin.c: errors are always sent, even for a
 * quiet opcode; a quiet opcode's success is not; GETQ/GETKQ/GATQ/GATKQ are
 * silent on a miss but answer a hit. */
#include "proto/binary/binary.h"

#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "reply/reply.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "settings/settings_run.h"
#include "stats/stats.h"
#include "base/version.h"
#include "proto/watch_note.h"

/* `stats detail on|off` flips this while workers run. */
static bool bin_detail_enabled(const struct session *s)
{
    return SETTINGS_RUN_GET(s->run, detail_enabled);
}

static struct bin_resp bin_resp_ok(const struct bin_header *h, uint64_t cas)
{
    struct bin_resp r = {.opcode = h->opcode, .status = BIN_STATUS_OK, .opaque = h->opaque,
                         .cas = cas};
    return r;
}

/* Out of memory while composing: nothing sensible can be sent, so end the
 * connection rather than leave the client waiting for a reply. */
static enum proto_status bin_result(int rc)
{
    return rc == 0 ? PROTO_OK : PROTO_CLOSE;
}

static enum proto_status bin_error(struct session *s, const struct bin_header *h,
                                   uint16_t status)
{
    return bin_result(bin_reply_error(s, h->opcode, h->opaque, status));
}

/* ENOMEM with memcached's own wording for where memory ran out. */
static enum proto_status bin_enomem(struct session *s, const struct bin_header *h,
                                    const char *text)
{
    struct bin_resp r = {.opcode = h->opcode, .status = BIN_STATUS_ENOMEM, .opaque = h->opaque};
    return bin_result(
        bin_reply(s, &r, NULL, 0, NULL, 0, text, (uint32_t)strlen(text)));
}

/* A success with an optional body, unless the opcode is quiet. */
static enum proto_status bin_success(struct session *s, const struct bin_header *h, bool quiet,
                                     uint64_t cas, const void *body, uint32_t bodylen)
{
    if (quiet)
        return PROTO_OK;
    struct bin_resp r = bin_resp_ok(h, cas);
    return bin_result(bin_reply(s, &r, NULL, 0, NULL, 0, body, bodylen));
}

/* GET GETQ GETK GETKQ TOUCH GAT GATQ GATK GATKQ */
static enum proto_status bin_get(struct session *s, const struct bin_header *h, uint8_t op,
                                 bool quiet, const unsigned char *ext, const char *key)
{
    bool touch = op == BIN_OP_TOUCH || op == BIN_OP_GAT || op == BIN_OP_GATK;
    bool with_key = op == BIN_OP_GETK || op == BIN_OP_GATK;
    bool with_value = op != BIN_OP_TOUCH;
    struct store_get_req req = {.want_value = with_value};
    if (touch) {
        req.touch = true;
        req.exptime = clock_exptime((int64_t)bin_load32(ext));
    }
    struct store_item it;
    enum store_status st = store_get(s->store, key, h->keylen, &req, &it);
    if (st == STORE_NO_MEMORY) /* the TTL found no room (-M, full): as a write */
        return bin_enomem(s, h, "Out of memory allocating item");
    bool hit = st == STORE_OK;
    if (watch_active(WATCH_LOOKUPS))
        watch_note_get(s, key, h->keylen, st, &it);

    stats_count_fetch(s->stats, touch, hit, it.class_id, it.lru);
    if (bin_detail_enabled(s))
        session_stats_detail(s, key, h->keylen, 'g', hit);

    if (!hit) {
        if (quiet)
            return PROTO_OK;
        if (!with_key)
            return bin_error(s, h, BIN_STATUS_KEY_ENOENT);
        /* GETK/GATK: the key is the body, without the usual text. */
        struct bin_resp r = {.opcode = h->opcode, .status = BIN_STATUS_KEY_ENOENT,
                             .opaque = h->opaque};
        return bin_result(bin_reply(s, &r, NULL, 0, key, h->keylen, NULL, 0));
    }

    uint32_t nvalue = with_value ? it.nvalue : 0;
    uint16_t nkey = with_key ? h->keylen : 0;
    unsigned char head[BIN_HEADER_LEN + 4 + STORE_KEY_MAX];
    struct bin_resp r = bin_resp_ok(h, it.cas);
    bin_header_encode(head, &r, nkey, 4, 4 + (uint32_t)nkey + nvalue);
    if (LOG_ENABLED(LOG_LEVEL_VERBOSE)) {
        /* memcached logs this header before it fills in the CAS */
        unsigned char logged[BIN_HEADER_LEN];
        memcpy(logged, head, BIN_HEADER_LEN);
        memset(logged + 16, 0, 8);
        bin_log_header(s->cfd, true, logged);
    }
    bin_store32(head + BIN_HEADER_LEN, it.flags);
    if (nkey)
        memcpy(head + BIN_HEADER_LEN + 4, key, nkey);
    struct reply_mark mark;
    reply_get_mark(&s->reply, &mark);
    if (reply_copy(&s->reply, head, BIN_HEADER_LEN + 4 + (size_t)nkey) != 0) {
        if (it.pin)
            store_pin_release(it.pin);
        return PROTO_CLOSE;
    }
    if (!with_value) {
        if (it.pin)
            store_pin_release(it.pin);
        return PROTO_OK;
    }
    /* The value leaves from item memory; the queue releases the pin (even
     * when it cannot take it). */
    if (reply_value(&s->reply, it.value, nvalue, it.pin) != 0) {
        reply_rollback(&s->reply, &mark);
        return PROTO_CLOSE;
    }
    return PROTO_OK;
}

/* SET ADD REPLACE APPEND PREPEND (+Q): reserve room (an upload when the value
 * is not all in this read), then receive the value. */
static enum proto_status bin_update_start(struct session *s, const struct bin_header *h,
                                          uint8_t op, bool quiet, const unsigned char *ext,
                                          const char *key)
{
    struct bin_state *st = bin_of(s);
    size_t vlen = bin_value_len(h);
    bool cas = h->cas != 0 && s->opt->cas_enabled;
    struct store_set_req req = {0};

    if (bin_detail_enabled(s))
        session_stats_detail(s, key, h->keylen, 's', false);

    switch (op) {
    case BIN_OP_SET: req.mode = STORE_MODE_SET; break;
    case BIN_OP_ADD: req.mode = STORE_MODE_ADD; break;
    case BIN_OP_REPLACE: req.mode = STORE_MODE_REPLACE; break;
    case BIN_OP_APPEND: req.mode = STORE_MODE_APPEND; break;
    default: req.mode = STORE_MODE_PREPEND; break;
    }
    req.fail_deletes = op == BIN_OP_SET; /* a CAS given or not */
    if (op == BIN_OP_SET || op == BIN_OP_ADD || op == BIN_OP_REPLACE) {
        req.flags = bin_load32(ext);
        req.exptime = clock_exptime((int64_t)bin_load32(ext + 4));
        /* memcached turns any of the three into a CAS when a CAS is given
         * (and ignores it under -C, where items carry none). */
        if (cas) {
            req.mode = STORE_MODE_CAS;
            req.cas_compare = h->cas;
        }
    } else if (cas) {
        req.cas_compare = h->cas;
    }

    /* SET/ADD/REPLACE know the item's flags and expiry up front: the store
     * lays the item out for them (APPEND/PREPEND keep the old item's). */
    bool append = op == BIN_OP_APPEND || op == BIN_OP_PREPEND;
    enum store_status rs = session_reserve_value(s, key, h->keylen, vlen, st->avail, vlen,
                                                 !append, req.flags, req.exptime, &st->res);
    if (rs != STORE_OK) {
        /* A failed set must not leave the old value readable. */
        if (op == BIN_OP_SET)
            store_delete(s->store, key, h->keylen, NULL);
        enum proto_status rc = rs == STORE_TOO_LARGE
                                   ? bin_error(s, h, BIN_STATUS_E2BIG)
                                   : bin_enomem(s, h, "Out of memory allocating item");
        bin_swallow(s, vlen);
        return rc;
    }
    st->hdr = *h;
    st->quiet = quiet;
    st->set_req = req;
    st->recv = BIN_RECV_STORE;
    st->need = vlen;
    st->filled = 0;
    return PROTO_OK;
}

void bin_update_complete(struct session *s)
{
    struct bin_state *st = bin_of(s);
    const struct bin_header *h = &st->hdr;
    uint64_t cas = 0;

    STAT_INC(s->stats, cmd_set);
    struct watch_commit wc = {0};
    if (watch_active(WATCH_LOOKUPS | WATCH_MUTATIONS))
        watch_commit_begin(s, &st->res, &wc);
    enum store_status rs = store_commit(s->store, &st->res, &st->set_req, &cas, NULL);
    unsigned cls = st->res.cls; /* the new item's (the commit says it) */
    STAT_CLS_INC(s->stats, cls, cmd_set);
    if (wc.on)
        watch_commit_end(s, &wc, rs, st->set_req.mode, st->set_req.exptime, cls);
    if (st->set_req.mode == STORE_MODE_CAS) {
        if (rs == STORE_OK) {
            STAT_INC(s->stats, cas_hits);
            STAT_CLS_INC(s->stats, st->res.cas_cls, cas_hits); /* the old item's class */
        } else if (rs == STORE_EXISTS) {
            STAT_INC(s->stats, cas_badval);
            STAT_CLS_INC(s->stats, st->res.cas_cls, cas_badval);
        }
        else if (rs == STORE_MISS)
            STAT_INC(s->stats, cas_misses);
    }

    enum proto_status rc;
    switch (rs) {
    case STORE_OK:
        rc = bin_success(s, h, st->quiet, cas, NULL, 0);
        break;
    case STORE_EXISTS:
        rc = bin_error(s, h, BIN_STATUS_KEY_EEXISTS);
        break;
    case STORE_MISS:
        rc = bin_error(s, h, BIN_STATUS_KEY_ENOENT);
        break;
    case STORE_NO_MEMORY:
        /* a staged value not placed, or cut off: as refused up front; an
         * append whose joined item found no room: memcached's NOT_STORED */
        if (st->set_req.mode == STORE_MODE_APPEND || st->set_req.mode == STORE_MODE_PREPEND)
            rc = bin_error(s, h, BIN_STATUS_NOT_STORED);
        else
            rc = bin_enomem(s, h, "Out of memory allocating item");
        break;
    case STORE_TOO_LARGE:
        rc = bin_error(s, h, BIN_STATUS_E2BIG);
        break;
    default:
        if (st->set_req.mode == STORE_MODE_ADD)
            rc = bin_error(s, h, BIN_STATUS_KEY_EEXISTS);
        else if (st->set_req.mode == STORE_MODE_REPLACE)
            rc = bin_error(s, h, BIN_STATUS_KEY_ENOENT);
        else
            rc = bin_error(s, h, BIN_STATUS_NOT_STORED);
        break;
    }
    if (rc != PROTO_OK)
        st->failed = true;
}

static enum proto_status bin_delete(struct session *s, const struct bin_header *h, bool quiet,
                                    const char *key)
{
    if (bin_detail_enabled(s))
        session_stats_detail(s, key, h->keylen, 'd', false);
    uint8_t cls = 0;
    uint32_t size = 0;
    uint8_t miss = STORE_MISS_ABSENT;
    struct store_delete_req req = {.cas_compare = h->cas, .class_out = &cls, .size_out = &size,
                                   .miss_out = &miss};
    enum store_status ds = store_delete(s->store, key, h->keylen, &req);
    struct watch_seen seen = {0};
    if (watch_active(WATCH_LOOKUPS | WATCH_DELETIONS))
        watch_note_delete_lookup(s, key, h->keylen, ds, cls, size, (enum store_miss)miss,
                                 &seen);
    switch (ds) {
    case STORE_OK:
        if (watch_active(WATCH_DELETIONS))
            watch_note_deleted(key, h->keylen, "delete", &seen);
        STAT_INC(s->stats, delete_hits);
        STAT_CLS_INC(s->stats, cls, delete_hits);
        return bin_success(s, h, quiet, 0, NULL, 0);
    case STORE_EXISTS:
        return bin_error(s, h, BIN_STATUS_KEY_EEXISTS);
    default:
        STAT_INC(s->stats, delete_misses);
        return bin_error(s, h, BIN_STATUS_KEY_ENOENT);
    }
}

/* INCREMENT DECREMENT (+Q). Extras: delta u64, initial u64, exptime u32;
 * exptime 0xffffffff means a miss is not created. */
static enum proto_status bin_arith(struct session *s, const struct bin_header *h, uint8_t op,
                                   bool quiet, const unsigned char *ext, const char *key)
{
    uint32_t exptime = bin_load32(ext + 16);
    struct store_arith_req req = {
        .incr = op == BIN_OP_INCREMENT,
        .delta = bin_load64(ext),
        .create = exptime != 0xffffffffu,
        .initial = bin_load64(ext + 8),
        .create_exptime = clock_exptime((int64_t)exptime),
        .cas_compare = h->cas,
    };
    struct store_arith_res res = {0};
    if (watch_active(WATCH_LOOKUPS))
        watch_peek(s, key, h->keylen, NULL);
    switch (store_arith(s->store, key, h->keylen, &req, &res)) {
    case STORE_OK: {
        if (!res.created)
            stats_count_arith(s->stats, req.incr, true, res.class_id);
        unsigned char body[8];
        bin_store64(body, res.value);
        return bin_success(s, h, quiet, res.cas, body, sizeof body);
    }
    case STORE_MISS:
        stats_count_arith(s->stats, req.incr, false, 0);
        return bin_error(s, h, BIN_STATUS_KEY_ENOENT);
    case STORE_NON_NUMERIC:
        return bin_error(s, h, BIN_STATUS_DELTA_BADVAL);
    case STORE_EXISTS:
        return bin_error(s, h, BIN_STATUS_KEY_EEXISTS);
    case STORE_NOT_STORED:
        return bin_error(s, h, BIN_STATUS_NOT_STORED);
    default: {
        /* memcached words it by whether the item existed. */
        struct store_get_req peek = {.no_update = true};
        struct store_item it;
        bool existed = store_get(s->store, key, h->keylen, &peek, &it) == STORE_OK;
        return bin_enomem(s, h, existed || !req.create ? "Out of memory incrementing value"
                                                       : "Out of memory allocating new item");
    }
    }
}

/* FLUSH FLUSHQ, with an optional delay (exptime rules). */
static enum proto_status bin_flush(struct session *s, const struct bin_header *h, bool quiet,
                                   const unsigned char *ext)
{
    if (!s->opt->flush_enabled)
        return bin_error(s, h, BIN_STATUS_AUTH_ERROR); /* memcached's answer to -F */
    uint32_t delay = h->extlen == 4 ? bin_load32(ext) : 0;
    rel_time_t when = delay > 0 ? clock_exptime((int64_t)delay) : clock_now();
    store_flush(store_ctx_store(s->store), when);
    STAT_INC(s->stats, cmd_flush);
    return bin_success(s, h, quiet, 0, NULL, 0);
}

enum proto_status bin_exec(struct session *s, const struct bin_header *h, enum bin_kind kind,
                           const unsigned char *ext, const char *key)
{
    bool quiet;
    uint8_t op = bin_opcode_base(h->opcode, &quiet);

    switch (kind) {
    case BIN_KIND_GET:
    case BIN_KIND_TOUCH:
        return bin_get(s, h, op, quiet, ext, key);
    case BIN_KIND_UPDATE:
    case BIN_KIND_APPEND:
        return bin_update_start(s, h, op, quiet, ext, key);
    case BIN_KIND_DELETE:
        return bin_delete(s, h, quiet, key);
    case BIN_KIND_ARITH:
        return bin_arith(s, h, op, quiet, ext, key);
    case BIN_KIND_NOOP:
        return bin_success(s, h, false, 0, NULL, 0);
    case BIN_KIND_VERSION:
        return bin_success(s, h, false, 0, NODELAY_PROTOCOL_VERSION,
                           (uint32_t)strlen(NODELAY_PROTOCOL_VERSION));
    case BIN_KIND_QUIT:
        bin_success(s, h, quiet, 0, NULL, 0);
        s->close_why = SESSION_CLOSE_NORMAL;
        return PROTO_CLOSE;
    case BIN_KIND_SASL_LIST:
        return bin_sasl_list(s, h);
    case BIN_KIND_SASL_AUTH:
        return bin_sasl_start(s, h, key);
    case BIN_KIND_STAT:
        return bin_stat(s, h, key);
    case BIN_KIND_FLUSH:
        return bin_flush(s, h, quiet, ext);
    case BIN_KIND_UNKNOWN:
    case BIN_KIND_INVALID:
    default: {
        /* The rest of the body is discarded. memcached discards bodylen
         * bytes counted after the extras and key it already consumed, which
         * eats into the next request when there are extras or a key (it then
         * closes the connection on the garbage without sending this reply);
         * we skip exactly this request's bytes. */
        enum proto_status rc = bin_error(s, h, BIN_STATUS_UNKNOWN_COMMAND);
        bin_swallow(s, bin_value_len(h));
        return rc;
    }
    }
}
