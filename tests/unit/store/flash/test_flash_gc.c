/* SPDX-License-Identifier: BSD-3-Clause */
/* The compactor's choice (flash_gc.c), from segment records alone: the
 * least live segment is rewritten while the budget covers it and it is
 * under ext_max_frag, else dropped when writers need room, else left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "store/flash/flash_gc.h"

#define NSEG 8

/* segment i: 100 items of 1 KiB, `live` of them live, written at seq */
static void seg(struct flash_rec *r, uint32_t live, uint64_t seq, uint8_t bucket)
{
    *r = (struct flash_rec){.state = FSEG_DISK,
                            .nitems = 100,
                            .live_items = live,
                            .nbytes = FLASH_HDR_LEN + 100 * 1024,
                            .seq = seq,
                            .bucket = bucket};
}

static void fill(struct flash_rec *recs)
{
    memset(recs, 0, NSEG * sizeof *recs); /* FSEG_FREE */
    seg(&recs[0], 90, 1, FLASH_W_NORMAL); /* oldest, but 90 % live */
    seg(&recs[1], 40, 5, FLASH_W_NORMAL); /* least live */
    seg(&recs[2], 70, 3, FLASH_W_COMPACT);
    seg(&recs[3], 10, 2, FLASH_W_LOWTTL); /* left to expire whole */
    seg(&recs[4], 60, 4, FLASH_W_NORMAL);
}

static struct flash_gc_rule rule(int64_t credit, bool need_room)
{
    return (struct flash_gc_rule){.free_segs = 0,
                                  .compact_under = 1,
                                  .drop_under = 1,
                                  .max_frag = 0.8,
                                  .need_room = need_room,
                                  .credit = credit};
}

struct pick {
    enum flash_gc_act act;
    int32_t victim;
    bool unread;
};

static struct pick choose(const struct flash_rec *recs, struct flash_gc_rule g)
{
    struct pick p;
    p.act = flash_gc_choose(recs, NSEG, &g, &p.victim, &p.unread);
    return p;
}

static void test_least_live_rescued_within_budget(void **state)
{
    (void)state;
    struct flash_rec recs[NSEG];
    fill(recs);
    assert_int_equal(flash_gc_live_bytes(&recs[1]), 40 * 1024);
    struct pick p = choose(recs, rule(40 * 1024, true));
    assert_int_equal(p.act, FLASH_GC_RESCUE);
    assert_int_equal(p.victim, 1); /* not the oldest (0), nor the low-TTL one (3) */
    assert_false(p.unread);
}

static void test_past_budget_dropped_only_for_room(void **state)
{
    (void)state;
    struct flash_rec recs[NSEG];
    fill(recs);
    /* a byte short of its live bytes: not rewritten */
    struct pick p = choose(recs, rule(40 * 1024 - 1, true));
    assert_int_equal(p.act, FLASH_GC_DROP);
    assert_int_equal(p.victim, 1); /* the fewest items lost */
    assert_int_equal(choose(recs, rule(40 * 1024 - 1, false)).act, FLASH_GC_NONE);
}

static void test_cheap_rescued_without_credit(void **state)
{
    (void)state;
    struct flash_rec recs[NSEG];
    fill(recs);
    recs[4].live_items = 21; /* 21/79 bytes a byte freed: under 7/25 */
    struct pick p = choose(recs, rule(-(1 << 20), true));
    assert_int_equal(p.act, FLASH_GC_RESCUE);
    assert_int_equal(p.victim, 4);
    recs[4].live_items = 22; /* past it: dropped, the credit spent */
    p = choose(recs, rule(-(1 << 20), true));
    assert_int_equal(p.act, FLASH_GC_DROP);
    assert_int_equal(p.victim, 4);
}

static void test_over_max_frag_dropped(void **state)
{
    (void)state;
    struct flash_rec recs[NSEG];
    fill(recs);
    struct flash_gc_rule g = rule(1 << 30, true);
    g.max_frag = 0.3; /* the least live is 40 % live: costs 2 bytes a byte freed */
    struct pick p = choose(recs, g);
    assert_int_equal(p.act, FLASH_GC_DROP);
    assert_int_equal(p.victim, 1);
}

static void test_nothing_while_pages_free(void **state)
{
    (void)state;
    struct flash_rec recs[NSEG];
    fill(recs);
    struct flash_gc_rule g = rule(1 << 30, true);
    g.free_segs = 1;
    struct pick p = choose(recs, g);
    assert_int_equal(p.act, FLASH_GC_NONE);
    assert_int_equal(p.victim, -1);
}

/* The compactor starts above the room it keeps by dropping (and so above
 * the writers' own drop point, within it), whatever the page size. */
static void test_under_above_room(void **state)
{
    (void)state;
    /* pages of 16 segments: ext_compact_under's pages, as given */
    assert_int_equal(flash_gc_under(1, 16, 4), 16);
    assert_int_equal(flash_gc_under(3, 16, 4), 48);
    /* a page a segment, the default of one page: the room and a margin */
    assert_int_equal(flash_gc_under(1, 1, 1), 1 + FLASH_GC_MARGIN);
    assert_int_equal(flash_gc_under(1, 2, 2), 2 + FLASH_GC_MARGIN);
    for (uint32_t spp = 1; spp <= 32; spp++)
        for (uint32_t room = 0; room <= 4; room++)
            assert_true(flash_gc_under(1, spp, room) > room);
    /* a larger ext_compact_under is kept, and the product does not wrap */
    assert_int_equal(flash_gc_under(4, 1, 1), 4);
    assert_int_equal(flash_gc_under(UINT32_MAX, 16, 4), UINT32_MAX);
    /* 0 pages, `extstore compact_under 0` at run time: no compaction at all */
    assert_int_equal(flash_gc_under(0, 16, 4), 0);
    assert_int_equal(flash_gc_under(0, 1, 1), 0);
}

static void test_drop_unread_takes_oldest(void **state)
{
    (void)state;
    struct flash_rec recs[NSEG];
    fill(recs);
    /* no credit, none under ext_max_frag: memcached's oldest page, its
     * unread items dropped */
    struct flash_gc_rule g = rule(0, true);
    g.drop_unread = true;
    g.max_frag = 0.2;
    struct pick p = choose(recs, g);
    assert_int_equal(p.act, FLASH_GC_RESCUE);
    assert_int_equal(p.victim, 0);
    assert_true(p.unread);
}

static void test_least_live_any_bucket(void **state)
{
    (void)state;
    struct flash_rec recs[NSEG];
    fill(recs);
    assert_int_equal(flash_gc_least_live(recs, NSEG, false, -1), 1);
    assert_int_equal(flash_gc_least_live(recs, NSEG, true, -1), 3);
    /* the one compaction is emptying is passed over */
    assert_int_equal(flash_gc_least_live(recs, NSEG, true, 3), 1);
    assert_int_equal(flash_gc_least_live(recs, NSEG, false, 1), 4);
    recs[1].state = FSEG_WRITING; /* not on the device yet */
    assert_int_equal(flash_gc_least_live(recs, NSEG, false, -1), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_least_live_rescued_within_budget),
        cmocka_unit_test(test_past_budget_dropped_only_for_room),
        cmocka_unit_test(test_cheap_rescued_without_credit),
        cmocka_unit_test(test_over_max_frag_dropped),
        cmocka_unit_test(test_nothing_while_pages_free),
        cmocka_unit_test(test_under_above_room),
        cmocka_unit_test(test_drop_unread_takes_oldest),
        cmocka_unit_test(test_least_live_any_bucket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
