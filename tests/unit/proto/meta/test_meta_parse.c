/* SPDX-License-Identifier: BSD-3-Clause */
/* meta_parse(): every flag, every error string, memcached's check order;
 * and the reply-line helpers and base64. No store, no socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/meta/meta_internal.h"
#include "proto/text/text.h"

/* Split like the text framing: on spaces, at most TEXT_MAX_TOKENS tokens,
 * the last one holding the unsplit rest. */
static void make_line(struct text_line *l, const char *s)
{
    memset(l, 0, sizeof *l);
    l->raw = s;
    l->len = strlen(s);
    const char *p = s, *end = s + l->len;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        const char *e = p;
        if (l->ntok == TEXT_MAX_TOKENS - 1)
            e = end;
        else
            while (e < end && *e != ' ')
                e++;
        l->tok[l->ntok].s = p;
        l->tok[l->ntok].len = (size_t)(e - p);
        l->ntok++;
        p = e;
    }
}

static enum meta_parse_status parse(const char *s, struct meta_req *req, const char **err)
{
    static struct text_line line; /* tokens point into s; req may point into line */
    make_line(&line, s);
    assert_true(meta_is_command(&line));
    return meta_parse(&line, req, err);
}

static void expect_error(const char *s, enum meta_parse_status want, const char *msg)
{
    struct meta_req req;
    const char *err;
    enum meta_parse_status st = parse(s, &req, &err);
    if (st != want || err == NULL || strcmp(err, msg) != 0)
        fail_msg("%s: got status %d \"%s\", want %d \"%s\"", s, st, err ? err : "(null)", want,
                 msg);
}

static void test_is_command(void **state)
{
    (void)state;
    struct text_line l;
    const char *yes[] = {"mg k", "ms k 1", "md k", "ma k", "mn", "me k"};
    const char *no[] = {"mx k", "m", "mgg k", "get k", "MG k", "nm"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        make_line(&l, yes[i]);
        assert_true(meta_is_command(&l));
    }
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        make_line(&l, no[i]);
        assert_false(meta_is_command(&l));
    }
}

static void test_mg_flags(void **state)
{
    (void)state;
    struct meta_req r;
    const char *err;
    assert_int_equal(parse("mg foo s v t c f k O123 q h l u", &r, &err), META_PARSE_OK);
    assert_int_equal(r.cmd, META_MG);
    assert_memory_equal(r.key, "foo", 3);
    assert_int_equal(r.nkey, 3);
    assert_true(r.value && r.quiet && r.no_update);
    assert_int_equal(r.norder, 11);
    assert_memory_equal(r.order, "svtcfkOqhlu", 11);
    assert_int_equal(r.nopaque, 4);
    assert_memory_equal(r.opaque, "O123", 4);
    assert_true(meta_has(&r, 'h') && meta_has(&r, 'l') && !meta_has(&r, 'b'));

    assert_int_equal(parse("mg foo T30 N-1 R5 E77 C18446744073709551615", &r, &err), META_PARSE_OK);
    assert_true(r.has_ttl && r.has_vivify && r.has_recache && r.has_cas_new && r.has_cas);
    assert_int_equal(r.ttl, 30);
    assert_int_equal(r.vivify_ttl, -1);
    assert_int_equal(r.recache_ttl, 5);
    assert_int_equal(r.cas_new, 77);
    assert_true(r.cas == UINT64_MAX);

    /* only a token's first byte names the flag */
    assert_int_equal(parse("mg foo vvv kfoo", &r, &err), META_PARSE_OK);
    assert_true(r.value);
    /* P and L are proxy hints, accepted with anything after them */
    assert_int_equal(parse("mg foo Pxyz L", &r, &err), META_PARSE_OK);
    /* flags of other commands are accepted and ignored, as memcached does */
    assert_int_equal(parse("mg foo F5 MS D3 J4 I x", &r, &err), META_PARSE_OK);
}

static void test_mg_errors(void **state)
{
    (void)state;
    char line[600];
    expect_error("mg", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    memset(line, 'a', sizeof line);
    memcpy(line, "mg ", 3);
    line[3 + 251] = '\0';
    expect_error(line, META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    line[3 + 250] = '\0';
    struct meta_req r;
    const char *err;
    assert_int_equal(parse(line, &r, &err), META_PARSE_OK);

    expect_error("mg k v v", META_PARSE_ERROR, "CLIENT_ERROR duplicate flag");
    expect_error("mg k \xc3\xa9", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    /* 1.6.45: an unknown flag on mg is a format error */
    expect_error("mg k !", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("mg k Tabc", META_PARSE_ERROR, "CLIENT_ERROR bad token in command line format");
    expect_error("mg k T", META_PARSE_ERROR, "CLIENT_ERROR bad token in command line format");
    expect_error("mg k N", META_PARSE_ERROR, "CLIENT_ERROR bad token in command line format");
    expect_error("mg k R2147483648", META_PARSE_ERROR,
                 "CLIENT_ERROR bad token in command line format");
    expect_error("mg k Cabc", META_PARSE_ERROR, "CLIENT_ERROR bad token in command line format");
    expect_error("mg k C-1", META_PARSE_ERROR, "CLIENT_ERROR bad token in command line format");
    expect_error("mg k E18446744073709551616", META_PARSE_ERROR,
                 "CLIENT_ERROR bad token in command line format");
    /* the last bad token names the error; an unknown flag stops at once */
    expect_error("mg k Tx Dx", META_PARSE_ERROR, "CLIENT_ERROR invalid numeric delta value");
    expect_error("mg k Tx ! Dx", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("mg k O123456789012345678901234567890123", META_PARSE_ERROR,
                 "CLIENT_ERROR opaque token too long");
    expect_error("mg k O12345678901234567890123456789012", META_PARSE_ERROR,
                 "CLIENT_ERROR opaque token too long");
    assert_int_equal(parse("mg k O1234567890123456789012345678901", &r, &err), META_PARSE_OK);
    expect_error("mg !!! b", META_PARSE_ERROR, "CLIENT_ERROR error decoding key");
    /* 18 flags are fine (20 tokens), 19 are too many */
    expect_error("mg k 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", META_PARSE_ERROR,
                 "CLIENT_ERROR invalid flag");
    expect_error("mg k 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", META_PARSE_ERROR,
                 "CLIENT_ERROR options flags are too long");
    /* 1.6.45's tokenizer refuses a flag byte outside 0-9 A-z first */
    expect_error("mg k v v !", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("mg k z", META_PARSE_ERROR, "CLIENT_ERROR invalid flag");
    expect_error("mg k T+5", META_PARSE_ERROR, "CLIENT_ERROR bad token in command line format");
    expect_error("mg k v v v v v v v v v v v v v v v v v v v v v v v v v v v v", META_PARSE_ERROR,
                 "CLIENT_ERROR options flags are too long");
}

static void test_md_ma_errors(void **state)
{
    (void)state;
    expect_error("md", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("md k !", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("md k z", META_PARSE_ERROR, "CLIENT_ERROR invalid flag");
    expect_error("md k q q", META_PARSE_ERROR, "CLIENT_ERROR duplicate flag");
    expect_error("md k Cabc", META_PARSE_ERROR, "CLIENT_ERROR bad token in command line format");
    expect_error("md k O123456789012345678901234567890123", META_PARSE_ERROR,
                 "CLIENT_ERROR opaque token too long");
    expect_error("md k 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", META_PARSE_ERROR,
                 "CLIENT_ERROR options flags are too long");
    expect_error("ma k Dx", META_PARSE_ERROR, "CLIENT_ERROR invalid or duplicate flag");
    expect_error("ma k Jx", META_PARSE_ERROR, "CLIENT_ERROR invalid or duplicate flag");
    expect_error("ma k q q", META_PARSE_ERROR, "CLIENT_ERROR invalid or duplicate flag");
    expect_error("ma k !", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("ma k MX", META_PARSE_ERROR, "CLIENT_ERROR invalid mode for ma M token");
    expect_error("ma k 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", META_PARSE_ERROR,
                 "CLIENT_ERROR invalid or duplicate flag");
    expect_error("me", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("me k !", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
}

static void test_ma_flags(void **state)
{
    (void)state;
    struct meta_req r;
    const char *err;
    assert_int_equal(parse("ma k", &r, &err), META_PARSE_OK);
    assert_true(r.delta == 1 && r.initial == 0 && r.mode == 0);
    assert_int_equal(parse("ma k N0 J10 D18446744073709551615 MD v t c", &r, &err), META_PARSE_OK);
    assert_true(r.has_vivify && r.vivify_ttl == 0);
    assert_true(r.initial == 10 && r.delta == UINT64_MAX && r.mode == 'D' && r.value);
    const char *modes[] = {"ma k MI", "ma k M+", "ma k MD", "ma k M-"};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        assert_int_equal(parse(modes[i], &r, &err), META_PARSE_OK);
    /* upper case only, as memcached */
    expect_error("ma k Mi", META_PARSE_ERROR, "CLIENT_ERROR invalid mode for ma M token");
    expect_error("ma k Md", META_PARSE_ERROR, "CLIENT_ERROR invalid mode for ma M token");
}

static void test_ms(void **state)
{
    (void)state;
    struct meta_req r;
    const char *err;
    assert_int_equal(parse("ms k 5 T30 F4294967295 c k O1 s MA N60 I C5 E6 q b", &r, &err),
                     META_PARSE_ERROR_SWALLOW); /* "k" is not base64 */
    assert_string_equal(err, "CLIENT_ERROR error decoding key");
    assert_int_equal(r.datalen, 5);

    assert_int_equal(parse("ms Zm9v 5 T30 F4294967295 c k O1 s MA N60 I C5 E6 q b", &r, &err),
                     META_PARSE_OK);
    assert_int_equal(r.nkey, 3);
    assert_memory_equal(r.key, "foo", 3);
    assert_true(r.base64_key);
    assert_int_equal(r.client_flags, 4294967295u);
    assert_true(r.ttl == 30 && r.mode == 'A' && r.has_vivify && r.vivify_ttl == 60);
    assert_true(r.invalidate && r.has_cas && r.cas == 5 && r.cas_new == 6 && r.quiet);
    assert_memory_equal(r.order, "TFckOsMNICEqb", 13);

    /* no length, or a bad one: nothing can be swallowed */
    expect_error("ms", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("ms k", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("ms k -1", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("ms k abc", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("ms k 2147483646", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    assert_int_equal(parse("ms k 2147483645", &r, &err), META_PARSE_OK);
    /* length known: the value is swallowed after the error */
    expect_error("ms k 1 !", META_PARSE_ERROR, "CLIENT_ERROR bad command line format");
    expect_error("ms k 1 z", META_PARSE_ERROR_SWALLOW, "CLIENT_ERROR invalid flag");
    expect_error("ms k 1 F4294967296", META_PARSE_ERROR_SWALLOW,
                 "CLIENT_ERROR bad command line format");
    expect_error("ms k 1 c c", META_PARSE_ERROR_SWALLOW, "CLIENT_ERROR duplicate flag");
    expect_error("ms k 1 Fx", META_PARSE_ERROR_SWALLOW, "CLIENT_ERROR bad command line format");
    expect_error("ms k 1 F-1", META_PARSE_ERROR_SWALLOW, "CLIENT_ERROR bad command line format");
    expect_error("ms k 1 F18446744073709551616", META_PARSE_ERROR_SWALLOW,
                 "CLIENT_ERROR bad command line format");
    expect_error("ms k 1 Cx", META_PARSE_ERROR_SWALLOW,
                 "CLIENT_ERROR bad token in command line format");
    expect_error("ms k 1 MX", META_PARSE_ERROR_SWALLOW, "CLIENT_ERROR invalid mode for ms M token");
    assert_int_equal(parse("ms k 1 MSS", &r, &err), META_PARSE_OK); /* 1.6.45 reads one byte */
    assert_int_equal(r.mode, 'S');
    expect_error("ms k 1 O123456789012345678901234567890123", META_PARSE_ERROR_SWALLOW,
                 "CLIENT_ERROR opaque token too long");
    expect_error("ms k 1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", META_PARSE_ERROR_SWALLOW,
                 "CLIENT_ERROR options flags are too long");
    expect_error("ms k 1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17", META_PARSE_ERROR_SWALLOW,
                 "CLIENT_ERROR invalid flag");
    char line[600];
    memset(line, 'a', sizeof line);
    memcpy(line, "ms ", 3);
    memcpy(line + 3 + 251, " 3", 3);
    expect_error(line, META_PARSE_ERROR_SWALLOW, "CLIENT_ERROR bad command line format");
    const char *modes[] = {"ms k 1 ME", "ms k 1 MA", "ms k 1 MP", "ms k 1 MR", "ms k 1 MS"};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        assert_int_equal(parse(modes[i], &r, &err), META_PARSE_OK);
    const char *lower[] = {"ms k 1 Me", "ms k 1 Ma", "ms k 1 Mp", "ms k 1 Mr", "ms k 1 Ms"};
    for (size_t i = 0; i < sizeof lower / sizeof *lower; i++)
        expect_error(lower[i], META_PARSE_ERROR_SWALLOW, "CLIENT_ERROR invalid mode for ms M token");
}

static void test_mn_me(void **state)
{
    (void)state;
    struct meta_req r;
    const char *err;
    assert_int_equal(parse("mn", &r, &err), META_PARSE_OK);
    assert_int_equal(r.cmd, META_MN);
    assert_int_equal(parse("mn anything here", &r, &err), META_PARSE_OK);
    /* 1.6.45's me takes no flags: b leaves the key as given */
    assert_int_equal(parse("me Zm9v b", &r, &err), META_PARSE_OK);
    assert_int_equal(r.cmd, META_ME);
    assert_int_equal(r.nkey, 4);
    assert_memory_equal(r.key, "Zm9v", 4);
    assert_false(r.base64_key);
    assert_int_equal(parse("me foo x y", &r, &err), META_PARSE_OK);
    assert_false(r.base64_key);
}

static void test_base64(void **state)
{
    (void)state;
    char out[64];
    unsigned char dec[64];
    struct { const char *plain, *enc; } v[] = {
        {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        size_t n = meta_base64_encode((const unsigned char *)v[i].plain, strlen(v[i].plain), out);
        assert_int_equal(n, strlen(v[i].enc));
        assert_memory_equal(out, v[i].enc, n);
        n = meta_base64_decode(v[i].enc, strlen(v[i].enc), dec, sizeof dec);
        assert_int_equal(n, strlen(v[i].plain));
        assert_memory_equal(dec, v[i].plain, n);
    }
    /* memcached's leniency, checked against 1.6.18 on the wire */
    struct { const char *in; const char *out; size_t n; } lax[] = {
        {"Zm9v!!", "foo", 3},         /* stray characters are skipped */
        {"Z!m9v", "foo", 3},
        {"Zm9vYg==Zm9v", "foob", 4},  /* stops after the padded group */
        {"Zm=9", "f`", 2},            /* '=' inside reads as zero bits */
        {"Zm9vYg=x", "foob\0", 5},
        {"Zm==", "f", 1},
    };
    for (size_t i = 0; i < sizeof lax / sizeof *lax; i++) {
        size_t n = meta_base64_decode(lax[i].in, strlen(lax[i].in), dec, sizeof dec);
        assert_int_equal(n, lax[i].n);
        assert_memory_equal(dec, lax[i].out, n);
    }
    const char *bad[] = {"Zm9", "Zg=", "====", "Zm9v====", "Zm9vYQ====", "Zm9vYmFyYg", "!!!", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(meta_base64_decode(bad[i], strlen(bad[i]), dec, sizeof dec), 0);
    assert_int_equal(meta_base64_decode("Zm9vYmFy", 8, dec, 5), 0);
    unsigned char bin[3] = {0x00, 0xff, 0x10};
    size_t n = meta_base64_encode(bin, 3, out);
    assert_int_equal(meta_base64_decode(out, n, dec, sizeof dec), 3);
    assert_memory_equal(dec, bin, 3);
}

static void test_line(void **state)
{
    (void)state;
    struct meta_line l = {.len = 0};
    meta_line_mem(&l, "VA ", 3);
    meta_line_u64(&l, 0);
    meta_line_flag_u64(&l, 'c', UINT64_MAX);
    meta_line_mem(&l, " t", 2);
    meta_line_i64(&l, -1);
    meta_line_key(&l, "foo", 3, false);
    meta_line_key(&l, "foo", 3, true);
    meta_line_opaque(&l, "Oab", 3);
    assert_int_equal(l.len, strlen("VA 0 c18446744073709551615 t-1 kfoo kZm9v b Oab"));
    assert_memory_equal(l.buf, "VA 0 c18446744073709551615 t-1 kfoo kZm9v b Oab", l.len);
    /* the buffer never overflows, whatever is appended */
    for (int i = 0; i < 100; i++)
        meta_line_str(&l, "0123456789012345678901234567890123456789");
    assert_true(l.len <= sizeof l.buf - 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_is_command), cmocka_unit_test(test_mg_flags),
        cmocka_unit_test(test_mg_errors), cmocka_unit_test(test_md_ma_errors),
        cmocka_unit_test(test_ma_flags),   cmocka_unit_test(test_ms),
        cmocka_unit_test(test_mn_me),      cmocka_unit_test(test_base64),
        cmocka_unit_test(test_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
