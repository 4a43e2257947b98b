/* SPDX-License-Identifier: BSD-3-Clause */
/* The store's operations one by one: modes, CAS rules, incr/decr, delete,
 * touch, meta flags (stale / win / vivify), size limits. */
#include "test_store_helpers.h"
#include "store/store_core.h"
#include "store/store_lookup.h"

#include <stdio.h>
#include <stdlib.h>

#define MB (1u << 20)

static void test_set_get(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    char buf[64];
    struct store_item it;
    uint64_t cas = 0;
    assert_int_equal(tget(&t, "k", buf, sizeof buf, NULL), STORE_MISS);
    assert_int_equal(tset(&t, "k", "hello", STORE_MODE_SET, 42, 0, &cas), STORE_OK);
    assert_true(cas > 0);
    assert_int_equal(tget(&t, "k", buf, sizeof buf, &it), STORE_OK);
    assert_string_equal(buf, "hello");
    assert_int_equal(it.flags, 42);
    assert_int_equal(it.cas, cas);
    assert_int_equal(it.exptime, REL_TIME_NEVER);
    assert_int_equal(it.nkey, 1);
    assert_false(it.fetched);
    assert_int_equal(tget(&t, "k", buf, sizeof buf, &it), STORE_OK);
    assert_true(it.fetched);
    /* overwrite: new CAS, new value */
    uint64_t cas2;
    assert_int_equal(tset(&t, "k", "world!", STORE_MODE_SET, 0, 0, &cas2), STORE_OK);
    assert_true(cas2 > cas);
    assert_int_equal(tget(&t, "k", buf, sizeof buf, &it), STORE_OK);
    assert_string_equal(buf, "world!");
    assert_int_equal(it.flags, 0);
    /* empty value */
    assert_int_equal(tset(&t, "e", "", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(tget(&t, "e", buf, sizeof buf, &it), STORE_OK);
    assert_int_equal(it.nvalue, 0);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 2);
    assert_int_equal(st.total_items, 3);
    tstore_close(&t);
}

/* store_prefetch is a hint: over keys present, missing, empty or too
 * long, and more of them than it takes, it changes no item and no counter,
 * and the lookups after it answer as without it. */
static void test_prefetch(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    char names[48][16], buf[64], want[16];
    static char big[300];
    memset(big, 'x', sizeof big);
    struct store_keyref keys[48];
    for (int i = 0; i < 48; i++) {
        snprintf(names[i], sizeof names[i], "pk%d", i);
        keys[i] = (struct store_keyref){.key = names[i], .nkey = strlen(names[i])};
        if (i % 3 != 0)
            assert_int_equal(tset(&t, names[i], names[i], STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    keys[5] = (struct store_keyref){.key = "", .nkey = 0};
    keys[7] = (struct store_keyref){.key = big, .nkey = sizeof big};
    uint64_t hv[48] = {0};
    for (int i = 0; i < 48; i++)
        keys[i].hv = &hv[i];
    struct store_stats before, after;
    store_stats(t.s, &before);
    store_prefetch(t.c, keys, 48);
    store_prefetch(t.c, keys, 0);
    store_stats(t.s, &after);
    assert_memory_equal(&before, &after, sizeof before);
    /* The hashes it gave: those of STORE_PREFETCH_MAX keys, the rest left. */
    for (int i = 0; i < 48; i++) {
        if (i < STORE_PREFETCH_MAX)
            assert_true(hv[i] == store_key_of(keys[i].key, keys[i].nkey).hv);
        else
            assert_true(hv[i] == 0);
    }
    /* A lookup given its key's hash (store_get_req.hashed) finds it. */
    struct store_get_req hashed = {.hashed = true, .hv = hv[1], .no_update = true};
    struct store_item hit;
    assert_int_equal(store_get(t.c, names[1], strlen(names[1]), &hashed, &hit), STORE_OK);
    hashed.hv = hv[3];
    assert_int_equal(store_get(t.c, names[3], strlen(names[3]), &hashed, &hit), STORE_MISS);
    for (int i = 0; i < 48; i++) {
        struct store_item it;
        enum store_status st = tget(&t, names[i], buf, sizeof buf, &it);
        if (i % 3 == 0) {
            assert_int_equal(st, STORE_MISS);
            continue;
        }
        assert_int_equal(st, STORE_OK);
        snprintf(want, sizeof want, "pk%d", i);
        assert_string_equal(buf, want);
        assert_false(it.fetched); /* the prefetch did not count as a fetch */
        assert_int_equal(tget(&t, names[i], buf, sizeof buf, &it), STORE_OK);
        assert_true(it.fetched);
    }
    tstore_close(&t);
}

/* A size's class by the table (classes_id) is the first class that
 * holds it, as the walk over the sizes finds it, for growth factors and
 * chunk sizes whose classes end anywhere. */
static void test_class_table(void **state)
{
    (void)state;
    static const struct {
        double f;
        size_t chunk, chunk_max;
    } cases[] = {{0, 0, 0}, {1.07, 0, 0}, {2.0, 5, 0}, {1.25, 100, 10001}, {1.5, 48, 3000}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clock_setup();
        struct store_options o = {.mem_limit = 8 * MB, .item_size_max = MB,
                                  .growth_factor = cases[c].f, .chunk_size = cases[c].chunk,
                                  .slab_chunk_max = cases[c].chunk_max};
        struct store *s;
        assert_int_equal(store_create(&s, &o), 0);
        for (size_t mc = 0; mc <= STORE_CLASS_TABLE_MAX + 64; mc++) {
            unsigned want = s->classes.n - 1;
            for (unsigned i = 1; i < s->classes.n; i++)
                if (mc <= s->classes.size[i]) {
                    want = i;
                    break;
                }
            assert_int_equal(classes_id(&s->classes, mc), want);
        }
        store_destroy(&s);
    }
}

static void test_modes(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    char buf[64];
    assert_int_equal(tset(&t, "a", "1", STORE_MODE_REPLACE, 0, 0, NULL), STORE_NOT_STORED);
    assert_int_equal(tset(&t, "a", "1", STORE_MODE_APPEND, 0, 0, NULL), STORE_NOT_STORED);
    assert_int_equal(tset(&t, "a", "1", STORE_MODE_PREPEND, 0, 0, NULL), STORE_NOT_STORED);
    assert_int_equal(tset(&t, "a", "1", STORE_MODE_ADD, 7, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "a", "2", STORE_MODE_ADD, 0, 0, NULL), STORE_NOT_STORED);
    assert_int_equal(tset(&t, "a", "mid", STORE_MODE_REPLACE, 7, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "a", "_end", STORE_MODE_APPEND, 99, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "a", "start_", STORE_MODE_PREPEND, 99, 0, NULL), STORE_OK);
    struct store_item it;
    assert_int_equal(tget(&t, "a", buf, sizeof buf, &it), STORE_OK);
    assert_string_equal(buf, "start_mid_end");
    assert_int_equal(it.flags, 7); /* append/prepend keep the item's flags */
    /* append vivify (ms N) creates when missing */
    struct store_set_req r = {.mode = STORE_MODE_APPEND, .vivify = true, .flags = 3};
    assert_int_equal(store_store(t.c, "v", 1, "xy", 2, &r, NULL), STORE_OK);
    assert_int_equal(tget(&t, "v", buf, sizeof buf, &it), STORE_OK);
    assert_string_equal(buf, "xy");
    /* size_out after append */
    struct store_reservation res;
    assert_int_equal(store_reserve(t.c, "v", 1, 3, &res), STORE_OK);
    memcpy(res.value, "123", 3);
    uint32_t size = 0;
    struct store_set_req ra = {.mode = STORE_MODE_APPEND};
    assert_int_equal(store_commit(t.c, &res, &ra, NULL, &size), STORE_OK);
    assert_int_equal(size, 5);
    /* abort leaves nothing */
    assert_int_equal(store_reserve(t.c, "zz", 2, 3, &res), STORE_OK);
    store_abort(t.c, &res);
    assert_int_equal(tget(&t, "zz", buf, sizeof buf, NULL), STORE_MISS);
    tstore_close(&t);
}

static void test_cas(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    char buf[64];
    uint64_t c1, c2;
    struct store_set_req r = {.mode = STORE_MODE_CAS, .cas_compare = 1};
    assert_int_equal(store_store(t.c, "k", 1, "x", 1, &r, NULL), STORE_MISS);
    assert_int_equal(tset(&t, "k", "v1", STORE_MODE_SET, 0, 0, &c1), STORE_OK);
    r.cas_compare = c1 + 100;
    assert_int_equal(store_store(t.c, "k", 1, "x", 1, &r, NULL), STORE_EXISTS);
    r.cas_compare = 0;
    assert_int_equal(store_store(t.c, "k", 1, "x", 1, &r, NULL), STORE_EXISTS);
    r.cas_compare = c1;
    assert_int_equal(store_store(t.c, "k", 1, "v2", 2, &r, &c2), STORE_OK);
    assert_true(c2 > c1);
    /* the old CAS no longer matches */
    assert_int_equal(store_store(t.c, "k", 1, "v3", 2, &r, NULL), STORE_EXISTS);
    /* ms C with mode set upgrades to CAS; with replace too */
    struct store_set_req rs = {.mode = STORE_MODE_SET, .cas_compare = c1};
    assert_int_equal(store_store(t.c, "k", 1, "v3", 2, &rs, NULL), STORE_EXISTS);
    rs.mode = STORE_MODE_REPLACE;
    rs.cas_compare = c2;
    assert_int_equal(store_store(t.c, "k", 1, "v3", 2, &rs, NULL), STORE_OK);
    /* append with a wrong CAS */
    uint64_t c3;
    struct store_item it;
    tget(&t, "k", buf, sizeof buf, &it);
    c3 = it.cas;
    struct store_set_req ra = {.mode = STORE_MODE_APPEND, .cas_compare = c3 + 1};
    assert_int_equal(store_store(t.c, "k", 1, "z", 1, &ra, NULL), STORE_EXISTS);
    ra.cas_compare = c3;
    assert_int_equal(store_store(t.c, "k", 1, "z", 1, &ra, NULL), STORE_OK);
    /* client-chosen CAS (E), including far from the counter */
    struct store_set_req re = {.mode = STORE_MODE_SET, .cas_new = 77};
    uint64_t got;
    assert_int_equal(store_store(t.c, "e", 1, "1", 1, &re, &got), STORE_OK);
    assert_int_equal(got, 77);
    tget(&t, "e", buf, sizeof buf, &it);
    assert_int_equal(it.cas, 77);
    re.cas_new = UINT64_MAX - 5;
    assert_int_equal(store_store(t.c, "e", 1, "2", 1, &re, &got), STORE_OK);
    tget(&t, "e", buf, sizeof buf, &it);
    assert_int_equal(it.cas, UINT64_MAX - 5);
    assert_string_equal(buf, "2");
    /* invalidate: an older CAS is accepted and marks the item stale */
    uint64_t cur = it.cas;
    struct store_set_req ri = {.mode = STORE_MODE_SET, .cas_compare = 5, .invalidate = true};
    assert_int_equal(store_store(t.c, "e", 1, "old", 3, &ri, NULL), STORE_OK);
    tget(&t, "e", buf, sizeof buf, &it);
    assert_string_equal(buf, "old");
    assert_true(it.stale);
    assert_true(it.cas != cur);
    tstore_close(&t);
}

static void test_cas_disabled(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, false);
    char buf[64];
    uint64_t c = 9;
    struct store_item it;
    assert_int_equal(tset(&t, "k", "v", STORE_MODE_SET, 0, 0, &c), STORE_OK);
    assert_int_equal(c, 0);
    tget(&t, "k", buf, sizeof buf, &it);
    assert_int_equal(it.cas, 0);
    struct store_set_req r = {.mode = STORE_MODE_CAS, .cas_compare = 0};
    assert_int_equal(store_store(t.c, "k", 1, "x", 1, &r, NULL), STORE_EXISTS);
    r.cas_compare = 1;
    assert_int_equal(store_store(t.c, "k", 1, "x", 1, &r, NULL), STORE_EXISTS);
    struct store_set_req re = {.mode = STORE_MODE_SET, .cas_new = 55};
    assert_int_equal(store_store(t.c, "k", 1, "y", 1, &re, &c), STORE_OK);
    assert_int_equal(c, 0);
    struct store_arith_res ar;
    struct store_arith_req aq = {.incr = true, .delta = 1};
    assert_int_equal(tset(&t, "n", "5", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(store_arith(t.c, "n", 1, &aq, &ar), STORE_OK);
    assert_int_equal(ar.value, 6);
    assert_int_equal(ar.cas, 0);
    tstore_close(&t);
}

static void test_arith(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    char buf[64];
    struct store_arith_res ar;
    struct store_arith_req inc = {.incr = true, .delta = 1};
    struct store_arith_req dec = {.incr = false, .delta = 1};
    assert_int_equal(store_arith(t.c, "n", 1, &inc, &ar), STORE_MISS);
    tset(&t, "n", "100", STORE_MODE_SET, 5, 0, NULL);
    assert_int_equal(store_arith(t.c, "n", 1, &dec, &ar), STORE_OK);
    assert_int_equal(ar.value, 99);
    struct store_item it;
    tget(&t, "n", buf, sizeof buf, &it);
    assert_string_equal(buf, "99 "); /* keeps its length, space padded */
    assert_int_equal(it.flags, 5);
    assert_int_equal(it.cas, ar.cas);
    tset(&t, "n", "18446744073709551615", STORE_MODE_SET, 0, 0, NULL);
    inc.delta = 2;
    assert_int_equal(store_arith(t.c, "n", 1, &inc, &ar), STORE_OK);
    assert_int_equal(ar.value, 1); /* wraps */
    tget(&t, "n", buf, sizeof buf, NULL);
    assert_string_equal(buf, "1                   ");
    tset(&t, "n", "3", STORE_MODE_SET, 0, 0, NULL);
    dec.delta = 10;
    assert_int_equal(store_arith(t.c, "n", 1, &dec, &ar), STORE_OK);
    assert_int_equal(ar.value, 0); /* floors */
    tset(&t, "n", "9", STORE_MODE_SET, 0, 0, NULL);
    inc.delta = 1;
    assert_int_equal(store_arith(t.c, "n", 1, &inc, &ar), STORE_OK);
    tget(&t, "n", buf, sizeof buf, NULL);
    assert_string_equal(buf, "10"); /* grows */
    const char *bad[] = {"", "abc", "12abc", "-5", "   ", "+", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tset(&t, "b", bad[i], STORE_MODE_SET, 0, 0, NULL);
        assert_int_equal(store_arith(t.c, "b", 1, &inc, &ar), STORE_NON_NUMERIC);
    }
    const char *good[] = {"  7", "7 x", "+7", "-0", "7\r"};
    const uint64_t gv[] = {8, 8, 8, 1, 8};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        tset(&t, "g", good[i], STORE_MODE_SET, 0, 0, NULL);
        assert_int_equal(store_arith(t.c, "g", 1, &inc, &ar), STORE_OK);
        assert_int_equal(ar.value, gv[i]);
    }
    /* CAS compare and create */
    struct store_arith_req cr = {.incr = true, .delta = 5, .create = true, .initial = 42};
    assert_int_equal(store_arith(t.c, "c", 1, &cr, &ar), STORE_OK);
    assert_true(ar.created);
    assert_int_equal(ar.value, 42);
    assert_int_equal(store_arith(t.c, "c", 1, &cr, &ar), STORE_OK);
    assert_false(ar.created);
    assert_int_equal(ar.value, 47);
    struct store_arith_req cc = {.incr = true, .delta = 1, .cas_compare = ar.cas + 1};
    assert_int_equal(store_arith(t.c, "c", 1, &cc, &ar), STORE_EXISTS);
    tstore_close(&t);
}

static void test_delete(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    char buf[64];
    struct store_item it;
    assert_int_equal(store_delete(t.c, "k", 1, NULL), STORE_MISS);
    uint64_t c;
    tset(&t, "k", "v", STORE_MODE_SET, 3, 0, &c);
    struct store_delete_req bad = {.cas_compare = c + 1};
    assert_int_equal(store_delete(t.c, "k", 1, &bad), STORE_EXISTS);
    assert_int_equal(store_delete(t.c, "k", 1, NULL), STORE_OK);
    assert_int_equal(tget(&t, "k", buf, sizeof buf, NULL), STORE_MISS);
    /* md I: stays, stale, new CAS, token back */
    tset(&t, "k", "v", STORE_MODE_SET, 3, 0, &c);
    struct store_delete_req inv = {.invalidate = true, .touch = true, .exptime = clock_now() + 100};
    assert_int_equal(store_delete(t.c, "k", 1, &inv), STORE_OK);
    assert_int_equal(tget(&t, "k", buf, sizeof buf, &it), STORE_OK);
    assert_true(it.stale);
    assert_true(it.cas > c);
    assert_int_equal(it.exptime, inv.exptime);
    assert_false(it.won); /* a get does not take the token: an mg does */
    struct store_get_req mg = {.stale_wins = true};
    assert_int_equal(store_get(t.c, "k", 1, &mg, &it), STORE_OK);
    assert_true(it.won); /* stale and no token yet: this reader wins */
    assert_int_equal(store_get(t.c, "k", 1, &mg, &it), STORE_OK);
    assert_false(it.won);
    assert_true(it.win_sent);
    /* md x: keeps the item, empties it, clears flags, same CAS */
    tset(&t, "x", "value", STORE_MODE_SET, 9, 0, &c);
    struct store_delete_req drop = {.drop_value = true};
    assert_int_equal(store_delete(t.c, "x", 1, &drop), STORE_OK);
    assert_int_equal(tget(&t, "x", buf, sizeof buf, &it), STORE_OK);
    assert_int_equal(it.nvalue, 0);
    assert_int_equal(it.flags, 0);
    assert_int_equal(it.cas, c);
    tstore_close(&t);
}

static void test_meta_win(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    struct store_item it;
    struct store_get_req viv = {.vivify = true, .vivify_exptime = clock_now() + 30,
                                .want_value = true};
    assert_int_equal(store_get(t.c, "w", 1, &viv, &it), STORE_MISS);
    assert_true(it.won);
    assert_null(it.pin);
    /* the next one finds the empty item with the token already sent */
    assert_int_equal(store_get(t.c, "w", 1, &viv, &it), STORE_OK);
    assert_false(it.won);
    assert_true(it.win_sent);
    assert_int_equal(it.nvalue, 0);
    store_pin_release(it.pin);
    /* recache: wins once when the TTL is below the threshold */
    tset(&t, "r", "v", STORE_MODE_SET, 0, clock_now() + 10, NULL);
    struct store_get_req rc = {.recache = true, .recache_below = 30};
    assert_int_equal(store_get(t.c, "r", 1, &rc, &it), STORE_OK);
    assert_true(it.won);
    assert_int_equal(store_get(t.c, "r", 1, &rc, &it), STORE_OK);
    assert_false(it.won);
    assert_true(it.win_sent);
    tset(&t, "r2", "v", STORE_MODE_SET, 0, clock_now() + 100, NULL);
    assert_int_equal(store_get(t.c, "r2", 2, &rc, &it), STORE_OK);
    assert_false(it.won);
    tset(&t, "r3", "v", STORE_MODE_SET, 0, 0, NULL);
    assert_int_equal(store_get(t.c, "r3", 2, &rc, &it), STORE_OK);
    assert_false(it.won); /* never expires: no recache */
    /* no_update leaves fetched alone */
    struct store_get_req nu = {.no_update = true};
    tset(&t, "u", "v", STORE_MODE_SET, 0, 0, NULL);
    store_get(t.c, "u", 1, &nu, &it);
    store_get(t.c, "u", 1, &nu, &it);
    assert_false(it.fetched);
    tstore_close(&t);
}

static void test_sizes(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    /* memcached's -I check: 48 + 8 (cas) + key + 1 + value + 2 <= -I */
    size_t maxv = MB - 48 - 8 - 1 - 1 - 2;
    char *big = calloc(1, MB + 10);
    memset(big, 'x', MB + 9);
    struct store_set_req r = {.mode = STORE_MODE_SET};
    assert_int_equal(store_store(t.c, "k", 1, big, maxv, &r, NULL), STORE_OK);
    assert_int_equal(store_store(t.c, "k", 1, big, maxv + 1, &r, NULL), STORE_TOO_LARGE);
    r.flags = 1; /* flags cost memcached 4 bytes */
    assert_int_equal(store_store(t.c, "k", 1, big, maxv - 3, &r, NULL), STORE_TOO_LARGE);
    assert_int_equal(store_store(t.c, "k", 1, big, maxv - 4, &r, NULL), STORE_OK);
    char key[300];
    memset(key, 'a', sizeof key);
    struct store_reservation res;
    assert_int_equal(store_reserve(t.c, key, 251, 1, &res), STORE_TOO_LARGE);
    assert_int_equal(store_reserve(t.c, key, 250, 1, &res), STORE_OK);
    store_abort(t.c, &res);
    char buf[8];
    struct store_item it;
    assert_int_equal(store_get(t.c, "k", 1, &(struct store_get_req){.want_value = true}, &it),
                     STORE_OK);
    assert_int_equal(it.nvalue, maxv - 4);
    store_pin_release(it.pin);
    (void)buf;
    free(big);
    tstore_close(&t);
}

static void test_big_items(void **state)
{
    (void)state;
    /* -I 128m with -m 512: one item of 100 MiB round trips */
    struct tstore t;
    tstore_open(&t, 512u * MB, 128u * MB, true, true);
    size_t n = 100u * MB;
    char *v = malloc(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (char)(i * 7);
    struct store_set_req r = {.mode = STORE_MODE_SET};
    assert_int_equal(store_store(t.c, "big", 3, v, n, &r, NULL), STORE_OK);
    struct store_item it;
    assert_int_equal(store_get(t.c, "big", 3, &(struct store_get_req){.want_value = true}, &it),
                     STORE_OK);
    assert_int_equal(it.nvalue, n);
    assert_memory_equal(it.value, v, n);
    store_pin_release(it.pin);
    free(v);
    tstore_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_get),   cmocka_unit_test(test_modes),
        cmocka_unit_test(test_class_table),
        cmocka_unit_test(test_cas),       cmocka_unit_test(test_cas_disabled),
        cmocka_unit_test(test_arith),     cmocka_unit_test(test_delete),
        cmocka_unit_test(test_meta_win),  cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_big_items), cmocka_unit_test(test_prefetch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
