/* SPDX-License-Identifier: BSD-3-Clause */
#include "reply/reply.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

/* Past the share of segments reply queues may pin (store_pin_keep), values
 * up to this size are always copied: no more than the connection's
 * allowance floor (CONN_REPLY_FLOOR), so what a non-reader holds stays
 * within README's 48 KiB a connection. A larger value is copied only while
 * the queue stays within what the connection may owe (copy_limit, its share
 * of client_mem_limit), so copies stay within that bound; past it the value
 * keeps its pin, and the connection, owing more than it may, pauses. A copy
 * of up to -I for every non-reader would break the memory bound instead;
 * a pin for each, the cache (docs/store.md "Pins and zero copy"). */
#define REPLY_SHARE_COPY_MAX (16 * 1024)
/* The smallest block made past the allowance (a few short replies). */
#define REPLY_BLOCK_MIN 256

void reply_init(struct reply_queue *q)
{
    memset(q, 0, sizeof *q);
}

static void reply_block_free_all(struct reply_block *b)
{
    while (b) {
        struct reply_block *next = b->next;
        free(b);
        b = next;
    }
}

/* What a block costs the queue (reply_held). */
static size_t reply_block_cost(const struct reply_block *b)
{
    return sizeof *b + b->size;
}

/* A block no pending segment points into: kept as the spare when it is a
 * standard one and there is none, else freed. So an emptied queue keeps at
 * most one block, whatever sizes its replies needed. */
static void reply_block_recycle(struct reply_queue *q, struct reply_block *b)
{
    if (b->size == REPLY_BLOCK_SIZE && !q->spare) {
        q->spare = b;
        return;
    }
    q->held -= reply_block_cost(b);
    free(b);
}

/* Take b out of the list, wherever it stands, and recycle it. Blocks drain
 * in FIFO order, so it is the first but for an empty tail that a larger
 * piece replaces (reply_block_room): the walk is nearly always none. */
static void reply_block_drop(struct reply_queue *q, struct reply_block *b)
{
    struct reply_block *prev = NULL;
    for (struct reply_block *p = q->first; p != b; p = p->next)
        prev = p;
    if (prev)
        prev->next = b->next;
    else
        q->first = b->next;
    if (q->tail == b)
        q->tail = prev;
    reply_block_recycle(q, b);
}

/* Drop every block no pending segment points into: after a rollback, and
 * once the queue is empty (an empty tail a reserve left). */
static void reply_blocks_drop_unused(struct reply_queue *q)
{
    struct reply_block **link = &q->first, *last = NULL;
    while (*link) {
        struct reply_block *b = *link;
        if (b->refs == 0) {
            *link = b->next;
            reply_block_recycle(q, b);
        } else {
            last = b;
            link = &b->next;
        }
    }
    q->tail = last;
}

/* Nothing is pending (all written, or rolled back): keep at most
 * REPLY_KEPT_MAX. */
static void reply_drained(struct reply_queue *q)
{
    q->head = q->nseg = 0;
    if (q->first)
        reply_blocks_drop_unused(q);
    if (q->cap > REPLY_SEGS_KEPT) {
        q->held -= q->cap * sizeof *q->segs;
        free(q->segs);
        q->segs = NULL;
        q->cap = 0;
    }
}

void reply_release(struct reply_queue *q)
{
    for (size_t i = q->head; i < q->nseg; i++)
        if (q->segs[i].pin)
            store_pin_release_kept(q->segs[i].pin);
    free(q->segs);
    reply_block_free_all(q->first);
    free(q->spare);
    memset(q, 0, sizeof *q);
}

static struct reply_seg *reply_seg_add(struct reply_queue *q)
{
    if (q->nseg == q->cap) {
        if (q->head > 0) {
            memmove(q->segs, q->segs + q->head, (q->nseg - q->head) * sizeof *q->segs);
            q->nseg -= q->head;
            q->head = 0;
        } else {
            size_t cap = q->cap ? q->cap * 2 : 64;
            struct reply_seg *segs = realloc(q->segs, cap * sizeof *segs);
            if (!segs)
                return NULL;
            q->held += (cap - q->cap) * sizeof *segs;
            q->segs = segs;
            q->cap = cap;
        }
    }
    return &q->segs[q->nseg++];
}

/* The size of a new block for a piece of len bytes: a standard block, but
 * with no more room past the piece than what the connection may still owe
 * (copy_limit less what it owes), unless the piece alone is larger. So a
 * connection that stops at its allowance holds that and its last reply,
 * not a block of room besides (README's 48 KiB a connection past the
 * bound). The room is past the piece, not in it: a piece is a reserve,
 * often larger than what is committed (a get's room for a short value,
 * some 570 bytes for a 21-byte hit), and a block of the reserve's size
 * would hold one reply each near the allowance. */
static size_t reply_block_size(const struct reply_queue *q, size_t len)
{
    size_t size = REPLY_BLOCK_SIZE;
    if (q->copy_limit > 0) {
        size_t left = q->copy_limit > q->pending ? q->copy_limit - q->pending : 0;
        if (left < size) {
            size = len < size - left ? len + left : size;
            if (size < REPLY_BLOCK_MIN)
                size = REPLY_BLOCK_MIN;
        }
    }
    return len > size ? len : size;
}

/* A block with at least `len` free bytes at the tail. */
static struct reply_block *reply_block_room(struct reply_queue *q, size_t len)
{
    if (q->tail && q->tail->size - q->tail->used >= len)
        return q->tail;
    /* An empty tail (a reserve that committed nothing) too small for this
     * piece goes: behind a new tail nothing would ever free it. */
    if (q->tail && q->tail->refs == 0)
        reply_block_drop(q, q->tail);
    struct reply_block *b;
    if (len <= REPLY_BLOCK_SIZE && q->spare) {
        b = q->spare; /* held already: costs nothing more */
        q->spare = NULL;
    } else {
        size_t size = reply_block_size(q, len);
        b = malloc(sizeof *b + size);
        if (!b)
            return NULL;
        b->size = size;
        q->held += reply_block_cost(b);
    }
    b->next = NULL;
    b->used = 0;
    b->refs = 0;
    if (q->tail)
        q->tail->next = b;
    else
        q->first = b;
    q->tail = b;
    return b;
}

char *reply_reserve_more(struct reply_queue *q, size_t len)
{
    /* A segment slot exists before the bytes do, so the commit cannot fail. */
    if (q->nseg == q->cap) {
        if (!reply_seg_add(q))
            return NULL;
        q->nseg--; /* room made (slid down or grown): the slot is the commit's */
    }
    struct reply_block *b = reply_block_room(q, len);
    return b ? b->data + b->used : NULL;
}

void reply_commit_seg(struct reply_queue *q, size_t n)
{
    struct reply_block *b = q->tail;
    struct reply_seg *s = reply_seg_add(q); /* cannot fail: reserve made room */
    s->data = b->data + b->used;
    s->len = n;
    s->block = b;
    s->pin = NULL;
    b->refs++;
    b->used += n;
    q->pending += n;
    q->copied += n;
}

int reply_copy(struct reply_queue *q, const void *data, size_t len)
{
    if (len == 0)
        return 0;
    char *dst = reply_reserve(q, len);
    if (!dst)
        return -1;
    memcpy(dst, data, len);
    reply_commit(q, len);
    return 0;
}

int reply_str(struct reply_queue *q, const char *s)
{
    return reply_copy(q, s, strlen(s));
}

int reply_printf(struct reply_queue *q, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof small)
        return reply_copy(q, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big)
        return -1;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = reply_copy(q, big, (size_t)n);
    free(big);
    return rc;
}

/* Past the pin share: copy this value, or keep its pin beyond the share? */
static bool reply_copy_past_share(const struct reply_queue *q, size_t len)
{
    return len <= REPLY_SHARE_COPY_MAX ||
           (q->pending <= q->copy_limit && len <= q->copy_limit - q->pending);
}

int reply_ref(struct reply_queue *q, const void *data, size_t len, struct store_pin *pin)
{
    bool copy = len == 0;
    if (!copy && pin && !store_pin_keep(pin, false)) {
        /* Reply queues already pin their share of the cache: a copy costs
         * this client's memory (client_mem_limit) instead of a segment that
         * eviction may need while the client does not read. */
        copy = reply_copy_past_share(q, len);
        if (!copy)
            store_pin_keep(pin, true); /* past its allowance: it pauses after this */
    }
    if (copy) {
        int rc = reply_copy(q, data, len);
        if (pin)
            store_pin_release(pin);
        return rc;
    }
    struct reply_seg *s = reply_seg_add(q);
    if (!s) {
        if (pin)
            store_pin_release_kept(pin);
        return -1;
    }
    s->data = data;
    s->len = len;
    s->block = NULL;
    s->pin = pin;
    q->pending += len;
    return 0;
}

int reply_value(struct reply_queue *q, const void *data, size_t len, struct store_pin *pin)
{
    if (len > REPLY_COPY_MAX)
        return reply_ref(q, data, len, pin);
    /* A short value is cheaper copied: it joins the header's iovec and its
     * pin goes back at once instead of when the write completes. */
    int rc = reply_copy(q, data, len);
    if (pin)
        store_pin_release(pin);
    return rc;
}

void reply_get_mark(const struct reply_queue *q, struct reply_mark *m)
{
    /* Counted from head: reply_seg_add may slide the array down meanwhile. */
    m->nseg = q->nseg - q->head;
    m->pending = q->pending;
    m->copied = q->copied;
    /* An empty tail is no part of the state: a larger piece may replace it
     * (reply_block_room) before the rollback, which drops it anyway. */
    m->tail = q->tail && q->tail->refs > 0 ? q->tail : NULL;
    m->tail_used = m->tail ? m->tail->used : 0;
    m->last_len = q->nseg > q->head ? q->segs[q->nseg - 1].len : 0;
}

/* Drop a block's reference from a segment that is written: its last one
 * frees the block, the tail as much as any other. */
static void reply_block_unref(struct reply_queue *q, struct reply_block *b)
{
    if (--b->refs == 0)
        reply_block_drop(q, b);
}

void reply_rollback(struct reply_queue *q, const struct reply_mark *m)
{
    size_t keep = q->head + m->nseg;
    for (size_t i = keep; i < q->nseg; i++) {
        struct reply_seg *s = &q->segs[i];
        if (s->pin)
            store_pin_release_kept(s->pin);
        if (s->block)
            s->block->refs--;
    }
    q->nseg = keep;
    if (q->nseg > q->head)
        q->segs[q->nseg - 1].len = m->last_len;
    /* The blocks used since the mark now hold nothing pending: drop them.
     * The mark's tail, if it held bytes, holds them still and is the tail
     * again, with what was composed into it since cut off. */
    reply_blocks_drop_unused(q);
    if (m->tail)
        m->tail->used = m->tail_used;
    q->pending = m->pending;
    q->copied = m->copied;
    if (q->head == q->nseg)
        reply_drained(q);
}

int reply_iov(const struct reply_queue *q, struct iovec *iov, int max)
{
    int n = 0;
    size_t off = q->head_sent;
    for (size_t i = q->head; i < q->nseg && n < max; i++) {
        iov[n].iov_base = (void *)(q->segs[i].data + off);
        iov[n].iov_len = q->segs[i].len - off;
        off = 0;
        n++;
    }
    return n;
}

void reply_consume(struct reply_queue *q, size_t n)
{
    q->pending -= n;
    while (n > 0 && q->head < q->nseg) {
        struct reply_seg *s = &q->segs[q->head];
        size_t left = s->len - q->head_sent;
        if (n < left) {
            q->head_sent += n;
            if (s->block)
                q->copied -= n;
            return;
        }
        n -= left;
        if (s->block) {
            q->copied -= left;
            reply_block_unref(q, s->block);
        }
        if (s->pin)
            store_pin_release_kept(s->pin);
        q->head++;
        q->head_sent = 0;
    }
    if (q->head == q->nseg)
        reply_drained(q);
}
