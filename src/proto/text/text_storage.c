/* SPDX-License-Identifier: BSD-3-Clause */
/* set add replace append prepend cas: parse the line, reserve the item,
 * receive the value straight into it, then link it. */
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "stats/stats.h"
#include "proto/watch_note.h"
#include "store/store_compat.h"

static void text_storage_done(struct session *s, bool chunk_ok)
{
    struct text_state *t = &s->text;
    t->noreply = t->set_noreply;
    STAT_INC(s->stats, cmd_set);
    if (!chunk_ok) {
        store_abort(s->store, &t->res);
        TEXT_OUT(s, "CLIENT_ERROR bad data chunk");
        t->noreply = false;
        return;
    }
    bool is_cas = t->set_req.mode == STORE_MODE_CAS;
    /* memcached counts per class in the new item's; cas in the old item's
     * (t->res.cas_cls, set by the commit) */
    unsigned cls = store_reservation_class(s->store, &t->res, t->set_req.flags);
    STAT_CLS_INC(s->stats, cls, cmd_set);
    struct watch_commit wc = {0};
    if (watch_active(WATCH_LOOKUPS | WATCH_MUTATIONS))
        watch_commit_begin(s, &t->res, &wc);
    enum store_status st = store_commit(s->store, &t->res, &t->set_req, NULL, NULL);
    if (wc.on)
        watch_commit_end(s, &wc, st, t->set_req.mode, t->set_req.exptime);
    switch (st) {
    case STORE_OK:
        if (is_cas) {
            STAT_INC(s->stats, cas_hits);
            STAT_CLS_INC(s->stats, t->res.cas_cls, cas_hits);
        }
        TEXT_OUT(s, "STORED");
        break;
    case STORE_EXISTS:
        STAT_INC(s->stats, cas_badval);
        STAT_CLS_INC(s->stats, t->res.cas_cls, cas_badval);
        TEXT_OUT(s, "EXISTS");
        break;
    case STORE_MISS:
        if (is_cas)
            STAT_INC(s->stats, cas_misses);
        TEXT_OUT(s, "NOT_FOUND");
        break;
    case STORE_NOT_STORED:
        TEXT_OUT(s, "NOT_STORED");
        break;
    case STORE_TOO_LARGE: /* append/prepend grew it past -I */
        STAT_INC(s->stats, store_too_large);
        TEXT_OUT(s, "SERVER_ERROR object too large for cache");
        break;
    case STORE_NO_MEMORY:
    default:
        STAT_INC(s->stats, store_no_memory);
        TEXT_OUT(s, "SERVER_ERROR out of memory storing object");
        break;
    }
    t->noreply = false;
}

/* The line was bad but the value length is known: memcached 1.6.45 swallows
 * the value so it is not read as commands (1.6.18 did not). */
static void text_storage_reject(struct session *s, const char *msg, size_t len, int32_t vlen)
{
    text_out(s, msg, len);
    text_expect_into(s, NULL, (size_t)vlen, text_swallowed);
}
#define TEXT_REJECT(s, lit, vlen) text_storage_reject((s), lit "\r\n", sizeof(lit "\r\n") - 1, (vlen))

void text_cmd_storage(struct session *s, const struct text_line *l, enum store_mode mode)
{
    if (l->ntok < 5) {
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return;
    }
    s->text.noreply = text_line_noreply(l);

    int32_t vlen;
    if (!text_tok_i32(&l->tok[4], &vlen) || vlen < 0 || vlen > INT32_MAX - 2) {
        /* Length unknown: nothing can be swallowed. */
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return;
    }
    const struct text_token *key = &l->tok[1];
    uint32_t flags;
    int32_t exptime;
    uint64_t cas = 0;
    if (key->len > STORE_KEY_MAX || !text_parse_u32(&l->tok[2], &flags) ||
        !text_parse_i32(&l->tok[3], &exptime) ||
        (mode == STORE_MODE_CAS && (l->ntok < 6 || !text_tok_u64(&l->tok[5], &cas)))) {
        TEXT_REJECT(s, "CLIENT_ERROR bad command line format", vlen);
        return;
    }

    if (TEXT_DETAIL_ON(s))
        session_stats_detail(s, key->s, key->len, 's', false);

    rel_time_t exp = clock_exptime(exptime);
    /* append/prepend keep the old item's flags and expiry: no layout hint.
     * A value not all in this read, its "\r\n" included (else a client
     * could hold a segment by leaving those two bytes out), is an upload
     * unless the socket holds the rest: it holds no segment while it
     * arrives (session_reserve_value). */
    bool concat = mode == STORE_MODE_APPEND || mode == STORE_MODE_PREPEND;
    struct store_reservation *res = &s->text.res;
    size_t need = (size_t)vlen + 2;
    enum store_status st = session_reserve_value(s, key->s, key->len, (size_t)vlen,
                                                 s->text.avail, need, !concat, flags, exp, res);
    switch (st) {
    case STORE_OK:
        break;
    case STORE_TOO_LARGE:
        STAT_INC(s->stats, store_too_large);
        TEXT_REJECT(s, "SERVER_ERROR object too large for cache", vlen);
        /* A failed set must not leave the old value readable. */
        if (mode == STORE_MODE_SET)
            store_delete(s->store, key->s, key->len, NULL);
        return;
    default:
        STAT_INC(s->stats, store_no_memory);
        TEXT_REJECT(s, "SERVER_ERROR out of memory storing object", vlen);
        if (mode == STORE_MODE_SET)
            store_delete(s->store, key->s, key->len, NULL);
        return;
    }

    struct store_set_req *req = &s->text.set_req;
    *req = (struct store_set_req){
        .mode = mode,
        .flags = flags,
        .exptime = exp,
        .cas_compare = cas,
    };
    s->text.set_noreply = s->text.noreply;
    text_expect_value(s, (size_t)vlen, true, text_storage_done);
}
