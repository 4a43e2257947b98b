/* SPDX-License-Identifier: BSD-3-Clause */
/* Uploads (store_reserve_upload): values still arriving hold no segment,
 * their bytes are accounted, large ones are bounded by upload_limit, and a
 * completed upload is stored exactly like a plain reservation. Also the
 * temporary_ttl group, which eviction spares. */
#include "test_store_helpers.h"

#include "store/store_core.h"
#include "store/store_seg.h"
#include "store/store_link.h"
#include "store/store_upload.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MB (1u << 20)

static struct store_stats st_of(struct tstore *t)
{
    struct store_stats st;
    store_stats(t->s, &st);
    return st;
}

/* Pending uploads never pin a segment: however many, a store of 4
 * segments keeps taking writes and keeps its items. */
static void test_uploads_pin_no_segment(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    assert_int_equal(tset(&t, "old", "value", STORE_MODE_SET, 0, REL_TIME_NEVER, NULL), STORE_OK);
    enum { N = 200 };
    struct store_reservation up[N];
    for (int i = 0; i < N; i++) {
        char key[16];
        snprintf(key, sizeof key, "hold%d", i);
        assert_int_equal(store_reserve_upload(t.c, key, strlen(key), 100, true, 0,
                                              REL_TIME_NEVER, &up[i]),
                         STORE_OK);
        assert_null(up[i].seg);
    }
    struct store_stats st = st_of(&t);
    assert_int_equal(st.upload_bytes, N * 100 + 10 * 5 + 90 * 6 + 100 * 7);
    for (uint32_t i = 0; i < t.s->pool.seg_cap; i++)
        assert_int_equal(seg_of(&t.s->pool, i)->refcount, 0);
    /* 8 MB of writes through 4 MB of memory: eviction still works */
    static char big[100000];
    memset(big, 'b', sizeof big - 1);
    for (int i = 0; i < 80; i++) {
        char key[16];
        snprintf(key, sizeof key, "w%d", i);
        assert_int_equal(tset(&t, key, big, STORE_MODE_SET, 0, REL_TIME_NEVER, NULL), STORE_OK);
    }
    for (int i = 0; i < N; i++)
        store_abort(t.c, &up[i]);
    assert_int_equal(st_of(&t).upload_bytes, 0);
    tstore_close(&t);
}

/* Small staged values are client memory (the server counts them against
 * client_mem_limit): store_upload_small_bytes has them, not the large ones,
 * until each ends. */
static void test_upload_small_bytes(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    struct store_reservation small, large;
    assert_int_equal(store_reserve_upload(t.c, "s", 1, STORE_UPLOAD_SMALL, true, 0,
                                          REL_TIME_NEVER, &small),
                     STORE_OK);
    assert_int_equal(store_reserve_upload(t.c, "l", 1, STORE_UPLOAD_SMALL + 1, true, 0,
                                          REL_TIME_NEVER, &large),
                     STORE_OK);
    assert_int_equal(store_upload_small_bytes(t.s), 1 + STORE_UPLOAD_SMALL);
    assert_int_equal(st_of(&t).upload_bytes, 2 + 2 * STORE_UPLOAD_SMALL + 1);
    store_abort(t.c, &large);
    assert_int_equal(store_upload_small_bytes(t.s), 1 + STORE_UPLOAD_SMALL);
    store_abort(t.c, &small);
    assert_int_equal(store_upload_small_bytes(t.s), 0);
    tstore_close(&t);
}

/* Large uploads are refused past the limit; small ones never are. Ending
 * one (commit or abort) gives its bytes back. */
static void test_upload_limit(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    uint64_t lim = st_of(&t).upload_limit;
    assert_int_equal(lim, store_upload_default_limit(8 * MB, MB));
    assert_int_equal(lim, 4 * MB); /* four of the largest values at -m 8 */
    struct store_reservation up[5], small;
    for (int i = 0; i < 4; i++)
        assert_int_equal(store_reserve_upload(t.c, "k", 1, 1000000, true, 0, REL_TIME_NEVER,
                                              &up[i]),
                         STORE_OK);
    assert_int_equal(store_reserve_upload(t.c, "k", 1, 1000000, true, 0, REL_TIME_NEVER, &up[4]),
                     STORE_NO_MEMORY);
    assert_int_equal(st_of(&t).uploads_refused, 1);
    assert_int_equal(store_reserve_upload(t.c, "s", 1, STORE_UPLOAD_SMALL, true, 0,
                                          REL_TIME_NEVER, &small),
                     STORE_OK);
    assert_int_equal(st_of(&t).upload_bytes, 4 * 1000001 + 1 + STORE_UPLOAD_SMALL);
    /* -I is checked up front, as for a plain reservation */
    assert_int_equal(store_reserve_upload(t.c, "k", 1, 2 * MB, true, 0, REL_TIME_NEVER, &up[4]),
                     STORE_TOO_LARGE);

    memset(up[0].value, 'v', up[0].nvalue);
    struct store_set_req req = {.mode = STORE_MODE_SET, .flags = 9, .exptime = REL_TIME_NEVER};
    uint32_t size = 0;
    assert_int_equal(store_commit(t.c, &up[0], &req, NULL, &size), STORE_OK);
    assert_int_equal(size, 1000000);
    assert_int_equal(store_reserve_upload(t.c, "k2", 2, 1000000, true, 0, REL_TIME_NEVER, &up[4]),
                     STORE_OK);
    for (int i = 1; i < 5; i++)
        store_abort(t.c, &up[i]);
    store_abort(t.c, &small);
    assert_int_equal(st_of(&t).upload_bytes, 0);

    struct store_item it;
    struct store_get_req g = {.want_value = true};
    assert_int_equal(store_get(t.c, "k", 1, &g, &it), STORE_OK);
    assert_int_equal(it.nvalue, 1000000);
    assert_int_equal(it.flags, 9);
    assert_true(it.value[0] == 'v' && it.value[999999] == 'v');
    store_pin_release(it.pin);
    assert_int_equal(store_get(t.c, "k2", 2, &g, &it), STORE_MISS);
    tstore_close(&t);
}

/* An upload whose client is sending it (here: more of it queued to be read)
 * is admitted past the limit when nothing can be cut off for it, so a burst
 * of honest large sets is not refused for a few young half-sent ones; cut
 * and live uploads together still stop at twice the limit. */
static void test_upload_here_past_the_limit(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true);
    struct store_reservation up[9];
    for (int i = 0; i < 4; i++)
        assert_int_equal(store_reserve_upload(t.c, "k", 1, 1000000, true, 0, REL_TIME_NEVER,
                                              &up[i]),
                         STORE_OK);
    assert_false(store_upload_fits(t.c, 1000000));
    assert_true(store_upload_fits(t.c, STORE_UPLOAD_SMALL));
    /* held back (not here): refused, as before */
    assert_int_equal(store_reserve_upload_here(t.c, "k", 1, 1000000, true, 0, REL_TIME_NEVER,
                                               false, &up[4]),
                     STORE_NO_MEMORY);
    assert_int_equal(st_of(&t).uploads_refused, 1);
    /* arriving: admitted up to twice the limit (8 MB of 1,000,001-byte stages: three more) */
    for (int i = 4; i < 7; i++)
        assert_int_equal(store_reserve_upload_here(t.c, "k", 1, 1000000, true, 0,
                                                   REL_TIME_NEVER, true, &up[i]),
                         STORE_OK);
    assert_int_equal(store_reserve_upload_here(t.c, "k", 1, 1000000, true, 0, REL_TIME_NEVER,
                                               true, &up[7]),
                     STORE_OK);
    assert_int_equal(st_of(&t).upload_bytes, 8 * 1000001);
    assert_int_equal(store_reserve_upload_here(t.c, "k", 1, 1000000, true, 0, REL_TIME_NEVER,
                                               true, &up[8]),
                     STORE_NO_MEMORY);
    assert_int_equal(st_of(&t).uploads_refused, 2);
    for (int i = 0; i < 8; i++)
        store_abort(t.c, &up[i]);
    assert_int_equal(st_of(&t).upload_bytes, 0);
    assert_true(store_upload_fits(t.c, 1000000));
    tstore_close(&t);
}

/* Let STORE_UPLOAD_STALL seconds pass on the store's clock. */
static void pass_stall_time(void)
{
#ifdef NODELAY_DEBUG
    clock_debug_advance(STORE_UPLOAD_STALL);
#else
    struct timespec ts = {.tv_sec = STORE_UPLOAD_STALL, .tv_nsec = 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
#endif
}

/* Past the bound the oldest stalled upload is cut off for a new one: its
 * owner learns it at its next look, its memory goes then, and its commit
 * is refused. One still receiving bytes is never cut. */
static void test_upload_cut_off(void **state)
{
    (void)state;
    /* a fixed threshold, so that the 1 MB stages are glibc mmaps whatever
     * the tests before freed (which raises the dynamic one) */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    struct tstore t;
    tstore_open(&t, 8 * MB, MB, true, true); /* limit 4 MB */
    struct store_reservation up[6];
    for (int i = 0; i < 4; i++)
        assert_int_equal(store_reserve_upload(t.c, "k", 1, 1000000, true, 0, REL_TIME_NEVER,
                                              &up[i]),
                         STORE_OK);
    /* nothing has stalled yet: the newest is refused */
    assert_int_equal(store_reserve_upload(t.c, "n", 1, 1000000, true, 0, REL_TIME_NEVER, &up[4]),
                     STORE_NO_MEMORY);
    pass_stall_time();
    /* up[0] keeps receiving; up[1] is then the oldest stalled one */
    assert_true(store_upload_alive(t.c, &up[0], true));
    assert_int_equal(store_reserve_upload(t.c, "n", 1, 1000000, true, 0, REL_TIME_NEVER, &up[4]),
                     STORE_OK);
    struct store_stats st = st_of(&t);
    assert_int_equal(st.uploads_cut, 1);
    assert_int_equal(st.upload_bytes, 5 * 1000001); /* up[1] not freed yet */
    assert_true(store_upload_alive(t.c, &up[0], false));
    assert_false(store_upload_alive(t.c, &up[1], false));
    assert_null(up[1].value);
    assert_int_equal(st_of(&t).upload_bytes, 4 * 1000001 + 1); /* its key stays */
    /* in memory of about its size: a 1 MB stage is an mmap, which
     * realloc would only have shrunk to a page */
    assert_true(malloc_usable_size(up[1].stage) < 256);
    /* a cut upload still has a class (the protocols count cmd_set in it) */
    assert_int_equal(store_reservation_class(t.c, &up[1], 0),
                     store_reservation_class(t.c, &up[0], 0));
    assert_true(store_reservation_class(t.c, &up[1], 0) > 0);
    /* and its key, which `watch` names at commit */
    size_t nkey = 99;
    assert_memory_equal(store_reservation_key(&up[1], &nkey), "k", 1);
    assert_int_equal(nkey, 1);
    /* a set cut off deletes the key's old value, as a set refused for memory */
    assert_int_equal(tset(&t, "k", "old", STORE_MODE_SET, 5, REL_TIME_NEVER, NULL), STORE_OK);
    struct store_set_req req = {
        .mode = STORE_MODE_SET, .exptime = REL_TIME_NEVER, .fail_deletes = true};
    unsigned cls = store_reservation_class(t.c, &up[1], 0);
    assert_int_equal(store_commit(t.c, &up[1], &req, NULL, NULL), STORE_NO_MEMORY);
    assert_int_equal(up[1].cls, cls); /* the commit says the class, even failing */
    struct store_get_req look = {.want_value = false};
    struct store_item gone;
    assert_int_equal(store_get(t.c, "k", 1, &look, &gone), STORE_MISS);
    assert_int_equal(st_of(&t).upload_bytes, 4 * 1000001); /* the key went at the commit */
    /* again: up[0] still receiving, up[2] now the oldest stalled */
    pass_stall_time();
    assert_true(store_upload_alive(t.c, &up[0], true));
    assert_int_equal(store_reserve_upload(t.c, "m", 1, 1000000, true, 0, REL_TIME_NEVER, &up[5]),
                     STORE_OK);
    assert_int_equal(st_of(&t).uploads_cut, 2);
    assert_true(store_upload_alive(t.c, &up[0], false));
    memset(up[0].value, 'a', up[0].nvalue);
    cls = store_reservation_class(t.c, &up[0], 0);
    assert_int_equal(store_commit(t.c, &up[0], &req, NULL, NULL), STORE_OK);
    assert_int_equal(up[0].cls, cls); /* placing the upload kept it */
    store_abort(t.c, &up[2]); /* its owner closes before looking: freed, cut or not */
    for (int i = 3; i < 6; i++)
        store_abort(t.c, &up[i]);
    st = st_of(&t);
    assert_int_equal(st.upload_bytes, 0);
    assert_int_equal(st.uploads_refused, 1);
    char buf[8];
    struct store_item it;
    struct store_get_req g = {.want_value = true};
    assert_int_equal(store_get(t.c, "k", 1, &g, &it), STORE_OK);
    assert_int_equal(it.nvalue, 1000000);
    store_pin_release(it.pin);
    (void)buf;
    tstore_close(&t);
}

/* An upload commits by every mode's rules: add on a live key is refused
 * (and its bytes given back), append joins the old value. */
static void test_upload_modes(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    assert_int_equal(tset(&t, "a", "old", STORE_MODE_SET, 5, REL_TIME_NEVER, NULL), STORE_OK);
    struct store_reservation r;
    assert_int_equal(store_reserve_upload(t.c, "a", 1, 3, true, 0, REL_TIME_NEVER, &r), STORE_OK);
    memcpy(r.value, "new", 3);
    struct store_set_req add = {.mode = STORE_MODE_ADD, .exptime = REL_TIME_NEVER};
    assert_int_equal(store_commit(t.c, &r, &add, NULL, NULL), STORE_NOT_STORED);
    assert_int_equal(store_reserve_upload(t.c, "a", 1, 4, false, 0, 0, &r), STORE_OK);
    memcpy(r.value, "+end", 4);
    struct store_set_req app = {.mode = STORE_MODE_APPEND};
    uint32_t size = 0;
    assert_int_equal(store_commit(t.c, &r, &app, NULL, &size), STORE_OK);
    assert_int_equal(size, 7);
    char buf[16];
    struct store_item it;
    assert_int_equal(tget(&t, "a", buf, sizeof buf, &it), STORE_OK);
    assert_string_equal(buf, "old+end");
    assert_int_equal(it.flags, 5);
    assert_int_equal(st_of(&t).upload_bytes, 0);
    tstore_close(&t);
}

/* -M and memory full: an upload's set fails when it is placed, and (as
 * memcached's failed set) the key's old value is gone. */
static void test_upload_set_fails_like_reserve(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 2 * MB, MB, false, true);
    assert_int_equal(tset(&t, "victim", "old", STORE_MODE_SET, 0, REL_TIME_NEVER, NULL), STORE_OK);
    static char v[50000];
    memset(v, 'f', sizeof v - 1);
    int i = 0;
    for (; i < 1000; i++) {
        char key[16];
        snprintf(key, sizeof key, "fill%d", i);
        if (tset(&t, key, v, STORE_MODE_SET, 0, REL_TIME_NEVER, NULL) != STORE_OK)
            break;
    }
    assert_true(i < 1000); /* -M: full */
    struct store_reservation r;
    assert_int_equal(store_reserve_upload(t.c, "victim", 6, sizeof v - 1, true, 0,
                                          REL_TIME_NEVER, &r),
                     STORE_OK);
    memset(r.value, 'n', r.nvalue);
    struct store_set_req req = {
        .mode = STORE_MODE_SET, .exptime = REL_TIME_NEVER, .fail_deletes = true};
    assert_int_equal(store_commit(t.c, &r, &req, NULL, NULL), STORE_NO_MEMORY);
    char buf[8];
    assert_int_equal(tget(&t, "victim", buf, sizeof buf, NULL), STORE_MISS);
    assert_int_equal(st_of(&t).upload_bytes, 0);
    tstore_close(&t);
}

/* temporary_ttl: short-TTL items live in their own segments, which
 * eviction takes only when nothing else is left. */
static void test_temporary_ttl_group(void **state)
{
    (void)state;
    clock_setup();
    struct store_options o = {.mem_limit = 4 * MB, .item_size_max = MB, .evictions = true,
                              .cas_enabled = true, .temp_lru = true, .temporary_ttl = 61};
    struct tstore t;
    tstore_open_opts(&t, &o);
    rel_time_t now = clock_now();
    assert_int_equal(store_ttl_group(t.s, now + 30, now), STORE_GROUP_TEMP);
    assert_int_equal(store_ttl_group(t.s, now + 61, now), STORE_GROUP_TEMP);
    assert_true(store_ttl_group(t.s, now + 62, now) < STORE_TTL_GROUPS);
    assert_int_equal(store_ttl_group(t.s, REL_TIME_NEVER, now), 0);
    /* `lru temp_ttl`: off with a negative value, back on with another */
    store_set_temporary_ttl(t.s, -1);
    assert_true(store_ttl_group(t.s, now + 30, now) < STORE_TTL_GROUPS);
    store_set_temporary_ttl(t.s, 10);
    assert_true(store_ttl_group(t.s, now + 30, now) < STORE_TTL_GROUPS);
    assert_int_equal(store_ttl_group(t.s, now + 10, now), STORE_GROUP_TEMP);
    store_set_temporary_ttl(t.s, 61);

    static char v[60000];
    memset(v, 'v', sizeof v - 1);
    assert_int_equal(tset(&t, "canary", v, STORE_MODE_SET, 0, now + 30, NULL), STORE_OK);
    for (int i = 0; i < 300; i++) {
        char key[16];
        snprintf(key, sizeof key, "long%d", i);
        assert_int_equal(tset(&t, key, v, STORE_MODE_SET, 0, now + 3600, NULL), STORE_OK);
    }
    char *buf = malloc(sizeof v);
    assert_int_equal(tget(&t, "canary", buf, sizeof v, NULL), STORE_OK);
    /* only short-TTL writes: they still get room, from each other */
    for (int i = 0; i < 300; i++) {
        char key[16];
        snprintf(key, sizeof key, "temp%d", i);
        assert_int_equal(tset(&t, key, v, STORE_MODE_SET, 0, now + 20, NULL), STORE_OK);
    }
    assert_int_equal(tget(&t, "temp299", buf, sizeof v, NULL), STORE_OK);
    free(buf);
    tstore_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uploads_pin_no_segment),
        cmocka_unit_test(test_upload_limit),
        cmocka_unit_test(test_upload_here_past_the_limit),
        cmocka_unit_test(test_upload_small_bytes),
        cmocka_unit_test(test_upload_modes),
        cmocka_unit_test(test_upload_cut_off),
        cmocka_unit_test(test_upload_set_fails_like_reserve),
        cmocka_unit_test(test_temporary_ttl_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
