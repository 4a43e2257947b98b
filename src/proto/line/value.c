/* SPDX-License-Identifier: BSD-3-Clause */
#include "proto/line/value.h"

#include <string.h>

#include "proto/session.h"

void text_expect_into(struct session *s, struct text_value *v, char *dest, size_t nvalue,
                      text_value_done_fn done)
{
    (void)s;
    v->receiving = true;
    v->dest = dest;
    v->need = nvalue;
    v->filled = 0;
    v->term_got = 0;
    v->done = done;
}

void text_expect_value(struct session *s, struct text_value *v, size_t nvalue, bool have_res,
                       text_value_done_fn done)
{
    v->have_res = have_res;
    text_expect_into(s, v, have_res ? v->res.value : NULL, nvalue, done);
}

void text_swallowed(struct session *s, bool chunk_ok)
{
    (void)s;
    (void)chunk_ok;
}

size_t text_value_receive(struct session *s, struct text_value *v, const char *buf, size_t len)
{
    size_t pos = 0;
    /* an upload cut off for others: drop the rest, the commit refuses it */
    if (v->have_res && v->dest && !store_upload_alive(s->store, &v->res, len > 0)) {
        v->dest = NULL;
        s->sink = NULL;
        s->sink_len = 0;
    }
    if (v->filled < v->need) {
        size_t n = v->need - v->filled;
        if (n > len)
            n = len;
        if (v->dest)
            memcpy(v->dest + v->filled, buf, n);
        v->filled += n;
        pos = n;
    }
    if (v->filled == v->need) {
        while (v->term_got < 2 && pos < len)
            v->term[v->term_got++] = buf[pos++];
    }
    if (v->filled == v->need && v->term_got == 2) {
        bool ok = v->term[0] == '\r' && v->term[1] == '\n';
        text_value_done_fn done = v->done;
        v->receiving = false;
        v->dest = NULL;
        v->done = NULL;
        s->sink = NULL;
        s->sink_len = 0;
        done(s, ok);
        if (!v->receiving)
            v->have_res = false;
    } else if (v->dest && v->filled < v->need) {
        s->sink = v->dest + v->filled;
        s->sink_len = v->need - v->filled;
    } else {
        /* The value is whole, its "\r\n" still to come: no receive may
         * land in item memory now. A sink left from an earlier piece (the
         * rest read into the buffer, io_uring's more_queued) took the
         * "\r\n" as value bytes and the set never finished. */
        s->sink = NULL;
        s->sink_len = 0;
    }
    return pos;
}

void text_value_sink_filled(struct session *s, struct text_value *v, size_t n)
{
    if (n > s->sink_len)
        n = s->sink_len; /* never count bytes past the value */
    v->filled += n;
    if (n == s->sink_len) {
        s->sink = NULL;
        s->sink_len = 0;
    } else {
        s->sink += n;
        s->sink_len -= n;
    }
    if (v->have_res && v->dest && !store_upload_alive(s->store, &v->res, n > 0)) {
        v->dest = NULL; /* cut off: its memory is gone, drop the rest */
        s->sink = NULL;
        s->sink_len = 0;
    }
}

void text_value_tick(struct session *s, struct text_value *v)
{
    if (v->receiving && v->have_res && v->dest && !store_upload_alive(s->store, &v->res, false)) {
        v->dest = NULL;
        s->sink = NULL;
        s->sink_len = 0;
    }
}

void text_value_abort(struct session *s, struct text_value *v)
{
    if (v->receiving && v->have_res)
        store_abort(s->store, &v->res);
    v->receiving = false;
    v->have_res = false;
    v->dest = NULL;
}
