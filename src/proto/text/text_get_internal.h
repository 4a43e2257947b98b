/* SPDX-License-Identifier: BSD-3-Clause */
/* The get family (get gets gat gats) in three steps, as meta's and
 * binary's commands:
 *
 *   text_get_parse.c    the line -> the request (text_cont's get fields); pure,
 *                       its common part inline here
 *   text_get.c          the lookups: counts, watch, pauses, rollback
 *   text_get_compose.c  VALUE lines and END, into the reply queue
 *
 * A header alone, beneath all three: the key walk is inline here because
 * every key of every get takes it. */
#ifndef NODELAY_PROTO_TEXT_GET_INTERNAL_H
#define NODELAY_PROTO_TEXT_GET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/text/text_internal.h"
#include "reply/reply.h"

/* ---- the request (text_get_parse.c, and inline here) ---- */

/* gat's and gats' exptime (their first token) into c->exptime. NULL, or
 * the error line to answer (with its "\r\n"). */
const char *text_get_touch(const struct text_line *l, struct text_cont *c);

/* Fill c with a get line's request: what to return, the touch time, where
 * its keys start. NULL, or the error line to answer (with its "\r\n").
 * Inline: every get line is parsed so, and the call was most of it. */
static inline const char *text_get_parse(const struct text_line *l, bool want_cas, bool touch,
                                         struct text_cont *c)
{
    /* Only the get's fields: the rest of text_cont is the dump's (and
     * clearing all of it was a visible share of every get). */
    c->kind = TEXT_CONT_NONE;
    c->want_cas = want_cas;
    c->touch = touch;
    c->crlf = c->rest_ok = c->no_pause = false;
    c->exptime = 0;
    size_t first = 1;
    if (touch) {
        const char *err = text_get_touch(l, c);
        if (err)
            return err;
        first = 2;
    }
    /* Keys are the tokens from the first on; a line of more words than
     * tokens goes on in its last token's unsplit rest. */
    c->tok = first;
    c->off = l->ntok < TEXT_MAX_TOKENS ? l->len : (size_t)(l->tok[TEXT_MAX_TOKENS - 1].s - l->raw);
    return NULL;
}

/* The keys of a get line from where its run is: the tokens the tokenizer
 * split (they are the keys, no line scanned again), then, for a line of
 * more than TEXT_MAX_TOKENS words, a walk of the last token's unsplit rest
 * (a multiget may have far more keys than tokens). */
struct text_keys {
    const struct text_line *l;
    size_t tok, whole; /* the next token; tokens [.., whole) are whole keys */
    const char *p;     /* the rest's walk, once tok == whole */
};

static inline void text_keys_at(struct text_keys *w, const struct text_line *l,
                                const struct text_cont *c)
{
    w->l = l;
    w->tok = c->tok;
    w->whole = l->ntok < TEXT_MAX_TOKENS ? l->ntok : TEXT_MAX_TOKENS - 1;
    w->p = l->raw + c->off;
}

static inline bool text_keys_next(struct text_keys *w, const char **key, size_t *nkey)
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
static inline bool text_keys_more(const struct text_keys *w)
{
    if (w->tok < w->whole)
        return true;
    const char *p = w->p, *end = w->l->raw + w->l->len;
    while (p < end && *p == ' ')
        p++;
    return p < end;
}

/* True when no key in p[0..end) is longer than memcached allows. */
bool text_get_rest_ok(const char *p, const char *end);

/* ---- the reply (text_get_compose.c) ---- */

/* "\r\n" + "VALUE " + key + " " + flags + " " + bytes + " " + cas + "\r\n" */
#define TEXT_VALUE_HEADER_FIXED (2 + 6 + 1 + 10 + 1 + 10 + 1 + TEXT_U64_MAX_DIGITS + 2)
#define TEXT_VALUE_HEADER_MAX (TEXT_VALUE_HEADER_FIXED + STORE_KEY_MAX)
#define TEXT_END "\r\nEND\r\n"

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

/* store_get_req.copy for a text_hit: header, value, and END when last. */
void text_hit_copy(void *arg, const struct store_item *it);

/* A hit's header and a value too long to copy (reply_value, by
 * reference). The pin is released or handed on, whatever the outcome. */
int text_value_hit(struct session *s, const char *key, size_t nkey, const struct store_item *it,
                   bool want_cas, bool crlf_first);

/* The END after the line's hits (crlf: a value went before it). 0, or -1
 * when it could not be queued. */
static inline int text_get_end(struct reply_queue *q, bool crlf)
{
    return crlf ? reply_copy(q, TEXT_END, sizeof TEXT_END - 1) : reply_copy(q, "END\r\n", 5);
}

#endif
