/* SPDX-License-Identifier: BSD-3-Clause */
/* Eviction by compaction must leave room for the item that asked for it.
 *
 * A victim compacted in place keeps its recently read items (up to 3/4 of a
 * segment) and becomes the writer's open segment. The reservation that
 * triggered the eviction is then laid out after the kept items; when those
 * plus the new item exceeded the segment, the value was written past the
 * segment's end, into whatever memory followed it (often the next segment's
 * mapping: other items' bytes, read back as wrong values under the soak
 * test's mix of large values and readers). */
#include "test_store_helpers.h"

#include "store/store_core.h"

#include <stdio.h>
#include <stdlib.h>

#define MB (1u << 20)

static char fill_byte(int i)
{
    return (char)('A' + i % 50);
}

/* Reserve, check the reserved bytes lie inside their segment, fill, commit. */
static void put_checked(struct tstore *t, const char *key, size_t vlen, char c)
{
    struct store_reservation r;
    assert_int_equal(store_reserve_for(t->c, key, strlen(key), vlen, 0, REL_TIME_NEVER, &r),
                     STORE_OK);
    struct seg *seg = r.seg;
    assert_true(r.value >= seg->data);
    assert_true(r.value + vlen <= seg->data + t->s->pool.seg_size);
    assert_true(seg->write_off <= t->s->pool.seg_size);
    memset(r.value, c, vlen);
    struct store_set_req req = {.mode = STORE_MODE_SET, .exptime = REL_TIME_NEVER};
    assert_int_equal(store_commit(t->c, &r, &req, NULL, NULL), STORE_OK);
}

static void read_once(struct tstore *t, const char *key)
{
    struct store_item it;
    struct store_get_req g = {.want_value = true};
    if (store_get(t->c, key, strlen(key), &g, &it) == STORE_OK)
        store_pin_release(it.pin);
}

/* Every live item holds exactly the bytes it was given. */
static void check_all(struct tstore *t, const char *fmt, int n, size_t vlen)
{
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, fmt, i);
        struct store_item it;
        struct store_get_req g = {.want_value = true, .no_update = true};
        if (store_get(t->c, key, strlen(key), &g, &it) != STORE_OK)
            continue;
        assert_int_equal(it.nvalue, vlen);
        for (size_t j = 0; j < vlen; j++)
            if (it.value[j] != fill_byte(i)) {
                fprintf(stderr, "%s: byte %zu of %zu is wrong\n", key, j, vlen);
                fail();
            }
        store_pin_release(it.pin);
    }
}

static void test_compacted_victim_has_room(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    /* Small items, each read once: a victim full of them keeps 3/4 of a
     * segment when compacted. */
    const size_t small = 10000, big = 300000;
    int nsmall = 400, nbig = 40;
    for (int i = 0; i < nsmall; i++) {
        char key[32];
        snprintf(key, sizeof key, "s:%d", i);
        put_checked(&t, key, small, fill_byte(i));
        read_once(&t, key);
    }
    /* Large items (read too, as the soak's slow readers do) push the small
     * ones' segments through eviction: each new one must fit after what a
     * compacted victim kept. */
    for (int i = 0; i < nbig; i++) {
        char key[32];
        snprintf(key, sizeof key, "b:%d", i);
        put_checked(&t, key, big, fill_byte(i));
        read_once(&t, key);
        check_all(&t, "s:%d", nsmall, small);
        check_all(&t, "b:%d", i + 1, big);
    }
    struct store_stats st;
    store_stats(t.s, &st);
    assert_true(st.items_reinserted > 0); /* compaction did keep items */
    assert_true(st.evictions > 0);
    tstore_close(&t);
}

/* The same through many rounds of mixed sizes: kept bytes plus the new item
 * never pass the segment's end. */
static void test_compaction_mixed_sizes(void **state)
{
    (void)state;
    struct tstore t;
    tstore_open(&t, 4 * MB, MB, true, true);
    unsigned r = 12345;
    const int nkeys = 64;
    size_t len[64] = {0};
    for (int round = 0; round < 2000; round++) {
        r = r * 1103515245u + 12345u;
        int i = (int)((r >> 8) % nkeys);
        r = r * 1103515245u + 12345u;
        size_t vlen = (r >> 4) % 3 == 0 ? 200000 + (r >> 8) % 120000 : 1000 + (r >> 8) % 20000;
        char key[32];
        snprintf(key, sizeof key, "m:%d", i);
        put_checked(&t, key, vlen, fill_byte(i));
        len[i] = vlen;
        /* read a few keys so that victims have items to keep */
        for (int k = 0; k < 4; k++) {
            r = r * 1103515245u + 12345u;
            snprintf(key, sizeof key, "m:%d", (int)((r >> 8) % nkeys));
            read_once(&t, key);
        }
    }
    for (int i = 0; i < nkeys; i++) {
        char key[32];
        snprintf(key, sizeof key, "m:%d", i);
        struct store_item it;
        struct store_get_req g = {.want_value = true, .no_update = true};
        if (store_get(t.c, key, strlen(key), &g, &it) != STORE_OK)
            continue;
        assert_int_equal(it.nvalue, len[i]);
        for (size_t j = 0; j < it.nvalue; j++)
            assert_int_equal(it.value[j], fill_byte(i));
        store_pin_release(it.pin);
    }
    struct store_stats st;
    store_stats(t.s, &st);
    assert_true(st.items_reinserted > 0);
    tstore_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compacted_victim_has_room),
        cmocka_unit_test(test_compaction_mixed_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
