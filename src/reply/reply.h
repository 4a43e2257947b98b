/* SPDX-License-Identifier: BSD-3-Clause */
/* The reply queue: everything a connection owes its client, in order.
 *
 * Composers append to it; the connection drains it with one writev per
 * wake-up, so all replies to the requests parsed from one read leave in a
 * single system call (DESIGN.md, "The lesson that names the project").
 *
 * Two kinds of bytes live here:
 *  - copied bytes (headers, short replies) in blocks the queue owns;
 *  - referenced bytes (item values) pointing into store memory, each with a
 *    store_pin that the queue releases once those bytes are sent or dropped.
 *
 * It never touches a socket: reply_iov() hands out iovecs and reply_consume()
 * is told how much was written, so protocols can be tested without one.
 */
#ifndef NODELAY_REPLY_H
#define NODELAY_REPLY_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/uio.h>

struct store_pin;
struct reply_block;

struct reply_seg {
    const char *data;
    size_t len;
    struct reply_block *block; /* owning block for copied bytes, else NULL */
    struct store_pin *pin;     /* for referenced bytes, else NULL */
};

struct reply_queue {
    struct reply_seg *segs; /* segs[head .. nseg) are pending */
    size_t head;
    size_t nseg;
    size_t cap;
    size_t head_sent;       /* bytes of segs[head] already written */
    size_t pending;         /* bytes not yet written */
    size_t copied;          /* of which held in our own blocks */
    size_t held;            /* memory the queue owns: blocks, spare, segs */
    /* Blocks in FIFO order. Each holds pending bytes (refs > 0) but the
     * tail, which may be empty while a reserve fills it. A block leaves
     * the list when its last pending byte is written or dropped, wherever
     * it stands, so the list never holds more than what is owed. */
    struct reply_block *first, *tail;
    struct reply_block *spare;        /* one empty 16 KiB block kept for reuse */
    /* What the connection may owe (its allowance, set by the connection):
     * past the share of segments reply queues may pin, a value over 16 KiB
     * is copied while the queue stays within it. 0 (after reply_init): no
     * such copies. */
    size_t copy_limit;
};

/* A point to roll back to (a multiget whose later key is bad discards what it
 * had already composed, as memcached does). */
struct reply_mark {
    size_t nseg; /* pending segments at the mark */
    size_t pending;
    size_t copied;
    struct reply_block *tail; /* the tail if it held pending bytes, else NULL */
    size_t tail_used;
    size_t last_len; /* length of segs[nseg-1] at the mark (copies coalesce) */
};

void reply_init(struct reply_queue *q);
/* Drop everything pending, releasing pins, and free all memory. */
void reply_release(struct reply_queue *q);

/* Append a copy of len bytes. Returns 0, or -1 when out of memory. */
int reply_copy(struct reply_queue *q, const void *data, size_t len);
int reply_str(struct reply_queue *q, const char *s);
int reply_printf(struct reply_queue *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Room for at least `len` bytes to compose into; finish with reply_commit(n)
 * (n <= len), which then cannot fail. Returns NULL when out of memory.
 * Inline where the tail block has the room and the bytes join the copy
 * before them (a pipeline's replies, one after the other): every reply
 * composed goes through here. */
static inline char *reply_reserve(struct reply_queue *q, size_t len);
static inline void reply_commit(struct reply_queue *q, size_t n);

/* Append len bytes by reference. Takes ownership of pin (may be NULL for
 * static data): it is released when the bytes are consumed or dropped, even
 * when this call fails (-1, out of memory). When reply queues already pin
 * their share of the cache (store_pin_keep says no), the bytes are copied
 * instead and pin is released at once: always up to 16 KiB, larger ones
 * while the queue stays within copy_limit. Only a larger value past that
 * keeps its pin beyond the share (the connection then owes more than it may
 * and pauses, so it holds one such pin at a time). */
int reply_ref(struct reply_queue *q, const void *data, size_t len, struct store_pin *pin);

/* Values up to this size are copied rather than referenced (reply_value). */
#define REPLY_COPY_MAX 512

/* Append an item's value: by reference when large, copied (and the pin
 * released at once) when short (len <= REPLY_COPY_MAX), since a copy of a
 * few hundred bytes costs less than an iovec of its own and a pin held
 * until the write. A composer may copy a short value itself, in one
 * reserve with its header. Same ownership rule for pin as reply_ref. */
int reply_value(struct reply_queue *q, const void *data, size_t len, struct store_pin *pin);

static inline size_t reply_pending(const struct reply_queue *q) { return q->pending; }

/* All the memory the queue owns for replies: its blocks (pending bytes and
 * the room around them), the spare block and the segment table. Once
 * everything pending is written it is at most REPLY_KEPT_MAX, whatever the
 * replies were; the connection counts it (response_obj_bytes). */
static inline size_t reply_held(const struct reply_queue *q) { return q->held; }

/* The queue's own memory for copied bytes (reply.c), here for the inline
 * reserve and commit. */
struct reply_block {
    struct reply_block *next;
    size_t size;
    size_t used;
    size_t refs; /* segments pointing into this block */
    char data[];
};
/* Copied bytes are packed into blocks of this size; a larger single copy
 * gets a block of its own size, freed as soon as it is written. 16 KiB
 * holds a full pipeline of short replies. */
#define REPLY_BLOCK_SIZE (16 * 1024)
/* A segment table larger than this (reply_seg_add's first) is freed once
 * the queue drains, so a huge multiget's is not kept for the connection's
 * life. */
#define REPLY_SEGS_KEPT 64
/* What an empty queue may keep: the spare block and a segment table. */
#define REPLY_KEPT_MAX \
    (sizeof(struct reply_block) + REPLY_BLOCK_SIZE + REPLY_SEGS_KEPT * sizeof(struct reply_seg))
char *reply_reserve_more(struct reply_queue *q, size_t len);
void reply_commit_seg(struct reply_queue *q, size_t n);

static inline char *reply_reserve(struct reply_queue *q, size_t len)
{
    struct reply_block *b = q->tail;
    if (b && q->nseg < q->cap && b->size - b->used >= len)
        return b->data + b->used;
    return reply_reserve_more(q, len);
}

static inline void reply_commit(struct reply_queue *q, size_t n)
{
    if (n == 0)
        return;
    struct reply_block *b = q->tail;
    if (q->nseg > q->head) {
        struct reply_seg *last = &q->segs[q->nseg - 1];
        if (last->block == b && last->data + last->len == b->data + b->used) {
            last->len += n; /* contiguous with the previous copy: one iovec */
            b->used += n;
            q->pending += n;
            q->copied += n;
            return;
        }
    }
    reply_commit_seg(q, n);
}

void reply_get_mark(const struct reply_queue *q, struct reply_mark *m);
void reply_rollback(struct reply_queue *q, const struct reply_mark *m);

/* Fill up to max iovecs from the head of the queue; returns how many. */
int reply_iov(const struct reply_queue *q, struct iovec *iov, int max);
/* n bytes from the head were written: advance, free blocks, release pins. */
void reply_consume(struct reply_queue *q, size_t n);

#endif
