/* SPDX-License-Identifier: BSD-3-Clause */
/* get gets gat gats (multi-key, any line length) and touch.
 *
 * Each hit adds a header composed in place and the value: a short one
 * copied right after the header, a longer one by reference (the item stays
 * pinned until the bytes are written). The "\r\n" after a value is put in
 * front of the next header (or of END), so a run of short hits is one
 * iovec and a long hit costs two.
 */
#include <string.h>

#include "log.h"
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "stats/stats.h"
#include "proto/watch_note.h"

/* "\r\n" + "VALUE " + key + " " + flags + " " + bytes + " " + cas + "\r\n" */
#define TEXT_VALUE_HEADER_FIXED (2 + 6 + 1 + 10 + 1 + 10 + 1 + TEXT_U64_MAX_DIGITS + 2)
#define TEXT_VALUE_HEADER_MAX (TEXT_VALUE_HEADER_FIXED + STORE_KEY_MAX)
#define TEXT_END "\r\nEND\r\n"

static char *text_value_header(char *q, const char *key, size_t nkey, const struct store_item *it,
                               bool want_cas, bool crlf_first)
{
    if (crlf_first) {
        *q++ = '\r';
        *q++ = '\n';
    }
    memcpy(q, "VALUE ", 6);
    q += 6;
    if (nkey >= 8 && nkey <= 16) {
        /* most keys: two overlapping words, not a call (the room is there) */
        uint64_t a, b;
        memcpy(&a, key, 8);
        memcpy(&b, key + nkey - 8, 8);
        memcpy(q, &a, 8);
        memcpy(q + nkey - 8, &b, 8);
    } else {
        memcpy(q, key, nkey);
    }
    q += nkey;
    *q++ = ' ';
    q = text_u64toa(it->flags, q);
    *q++ = ' ';
    q = text_u64toa(it->nvalue, q);
    if (want_cas) {
        *q++ = ' ';
        q = text_u64toa(it->cas, q);
    }
    *q++ = '\r';
    *q++ = '\n';
    return q;
}

/* A hit whose value is copied while the store holds its bucket
 * (store_get_req.copy): header and value composed into room reserved
 * before the lookup, and the END after them when it is the line's last
 * key, so a one-key get is one reserve and one commit. */
struct text_hit {
    char *at;      /* reserved: TEXT_VALUE_HEADER_FIXED + nkey + REPLY_COPY_MAX + END */
    const char *key;
    size_t nkey;
    bool want_cas, crlf, last;
    size_t len;    /* composed, with END when `last` */
};

static void text_hit_copy(void *arg, const struct store_item *it)
{
    struct text_hit *h = arg;
    char *q = text_value_header(h->at, h->key, h->nkey, it, h->want_cas, h->crlf);
    if (it->nvalue)
        memcpy(q, it->value, it->nvalue);
    q += it->nvalue;
    if (h->last) {
        memcpy(q, TEXT_END, sizeof TEXT_END - 1);
        q += sizeof TEXT_END - 1;
    }
    h->len = (size_t)(q - h->at);
}

/* A hit's header and a value too long to copy (reply_value, by
 * reference). The pin is released or handed on, whatever the outcome. */
static int text_value_hit(struct session *s, const char *key, size_t nkey,
                          const struct store_item *it, bool want_cas, bool crlf_first)
{
    char *p = reply_reserve(&s->reply, TEXT_VALUE_HEADER_MAX);
    if (!p) {
        if (it->pin)
            store_pin_release(it->pin);
        return -1;
    }
    reply_commit(&s->reply, (size_t)(text_value_header(p, key, nkey, it, want_cas, crlf_first) - p));
    return reply_value(&s->reply, it->value, it->nvalue, it->pin);
}

/* Keys looked up per call before a long multiget lets other clients run. */
#define TEXT_GET_KEY_BUDGET 2048

/* The keys of a get line from where its run is: the tokens the tokenizer
 * split (they are the keys, no line scanned again), then, for a line of
 * more than TEXT_MAX_TOKENS words, a walk of the last token's unsplit rest
 * (a multiget may have far more keys than tokens). */
struct text_keys {
    const struct text_line *l;
    size_t tok, whole; /* the next token; tokens [.., whole) are whole keys */
    const char *p;     /* the rest's walk, once tok == whole */
};

static void text_keys_at(struct text_keys *w, const struct text_line *l,
                         const struct text_cont *c)
{
    w->l = l;
    w->tok = c->tok;
    w->whole = l->ntok < TEXT_MAX_TOKENS ? l->ntok : TEXT_MAX_TOKENS - 1;
    w->p = l->raw + c->off;
}

static bool text_keys_next(struct text_keys *w, const char **key, size_t *nkey)
{
    if (w->tok < w->whole) {
        *key = w->l->tok[w->tok].s;
        *nkey = w->l->tok[w->tok].len;
        w->tok++;
        return true;
    }
    const char *end = w->l->raw + w->l->len;
    while (w->p < end && *w->p == ' ')
        w->p++;
    if (w->p == end)
        return false;
    *key = w->p;
    while (w->p < end && *w->p != ' ')
        w->p++;
    *nkey = (size_t)(w->p - *key);
    return true;
}

/* Whether another key follows. */
static bool text_keys_more(const struct text_keys *w)
{
    if (w->tok < w->whole)
        return true;
    const char *p = w->p, *end = w->l->raw + w->l->len;
    while (p < end && *p == ' ')
        p++;
    return p < end;
}

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

/* True when no key in p[0..end) is longer than memcached allows. */
static bool text_get_rest_ok(const char *p, const char *end)
{
    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *e = sp ? sp : end;
        if ((size_t)(e - p) > STORE_KEY_MAX)
            return false;
        p = e + 1;
    }
    return true;
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
    if (crlf) {
        if (reply_copy(&s->reply, TEXT_END, sizeof TEXT_END - 1) != 0)
            goto oom;
    } else if (reply_copy(&s->reply, "END\r\n", 5) != 0) {
        goto oom;
    }
    return;
oom:
    if (marked)
        reply_rollback(&s->reply, &mark);
    TEXT_OUT(s, "SERVER_ERROR out of memory writing get response");
}

void text_cmd_get(struct session *s, const struct text_line *l, bool want_cas, bool touch)
{
    struct text_cont *c = &text_of(s)->cont;
    /* Only the get's fields: the rest of text_cont is the dump's (and
     * clearing all of it was a visible share of every get). */
    c->kind = TEXT_CONT_NONE;
    c->want_cas = want_cas;
    c->touch = touch;
    c->crlf = c->rest_ok = c->no_pause = false;
    c->exptime = 0;
    size_t first = 1;
    if (touch) {
        int32_t exptime;
        if (!text_tok_i32(&l->tok[1], &exptime)) {
            TEXT_OUT(s, "CLIENT_ERROR invalid exptime argument");
            return;
        }
        c->exptime = clock_exptime(exptime);
        first = 2;
    }
    /* Keys are the tokens from the first on; a line of more words than
     * tokens goes on in its last token's unsplit rest. */
    c->tok = first;
    c->off = l->ntok < TEXT_MAX_TOKENS ? l->len : (size_t)(l->tok[TEXT_MAX_TOKENS - 1].s - l->raw);
    text_get_run(s, l);
}

void text_get_resume(struct session *s, const struct text_line *l)
{
    text_get_run(s, l);
}

void text_cmd_touch(struct session *s, const struct text_line *l)
{
    const struct text_token *key = text_one_key(s, l);
    if (!key)
        return;
    int32_t exptime;
    if (!text_tok_i32(&l->tok[2], &exptime)) {
        TEXT_OUT(s, "CLIENT_ERROR invalid exptime argument");
        return;
    }
    STAT_INC(s->stats, cmd_touch);
    if (watch_active(WATCH_LOOKUPS))
        watch_peek(s, key->s, key->len, NULL);
    struct store_get_req touch = {.touch = true, .exptime = clock_exptime(exptime)};
    struct store_item it;
    if (store_get(s->store, key->s, key->len, &touch, &it) == STORE_OK) {
        STAT_INC(s->stats, touch_hits);
        STAT_CLS_INC(s->stats, it.class_id, touch_hits);
        TEXT_OUT(s, "TOUCHED");
    } else {
        STAT_INC(s->stats, touch_misses);
        TEXT_OUT(s, "NOT_FOUND");
    }
}
