/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen selftest: checks the parts the measurements rest on, without a
 * server: histogram quantiles, value verification (it must catch wrong,
 * torn and truncated values), reply parsing of all three protocols (every
 * prefix of a reply is "incomplete", never a wrong answer), and the Zipf
 * sampler's head. */
#include "hist.h"
#include "keyspace.h"
#include "limbo.h"
#include "loadgen.h"
#include "wire.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "selftest: %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
            failures++;                                                               \
        }                                                                             \
    } while (0)

static void test_hist(void)
{
    struct lg_hist h;
    lg_hist_init(&h);
    for (uint64_t v = 1; v <= 100000; v++)
        lg_hist_add(&h, v);
    double p50 = (double)lg_hist_quantile(&h, 0.5);
    double p99 = (double)lg_hist_quantile(&h, 0.99);
    CHECK(fabs(p50 - 50000) / 50000 < 0.04);
    CHECK(fabs(p99 - 99000) / 99000 < 0.04);
    CHECK(lg_hist_quantile(&h, 1.0) == 100000);
    CHECK(h.max == 100000 && h.count == 100000);
    struct lg_hist g;
    lg_hist_init(&g);
    lg_hist_add(&g, 7);
    CHECK(lg_hist_quantile(&g, 0.5) == 7);
}

static void test_values(void)
{
    struct lg_values v;
    CHECK(lg_values_init(&v, 20, 5000) == 0);
    char buf[6000];
    uint32_t len = lg_value_len(&v, 7, 3), ver = 0;
    CHECK(len >= 20 && len <= 5000);
    lg_value_write(&v, buf, 7, 3);
    CHECK(lg_value_check(&v, 7, buf, len, &ver) == LG_VERIFY_OK && ver == 3);
    CHECK(lg_value_check(&v, 8, buf, len, &ver) == LG_VERIFY_WRONG_KEY);
    CHECK(lg_value_check(&v, 7, buf, len - 1, &ver) == LG_VERIFY_BAD_LENGTH);
    buf[len - 1] ^= 1;
    CHECK(lg_value_check(&v, 7, buf, len, &ver) == LG_VERIFY_CORRUPT);
    buf[len - 1] ^= 1;
    /* a value torn between two versions of the same key */
    char other[6000];
    uint32_t ver2 = 4;
    while (lg_value_len(&v, 7, ver2) != len)
        ver2++;
    lg_value_write(&v, other, 7, ver2);
    memcpy(buf + len / 2, other + len / 2, len - len / 2);
    CHECK(lg_value_check(&v, 7, buf, len, &ver) == LG_VERIFY_CORRUPT);
    lg_values_release(&v);
}

/* Every strict prefix must parse as incomplete; the whole as `want` bytes. */
static void check_reply(enum lg_proto p, enum lg_op op, unsigned nkeys, const char *r,
                        size_t len, struct lg_reply *rep)
{
    for (size_t i = 0; i < len; i++) {
        long got = lg_wire_parse(p, op, nkeys, r, i, rep);
        CHECK(got == 0);
        if (got != 0) {
            fprintf(stderr, "  proto %d prefix %zu parsed as %ld\n", (int)p, i, got);
            break;
        }
    }
    CHECK(lg_wire_parse(p, op, nkeys, r, len, rep) == (long)len);
}

static void test_wire(void)
{
    struct lg_reply rep;
    struct lg_buf b = { 0 };
    const char keys[] = "key:0000000001key:0000000002";

    CHECK(lg_wire_get(&b, LG_TEXT, keys, 2) == 0);
    CHECK(b.len == strlen("get key:0000000001 key:0000000002\r\n") &&
          memcmp(b.p, "get key:0000000001 key:0000000002\r\n", b.len) == 0);
    const char text[] = "VALUE key:0000000002 0 5\r\nhello\r\nEND\r\n";
    check_reply(LG_TEXT, LG_OP_GET, 2, text, sizeof(text) - 1, &rep);
    CHECK(rep.nhits == 1 && rep.hits[0].len == 5 && memcmp(rep.hits[0].data, "hello", 5) == 0);
    CHECK(lg_key_parse(rep.hits[0].key, rep.hits[0].keylen) == 2);
    const char stored[] = "STORED\r\n";
    check_reply(LG_TEXT, LG_OP_SET, 1, stored, sizeof(stored) - 1, &rep);
    CHECK(rep.status == LG_ST_OK);
    const char oom[] = "SERVER_ERROR out of memory storing object\r\n";
    check_reply(LG_TEXT, LG_OP_SET, 1, oom, sizeof(oom) - 1, &rep);
    CHECK(rep.status == LG_ST_SERVER_ERROR);

    b.len = 0;
    CHECK(lg_wire_get(&b, LG_META, keys, 2) == 0);
    CHECK(memcmp(b.p, "mg key:0000000001 v\r\nmg key:0000000002 v\r\n", b.len) == 0);
    const char meta[] = "EN\r\nVA 5\r\nhello\r\n";
    check_reply(LG_META, LG_OP_GET, 2, meta, sizeof(meta) - 1, &rep);
    CHECK(rep.nhits == 1 && rep.hits[0].pos == 1 && rep.hits[0].len == 5);
    const char nf[] = "NF\r\n";
    check_reply(LG_META, LG_OP_DELETE, 1, nf, sizeof(nf) - 1, &rep);
    CHECK(rep.status == LG_ST_MISS);

    /* binary: a GETK hit for key 2 then the NOOP that ends a quiet multiget */
    char bin[128];
    memset(bin, 0, sizeof(bin));
    bin[0] = (char)0x81;
    bin[1] = 0x0d;
    bin[3] = 14;    /* key length */
    bin[4] = 4;     /* extras: flags */
    bin[11] = 4 + 14 + 5;
    memcpy(bin + 28, "key:0000000002hello", 19);
    size_t n = 24 + 23;
    bin[n] = (char)0x81;
    bin[n + 1] = 0x0a;
    n += 24;
    check_reply(LG_BINARY, LG_OP_GET, 2, bin, n, &rep);
    CHECK(rep.nhits == 1 && rep.hits[0].len == 5 && memcmp(rep.hits[0].data, "hello", 5) == 0);
    CHECK(lg_key_parse(rep.hits[0].key, rep.hits[0].keylen) == 2);

    CHECK(lg_wire_parse(LG_TEXT, LG_OP_GET, 1, "BOGUS\r\n", 7, &rep) == -1);
    lg_buf_release(&b);
}

static void test_zipf(void)
{
    struct lg_dist d;
    CHECK(lg_dist_init(&d, 1000, 0.99) == 0);
    struct lg_rng r = { 1 };
    uint32_t top = (uint32_t)((0ull * 2654435761u) % 1000); /* rank 0's key */
    unsigned hits = 0, N = 200000;
    for (unsigned i = 0; i < N; i++)
        hits += lg_dist_pick(&d, &r) == top;
    double h = 0;
    for (int i = 1; i <= 1000; i++)
        h += 1.0 / pow(i, 0.99);
    double want = N / h;
    CHECK(fabs(hits - want) / want < 0.05);
    lg_dist_release(&d);
}

/* Only the versions a drop abandoned may come back below the acknowledged
 * one; a delete is remembered apart from every version. */
static void test_limbo(void)
{
    struct lg_limbo l = { 0 };
    CHECK(lg_limbo_find(&l, 1) == NULL && !lg_limbo_has_delete(&l));
    for (uint32_t v = 1; v <= 9; v += 2)
        CHECK(lg_limbo_add(&l, v, 1000 + v) == 0);
    const struct lg_abandoned *a = lg_limbo_find(&l, 7);
    CHECK(a && a->ver == 7 && a->dropped_ns == 1007);
    CHECK(lg_limbo_find(&l, 1) && lg_limbo_find(&l, 9));
    CHECK(lg_limbo_find(&l, 2) == NULL && lg_limbo_find(&l, 10) == NULL);
    CHECK(!lg_limbo_has_delete(&l));
    CHECK(lg_limbo_add(&l, LG_LIMBO_DELETE, 2000) == 0);
    CHECK(lg_limbo_has_delete(&l) && lg_limbo_find(&l, LG_LIMBO_DELETE) == NULL);
    lg_limbo_release(&l);
    CHECK(l.n == 0 && l.v == NULL && lg_limbo_find(&l, 7) == NULL);
}

int lg_selftest_main(void)
{
    test_limbo();
    test_hist();
    test_values();
    test_wire();
    test_zipf();
    printf("loadgen selftest: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
