/* SPDX-License-Identifier: BSD-3-Clause */
/* set add replace append prepend cas: between the line's parse and the
 * reply's line (text_storage_req.h), reserve the item, receive the value
 * straight into it, link it, and count. */
#include "proto/session.h"
#include "proto/text/text_storage_req.h"
#include "stats/stats.h"
#include "proto/watch_note.h"

static void text_storage_done(struct session *s, bool chunk_ok)
{
    struct text_state *t = text_of(s);
    t->noreply = t->set_noreply;
    STAT_INC(s->stats, cmd_set);
    if (!chunk_ok) {
        store_abort(s->store, &t->value.res);
        TEXT_OUT(s, "CLIENT_ERROR bad data chunk");
        t->noreply = false;
        return;
    }
    bool is_cas = t->set_req.mode == STORE_MODE_CAS;
    struct watch_commit wc = {0};
    if (watch_active(WATCH_LOOKUPS | WATCH_MUTATIONS))
        watch_commit_begin(s, &t->value.res, &wc);
    enum store_status st = store_commit(s->store, &t->value.res, &t->set_req, NULL, NULL);
    /* memcached counts per class in the new item's; cas in the old item's
     * (both said by the commit) */
    unsigned cls = t->value.res.cls;
    STAT_CLS_INC(s->stats, cls, cmd_set);
    if (wc.on)
        watch_commit_end(s, &wc, st, t->set_req.mode, t->set_req.exptime, cls);
    switch (st) {
    case STORE_OK:
        if (is_cas) {
            STAT_INC(s->stats, cas_hits);
            STAT_CLS_INC(s->stats, t->value.res.cas_cls, cas_hits);
        }
        break;
    case STORE_EXISTS:
        STAT_INC(s->stats, cas_badval);
        STAT_CLS_INC(s->stats, t->value.res.cas_cls, cas_badval);
        break;
    case STORE_MISS:
        if (is_cas)
            STAT_INC(s->stats, cas_misses);
        break;
    case STORE_NOT_STORED:
        break;
    case STORE_TOO_LARGE: /* append/prepend grew it past -I */
        STAT_INC(s->stats, store_too_large);
        break;
    case STORE_NO_MEMORY:
    default:
        STAT_INC(s->stats, store_no_memory);
        break;
    }
    size_t n;
    const char *line = text_storage_line(st, &n);
    text_out(s, line, n);
    t->noreply = false;
}

/* The line was bad but the value length is known: memcached 1.6.45 swallows
 * the value so it is not read as commands (1.6.18 did not). */
static void text_storage_reject(struct session *s, const char *msg, size_t len, int32_t vlen)
{
    text_out(s, msg, len);
    text_expect_into(s, &text_of(s)->value, NULL, (size_t)vlen, text_swallowed);
}
#define TEXT_REJECT(s, lit, vlen) text_storage_reject((s), lit "\r\n", sizeof(lit "\r\n") - 1, (vlen))

void text_cmd_storage(struct session *s, const struct text_line *l, enum store_mode mode)
{
    struct text_storage_req r;
    enum text_storage_parsed p = text_storage_parse(l, mode, &r);
    if (p == TEXT_STORAGE_SHORT) {
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return;
    }
    if (p == TEXT_STORAGE_BAD) {
        /* Length unknown: nothing can be swallowed, and the client must
         * hear it whatever noreply says (1.6.45), as its value will be
         * read as commands. */
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return;
    }
    text_of(s)->noreply = r.noreply;
    int32_t vlen = r.vlen;
    if (p == TEXT_STORAGE_BAD_SWALLOW) {
        TEXT_REJECT(s, "CLIENT_ERROR bad command line format", vlen);
        return;
    }
    const struct text_token *key = &r.key;

    if (TEXT_DETAIL_ON(s))
        session_stats_detail(s, key->s, key->len, 's', false);

    rel_time_t exp = clock_exptime(r.exptime);
    /* append/prepend keep the old item's flags and expiry: no layout hint.
     * A value not all in this read, its "\r\n" included (else a client
     * could hold a segment by leaving those two bytes out), is an upload
     * unless the socket holds the rest: it holds no segment while it
     * arrives (session_reserve_value). */
    bool concat = mode == STORE_MODE_APPEND || mode == STORE_MODE_PREPEND;
    struct store_reservation *res = &text_of(s)->value.res;
    size_t need = (size_t)vlen + 2;
    enum store_status st = session_reserve_value(s, key->s, key->len, (size_t)vlen,
                                                 text_of(s)->avail, need, !concat, r.flags, exp,
                                                 res);
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

    struct store_set_req *req = &text_of(s)->set_req;
    *req = (struct store_set_req){
        .mode = mode,
        .fail_deletes = mode == STORE_MODE_SET,
        .flags = r.flags,
        .exptime = exp,
        .cas_compare = r.cas,
    };
    text_of(s)->set_noreply = text_of(s)->noreply;
    text_expect_value(s, &text_of(s)->value, (size_t)vlen, true, text_storage_done);
}
