/* SPDX-License-Identifier: BSD-3-Clause */
/* A session over a real store, fed bytes through the connection's own input
 * unit (net/conn_input: read buffer, direct reads into s->sink, -R yields,
 * paused replies), with the replies drained through reply_iov/reply_consume.
 * Shared by the test_text_*.c unit tests; no sockets. */
#ifndef TEST_TEXT_SUPPORT_H
#define TEST_TEXT_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <cmocka.h>

#include "base/clock.h"
#include "net/conn_input.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "stats/stats.h"
#include "store/store.h"

#define TT_MEM (8u << 20)
#define TT_ITEM_MAX (64u << 10)

struct tt {
    struct store *store;
    struct store_ctx *ctx;
    struct stats_thread stats;
    struct settings set;
    struct options opt; /* from set, as main.c makes them */
    struct session s;
    size_t rbuf_held;
    struct rbuf_pool pool;
    struct conn_input in;
    bool closed;
    int yields;
};

static inline struct tt *tt_new_with(void (*tweak)(struct settings *))
{
    struct tt *t = calloc(1, sizeof *t);
    assert_non_null(t);
    settings_defaults(&t->set);
    SETTINGS_SET(&t->set, maxbytes, TT_MEM);
    t->set.item_size_max = TT_ITEM_MAX;
    if (tweak)
        tweak(&t->set);
    struct store_options opt = {
        .mem_limit = SETTINGS_GET(&t->set, maxbytes),
        .item_size_max = t->set.item_size_max,
        .evictions = t->set.evictions,
        .cas_enabled = t->set.cas_enabled,
    };
    assert_int_equal(store_create(&t->store, &opt), 0);
    t->ctx = store_ctx_create(t->store);
    assert_non_null(t->ctx);
    options_from_settings(&t->set, &t->opt);
    session_init(&t->s, t->ctx, &t->stats, &t->opt.proto, settings_runtime_of(&t->set));
    rbuf_pool_init(&t->pool, &t->rbuf_held, 0);
    conn_input_init(&t->in, &t->pool);
    return t;
}

static inline struct tt *tt_new(void)
{
    return tt_new_with(NULL);
}

static inline void tt_free(struct tt *t)
{
    proto_release(&t->s);
    conn_input_release(&t->in);
    assert_int_equal(t->rbuf_held, 0);
    rbuf_pool_release(&t->pool);
    store_ctx_destroy(&t->ctx);
    store_destroy(&t->store);
    free(t);
}

/* Act on what the input unit said, as a connection would, resuming at once
 * (the tests drain replies afterwards; reply_allow is unlimited). */
static inline void tt_act(struct tt *t, unsigned act)
{
    for (;;) {
        if (act & CONN_IN_CLOSE) {
            t->closed = true;
            return;
        }
        if (act & CONN_IN_YIELD)
            t->yields++;
        if (!(act & CONN_IN_AGAIN))
            return;
        act = conn_input_resume(&t->in, &t->s);
    }
}

/* One "read" of len bytes, landing where the input unit says. */
static inline void tt_read(struct tt *t, const char *data, size_t len)
{
    while (len > 0 && !t->closed) {
        char *at;
        size_t room;
        enum conn_in_target to = conn_input_target(&t->in, &t->s, SIZE_MAX, &at, &room);
        if (to == CONN_IN_TO_NOWHERE) {
            t->closed = true;
            return;
        }
        size_t n = len < room ? len : room;
        memcpy(at, data, n);
        data += n;
        len -= n;
        tt_act(t, conn_input_received(&t->in, &t->s, to, n));
    }
}

/* Feed input in reads of `chunk` bytes (0 = all at once). */
static inline void tt_feed(struct tt *t, const char *in, size_t len, size_t chunk)
{
    if (chunk == 0)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len; off += chunk)
        tt_read(t, in + off, len - off < chunk ? len - off : chunk);
}

/* Everything the session owes its client, as one malloc'd string. */
static inline char *tt_drain(struct tt *t, size_t *out_len)
{
    size_t cap = reply_pending(&t->s.reply) + 1, n = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    struct iovec iov[64];
    while (reply_pending(&t->s.reply) > 0) {
        int cnt = reply_iov(&t->s.reply, iov, 64);
        size_t got = 0;
        for (int i = 0; i < cnt; i++) {
            memcpy(out + n, iov[i].iov_base, iov[i].iov_len);
            n += iov[i].iov_len;
            got += iov[i].iov_len;
        }
        reply_consume(&t->s.reply, got);
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

static inline void tt_expect_n(struct tt *t, const char *in, size_t nin, const char *want,
                               size_t nwant, const char *where)
{
    tt_feed(t, in, nin, 0);
    size_t n;
    char *got = tt_drain(t, &n);
    if (n != nwant || memcmp(got, want, n) != 0) {
        fprintf(stderr, "%s: for %.*s\n  want [%.*s]\n  got  [%.*s]\n", where, (int)nin, in,
                (int)nwant, want, (int)n, got);
        fail();
    }
    free(got);
}

#define TT_STR2(x) #x
#define TT_STR(x) TT_STR2(x)
/* Send `in` (a string literal) and expect exactly `want`. */
#define EXPECT(t, in, want) \
    tt_expect_n((t), (in), sizeof(in) - 1, (want), sizeof(want) - 1, __FILE__ ":" TT_STR(__LINE__))

static inline int tt_group_setup(void **state)
{
    (void)state;
    clock_setup();
    return 0;
}

#endif
