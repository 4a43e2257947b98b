/* SPDX-License-Identifier: BSD-3-Clause */
/* `watch`: turns the connection into a stream of log lines (the streams
 * themselves: watch/), answered and refused as memcached 1.6.45 does. See
 * docs/protocol-text.md. */
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "watch/watch.h"

void text_cmd_watch(struct session *s, const struct text_line *l)
{
    if (s->datagram)
        return; /* no connection to stream to: memcached answers nothing */
    /* no noreply: 1.6.45 reads `noreply` as an unknown stream (ERROR) */
    if (!s->opt->watch_enabled) {
        TEXT_OUT(s, "CLIENT_ERROR watch commands not allowed");
        return;
    }
    /* memcached hands the connection to its logger: replies still owed
     * would be lost, so it refuses, as here. */
    if (text_of(s)->after_others) {
        TEXT_OUT(s, "ERROR cannot pipeline other commands before watch");
        return;
    }
    unsigned flags = 0;
    for (size_t i = 1; i < l->ntok; i++) {
        unsigned f = watch_flag_parse(l->tok[i].s, l->tok[i].len);
        if (!f) {
            TEXT_OUT(s, "ERROR");
            return;
        }
        flags |= f;
    }
    if (l->ntok <= 1)
        flags = WATCH_FETCHERS;
    enum watch_add_result r = WATCH_ADD_FAILED;
    if (s->loop)
        r = watch_add(flags, (size_t)s->opt->watcher_logbuf_size, s->loop, s->wake_ptr,
                      &s->watcher);
    if (r == WATCH_ADD_TOO_MANY)
        TEXT_OUT(s, "WATCHER_TOO_MANY log watcher limit reached");
    else if (r != WATCH_ADD_OK)
        TEXT_OUT(s, "WATCHER_FAILED failed to add log watcher");
    else
        TEXT_OUT_ALWAYS(s, "OK"); /* the stream's first line, noreply or not */
}
