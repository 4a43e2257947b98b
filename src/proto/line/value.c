/* SPDX-License-Identifier: BSD-3-Clause */
#include "proto/line/value.h"

#include "proto/session.h"

void text_swallowed(struct session *s, bool chunk_ok)
{
    (void)s;
    (void)chunk_ok;
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
