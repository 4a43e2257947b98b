/* SPDX-License-Identifier: BSD-3-Clause */
/* The meta commands end to end without a socket: request bytes through
 * proto_process() on a real store, reply bytes compared exactly. Expected
 * replies were taken from memcached 1.6.18 on the wire, adjusted where
 * 1.6.45 differs (memcached-behaviour.md section 6). CAS values are pinned
 * with E<cas> so the tests do not depend on the store's counter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "reply/reply.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "stats/stats.h"
#include "store/store.h"

struct fixture {
    struct store *store;
    struct store_ctx *ctx;
    struct stats_thread stats;
    struct settings settings;
    struct options opt;
    struct session s;
    char out[1 << 21];
    size_t nout;
};

static int setup_with(void **state, size_t item_size_max)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    clock_setup();
    struct store_options opt = {
        .mem_limit = 64u << 20,
        .item_size_max = item_size_max,
        .evictions = true,
        .cas_enabled = true,
    };
    if (store_create(&f->store, &opt) != 0)
        return -1;
    f->ctx = store_ctx_create(f->store);
    settings_defaults(&f->settings);
    f->settings.item_size_max = item_size_max;
    options_from_settings(&f->settings, &f->opt);
    session_init(&f->s, f->ctx, &f->stats, &f->opt.proto, settings_runtime_of(&f->settings));
    *state = f;
    return 0;
}

static int setup(void **state) { return setup_with(state, 1u << 20); }
static int setup_small(void **state) { return setup_with(state, 1u << 16); }

static int teardown(void **state)
{
    struct fixture *f = *state;
    proto_release(&f->s);
    store_ctx_destroy(&f->ctx);
    store_destroy(&f->store);
    free(f);
    return 0;
}

/* Feed bytes (in one piece, or split at every byte when `split`), then drain
 * the reply queue into f->out. */
static void feed(struct fixture *f, const char *req, size_t len, bool split)
{
    static char pending[1 << 21];
    size_t npending = 0;
    size_t step = split ? 1 : len;
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        assert_true(npending + n <= sizeof pending);
        memcpy(pending + npending, req + off, n);
        npending += n;
        for (;;) {
            size_t used = 0;
            enum proto_status st = proto_process(&f->s, pending, npending, &used);
            assert_true(used <= npending);
            memmove(pending, pending + used, npending - used);
            npending -= used;
            if (st == PROTO_CLOSE)
                return;
            if (st != PROTO_YIELD)
                break;
        }
    }
    f->nout = 0;
    struct iovec iov[64];
    int n;
    while ((n = reply_iov(&f->s.reply, iov, 64)) > 0) {
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            assert_true(f->nout + iov[i].iov_len <= sizeof f->out);
            memcpy(f->out + f->nout, iov[i].iov_base, iov[i].iov_len);
            f->nout += iov[i].iov_len;
            total += iov[i].iov_len;
        }
        reply_consume(&f->s.reply, total);
    }
}

static void rt_split(struct fixture *f, const char *req, const char *want, bool split)
{
    feed(f, req, strlen(req), split);
    size_t nwant = strlen(want);
    if (f->nout != nwant || memcmp(f->out, want, nwant) != 0)
        fail_msg("request %s\n got: %.*s\nwant: %s", req, (int)f->nout, f->out, want);
}

/* one request, exact reply; then the same again split at every byte */
#define RT(req, want) rt_split(f, req, want, false)

static void rt_prefix(struct fixture *f, const char *req, const char *want)
{
    feed(f, req, strlen(req), false);
    size_t nwant = strlen(want);
    if (f->nout < nwant || memcmp(f->out, want, nwant) != 0)
        fail_msg("request %s\n got: %.*s\nwant prefix: %s", req, (int)f->nout, f->out, want);
}

static void test_mn(void **state)
{
    struct fixture *f = *state;
    RT("mn\r\n", "MN\r\n");
    RT("mn\n", "CLIENT_ERROR bad command line format\r\n"); /* 1.6.45: under 4 bytes */
    RT("mn ignored tokens\r\n", "MN\r\n");
}

static void test_ms_mg_basic(void **state)
{
    struct fixture *f = *state;
    RT("ms foo 2 F5 E100 c k s O1\r\nhi\r\n", "HD c100 kfoo s2 O1\r\n");
    RT("mg foo v c f s t k O1 h l\r\n", "VA 2 c100 f5 s2 t-1 kfoo O1 h0 l0\r\nhi\r\n");
    RT("mg foo h\r\n", "HD h1\r\n");
    RT("mg foo\r\n", "HD\r\n");
    /* q hides only a miss on mg */
    RT("mg foo q\r\nmn\r\n", "HD\r\nMN\r\n");
    RT("mg foo q v\r\nmn\r\n", "VA 2\r\nhi\r\nMN\r\n");
    RT("mg nope q v\r\nmn\r\n", "MN\r\n");
    RT("mg nope k O9 s v\r\n", "EN knope O9\r\n");
    RT("mg nope\r\n", "EN\r\n");
    /* P and L are accepted and ignored */
    RT("mg foo v Pabc L\r\n", "VA 2\r\nhi\r\n");
    /* the same split at every byte */
    rt_split(f, "ms foo 3 E101 c\r\nabc\r\nmg foo v c\r\n",
             "HD c101\r\nVA 3 c101\r\nabc\r\n", true);
}

static void test_ms_ttl_flags(void **state)
{
    struct fixture *f = *state;
    RT("ms t1 1 T100 F4294967297\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n");
    RT("ms t1 1 T100 F4294967295\r\nx\r\n", "HD\r\n");
    RT("mg t1 t f v\r\n", "VA 1 t100 f4294967295\r\nx\r\n");
    RT("ms t2 1 T-1\r\nx\r\nmg t2 v\r\n", "HD\r\nEN\r\n");
    RT("mg t1 T0 t\r\n", "HD t-1\r\n");
    RT("ms empty 0\r\n\r\nmg empty v s\r\n", "HD\r\nVA 0 s0\r\n\r\n");
}

static void test_ms_modes(void **state)
{
    struct fixture *f = *state;
    RT("ms m 2 ME\r\nab\r\n", "HD\r\n");
    RT("ms m 2 ME O9 k c\r\nab\r\n", "NS O9 km c0\r\n");
    RT("ms m 2 MA\r\ncd\r\n", "HD\r\n");
    RT("ms m 2 MP\r\nzz\r\n", "HD\r\n");
    RT("mg m v\r\n", "VA 6\r\nzzabcd\r\n");
    RT("ms m 1 MR\r\nr\r\nmg m v\r\n", "HD\r\nVA 1\r\nr\r\n");
    RT("ms m 1 MS\r\ns\r\nmg m v\r\n", "HD\r\nVA 1\r\ns\r\n");
    RT("ms m 1 Ms\r\nt\r\nmg m v\r\n", "CLIENT_ERROR invalid mode for ms M token\r\nVA 1\r\ns\r\n");
    RT("ms nx 1 MR O9 k c\r\nx\r\n", "NS O9 knx c0\r\n");
    RT("ms nx 1 MA\r\nx\r\n", "NS\r\n");
    RT("ms nx 1 MP q\r\nx\r\n", "NS\r\n");
    /* N with append/prepend creates the item (1.6.45) */
    RT("ms apn 2 MA N0\r\nab\r\nms apn 2 MA N0\r\ncd\r\nmg apn v\r\n",
       "HD\r\nHD\r\nVA 4\r\nabcd\r\n");
    /* s is the final size after append */
    RT("ms apn 1 MA s\r\ne\r\n", "HD s5\r\n");
    /* q hides HD, never NS/EX/NF */
    RT("ms q1 1 q\r\nx\r\nms q1 1 q ME\r\nx\r\nmn\r\n", "NS\r\nMN\r\n");
}

static void test_ms_cas(void **state)
{
    struct fixture *f = *state;
    RT("ms c 1 E50\r\nx\r\n", "HD\r\n");
    RT("ms c 1 C49 O1 k c\r\ny\r\n", "EX O1 kc c0\r\n");
    RT("ms c 1 C50 E60 c\r\ny\r\n", "HD c60\r\n");
    RT("ms nocas 1 C50 q\r\ny\r\n", "NF\r\n");
    RT("mg c v c\r\n", "VA 1 c60\r\ny\r\n");
    assert_int_equal(f->stats.cas_hits, 1);
    assert_int_equal(f->stats.cas_badval, 1);
    assert_int_equal(f->stats.cas_misses, 1);
    /* I with an older CAS: stored, but marked stale; the next reader wins */
    RT("ms c 1 C10 I E70\r\nz\r\n", "HD\r\n");
    RT("mg c v c\r\n", "VA 1 c70 X W\r\nz\r\n");
    RT("mg c v c\r\n", "VA 1 c70 Z X\r\nz\r\n");
}

static void test_ms_errors(void **state)
{
    struct fixture *f = *state;
    /* the value after a rejected ms is swallowed */
    RT("ms k 1 z\r\nx\r\nmn\r\n", "CLIENT_ERROR invalid flag\r\nMN\r\n");
    /* a flag byte 1.6.45's tokenizer refuses: the value is not swallowed */
    RT("ms k 1 !\r\nxyzw\r\nmn\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\n");
    RT("ms k 1 c c\r\nx\r\nmn\r\n", "CLIENT_ERROR duplicate flag\r\nMN\r\n");
    RT("ms k 1 MX\r\nx\r\nmn\r\n", "CLIENT_ERROR invalid mode for ms M token\r\nMN\r\n");
    RT("ms k 1 MSS\r\nx\r\nmn\r\n", "HD\r\nMN\r\n");
    RT("ms k 1 Fx q\r\nx\r\nmn\r\n", "CLIENT_ERROR bad command line format\r\nMN\r\n");
    RT("ms k 1 O123456789012345678901234567890123\r\nx\r\nmn\r\n",
       "CLIENT_ERROR opaque token too long\r\nMN\r\n");
    RT("ms k 1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\r\nx\r\nmn\r\n",
       "CLIENT_ERROR options flags are too long\r\nMN\r\n");
    char req[600];
    memset(req, 'a', sizeof req);
    memcpy(req, "ms ", 3);
    strcpy(req + 3 + 251, " 1\r\nx\r\nmn\r\n");
    RT(req, "CLIENT_ERROR bad command line format\r\nMN\r\n");
    /* bad data chunk: always sent, even with q; nothing stored */
    rt_prefix(f, "ms bad 1 q\r\nxy\r\n", "CLIENT_ERROR bad data chunk\r\n");
    RT("mg bad v\r\n", "EN\r\n");
    RT("ms k\r\n", "CLIENT_ERROR bad command line format\r\n");
}

static void test_ms_too_large(void **state)
{
    struct fixture *f = *state;
    RT("ms big 1\r\nx\r\n", "HD\r\n");
    size_t n = 70000;
    char *req = malloc(n + 64);
    assert_non_null(req);
    int h = sprintf(req, "ms big %zu T0\r\n", n);
    memset(req + h, 'v', n);
    strcpy(req + h + n, "\r\nmn\r\n");
    feed(f, req, strlen(req), false);
    free(req);
    const char *want = "SERVER_ERROR object too large for cache\r\nMN\r\n";
    assert_int_equal(f->nout, strlen(want));
    assert_memory_equal(f->out, want, f->nout);
    assert_int_equal(f->stats.store_too_large, 1);
    /* the old value is gone, as with memcached */
    RT("mg big v\r\n", "EN\r\n");
}

static void test_md(void **state)
{
    struct fixture *f = *state;
    RT("ms d 1 E5\r\nx\r\n", "HD\r\n");
    RT("md d C4 O1 k\r\n", "EX O1 kd\r\n");
    /* C0 is a comparison too, never "any" */
    RT("md d C0\r\nmd nod C0\r\n", "EX\r\nNF\r\n");
    RT("md d q\r\nmn\r\n", "MN\r\n");
    RT("md d O1 k\r\n", "NF O1 kd\r\n");
    RT("md d q\r\nmn\r\n", "NF\r\nMN\r\n");
    assert_int_equal(f->stats.delete_hits, 1);
    assert_int_equal(f->stats.delete_misses, 5);
    /* the k of a base64 key comes back encoded */
    RT("md Zm9v b k\r\n", "NF kZm9v b\r\n");
    /* md x (1.6.45): the item stays, emptied, without flags; its TTL is
     * T's, or none */
    RT("ms fx 2 F7 T100\r\nab\r\nmd fx x\r\nmg fx v f t\r\n", "HD\r\nHD\r\nVA 0 f0 t-1\r\n\r\n");
    RT("ms fx 2 F7 T100\r\nab\r\nmd fx x T30\r\nmg fx v f t\r\n",
       "HD\r\nHD\r\nVA 0 f0 t30\r\n\r\n");
    /* emptying counts as a delete hit, marking stale does not */
    uint64_t hits = f->stats.delete_hits;
    RT("md fx x\r\nmd fx I\r\n", "HD\r\nHD\r\n");
    assert_int_equal(f->stats.delete_hits, hits + 1);
    /* any known flag is accepted, even one md does not use */
    RT("md fx v\r\n", "HD\r\n");
}

static void test_stale_while_revalidate(void **state)
{
    struct fixture *f = *state;
    RT("ms s 2 T60\r\nhi\r\n", "HD\r\n");
    /* invalidate: bump CAS, mark stale, new TTL; the first reader wins */
    RT("md s I T30 E90\r\n", "HD\r\n");
    RT("mg s v t c\r\n", "VA 2 t30 c90 X W\r\nhi\r\n");
    RT("mg s v t c\r\n", "VA 2 t30 c90 Z X\r\nhi\r\n");
    /* the winner stores a fresh value: no longer stale, no token out */
    RT("ms s 3 T60\r\nnew\r\nmg s v\r\n", "HD\r\nVA 3\r\nnew\r\n");
    /* R: win a recache when the TTL left is below the token; once */
    RT("ms r 1 T10\r\nx\r\n", "HD\r\n");
    RT("mg r R30 v\r\n", "VA 1 W\r\nx\r\n");
    RT("mg r R30 v\r\n", "VA 1 Z\r\nx\r\n");
    RT("ms r2 1 T100\r\nx\r\nmg r2 R30 v\r\n", "HD\r\nVA 1\r\nx\r\n");
    /* N: vivify on a miss; exactly one client wins */
    RT("mg viv N30 s t v k O1\r\n", "VA 0 s0 t30 kviv O1 W\r\n\r\n");
    RT("mg viv N30 s v\r\n", "VA 0 s0 Z\r\n\r\n");
    RT("mg viv2 N30\r\n", "HD W\r\n");
    assert_int_equal(f->stats.get_misses, 0);
}

static void test_mg_touch_and_cas(void **state)
{
    struct fixture *f = *state;
    RT("ms tt 1 T0\r\nx\r\n", "HD\r\n");
    uint64_t touch0 = f->stats.cmd_touch;
    RT("mg tt T50 t v\r\n", "VA 1 t50\r\nx\r\n");
    assert_int_equal(f->stats.cmd_touch, touch0 + 1);
    assert_int_equal(f->stats.touch_hits, 1);
    /* a touching miss counts as a get miss, as memcached counts it */
    uint64_t misses0 = f->stats.get_misses;
    RT("mg nott T50\r\n", "EN\r\n");
    assert_int_equal(f->stats.get_misses, misses0 + 1);
    /* E on a vivify: the new item takes the client's CAS */
    RT("mg ev N30 E555 c\r\n", "HD c555 W\r\n");
}

static void test_mg_errors(void **state)
{
    struct fixture *f = *state;
    RT("mg k !\r\n", "CLIENT_ERROR bad command line format\r\n");
    RT("mg k v v\r\n", "CLIENT_ERROR duplicate flag\r\n");
    RT("mg k Tabc\r\n", "CLIENT_ERROR bad token in command line format\r\n");
    RT("mg k O12345678901234567890123456789012\r\n", "CLIENT_ERROR opaque token too long\r\n");
    RT("mg k 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\r\n",
       "CLIENT_ERROR options flags are too long\r\n");
    RT("mg !!! b\r\n", "CLIENT_ERROR error decoding key\r\n");
    /* errors are sent even with q */
    RT("mg k q !\r\n", "CLIENT_ERROR bad command line format\r\n");
    char req[600];
    memset(req, 'a', sizeof req);
    memcpy(req, "mg ", 3);
    strcpy(req + 3 + 251, " v\r\n");
    RT(req, "CLIENT_ERROR bad command line format\r\n");
    req[3 + 250] = ' ';
    RT(req, "EN\r\n");
    RT("md k !\r\n", "CLIENT_ERROR bad command line format\r\n");
    RT("md k z\r\n", "CLIENT_ERROR invalid flag\r\n");
    RT("md k q q\r\n", "CLIENT_ERROR duplicate flag\r\n");
    RT("ma k !\r\n", "CLIENT_ERROR bad command line format\r\n");
    RT("ma k z\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
    RT("me\r\n", "CLIENT_ERROR bad command line format\r\n");
}

static void test_ma(void **state)
{
    struct fixture *f = *state;
    RT("ma cnt\r\n", "NF\r\n");
    RT("ma cnt q O1 k\r\nmn\r\n", "NF O1 kcnt\r\nMN\r\n");
    RT("ma cnt N0 J10 v t\r\n", "VA 2 t-1\r\n10\r\n");
    RT("ma cnt v MD D3 k O5\r\n", "VA 1 kcnt O5\r\n7\r\n");
    RT("ma cnt v M- D100\r\n", "VA 1\r\n0\r\n");
    RT("ma cnt\r\n", "HD\r\n");
    RT("ma cnt q\r\nma cnt q v\r\nmn\r\n", "MN\r\n");
    RT("mg cnt v\r\n", "VA 2\r\n3 \r\n");
    RT("ma cnt MI D18446744073709551615 v\r\n", "VA 1\r\n2\r\n");
    RT("ma cnt E999 c\r\n", "HD c999\r\n");
    RT("ma cnt C998 O1 k\r\n", "EX O1 kcnt\r\n");
    RT("ma cnt C999 T100 t v\r\n", "VA 1 t100\r\n4\r\n");
    RT("ms txt 2\r\nhi\r\nma txt\r\n",
       "HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    RT("ma txt q\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    RT("ma k MX\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n");
    RT("ma k Dx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
}

static void test_me(void **state)
{
    struct fixture *f = *state;
    RT("me nope\r\n", "EN\r\n");
    RT("ms dbg 2 E77\r\nhi\r\n", "HD\r\n");
    rt_prefix(f, "me dbg\r\n", "ME dbg exp=-1 la=0 cas=77 fetch=no cls=");
    RT("mg dbg\r\n", "HD\r\n");
    rt_prefix(f, "me dbg\r\n", "ME dbg exp=-1 la=0 cas=77 fetch=yes cls=");
    RT("ms Zm9v 2 T100 E78 b\r\nhi\r\n", "HD\r\n");
    /* 1.6.45's me ignores b: the key is looked up as given */
    RT("me Zm9v b\r\n", "EN\r\n");
    rt_prefix(f, "me foo\r\n", "ME foo exp=100 la=0 cas=78 fetch=no cls=");
}

static void test_base64_keys(void **state)
{
    struct fixture *f = *state;
    RT("mg Zm9v b k v\r\n", "EN kZm9v b\r\n");
    RT("ms Zm9v 2 b k\r\nhi\r\n", "HD kZm9v b\r\n");
    RT("mg Zm9v b k v\r\n", "VA 2 kZm9v b\r\nhi\r\n");
    /* the decoded key is the key */
    RT("mg foo v\r\n", "VA 2\r\nhi\r\n");
    /* a binary key with bytes a text key cannot hold */
    RT("ms AP8NCiA= 1 b\r\nz\r\nmg AP8NCiA= b v k\r\n", "HD\r\nVA 1 kAP8NCiA= b\r\nz\r\n");
}

static void test_counters(void **state)
{
    struct fixture *f = *state;
    RT("mn\r\nmg a\r\nms a 1\r\nx\r\nmg a v\r\nmd a\r\nma a\r\nme a\r\n",
       "MN\r\nEN\r\nHD\r\nVA 1\r\nx\r\nHD\r\nNF\r\nEN\r\n");
    assert_int_equal(f->stats.cmd_meta, 7);
    assert_int_equal(f->stats.cmd_get, 2);
    assert_int_equal(f->stats.get_hits, 1);
    assert_int_equal(f->stats.get_misses, 1);
    assert_int_equal(f->stats.cmd_set, 1);
    assert_int_equal(f->stats.delete_hits, 1);
    assert_int_equal(f->stats.incr_misses, 1);
    RT("ma a N0 MD\r\nma a MD\r\n", "HD\r\nHD\r\n");
    assert_int_equal(f->stats.decr_hits, 1);
}

static void test_pipeline(void **state)
{
    struct fixture *f = *state;
    /* a long quiet pipeline ends with mn: only misses of interest come back */
    char req[64 * 1024];
    size_t n = 0;
    for (int i = 0; i < 500; i++)
        n += (size_t)sprintf(req + n, "ms p%d 2 q T0\r\n%02d\r\n", i, i % 100);
    for (int i = 0; i < 502; i++)
        n += (size_t)sprintf(req + n, "mg p%d q k v\r\n", i);
    n += (size_t)sprintf(req + n, "mn\r\n");
    feed(f, req, n, false);
    assert_true(f->nout > 4);
    assert_memory_equal(f->out + f->nout - 4, "MN\r\n", 4);
    /* 500 hits of "VA 2 kpN\r\nNN\r\n", no line for the two misses */
    size_t lines = 0;
    for (size_t i = 0; i < f->nout; i++)
        lines += f->out[i] == '\n';
    assert_int_equal(lines, 500 * 2 + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ms_mg_basic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ms_ttl_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ms_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ms_cas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ms_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ms_too_large, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_md, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_while_revalidate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mg_touch_and_cas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mg_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ma, setup, teardown),
        cmocka_unit_test_setup_teardown(test_me, setup, teardown),
        cmocka_unit_test_setup_teardown(test_base64_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipeline, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
