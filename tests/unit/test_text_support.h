/* A session over a real store, fed bytes the way a connection feeds them
 * (read buffer, direct reads into s->sink, -R yields), with the replies
 * drained through reply_iov/reply_consume. Shared by the test_text_*.c
 * unit tests; no sockets. */
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

#include "clock.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "settings.h"
#include "stats/stats.h"
#include "store/store.h"

#define TT_MEM (8u << 20)
#define TT_ITEM_MAX (64u << 10)

struct tt {
    struct store *store;
    struct store_ctx *ctx;
    struct stats_thread stats;
    struct settings set;
    struct session s;
    char *rbuf;
    size_t rlen, rcap;
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
    session_init(&t->s, t->ctx, &t->stats, &t->set);
    return t;
}

static inline struct tt *tt_new(void)
{
    return tt_new_with(NULL);
}

static inline void tt_free(struct tt *t)
{
    session_release(&t->s);
    store_ctx_destroy(&t->ctx);
    store_destroy(&t->store);
    free(t->rbuf);
    free(t);
}

/* Run the protocol over what is buffered, as a connection does after a read. */
static inline void tt_run(struct tt *t)
{
    while (!t->closed && t->rlen > 0) {
        size_t used = 0;
        enum proto_status st = proto_process(&t->s, t->rbuf, t->rlen, &used);
        assert_true(used <= t->rlen);
        memmove(t->rbuf, t->rbuf + used, t->rlen - used);
        t->rlen -= used;
        if (st == PROTO_CLOSE) {
            t->closed = true;
        } else if (st == PROTO_YIELD) {
            t->yields++;
        } else {
            break;
        }
    }
}

/* One "read" of len bytes: straight into the sink while a value wants it. */
static inline void tt_read(struct tt *t, const char *data, size_t len)
{
    while (len > 0 && !t->closed) {
        if (t->s.sink_len > 0 && t->rlen == 0) {
            size_t n = len < t->s.sink_len ? len : t->s.sink_len;
            memcpy(t->s.sink, data, n);
            proto_sink_filled(&t->s, n);
            data += n;
            len -= n;
            continue;
        }
        if (t->rlen + len > t->rcap) {
            t->rcap = (t->rlen + len) * 2;
            t->rbuf = realloc(t->rbuf, t->rcap);
            assert_non_null(t->rbuf);
        }
        memcpy(t->rbuf + t->rlen, data, len);
        t->rlen += len;
        len = 0;
        tt_run(t);
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
