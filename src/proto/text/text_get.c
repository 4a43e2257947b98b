/* SPDX-License-Identifier: BSD-3-Clause */
/* get gets gat gats (multi-key, any line length): the lookups, between
 * their parse (text_get_parse.c) and their replies (text_get_compose.c). */
#include <string.h>

#include "base/log.h"
#include "proto/proto_flash.h"
#include "proto/session.h"
#include "proto/text/text_get_internal.h"
#include "stats/stats.h"
#include "proto/watch_note.h"

/* Keys looked up per call before a long multiget lets other clients run. */
#define TEXT_GET_KEY_BUDGET 2048

/* Prefetches the next keys of a multiget (up to a batch), when there are
 * several. */
static void text_get_prefetch(struct session *s, struct text_keys w)
{
    if (w.tok + 1 >= w.whole && w.p == w.l->raw + w.l->len)
        return; /* one key left, and a read's batch covered it */
    struct store_keyref keys[TEXT_PREFETCH_BATCH];
    size_t n = 0;
    while (n < TEXT_PREFETCH_BATCH && text_keys_next(&w, &keys[n].key, &keys[n].nkey))
        keys[n++].hv = NULL;
    if (n > 1)
        store_prefetch(s->store, keys, n);
}

/* Look up keys from where text_of(s)->cont says on. Stops (text_of(s)->cont.kind
 * set) when the connection owes more than it may or after
 * TEXT_GET_KEY_BUDGET keys, and goes on from there when called again: a
 * multiget of any size is produced as the client takes it, in memcached's
 * order and bytes. */
static void text_get_run(struct session *s, const struct text_line *l)
{
    struct text_cont *c = &text_of(s)->cont;
    struct store_get_req req = {.want_value = true, .touch = c->touch, .exptime = c->exptime};
    /* Where a rollback goes back to: taken before the first composition a
     * later key's error or a failed one would have to undo (a line of
     * several keys, a hit not copied whole); a one-key line whose hit is
     * copied with its END (it cannot fail) needs none. Without it nothing
     * was composed, and there is nothing to undo. */
    struct reply_mark mark;
    bool marked = false;
    bool detail = TEXT_DETAIL_ON(s);
    bool crlf = c->crlf;
    size_t keys = 0;
    bool ended = false; /* the last hit's copy brought END with it */
    c->kind = TEXT_CONT_NONE;

    struct text_keys w;
    text_keys_at(&w, l, c);
    const char *end = l->raw + l->len;
    for (;;) {
        struct text_keys here = w; /* where a pause goes on from */
        const char *key;
        size_t nkey;
        if (!text_keys_next(&w, &key, &nkey))
            break;
        if (!c->no_pause &&
            (keys >= TEXT_GET_KEY_BUDGET || reply_pending(&s->reply) > s->reply_allow)) {
            /* memcached sends nothing but the error for a line with an
             * over-long key, so pause only a line that has none. */
            if (!c->rest_ok && !(c->rest_ok = text_get_rest_ok(key, end)))
                c->no_pause = true;
            if (c->rest_ok) {
                c->kind = TEXT_CONT_GET;
                c->tok = here.tok;
                c->off = (size_t)(here.p - l->raw);
                c->crlf = crlf;
                return;
            }
        }
        if (keys % TEXT_PREFETCH_BATCH == 0)
            text_get_prefetch(s, here);
        if (nkey > STORE_KEY_MAX) {
            /* memcached discards what it composed and sends only the error;
             * 1.6.45 follows it with an empty line. */
            if (marked)
                reply_rollback(&s->reply, &mark);
            proto_flash_abort(s);
            /* get's and gets' first key is checked with the line's
             * noreply in force: `get <long key> noreply` gets the empty
             * line alone */
            if (here.tok == 1 && text_line_noreply(l))
                text_out_always(s, "\r\n", 2);
            else
                TEXT_OUT(s, "CLIENT_ERROR bad command line format\r\n");
            return;
        }
        keys++;
        /* Room for a short hit before the lookup, so that the store can
         * have it copied under its bucket lock (nothing allocated there);
         * without room, the hit is pinned and composed after. */
        struct text_hit h = {.key = key, .nkey = nkey, .want_cas = c->want_cas, .crlf = crlf,
                             .last = !text_keys_more(&w)};
        h.at = reply_reserve(&s->reply, TEXT_VALUE_HEADER_FIXED + nkey + REPLY_COPY_MAX +
                                            sizeof TEXT_END - 1);
        if (!marked && (!h.last || !h.at)) {
            reply_get_mark(&s->reply, &mark); /* the reserve committed nothing */
            marked = true;
        }
        req.copy = h.at ? text_hit_copy : NULL;
        req.copy_arg = &h;
        req.copy_max = REPLY_COPY_MAX;
        req.hashed = key == l->hkey;
        req.hv = l->hv;
        struct store_item it;
        enum store_status st = store_get(s->store, key, nkey, &req, &it);
        if (st == STORE_NO_MEMORY) {
            /* gat: the TTL found no room to be written (text_touch_line):
             * the line is refused as a write is, as a too-long key is.
             * What earlier turns of a paused line composed is out: its last
             * value is ended before the error, so the reply stays whole. */
            if (marked)
                reply_rollback(&s->reply, &mark);
            proto_flash_abort(s);
            if (c->crlf)
                text_out_always(s, "\r\n", 2);
            TEXT_OUT(s, "SERVER_ERROR out of memory storing object");
            return;
        }
        bool hit = st == STORE_OK;
        if (watch_active(WATCH_LOOKUPS))
            watch_note_get(s, key, nkey, st, &it);
        if (detail)
            session_stats_detail(s, key, nkey, 'g', hit);
        stats_count_fetch(s->stats, c->touch, hit, it.class_id, it.lru);
        if (!hit)
            continue;
        if (h.len) {
            reply_commit(&s->reply, h.len);
            ended = h.last;
        } else {
            if (!marked) {
                reply_get_mark(&s->reply, &mark);
                marked = true;
            }
            if (text_value_hit(s, key, nkey, &it, c->want_cas, crlf) != 0)
                goto oom;
        }
        log_verbose(">%d sending key %.*s", s->cfd, (int)nkey, key);
        crlf = true;
    }
    log_verbose(">%d END", s->cfd);
    if (ended)
        return;
    if (text_get_end(&s->reply, crlf) == 0)
        return;
oom:
    if (marked)
        reply_rollback(&s->reply, &mark);
    TEXT_OUT(s, "SERVER_ERROR out of memory writing get response");
}

void text_cmd_get(struct session *s, const struct text_line *l, bool want_cas, bool touch)
{
    const char *err = text_get_parse(l, want_cas, touch, &text_of(s)->cont);
    if (err) {
        text_out(s, err, strlen(err));
        return;
    }
    text_get_run(s, l);
}

void text_get_resume(struct session *s, const struct text_line *l)
{
    text_get_run(s, l);
}
