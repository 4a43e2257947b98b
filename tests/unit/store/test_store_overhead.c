/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory overhead per item, measured the way the issue states it: a store of
 * -m 64 MiB filled with `key:%010d` keys and fixed-size values until the
 * first eviction, then limit_maxbytes / curr_items - key - value. Prints the
 * numbers (and the index bytes outside -m) and checks the targets. The
 * index is checked without the table's huge page faulted in ahead of the
 * splits (printed beside it): a fixed 2 MiB at most, which a few more items
 * a segment make it count or not at the first eviction (3.8 B an item at
 * 100-byte values), not a cost per item. */
#include "test_store_helpers.h"
#include "store/store_core.h"

#include <stdio.h>
#include <stdlib.h>

#define MB (1u << 20)

static double fill(size_t vlen, bool hinted, double *index_per_item)
{
    const size_t mem = 64 * MB;
    struct tstore t;
    tstore_open(&t, mem, MB, true, true);
    /* The ghost: one 2-byte entry per 256 B of -m (a power of two here),
     * outside -m. */
    size_t ghost_bytes = (t.s->ghost.mask + 1) * sizeof(*t.s->ghost.tab);
    assert_int_equal(sizeof(*t.s->ghost.tab), 2);
    assert_true(ghost_bytes * 128 <= mem);
    char *v = malloc(vlen);
    memset(v, 'v', vlen);
    char key[32];
    struct store_stats st;
    struct store_set_req r = {.mode = STORE_MODE_SET};
    struct store_stats before;
    memset(&before, 0, sizeof before);
    size_t ahead = 0; /* index_ahead_bytes at `before` */
    bool near_full = false;
    for (unsigned i = 0;; i++) {
        int n = snprintf(key, sizeof key, "key:%010u", i);
        if (hinted) {
            assert_int_equal(store_store(t.c, key, (size_t)n, v, vlen, &r, NULL), STORE_OK);
        } else {
            struct store_reservation res;
            assert_int_equal(store_reserve(t.c, key, (size_t)n, vlen, &res), STORE_OK);
            memcpy(res.value, v, vlen);
            assert_int_equal(store_commit(t.c, &res, &r, NULL, NULL), STORE_OK);
        }
        /* Check often once every segment is in use, so the count is the
         * one just before the first eviction (which drops a whole segment). */
        if ((i & 255) == 0 || (near_full && (i & 15) == 0)) {
            store_stats(t.s, &st);
            if (st.evictions)
                break;
            near_full = st.seg_used + 1 >= st.seg_total;
            before = st;
            ahead = index_ahead_bytes(&t.s->index);
        }
    }
    st = before;
    double per = (double)st.limit_maxbytes / (double)st.curr_items - 14.0 - (double)vlen;
    *index_per_item = (double)(st.hash_bytes - ahead) / (double)st.curr_items;
    /* of which overflow buckets (now: their chunks are as at `before`
     * but for the last few inserts) */
    double ovf = (double)t.s->index.nchunks * INDEX_CHUNK_BUCKETS * 64 / (double)st.curr_items;
    printf("overhead %s value %4zu: %llu items, %.1f bytes/item in -m; index %.1f bytes/item "
           "outside -m (hash_bytes %llu, of which faulted ahead %zu: %.1f an item; overflow "
           "chunks %.1f; ghost %.1f)\n",
           hinted ? "store_store  " : "store_reserve", vlen, (unsigned long long)st.curr_items,
           per, (double)st.hash_bytes / (double)st.curr_items, (unsigned long long)st.hash_bytes, ahead,
           (double)ahead / (double)st.curr_items, ovf, (double)ghost_bytes / (double)st.curr_items);
    free(v);
    tstore_close(&t);
    return per;
}

static void test_overhead(void **state)
{
    (void)state;
    const size_t sizes[] = {1000, 100, 10};
    const double target[] = {32, 24, 24};
    /* The index outside -m without the page faulted ahead, with the ghost
     * and the segment table (two choices, moves two steps deep, 7.4 items
     * a bucket of eight slots, a 2-byte ghost entry per 256 B of -m: 25.0,
     * 9.8 and 8.9-9.0 measured at 1000, 100 and 10 B; the ghost alone 8.1,
     * 1.0 and 0.2). */
    const double index_target[] = {26.0, 10.6, 9.8};
#ifdef NODELAY_DEBUG
    /* Sanitizer and -O0 builds fill only the 1000-byte case: millions of
     * small items take minutes there. Release builds measure all three. */
    const int n = 1;
#else
    const int n = 3;
#endif
    for (int i = 0; i < n; i++) {
        double ix;
        double a = fill(sizes[i], true, &ix);
        double b = fill(sizes[i], false, &ix);
        assert_true(a <= target[i]);
        assert_true(b <= target[i]);
        assert_true(ix <= index_target[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_overhead)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
