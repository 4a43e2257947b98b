/* SPDX-License-Identifier: BSD-3-Clause */
/* W6 (docs/restarts.md): a segment compacted in place with -e, the server
 * killed after any one of the compaction's stores to the file. The same
 * compaction is run once per store: at the n-th store the file is copied
 * as a kill -9 would leave it, and a restore of the copy must bring back
 * every item that was acknowledged by then, with its value, and no item
 * that was deleted. Under -M (no eviction) a write that finds no room
 * compacts the segment with the most dead bytes: items move down over
 * deleted ones, or stay where a gap is smaller than they are. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../test_store_helpers.h"
#include "store/persist/persist.h"
#include "store/seg_counts.h"
#include "store/store_core.h"

static char path[64], copy_path[64];

#ifdef NODELAY_DEBUG

#define MB ((size_t)1 << 20)
#define KEYS 160

/* The step to copy the file at, the steps seen, and what was acknowledged
 * then. */
static struct {
    struct store *s;
    int target, steps;
    char *img;
    size_t len;
    int fresh_done; /* new keys acknowledged when the copy was taken */
    int fresh_now;
} cut;

static void open_at(struct tstore *t, const char *file)
{
    clock_setup();
    struct store_options o = {
        .mem_limit = 4 * MB,
        .item_size_max = 64 * 1024,
        .evictions = false, /* -M: compact, never evict */
        .cas_enabled = true,
        .memory_file = file,
    };
    tstore_open_opts(t, &o);
}

static void on_step(struct seg *v)
{
    (void)v;
    if (++cut.steps != cut.target)
        return;
    struct persist *pm = cut.s->pm;
    cut.len = pm->map_len;
    cut.img = malloc(cut.len);
    assert_non_null(cut.img);
    /* through the file (the same pages): a copy, as a kill leaves them */
    assert_int_equal(pread(pm->fd, cut.img, cut.len, 0), (ssize_t)cut.len);
    cut.fresh_done = cut.fresh_now;
}

/* Sizes that differ, so some gaps left by the deleted keys are smaller
 * than the item after them (which then stays in place). */
static size_t vlen(int i)
{
    return 6000 + (size_t)(i % 7) * 2500;
}

static void value_of(char *buf, const char *key, int i)
{
    size_t n = vlen(i);
    memset(buf, 'a' + i % 26, n);
    memcpy(buf, key, strlen(key));
    buf[n] = 0;
}

/* Fill, delete every other key, then write new keys until compactions
 * have run; the file is copied at step `target` (0: count the steps). */
static int run(int target)
{
    static char val[64 * 1024];
    char key[32];
    struct tstore t;
    unlink(path);
    open_at(&t, path);
    cut = (typeof(cut)){.s = t.s, .target = target};
    for (int i = 0; i < KEYS; i++) {
        snprintf(key, sizeof key, "k%d", i);
        value_of(val, key, i);
        if (tset(&t, key, val, STORE_MODE_SET, 0, 0, NULL) != STORE_OK)
            break;
    }
    for (int i = 1; i < KEYS; i += 2) {
        snprintf(key, sizeof key, "k%d", i);
        store_delete(t.c, key, strlen(key), NULL);
    }
    seg_debug_compact_step = on_step;
    for (int i = 0; i < KEYS; i++) {
        snprintf(key, sizeof key, "n%d", i);
        value_of(val, key, i);
        if (tset(&t, key, val, STORE_MODE_SET, 0, 0, NULL) != STORE_OK)
            break;
        cut.fresh_now = i + 1;
    }
    seg_debug_compact_step = NULL;
    struct store_stats st;
    store_stats(t.s, &st);
    if (target == 0)
        assert_true(st.items_reinserted > 0); /* compaction ran */
    tstore_close(&t);
    return cut.steps;
}

/* The copy restored as after a crash: every acknowledged key with its
 * value, no deleted one; false (and a line saying so) when not. */
static bool check_copy(int step)
{
    struct pm_hdr *h = (struct pm_hdr *)cut.img;
    h->state = PM_RUNNING;
    int fd = open(copy_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, cut.img, cut.len), (ssize_t)cut.len);
    close(fd);
    free(cut.img);
    cut.img = NULL;
    struct tstore t;
    open_at(&t, copy_path);
    static char want[64 * 1024], got[64 * 1024];
    char key[32];
    int lost = 0, resurrected = 0;
    for (int i = 0; i < KEYS; i++) {
        snprintf(key, sizeof key, "k%d", i);
        enum store_status r = tget(&t, key, got, sizeof got, NULL);
        value_of(want, key, i);
        if (i % 2 == 0 && (r != STORE_OK || strcmp(got, want) != 0))
            lost++;
        if (i % 2 == 1 && r != STORE_MISS)
            resurrected++;
    }
    for (int i = 0; i < cut.fresh_done; i++) {
        snprintf(key, sizeof key, "n%d", i);
        value_of(want, key, i);
        if (tget(&t, key, got, sizeof got, NULL) != STORE_OK || strcmp(got, want) != 0)
            lost++;
    }
    tstore_close(&t);
    unlink(copy_path);
    if (lost || resurrected)
        print_message("killed after compaction store %d: %d acknowledged items lost or changed, "
                      "%d deleted ones back\n",
                      step, lost, resurrected);
    return !lost && !resurrected;
}

static void test_a_kill_at_any_compaction_store_loses_nothing(void **state)
{
    (void)state;
    int steps = run(0);
    assert_true(steps > 10);
    print_message("%d stores to the file in the compactions\n", steps);
    int bad = 0;
    for (int n = 1; n <= steps; n++) {
        assert_int_equal(run(n), steps); /* the same compaction each time */
        assert_non_null(cut.img);
        bad += !check_copy(n);
    }
    if (bad)
        fail_msg("%d of %d kill points lose or bring back items", bad, steps);
}

#else

static void test_needs_the_debug_hook(void **state)
{
    (void)state;
    print_message("the compaction kill points need seg_debug_compact_step: built by "
                  "CONFIG=debug, asan or tsan\n");
    skip();
}

#endif

int main(void)
{
    snprintf(path, sizeof(path), "/dev/shm/nodelay-unit-compact-%d", (int)getpid());
    snprintf(copy_path, sizeof(copy_path), "/dev/shm/nodelay-unit-compact-%d.cut", (int)getpid());
    const struct CMUnitTest tests[] = {
#ifdef NODELAY_DEBUG
        cmocka_unit_test(test_a_kill_at_any_compaction_store_loses_nothing),
#else
        cmocka_unit_test(test_needs_the_debug_hook),
#endif
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    unlink(copy_path);
    return rc;
}
