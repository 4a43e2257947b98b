/* SPDX-License-Identifier: BSD-3-Clause */
/* Which protocol a connection speaks, and the one place that dispatches by
 * it. With -B auto its first byte decides, as in memcached: 0x80 (the
 * binary request magic) is binary, anything else text; -B ascii / -B binary
 * force one. */
#include "proto/proto.h"

#include "base/clock.h"
#include "base/log.h"
#include "proto/binary/binary.h"
#include "proto/proto_flash.h"
#include "proto/session.h"
#include "proto/text/text.h"
#include "stats/stats.h"
#include "watch/watch.h"

#define PROTO_BINARY_REQ_MAGIC 0x80

/* Whether the protocol is inside a request (proto_mid_request). */
static bool proto_in_request(const struct session *s)
{
    if (s->kind == PROTO_KIND_BINARY)
        return bin_of_const(s)->recv != BIN_RECV_NONE;
    return s->kind == PROTO_KIND_TEXT && text_of_const(s)->value.receiving;
}

enum proto_status proto_process(struct session *s, const char *buf, size_t len, size_t *consumed)
{
    if (s->watcher) {
        /* A watcher only listens (memcached reads its socket just to see it close). */
        *consumed = len;
        return PROTO_OK;
    }
    if (s->kind == PROTO_KIND_NEGOTIATING) {
        if (len == 0) {
            *consumed = 0;
            return PROTO_OK;
        }
        s->kind = (unsigned char)buf[0] == PROTO_BINARY_REQ_MAGIC ? PROTO_KIND_BINARY
                                                                  : PROTO_KIND_TEXT;
        log_verbose("%d: Client using the %s protocol", s->cfd,
                    s->kind == PROTO_KIND_BINARY ? "binary" : "ascii");
    }
    /* The read's requests run at one time: one clock read for all their
     * lookups (clock_hold), not one each. */
    bool held = clock_hold();
    enum proto_status st;
    if (!s->flash) {
        st = s->kind == PROTO_KIND_BINARY ? bin_process(s, buf, len, consumed)
                                          : text_process(s, buf, len, consumed);
    } else {
        /* the store's lookups see this session's flash reads meanwhile */
        proto_flash_attach(s, true);
        st = s->kind == PROTO_KIND_BINARY ? bin_process(s, buf, len, consumed)
                                          : text_process(s, buf, len, consumed);
        proto_flash_attach(s, false);
        if (st == PROTO_WAIT)
            STAT_INC(s->stats, flash_waits);
    }
    clock_release(held);
    s->mid_request = proto_in_request(s);
    return st;
}

void proto_read_hint(struct session *s, const char *buf, size_t len,
                     struct store_prefetch_run *run)
{
    /* Binary requests and a value's bytes get none; a watcher runs nothing. */
    if (s->kind == PROTO_KIND_TEXT && !s->watcher && !s->mid_request)
        text_read_hint(s, buf, len, run);
    else
        run->n = run->next = 0;
}

void proto_sink_filled(struct session *s, size_t n)
{
    /* the value's end runs its command (an append reads the old item) */
    if (s->flash)
        proto_flash_attach(s, true);
    if (s->kind == PROTO_KIND_BINARY)
        bin_sink_filled(s, n);
    else
        text_sink_filled(s, n);
    if (s->flash)
        proto_flash_attach(s, false);
    s->mid_request = proto_in_request(s);
    if (!s->mid_request)
        session_flash_done(s);
}

void proto_tick(struct session *s)
{
    if (s->kind == PROTO_KIND_BINARY)
        bin_tick(s);
    else if (s->kind == PROTO_KIND_TEXT)
        text_tick(s);
}

/* The protocols' states share the session's storage: only the one in use
 * is released. */
void proto_release(struct session *s)
{
    if (s->kind == PROTO_KIND_BINARY)
        bin_state_release(s);
    else if (s->kind == PROTO_KIND_TEXT)
        text_state_release(s);
    session_release(s);
}

void proto_watch_end(struct session *s)
{
    watch_remove(&s->watcher);
}
