/* SPDX-License-Identifier: BSD-3-Clause */
/* The reply queue: copies, references with pins, rollback, partial consume. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reply/reply.h"
#include "store/store.h"

/* The store's pin release, observed: the queue must release every pin
 * exactly once, when its bytes are written or dropped. */
static int released[64];
static bool keep_refused; /* store_pin_keep's answer: reply queues pin their share */
static int kept_now;      /* pins the queue holds (kept and not yet released) */
void store_pin_release(struct store_pin *pin)
{
    released[(size_t)pin]++;
}
bool store_pin_keep(struct store_pin *pin, bool must)
{
    (void)pin;
    if (keep_refused && !must)
        return false;
    kept_now++;
    return true;
}
void store_pin_release_kept(struct store_pin *pin)
{
    kept_now--;
    released[(size_t)pin]++;
}
#define PIN(n) ((struct store_pin *)(size_t)(n))

/* Everything pending, flattened through reply_iov as a writev would see it. */
static size_t flatten(const struct reply_queue *q, char *out, size_t cap)
{
    struct iovec iov[1024];
    int n = reply_iov(q, iov, 1024);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        assert_true(len + iov[i].iov_len <= cap);
        memcpy(out + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    return len;
}

static int setup(void **state)
{
    (void)state;
    memset(released, 0, sizeof released);
    keep_refused = false;
    kept_now = 0;
    return 0;
}

static void test_copy_and_coalesce(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    assert_int_equal(reply_str(&q, "STORED\r\n"), 0);
    assert_int_equal(reply_printf(&q, "VALUE %s %d %d\r\n", "k", 0, 1), 0);
    assert_int_equal(reply_copy(&q, "", 0), 0);
    assert_int_equal(reply_pending(&q), 8 + 13);
    /* contiguous copies share one iovec */
    struct iovec iov[4];
    assert_int_equal(reply_iov(&q, iov, 4), 1);
    char buf[64];
    size_t n = flatten(&q, buf, sizeof buf);
    assert_int_equal(n, 21);
    assert_memory_equal(buf, "STORED\r\nVALUE k 0 1\r\n", 21);
    reply_consume(&q, 21);
    assert_int_equal(reply_pending(&q), 0);
    assert_int_equal(reply_iov(&q, iov, 4), 0);
    reply_release(&q);
}

static void test_ref_pins_released_on_consume(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    static const char value[] = "hello world";
    reply_str(&q, "VALUE a 0 11\r\n");
    assert_int_equal(reply_ref(&q, value, 11, PIN(1)), 0);
    reply_str(&q, "\r\nEND\r\n");
    assert_int_equal(reply_pending(&q), 14 + 11 + 7);
    char buf[64];
    assert_int_equal(flatten(&q, buf, sizeof buf), 32);
    assert_memory_equal(buf, "VALUE a 0 11\r\nhello world\r\nEND\r\n", 32);
    /* the value points into "item memory", not a copy */
    struct iovec iov[4];
    assert_int_equal(reply_iov(&q, iov, 4), 3);
    assert_ptr_equal(iov[1].iov_base, value);
    /* partial consume inside the value: pin still held */
    reply_consume(&q, 14 + 5);
    assert_int_equal(released[1], 0);
    assert_int_equal(flatten(&q, buf, sizeof buf), 13);
    assert_memory_equal(buf, " world\r\nEND\r\n", 13);
    reply_consume(&q, 6);
    assert_int_equal(released[1], 1);
    reply_consume(&q, 7);
    assert_int_equal(reply_pending(&q), 0);
    reply_release(&q);
    assert_int_equal(released[1], 1);
}

static void test_release_drops_pins(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    reply_ref(&q, "abc", 3, PIN(2));
    reply_ref(&q, "def", 3, PIN(3));
    reply_ref(&q, "", 0, PIN(4)); /* empty: released at once */
    assert_int_equal(released[4], 1);
    reply_consume(&q, 1);
    reply_release(&q); /* client vanished mid-reply */
    assert_int_equal(released[2], 1);
    assert_int_equal(released[3], 1);
}

static void test_value_copies_short_references_long(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    static char big[4096];
    memset(big, 'b', sizeof big);
    reply_str(&q, "VALUE s 0 5\r\n");
    assert_int_equal(reply_value(&q, "short", 5, PIN(5)), 0);
    assert_int_equal(released[5], 1); /* copied: pin back at once */
    assert_int_equal(reply_value(&q, big, sizeof big, PIN(6)), 0);
    assert_int_equal(released[6], 0); /* referenced: held until written */
    struct iovec iov[4];
    assert_int_equal(reply_iov(&q, iov, 4), 2); /* header+short value coalesce */
    assert_ptr_equal(iov[1].iov_base, big);
    reply_consume(&q, reply_pending(&q));
    assert_int_equal(released[6], 1);
    reply_release(&q);
}

/* A mark taken with sent segments at the head stays right when adding
 * segments slides the array down (reply_seg_add compacts). */
/* Past the share of the cache reply queues may pin, a value is copied and
 * its pin goes back at once: a client that never reads holds memory of its
 * own, never a segment. The bytes sent are the same. */
static void test_ref_copies_past_pin_share(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    static char value[2000];
    memset(value, 'v', sizeof value);
    assert_int_equal(reply_ref(&q, value, sizeof value, PIN(1)), 0);
    assert_int_equal(kept_now, 1);
    assert_int_equal(released[1], 0);
    keep_refused = true;
    assert_int_equal(reply_ref(&q, value, sizeof value, PIN(2)), 0);
    assert_int_equal(released[2], 1); /* released before any write */
    assert_int_equal(kept_now, 1);
    struct iovec iov[4];
    assert_int_equal(reply_iov(&q, iov, 4), 2);
    assert_ptr_equal(iov[0].iov_base, value);
    assert_ptr_not_equal(iov[1].iov_base, value); /* a copy */
    assert_memory_equal(iov[1].iov_base, value, sizeof value);
    assert_int_equal(reply_pending(&q), 2 * sizeof value);
    reply_consume(&q, 2 * sizeof value);
    assert_int_equal(kept_now, 0);
    assert_int_equal(released[1], 1);
    assert_int_equal(released[2], 1);
    /* a value over 16 KiB with no copy_limit (reply_init's 0) keeps its
     * pin even then */
    static char big[20000];
    assert_int_equal(reply_ref(&q, big, sizeof big, PIN(3)), 0);
    assert_int_equal(kept_now, 1);
    assert_int_equal(reply_iov(&q, iov, 4), 1);
    assert_ptr_equal(iov[0].iov_base, big);
    reply_release(&q);
    assert_int_equal(kept_now, 0);
    assert_int_equal(released[3], 1);
}

/* Past the pin share, values over 16 KiB count against what the connection
 * may owe (copy_limit): copied while the queue stays within it, so a
 * non-reader holds memory client_mem_limit bounds, never a segment; past
 * it the pin is kept beyond the share (the connection then pauses). */
static void test_large_ref_copied_within_copy_limit(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    static char big[100000];
    memset(big, 'B', sizeof big);
    keep_refused = true;
    q.copy_limit = 2 * sizeof big + 10;
    assert_int_equal(reply_ref(&q, big, sizeof big, PIN(1)), 0);
    assert_int_equal(kept_now, 0);
    assert_int_equal(released[1], 1); /* a copy: the pin went back at once */
    assert_int_equal(reply_str(&q, "\r\n"), 0);
    assert_int_equal(reply_ref(&q, big, sizeof big, PIN(2)), 0);
    assert_int_equal(kept_now, 0); /* 200,002 of 200,010: still within */
    assert_int_equal(released[2], 1);
    assert_int_equal(q.copied, 2 * sizeof big + 2);
    /* a third would pass the limit: kept by reference, beyond the share */
    assert_int_equal(reply_ref(&q, big, sizeof big, PIN(3)), 0);
    assert_int_equal(kept_now, 1);
    assert_int_equal(released[3], 0);
    static char out[3 * sizeof big + 2];
    assert_int_equal(flatten(&q, out, sizeof out), sizeof out);
    assert_memory_equal(out, big, sizeof big);
    assert_memory_equal(out + sizeof big, "\r\n", 2);
    assert_memory_equal(out + sizeof big + 2, big, sizeof big);
    struct iovec iov[8];
    int n = reply_iov(&q, iov, 8);
    assert_ptr_equal(iov[n - 1].iov_base, big); /* only the last by reference */
    reply_consume(&q, reply_pending(&q));
    assert_int_equal(kept_now, 0);
    assert_int_equal(released[3], 1);
    /* within the share, a pin is kept whatever the limit */
    keep_refused = false;
    q.copy_limit = SIZE_MAX;
    assert_int_equal(reply_ref(&q, big, sizeof big, PIN(4)), 0);
    assert_int_equal(kept_now, 1);
    reply_release(&q);
    assert_int_equal(released[4], 1);
}

static void test_rollback_after_compaction(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    static char big[1024];
    memset(big, 'v', sizeof big);
    for (int i = 0; i < 40; i++)
        reply_ref(&q, big, sizeof big, NULL);
    reply_consume(&q, 30 * sizeof big); /* head moves to 30 of 40 */
    struct reply_mark m;
    reply_get_mark(&q, &m);
    for (int i = 0; i < 100; i++) /* fills to cap and compacts */
        reply_ref(&q, big, sizeof big, PIN(7 + i % 2));
    reply_rollback(&q, &m);
    assert_int_equal(released[7] + released[8], 100);
    assert_int_equal(reply_pending(&q), 10 * sizeof big);
    struct iovec iov[64];
    assert_int_equal(reply_iov(&q, iov, 64), 10);
    reply_consume(&q, reply_pending(&q));
    reply_release(&q);
    assert_int_equal(released[7] + released[8], 100);
}

static void test_rollback(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    reply_str(&q, "STORED\r\n");
    struct reply_mark m;
    reply_get_mark(&q, &m);
    reply_str(&q, "VALUE a 0 1\r\n");
    reply_ref(&q, "x", 1, PIN(5));
    reply_str(&q, "\r\n");
    reply_rollback(&q, &m);
    assert_int_equal(released[5], 1);
    assert_int_equal(reply_pending(&q), 8);
    reply_str(&q, "CLIENT_ERROR bad command line format\r\n");
    char buf[128];
    size_t n = flatten(&q, buf, sizeof buf);
    assert_int_equal(n, 8 + 38);
    assert_memory_equal(buf, "STORED\r\nCLIENT_ERROR bad command line format\r\n", n);
    /* rollback to an empty queue */
    reply_consume(&q, n);
    reply_get_mark(&q, &m);
    reply_str(&q, "x");
    reply_rollback(&q, &m);
    assert_int_equal(reply_pending(&q), 0);
    reply_release(&q);
}

static void test_large_and_many(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    /* a copy bigger than a block, then thousands of small ones */
    size_t big = 100 * 1024;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    assert_int_equal(reply_copy(&q, data, big), 0);
    for (int i = 0; i < 5000; i++) {
        reply_printf(&q, "%04d\r\n", i);
        if (i % 100 == 0)
            reply_ref(&q, "R", 1, PIN(6));
    }
    size_t total = big + 5000 * 6 + 50;
    assert_int_equal(reply_pending(&q), total);
    /* drain with small, uneven writes as a slow socket would */
    size_t got = 0;
    char *all = malloc(total);
    while (reply_pending(&q) > 0) {
        struct iovec iov[16];
        int n = reply_iov(&q, iov, 16);
        assert_true(n > 0);
        size_t take = iov[0].iov_len < 777 ? iov[0].iov_len : 777;
        memcpy(all + got, iov[0].iov_base, take);
        got += take;
        reply_consume(&q, take);
    }
    assert_int_equal(got, total);
    assert_memory_equal(all, data, big);
    assert_memory_equal(all + big, "0000\r\nR0001\r\n", 13);
    assert_int_equal(released[6], 50);
    free(all);
    free(data);
    reply_release(&q);
}

static void test_reserve_commit(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    char *p = reply_reserve(&q, 32);
    assert_non_null(p);
    memcpy(p, "12345\r\n", 7);
    reply_commit(&q, 7);
    reply_commit(&q, 0);
    char buf[16];
    assert_int_equal(flatten(&q, buf, sizeof buf), 7);
    assert_memory_equal(buf, "12345\r\n", 7);
    reply_release(&q);
}

/* The memory the queue's blocks take, walked: the list and the spare. */
static size_t block_bytes(const struct reply_queue *q, size_t *nblocks)
{
    size_t bytes = 0, n = 0;
    for (const struct reply_block *b = q->first; b; b = b->next, n++)
        bytes += sizeof *b + b->size;
    if (q->spare)
        bytes += sizeof *q->spare + q->spare->size;
    if (nblocks)
        *nblocks = n;
    return bytes;
}

/* Everything the queue owns is in reply_held, which the connection counts
 * (response_obj_bytes, client_mem_limit). */
static void assert_held_honest(const struct reply_queue *q)
{
    assert_int_equal(reply_held(q), block_bytes(q, NULL) + q->cap * sizeof *q->segs);
}

/* Write everything pending in writes of at most `chunk` bytes. */
static void drain(struct reply_queue *q, size_t chunk)
{
    while (reply_pending(q) > 0) {
        struct iovec iov[64];
        int n = reply_iov(q, iov, 64);
        size_t take = 0;
        for (int i = 0; i < n && take < chunk; i++)
            take += iov[i].iov_len;
        reply_consume(q, take < chunk ? take : chunk);
        assert_held_honest(q);
    }
}

/* One piece larger than a block (a 22 KB `stats detail dump`) after a
 * drained reply, then a long pipelining client: 100 replies of 520 bytes
 * a round, every round written. Each block the queue used must be freed
 * once written, whatever its place; the drained queue keeps at most one
 * block and a small segment table. Before, the block the large piece
 * displaced stayed first forever and every later block that was not the
 * tail was never freed: 3 more blocks a round, 48 KiB. */
static void test_blocks_freed_whatever_their_place(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    static char line[520], dump[22 * 1024];
    memset(line, 'v', sizeof line);
    memset(dump, 'd', sizeof dump);
    assert_int_equal(reply_str(&q, "OK\r\n"), 0);
    drain(&q, SIZE_MAX);
    assert_int_equal(reply_copy(&q, dump, sizeof dump), 0);
    drain(&q, SIZE_MAX);
    for (int round = 0; round < 1000; round++) {
        for (int i = 0; i < 100; i++) {
            assert_int_equal(reply_copy(&q, line, sizeof line), 0);
            if (i % 10 == 9) /* now and then one by reference */
                assert_int_equal(reply_ref(&q, dump, 600, NULL), 0);
        }
        /* a socket that takes it all, or in uneven pieces */
        drain(&q, round % 2 ? SIZE_MAX : 7000);
        size_t nblocks;
        size_t bytes = block_bytes(&q, &nblocks);
        assert_true(bytes <= sizeof(struct reply_block) + REPLY_BLOCK_SIZE);
        assert_int_equal(nblocks, 0);
        assert_true(reply_held(&q) <= REPLY_KEPT_MAX);
        assert_held_honest(&q);
    }
    reply_release(&q);
    assert_int_equal(reply_held(&q), 0);
}

/* Blocks leave as they are written, not only when the queue empties: a
 * reader that is always behind by a round holds about two rounds. */
static void test_blocks_freed_while_behind(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    static char line[520], dump[40 * 1024];
    memset(line, 'v', sizeof line);
    assert_int_equal(reply_copy(&q, dump, sizeof dump), 0);
    size_t round_bytes = 100 * sizeof line;
    for (int round = 0; round < 500; round++) {
        for (int i = 0; i < 100; i++)
            assert_int_equal(reply_copy(&q, line, sizeof line), 0);
        while (reply_pending(&q) > round_bytes) {
            struct iovec iov[1];
            assert_int_equal(reply_iov(&q, iov, 1), 1);
            size_t take = iov[0].iov_len < 5000 ? iov[0].iov_len : 5000;
            if (take > reply_pending(&q) - round_bytes)
                take = reply_pending(&q) - round_bytes;
            reply_consume(&q, take);
        }
        assert_held_honest(&q);
        /* what is owed, plus the head block's written part, the tail's
         * room, the blocks' headers, the spare and the segment table */
        size_t nblocks;
        block_bytes(&q, &nblocks);
        assert_true(nblocks <= 5);
        assert_true(reply_held(&q) <= q.copied + 2 * REPLY_BLOCK_SIZE +
                                          nblocks * sizeof(struct reply_block) +
                                          sizeof(struct reply_block) + REPLY_BLOCK_SIZE +
                                          q.cap * sizeof *q.segs);
    }
    drain(&q, SIZE_MAX);
    assert_true(reply_held(&q) <= REPLY_KEPT_MAX);
    reply_release(&q);
}

/* A reserve that commits nothing (a get that missed) leaves an empty tail;
 * a larger piece then needs a block of its own. The empty one must go, not
 * stay in front where nothing frees it, and a mark taken over it must
 * still roll back. */
static void test_empty_tail_replaced(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    static char big[20 * 1024];
    memset(big, 'b', sizeof big);
    for (int round = 0; round < 50; round++) {
        assert_non_null(reply_reserve(&q, 600)); /* a miss: nothing committed */
        struct reply_mark m;
        reply_get_mark(&q, &m);
        assert_int_equal(reply_copy(&q, big, sizeof big), 0);
        if (round % 2) {
            reply_rollback(&q, &m); /* the empty tail it marked is gone */
            assert_int_equal(reply_pending(&q), 0);
            assert_int_equal(reply_str(&q, "END\r\n"), 0);
        }
        assert_held_honest(&q);
        drain(&q, 4096);
        size_t nblocks;
        block_bytes(&q, &nblocks);
        assert_int_equal(nblocks, 0);
        assert_true(reply_held(&q) <= REPLY_KEPT_MAX);
    }
    /* the mark's tail held bytes: composed since, rolled back, then the
     * queue goes on in the same tail */
    assert_int_equal(reply_str(&q, "STORED\r\n"), 0);
    struct reply_mark m;
    reply_get_mark(&q, &m);
    for (int i = 0; i < 3; i++)
        assert_int_equal(reply_copy(&q, big, sizeof big), 0);
    reply_rollback(&q, &m);
    assert_int_equal(reply_str(&q, "END\r\n"), 0);
    char buf[32];
    assert_int_equal(flatten(&q, buf, sizeof buf), 13);
    assert_memory_equal(buf, "STORED\r\nEND\r\n", 13);
    size_t nblocks;
    block_bytes(&q, &nblocks);
    assert_int_equal(nblocks, 1);
    assert_held_honest(&q);
    drain(&q, SIZE_MAX);
    assert_true(reply_held(&q) <= REPLY_KEPT_MAX);
    reply_release(&q);
}

/* A client that stops reading is paused once it owes its allowance
 * (copy_limit, the connection's), after the request that passed it. What
 * its queue holds is then that allowance and the one reply past it, not a
 * further block of empty room: the README's 48 KiB a connection past the
 * bound counts 16 KiB of allowance, one reply and a 16 KiB read buffer.
 * (Less than one piece besides: the room a reserve is given past itself,
 * which a get's next replies need; test_reserves_within_allowance.) */
static void test_blocks_within_allowance(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    q.copy_limit = 16 * 1024; /* the floor: the bound is full */
    static char line[530];
    memset(line, 'v', sizeof line);
    /* `get s s s s s s s s s s` (500-byte values) until past the allowance */
    size_t one = 10 * sizeof line;
    while (reply_pending(&q) <= q.copy_limit)
        for (int i = 0; i < 10; i++)
            assert_int_equal(reply_copy(&q, line, sizeof line), 0);
    size_t nblocks;
    block_bytes(&q, &nblocks);
    assert_held_honest(&q);
    assert_true(reply_held(&q) <= q.copy_limit + one + sizeof line + REPLY_KEPT_MAX -
                                      REPLY_BLOCK_SIZE + nblocks * sizeof(struct reply_block));
    drain(&q, 3000);
    assert_true(reply_held(&q) <= REPLY_KEPT_MAX);
    reply_release(&q);
}

/* The same bound where a composer reserves more than it commits, as a get
 * does (room to copy a short value under the bucket lock: 573 bytes for a
 * one-byte key) and each hit takes 21: blocks of the reserve's size near
 * the allowance held one reply each, 35 KiB for a 16 KiB allowance. The
 * allowance, the reserve of the reply past it, and less than one reserve
 * left unused at the end of the block before. */
static void test_reserves_within_allowance(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    q.copy_limit = 16 * 1024;
    static const char hit[] = "VALUE k 0 1\r\nx\r\nEND\r\n";
    size_t reserve = 53 + 1 + REPLY_COPY_MAX + 7; /* text_get's, for the key "k" */
    while (reply_pending(&q) <= q.copy_limit) {
        char *at = reply_reserve(&q, reserve);
        assert_non_null(at);
        memcpy(at, hit, sizeof hit - 1);
        reply_commit(&q, sizeof hit - 1);
    }
    size_t nblocks;
    block_bytes(&q, &nblocks);
    assert_held_honest(&q);
    assert_true(reply_held(&q) <= q.copy_limit + 2 * reserve + REPLY_KEPT_MAX -
                                      REPLY_BLOCK_SIZE + nblocks * sizeof(struct reply_block));
    drain(&q, 3000);
    assert_true(reply_held(&q) <= REPLY_KEPT_MAX);
    reply_release(&q);
}

/* A huge pipeline's segment table is not kept once it is written. */
static void test_segment_table_shrinks_when_drained(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    for (int i = 0; i < 5000; i++) {
        assert_int_equal(reply_ref(&q, "value", 5, NULL), 0);
        assert_int_equal(reply_str(&q, "\r\n"), 0);
    }
    assert_true(q.cap >= 10000);
    assert_held_honest(&q);
    drain(&q, 100000);
    assert_true(q.cap <= REPLY_SEGS_KEPT);
    assert_true(reply_held(&q) <= REPLY_KEPT_MAX);
    assert_held_honest(&q);
    reply_release(&q);
}

/* Nor once it is rolled back to nothing: a multiget that meets an
 * over-long key after thousands of hits sends only the error. */
static void test_segment_table_shrinks_when_rolled_back(void **state)
{
    (void)state;
    struct reply_queue q;
    reply_init(&q);
    struct reply_mark m;
    reply_get_mark(&q, &m);
    for (int i = 0; i < 5000; i++) {
        assert_int_equal(reply_ref(&q, "value", 5, NULL), 0);
        assert_int_equal(reply_str(&q, "\r\n"), 0);
    }
    assert_true(q.cap >= 10000);
    reply_rollback(&q, &m);
    assert_int_equal(reply_pending(&q), 0);
    assert_true(q.cap <= REPLY_SEGS_KEPT);
    assert_true(reply_held(&q) <= REPLY_KEPT_MAX);
    assert_held_honest(&q);
    reply_release(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_copy_and_coalesce, setup),
        cmocka_unit_test_setup(test_ref_pins_released_on_consume, setup),
        cmocka_unit_test_setup(test_release_drops_pins, setup),
        cmocka_unit_test_setup(test_value_copies_short_references_long, setup),
        cmocka_unit_test_setup(test_rollback_after_compaction, setup),
        cmocka_unit_test_setup(test_rollback, setup),
        cmocka_unit_test_setup(test_large_and_many, setup),
        cmocka_unit_test_setup(test_reserve_commit, setup),
        cmocka_unit_test_setup(test_ref_copies_past_pin_share, setup),
        cmocka_unit_test_setup(test_large_ref_copied_within_copy_limit, setup),
        cmocka_unit_test_setup(test_blocks_freed_whatever_their_place, setup),
        cmocka_unit_test_setup(test_blocks_freed_while_behind, setup),
        cmocka_unit_test_setup(test_empty_tail_replaced, setup),
        cmocka_unit_test_setup(test_segment_table_shrinks_when_drained, setup),
        cmocka_unit_test_setup(test_segment_table_shrinks_when_rolled_back, setup),
        cmocka_unit_test_setup(test_blocks_within_allowance, setup),
        cmocka_unit_test_setup(test_reserves_within_allowance, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
