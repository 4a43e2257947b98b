/* SPDX-License-Identifier: BSD-3-Clause */
/* The get family's request: get gets gat gats read from their line,
 * with no session and no store. */
#include <string.h>

#include "base/clock.h"
#include "proto/text/text_get_internal.h"

const char *text_get_parse(const struct text_line *l, bool want_cas, bool touch,
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
        int32_t exptime;
        if (!text_tok_i32(&l->tok[1], &exptime))
            return "CLIENT_ERROR invalid exptime argument\r\n";
        c->exptime = clock_exptime(exptime);
        first = 2;
    }
    /* Keys are the tokens from the first on; a line of more words than
     * tokens goes on in its last token's unsplit rest. */
    c->tok = first;
    c->off = l->ntok < TEXT_MAX_TOKENS ? l->len : (size_t)(l->tok[TEXT_MAX_TOKENS - 1].s - l->raw);
    return NULL;
}

/* True when no key in p[0..end) is longer than memcached allows. */
bool text_get_rest_ok(const char *p, const char *end)
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
