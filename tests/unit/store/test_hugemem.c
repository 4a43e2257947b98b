/* SPDX-License-Identifier: BSD-3-Clause */
/* store/hugemem: aligned huge-page mappings and the pieces carved out of
 * them for segments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/hugemem.h"

static void test_map_aligned(void **state)
{
    (void)state;
    size_t len = 2 * HUGEMEM_PAGE;
    char *p = hugemem_map(len);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % HUGEMEM_PAGE, 0);
    assert_int_equal(p[0] | p[len - 1], 0); /* zeroed, all of it mapped */
    memset(p, 1, len);
    assert_int_equal(munmap(p, len), 0);
    /* not a multiple: a plain mapping, still usable */
    char *q = hugemem_map(12345);
    assert_non_null(q);
    memset(q, 2, 12345);
    assert_int_equal(munmap(q, 12345), 0);
}

/* Pages the filler has ready, waiting up to 10 s for at least `want`. */
static unsigned ready_after_wait(struct hugemem_pool *pool, unsigned want)
{
    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&pool->lock);
        unsigned n = pool->nready;
        pthread_mutex_unlock(&pool->lock);
        if (n >= want)
            return n;
        usleep(1000);
    }
    return 0;
}

static void test_pieces(void **state)
{
    (void)state;
    struct hugemem_pool pool;
    hugemem_pool_init(&pool);
    size_t len = HUGEMEM_PAGE / 2;
    /* a small holder gets small pages, and no filler */
    char *small = hugemem_piece(&pool, len, 0, true);
    assert_non_null(small);
    assert_false(pool.started);
    assert_int_equal(munmap(small, len), 0);
    /* nothing ready yet: a plain mapping now, and the filler starts */
    char *first = hugemem_piece(&pool, len, HUGEMEM_AFTER, true);
    assert_non_null(first);
    memset(first, 9, len);
    assert_int_equal(ready_after_wait(&pool, HUGEMEM_READY), HUGEMEM_READY);
    char *a = hugemem_piece(&pool, len, HUGEMEM_AFTER, true);
    char *b = hugemem_piece(&pool, len, HUGEMEM_AFTER, true);
    char *c = hugemem_piece(&pool, len, HUGEMEM_AFTER, false);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    /* two pieces share one aligned page, the third starts the next */
    assert_int_equal((uintptr_t)a % HUGEMEM_PAGE, 0);
    assert_ptr_equal(b, a + len);
    assert_int_equal((uintptr_t)c % HUGEMEM_PAGE, 0);
    assert_int_equal(pool.spare_len, len);
    assert_int_equal(a[0] | b[len - 1] | c[0], 0); /* zeroed */
    memset(a, 1, len);
    memset(b, 2, len);
    memset(c, 3, len);
    /* each given back on its own; the other half stays intact */
    assert_int_equal(munmap(a, len), 0);
    assert_int_equal(b[0], 2);
    assert_int_equal(b[len - 1], 2);
    assert_int_equal(munmap(b, len), 0);
    assert_int_equal(munmap(c, len), 0);
    assert_int_equal(munmap(first, len), 0);
    /* a size that does not divide the page gets a mapping of its own */
    char *d = hugemem_piece(&pool, 3u << 20, HUGEMEM_AFTER, true);
    assert_non_null(d);
    memset(d, 4, 3u << 20);
    assert_int_equal(munmap(d, 3u << 20), 0);
    /* what was never handed out (a ready page, the spare half) is unmapped */
    hugemem_pool_release(&pool);
    assert_int_equal(pool.spare_len, 0);
    assert_int_equal(pool.nready, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_aligned),
        cmocka_unit_test(test_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
