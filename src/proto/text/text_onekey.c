/* SPDX-License-Identifier: BSD-3-Clause */
/* delete incr decr touch: between the line's parse and the reply's line
 * (text_onekey_req.h), the store call, watch's notes and the counts. */
#include <string.h>

#include "base/clock.h"
#include "proto/session.h"
#include "proto/text/text_onekey_req.h"
#include "stats/stats.h"
#include "proto/watch_note.h"

/* Note the request's noreply (its errors too obey it); memcached 1.6.45
 * logs none of these commands' replies at -vv. NULL, or the error, said. */
static bool text_onekey_begin(struct session *s, const struct text_onekey_req *r, const char *err)
{
    text_of(s)->noreply = r->noreply;
    text_of(s)->reply_unlogged = true;
    if (err)
        text_out(s, err, strlen(err));
    return !err;
}

void text_cmd_delete(struct session *s, const struct text_line *l)
{
    struct text_onekey_req r;
    if (!text_onekey_begin(s, &r, text_delete_parse(l, &r)))
        return;
    if (TEXT_DETAIL_ON(s))
        session_stats_detail(s, r.key.s, r.key.len, 'd', false);
    uint8_t cls = 0;
    uint32_t size = 0;
    uint8_t miss = STORE_MISS_ABSENT;
    struct store_delete_req req = {.class_out = &cls, .size_out = &size, .miss_out = &miss};
    enum store_status st = store_delete(s->store, r.key.s, r.key.len, &req);
    struct watch_seen seen = {0};
    if (watch_active(WATCH_LOOKUPS | WATCH_DELETIONS))
        watch_note_delete_lookup(s, r.key.s, r.key.len, st, cls, size, (enum store_miss)miss,
                                 &seen);
    if (st == STORE_OK) {
        if (watch_active(WATCH_DELETIONS))
            watch_note_deleted(r.key.s, r.key.len, "delete", &seen);
        STAT_INC(s->stats, delete_hits);
        STAT_CLS_INC(s->stats, cls, delete_hits);
    } else {
        STAT_INC(s->stats, delete_misses);
    }
    size_t n;
    const char *line = text_delete_line(st, &n);
    text_out(s, line, n);
}

void text_cmd_arith(struct session *s, const struct text_line *l, bool incr)
{
    struct text_onekey_req r;
    if (!text_onekey_begin(s, &r, text_arith_parse(l, &r)))
        return;
    struct store_arith_req req = {.incr = incr, .delta = r.delta};
    struct store_arith_res res;
    if (watch_active(WATCH_LOOKUPS))
        watch_peek(s, r.key.s, r.key.len, NULL);
    enum store_status st = store_arith(s->store, r.key.s, r.key.len, &req, &res);
    if (st == STORE_OK || st == STORE_MISS)
        stats_count_arith(s->stats, incr, st == STORE_OK, st == STORE_OK ? res.class_id : 0);
    if (st == STORE_OK) {
        text_out_u64(s, res.value);
        return;
    }
    size_t n;
    const char *line = text_arith_line(st, &n);
    text_out(s, line, n);
}

void text_cmd_touch(struct session *s, const struct text_line *l)
{
    struct text_onekey_req r;
    if (!text_onekey_begin(s, &r, text_touch_parse(l, &r)))
        return;
    if (watch_active(WATCH_LOOKUPS))
        watch_peek(s, r.key.s, r.key.len, NULL);
    struct store_get_req req = {.touch = true, .exptime = clock_exptime(r.exptime)};
    struct store_item it;
    enum store_status st = store_get(s->store, r.key.s, r.key.len, &req, &it);
    if (st != STORE_NO_MEMORY) /* a key that is there, not touched: no miss */
        stats_count_fetch(s->stats, true, st == STORE_OK, it.class_id, it.lru);
    size_t n;
    const char *line = text_touch_line(st, &n);
    text_out(s, line, n);
}
