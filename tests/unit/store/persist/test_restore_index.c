/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the -e restore puts each item in the index (restore_index.c): in
 * either of its key's two buckets, as an insert would, so a restart leaves
 * the table with no more overflow buckets than it had before, and every
 * key is found (docs/store-index.md "Index"). Measured after a graceful
 * stop and after a kill (the file left as it was, not marked clean). */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_store_helpers.h"
#include "store/persist/persist.h"
#include "store/store_core.h"

static char path[64];

/* TSan runs a fill about ten times slower, and what it checks here, the
 * restore's fill threads, a quarter of the items exercise as well: the
 * fills of the layout checks are a quarter as large under it (still a
 * table part split, and the split tables below keep their shapes). */
#if defined(__SANITIZE_THREAD__)
#define FILL_DIV 4
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FILL_DIV 4
#endif
#endif
#ifndef FILL_DIV
#define FILL_DIV 1
#endif

static int file_setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/dev/shm/nd-rix-%d", (int)getpid());
    unlink(path);
    return 0;
}

static int file_teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void open_pm_at(struct tstore *t, unsigned hashpower)
{
    clock_setup();
    struct store_options o = {
        .mem_limit = (size_t)64 << 20,
        .item_size_max = 64 * 1024,
        .evictions = true,
        .cas_enabled = true,
        .memory_file = path,
        .hashpower = hashpower,
    };
    tstore_open_opts(t, &o);
}

static void open_pm(struct tstore *t)
{
    open_pm_at(t, 0);
}

/* What the index holds, per item. */
struct ix_use {
    uint64_t items, overflow; /* occupied slots; overflow buckets in use */
    uint32_t chunks;          /* overflow chunks mapped */
};

static struct ix_use ix_use(struct tstore *t)
{
    struct index *ix = &t->s->index;
    return (struct ix_use){
        .items = __atomic_load_n(&ix->items, __ATOMIC_RELAXED),
        .overflow = __atomic_load_n(&ix->overflow_used, __ATOMIC_RELAXED),
        .chunks = ix->nchunks,
    };
}

static void print_use(const char *when, const struct ix_use *u)
{
    printf("restore index %-14s %7llu items, %5llu overflow buckets (%.3f B/item), "
           "%u chunks (%.3f B/item)\n",
           when, (unsigned long long)u->items, (unsigned long long)u->overflow,
           64.0 * (double)u->overflow / (double)u->items, u->chunks,
           (double)u->chunks * INDEX_CHUNK_BUCKETS * 64 / (double)u->items);
}

static void key_of(int i, char *k, size_t n)
{
    snprintf(k, n, "key:%010d", i);
}

/* Leave the file as a kill -9 would: not marked clean, so the restore
 * walks it as after a crash. */
static void mark_killed(void)
{
    uint32_t running = PM_RUNNING;
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, &running, sizeof running, offsetof(struct pm_hdr, state)),
                     (ssize_t)sizeof running);
    close(fd);
}

/* n keys of 20-byte values that say their key's number. */
static void fill_values(struct tstore *t, int n)
{
    char k[32], v[32];
    for (int i = 0; i < n; i++) {
        key_of(i, k, sizeof k);
        snprintf(v, sizeof v, "value-%013d", i);
        assert_int_equal(tset(t, k, v, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
}

/* n items of 20-byte values (the table near its split point, where one
 * choice chains most), then a restart; `kill` leaves the file as a kill
 * -9 would (not marked clean): the walk that follows a crash. */
static void fill_restart_check(int n, bool kill)
{
    struct tstore t;
    open_pm(&t);
    char k[32], v[32], got[64];
    fill_values(&t, n);
    struct ix_use before = ix_use(&t);
    assert_int_equal(before.items, n);
    tstore_close(&t);
    if (kill)
        mark_killed();

    open_pm(&t);
    struct ix_use after = ix_use(&t);
    print_use(kill ? "before a kill" : "before a stop", &before);
    print_use("after restore", &after);
    assert_int_equal(after.items, n);
    for (int i = 0; i < n; i++) {
        key_of(i, k, sizeof k);
        snprintf(v, sizeof v, "value-%013d", i);
        assert_int_equal(tget(&t, k, got, sizeof got, NULL), STORE_OK);
        assert_string_equal(got, v);
    }
    assert_true(after.overflow <= before.overflow);
    assert_true(after.chunks <= before.chunks);
    tstore_close(&t);
}

static void test_restore_overflows_no_more_than_before(void **state)
{
    (void)state;
    fill_restart_check(600000 / FILL_DIV, false);
}

static void test_restore_after_a_kill_overflows_no_more(void **state)
{
    (void)state;
    fill_restart_check(600000 / FILL_DIV, true);
}

/* n items fill a table to 2^L + s buckets with the split pointer s half
 * way through the level; the restore makes the same shape, not the power
 * of two above, and files each item by it: a key whose low L bits are
 * below s belongs in bucket h mod 2^(L+1), which may be 2^L + (h mod 2^L),
 * and is found there. The table costs what it cost before the restart. */
static void split_restart_check(unsigned hashpower, int n, bool kill)
{
    struct tstore t;
    unlink(path);
    open_pm_at(&t, hashpower);
    char k[32], v[32], got[64];
    for (int i = 0; i < n; i++) {
        key_of(i, k, sizeof k);
        snprintf(v, sizeof v, "v%d", i * 3);
        assert_int_equal(tset(&t, k, v, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    struct index *ix = &t.s->index;
    uint64_t shape = ix->shape;
    unsigned l = index_shape_level(shape);
    uint64_t split = index_shape_split(shape);
    /* mid-level: a quarter to three quarters of the level's buckets split */
    assert_true(split > (1ull << l) / 4 && split < (1ull << l) * 3 / 4);
    size_t before = index_bytes(ix) - index_ahead_bytes(ix);
    tstore_close(&t);
    if (kill)
        mark_killed();

    open_pm_at(&t, hashpower);
    ix = &t.s->index;
    printf("restore split      %s: level %u, split %llu -> level %u, split %llu; "
           "table %zu -> %zu bytes\n",
           kill ? "kill" : "stop", l, (unsigned long long)split, index_shape_level(ix->shape),
           (unsigned long long)index_shape_split(ix->shape), before, index_bytes(ix));
    assert_int_equal(ix->items, n);
    /* sized for the items as growth sized it: the same buckets, within
     * the one bucket a split is owed at the growth point */
    uint64_t was = index_shape_buckets(shape), now = index_shape_buckets(ix->shape);
    assert_true(now + 1 >= was && now <= was + 1);
    assert_true(index_bytes(ix) <= before + 4096);
    assert_int_equal(index_ahead_bytes(ix), 0);
    for (int i = 0; i < n; i++) {
        key_of(i, k, sizeof k);
        snprintf(v, sizeof v, "v%d", i * 3);
        assert_int_equal(tget(&t, k, got, sizeof got, NULL), STORE_OK);
        assert_string_equal(got, v);
    }
    tstore_close(&t);
}

static void test_restore_into_a_split_table_finds_every_key(void **state)
{
    (void)state;
    /* 2^15 + 2^14 buckets, filed by 17 bits in 16 units of two parts */
    int n = (int)((3u << 14) * INDEX_SPLIT_TENTHS / 10);
    split_restart_check(0, n, false);
    split_restart_check(0, n, true);
}

static void test_restore_into_a_small_split_table(void **state)
{
    (void)state;
    /* -o hashpower=10 (256 buckets): 2^10 + 643 buckets, filed by 11 bits,
     * one part holding both halves */
    split_restart_check(10, 10000, false);
    split_restart_check(10, 10000, true);
}

/* A header whose item count is far short (damaged) sizes the index for
 * what it says; the restore after a crash then counts the items and links them into a
 * table of their own size: the power of two at or below the buckets they
 * need at INDEX_SPLIT_TENTHS, and the rest presized, as store_create sizes
 * one, not a table made at the level the file reports. */
static void test_restore_with_a_short_count_sizes_for_the_items(void **state)
{
    (void)state;
    const int n = 450000; /* past the default table of 2^14 buckets */
    struct tstore t;
    open_pm(&t);
    char k[32], v[32], got[64];
    fill_values(&t, n);
    tstore_close(&t);
    mark_killed(); /* a crash's file: no stop checksum over the count */
    uint64_t one = 1;
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, &one, sizeof one, offsetof(struct pm_hdr, items)),
                     (ssize_t)sizeof one);
    close(fd);

    open_pm(&t);
    struct index *ix = &t.s->index;
    uint64_t buckets = index_shape_buckets(ix->shape);
    uint64_t need = ((uint64_t)n * 10 + INDEX_SPLIT_TENTHS - 1) / INDEX_SPLIT_TENTHS;
    printf("restore short count: %d items in %llu buckets (%llu needed)\n", n,
           (unsigned long long)buckets, (unsigned long long)need);
    assert_int_equal(ix->items, n);
    assert_true(buckets + 1 >= need && buckets <= need + 1);
    for (int i = 0; i < n; i += 7) {
        key_of(i, k, sizeof k);
        snprintf(v, sizeof v, "value-%013d", i);
        assert_int_equal(tget(&t, k, got, sizeof got, NULL), STORE_OK);
        assert_string_equal(got, v);
    }
    tstore_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restore_overflows_no_more_than_before, file_setup,
                                        file_teardown),
        cmocka_unit_test_setup_teardown(test_restore_after_a_kill_overflows_no_more, file_setup,
                                        file_teardown),
        cmocka_unit_test_setup_teardown(test_restore_into_a_split_table_finds_every_key, file_setup,
                                        file_teardown),
        cmocka_unit_test_setup_teardown(test_restore_into_a_small_split_table, file_setup,
                                        file_teardown),
        cmocka_unit_test_setup_teardown(test_restore_with_a_short_count_sizes_for_the_items,
                                        file_setup, file_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
