/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash half of a dump (src/store/store_flash_scan.c,
 * flash/flash_scan.c) on a temporary file of 64 KiB segments, driven as a
 * session drives it: probe, and on WAIT drain the worker's queue until
 * the wait set wakes, then walk the part. With the RAM walk (store_walk)
 * every live key is seen once; deleted and overwritten flash items are
 * not seen; compaction and drops between two parts leave no dead item
 * seen and no wrong one; a failed read ends the walk, counted. */
#define _GNU_SOURCE
#include "test_store_flash_helpers.h"
#include "store/store_compat.h"
#include "store/store_lookup.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 6000

/* Delete key k as a session does: its flash item read first. */
static enum store_status tdelete(struct tstore *t, const char *k)
{
    int woke = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    store_flash_attach(t->c, w);
    struct store_key key = store_key_of(k, strlen(k));
    if (store_flash_probe(t->c, w, &key) == STORE_PROBE_WAIT)
        wait_woken(t, &woke, 0);
    enum store_status st = store_delete(t->c, k, strlen(k), NULL);
    store_flash_wait_reset(w);
    store_flash_attach(t->c, NULL);
    store_flash_wait_destroy(w);
    return st;
}

struct seen {
    int n[N];
    int flash, ram, bad;
};

static int index_of(const struct store_item *it)
{
    char k[32];
    if (it->nkey != 12 || memcmp(it->key, "key:", 4) != 0)
        return -1;
    memcpy(k, it->key + 4, 8);
    k[8] = 0;
    int i = atoi(k);
    return i >= 0 && i < N ? i : -1;
}

static void on_ram(const struct store_item *it, void *arg)
{
    struct seen *s = arg;
    int i = index_of(it);
    if (i < 0)
        return;
    s->n[i]++;
    s->ram++;
}

/* A flash item is one of the fill's, whole: its flags and length. */
static void on_flash(const struct store_item *it, uint32_t page, uint32_t offset, void *arg)
{
    struct seen *s = arg;
    (void)page;
    int i = index_of(it);
    if (i < 0 || it->flags != (uint32_t)i || it->nvalue != VLEN || offset < 64) {
        s->bad++;
        return;
    }
    s->n[i]++;
    s->flash++;
}

/* The RAM walk, then the flash walk as a session runs it; between(arg)
 * after each part. Returns the parts read. */
static int walk_all(struct tstore *t, struct seen *s, void (*between)(struct tstore *, int))
{
    memset(s, 0, sizeof *s);
    uint64_t cur = 0;
    while (cur != UINT64_MAX)
        store_walk(t->s, &cur, 64, on_ram, s);
    int woke = 0, parts = 0;
    struct store_flash_wait *w = store_flash_wait_create(on_wake, &woke);
    struct store_flash_scan *sc = store_flash_scan_create(t->c, w);
    assert_non_null(sc);
    enum store_scan st = STORE_SCAN_READ;
    while (st != STORE_SCAN_END) {
        if (st == STORE_SCAN_READ) {
            int before = woke;
            if (store_flash_scan_probe(sc) == STORE_PROBE_WAIT) {
                wait_woken(t, &woke, before);
                assert_int_equal(store_flash_scan_probe(sc), STORE_PROBE_READY);
            }
            if (between)
                between(t, parts);
            parts++;
        }
        st = store_flash_scan_walk(sc, 64, on_flash, s);
    }
    store_flash_scan_destroy(sc);
    store_flash_wait_destroy(w);
    return parts;
}

static void test_every_live_key_once(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 32 * MB, 1);
    fill(&t, N, NULL);
    static struct seen s;
    int parts = walk_all(&t, &s, NULL);
    assert_int_equal(s.bad, 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(s.n[i], 1);
    assert_true(s.flash > N / 3);
    assert_true(s.ram > 0);
    assert_true(parts > 10);
    tstore_close(&t);
}

static void test_deleted_and_overwritten_not_seen(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 32 * MB, 1);
    fill(&t, N, NULL);
    char k[32];
    for (int i = 0; i < N; i += 7) {
        key_of(i, k);
        assert_int_equal(tdelete(&t, k), STORE_OK);
        key_of(i + 1, k);
        /* flags 0, one byte: on_flash would count it bad */
        assert_int_equal(tset(&t, k, "x", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    static struct seen s;
    walk_all(&t, &s, NULL);
    assert_int_equal(s.bad, 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(s.n[i], i % 7 == 0 ? 0 : 1);
    tstore_close(&t);
}

/* Between two parts: 9 keys of 10 overwritten in RAM, compaction run to
 * its end (rewrites, frees), then the keys written again past the file:
 * whole segments dropped under the walk. */
static void churn(struct tstore *t, int part)
{
    char k[32];
    if (part == 2) {
        for (int i = 0; i < N; i++) {
            key_of(i, k);
            if (i % 10)
                assert_int_equal(tset(t, k, "x", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
        }
        for (int n = 0; n < 64; n++)
            flash_tier_maintain(t->s->flash);
    }
    if (part == 4)
        fill(t, N, NULL);
}

static void test_segments_moved_under_the_walk(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 4 * MB, 16);
    fill(&t, N, NULL);
    struct flash_tier_counters before, after;
    flash_tier_counters_read(t.s->flash, &before);
    static struct seen s;
    walk_all(&t, &s, churn);
    /* nothing dead or wrong; a key is seen at most once a copy: the
     * fill's, that copy again once moved from RAM to flash, the refill's */
    assert_int_equal(s.bad, 0);
    for (int i = 0; i < N; i++)
        assert_true(s.n[i] <= 3);
    flash_tier_counters_read(t.s->flash, &after);
    assert_true(after.compact_rescues > before.compact_rescues);
    assert_true(after.page_evictions + after.page_reclaims >
                before.page_evictions + before.page_reclaims);
    assert_int_equal(after.badcrc_from_extstore, before.badcrc_from_extstore);
    tstore_close(&t);
}

/* The file cut to nothing: the walk's next read fails and ends it,
 * counted; nothing stalls. */
static void test_read_error_ends_the_walk(void **state)
{
    (void)state;
    struct tstore t;
    open_flash(&t, 32 * MB, 1);
    fill(&t, N, NULL);
    assert_int_equal(truncate(flash_path, 0), 0);
    uint64_t errors = __atomic_load_n(&t.s->flash->c.read_errors, __ATOMIC_RELAXED);
    static struct seen s;
    walk_all(&t, &s, NULL); /* it ends: no stall */
    assert_true(__atomic_load_n(&t.s->flash->c.read_errors, __ATOMIC_RELAXED) > errors);
    assert_true(s.flash < N / 2);
    assert_int_equal(s.bad, 0);
    tstore_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_live_key_once, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_deleted_and_overwritten_not_seen, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_segments_moved_under_the_walk, flash_file_setup,
                                        flash_file_teardown),
        cmocka_unit_test_setup_teardown(test_read_error_ends_the_walk, flash_file_setup,
                                        flash_file_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
