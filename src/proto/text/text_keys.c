/* SPDX-License-Identifier: BSD-3-Clause */
/* delete, incr, decr. */
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "stats/stats.h"
#include "proto/watch_note.h"

void text_cmd_delete(struct session *s, const struct text_line *l)
{
    /* One extra argument is ignored (1.6.45 answers `delete k 5` with
     * DELETED; 1.6.18 allowed only a legacy "0"), but a line with more keeps
     * memcached's usage error, which clients' conformance tests expect
     * (memccapable sends `delete a b c d e`). */
    text_of(s)->noreply = text_line_noreply(l);
    text_of(s)->reply_unlogged = true; /* as memcached 1.6.45 at -vv */
    if (l->ntok > (text_of(s)->noreply ? 4u : 3u)) {
        TEXT_OUT(s, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]");
        return;
    }
    const struct text_token *key = &l->tok[1];
    if (key->len > STORE_KEY_MAX) {
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return;
    }
    if (TEXT_DETAIL_ON(s))
        session_stats_detail(s, key->s, key->len, 'd', false);
    struct watch_seen seen = {0};
    if (watch_active(WATCH_LOOKUPS | WATCH_DELETIONS))
        watch_peek(s, key->s, key->len, &seen);
    uint8_t cls = 0;
    struct store_delete_req req = {.class_out = &cls};
    if (store_delete(s->store, key->s, key->len, &req) == STORE_OK) {
        if (watch_active(WATCH_DELETIONS))
            watch_note_deleted(key->s, key->len, "delete", &seen);
        STAT_INC(s->stats, delete_hits);
        STAT_CLS_INC(s->stats, cls, delete_hits);
        TEXT_OUT(s, "DELETED");
    } else {
        STAT_INC(s->stats, delete_misses);
        TEXT_OUT(s, "NOT_FOUND");
    }
}

const struct text_token *text_one_key(struct session *s, const struct text_line *l)
{
    text_of(s)->noreply = text_line_noreply(l);
    text_of(s)->reply_unlogged = true; /* as memcached 1.6.45 at -vv */
    const struct text_token *key = &l->tok[1];
    if (key->len > STORE_KEY_MAX) {
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return NULL;
    }
    return key;
}

void text_cmd_arith(struct session *s, const struct text_line *l, bool incr)
{
    const struct text_token *key = text_one_key(s, l);
    if (!key)
        return;
    struct store_arith_req req = {.incr = incr};
    if (!text_tok_u64(&l->tok[2], &req.delta)) {
        TEXT_OUT(s, "CLIENT_ERROR invalid numeric delta argument");
        return;
    }
    struct store_arith_res res;
    if (watch_active(WATCH_LOOKUPS))
        watch_peek(s, key->s, key->len, NULL);
    switch (store_arith(s->store, key->s, key->len, &req, &res)) {
    case STORE_OK:
        stats_count_arith(s->stats, incr, true, res.class_id);
        text_out_u64(s, res.value);
        break;
    case STORE_MISS:
        stats_count_arith(s->stats, incr, false, 0);
        TEXT_OUT(s, "NOT_FOUND");
        break;
    case STORE_NON_NUMERIC:
        TEXT_OUT(s, "CLIENT_ERROR cannot increment or decrement non-numeric value");
        break;
    default:
        TEXT_OUT(s, "SERVER_ERROR out of memory");
        break;
    }
}
