/* SPDX-License-Identifier: BSD-3-Clause */
/* The get family's request: what of it is not inline in
 * text_get_internal.h (gat's exptime, a long line's keys), with no
 * session and no store. */
#include <string.h>

#include "base/clock.h"
#include "proto/text/text_get_internal.h"

const char *text_get_touch(const struct text_line *l, struct text_cont *c)
{
    int32_t exptime;
    if (!text_tok_i32(&l->tok[1], &exptime))
        return "CLIENT_ERROR invalid exptime argument\r\n";
    c->exptime = clock_exptime(exptime);
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
