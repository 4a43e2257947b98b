/* SPDX-License-Identifier: BSD-3-Clause */
/* cachesim's shared parts: key lists, the item ghost, the simulated cache's
 * state, and the policies over whole items it compares the store's policy
 * with (policies.c); the store's policy, Bélády and the driver are in
 * cachesim.c. */
#ifndef CACHESIM_H
#define CACHESIM_H
#include "../loadgen/keyspace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NIL UINT32_MAX

void *xcalloc(size_t n, size_t s);

/* ---- doubly linked lists over key ids (a key is in at most one list) ---- */
struct lists {
    uint32_t *prev, *next;
    uint8_t *in; /* which list + 1, 0 = none */
};

struct list {
    uint32_t head, tail, n; /* head = oldest */
    uint8_t tag;
};

/* ---- a FIFO ghost of key ids: in it while fewer than size were added since ---- */
struct ghost {
    uint64_t *at; /* insertion count + 1, 0 = never */
    uint64_t count, size;
};

/* ---- the simulated cache: every policy's state ---- */
struct sim {
    const char *name;
    uint32_t cap, nkeys;
    struct lists l;
    struct list q[3];
    uint8_t *freq;
    struct ghost g[2];
    double p; /* s3fifo-ad: small's target; arc: T1's target */
    struct list arc_b2; /* arc: B2 (tag 4; q[2], tag 3, is B1) */
    bool adaptive;
    /* wtinylfu */
    double step, prev_ratio;
    uint64_t s_hits, s_acc;
    uint8_t *cms;
    uint32_t cms_mask;
    uint64_t cms_adds;
    /* s3fifo-seg */
    uint32_t seg_items, nseg, *seg_keys, *seg_n, *loc, wopen, mopen, nfree, *freelist;
    struct list sq[2]; /* queues of segment ids use their own lists */
    struct lists sl;
    uint32_t *gfp, gsize;
    uint8_t *gtag;       /* s3fifo-seg-ad: the ghost entry left small (1) or main (2) */
    double share;        /* s3fifo-seg-ad: small's target, in items */
    double gn[3];        /* s3fifo-seg-ad: ghost entries from small [1] and main [2] */
    double mwalk, mread; /* s3fifo-seg-ad: main's recent passes, items walked and found read */
    bool keep_all;
    uint32_t *kept; /* a victim's kept items, in order */
    /* belady */
    const uint64_t *nextuse;
    uint64_t *want, *heap_k;
    uint32_t *heap_id;
    uint64_t heap_n, heap_cap;
    uint32_t n, max_held;
    uint8_t *cached;
    /* lirs: s->l holds the stack S (q[0]), lq the queue Q of resident HIR keys (q[1]) */
    struct lists lq;
    uint8_t *st; /* 0 not held, 1 LIR, 2 resident HIR, 3 HIR kept in S only */
    uint32_t nlir, nres, llir;
    /* lfu: every key's accesses and last access; the held keys' min-heap */
    uint32_t *lcount, *lheap, *lpos;
    uint64_t *llast, ltick;
    bool lfu_ge; /* admit a key as frequent as the victim */
};

void lists_init(struct lists *l, uint32_t nkeys);
void lists_free(struct lists *l);
void list_init(struct list *q, uint8_t tag);
void list_push(struct lists *l, struct list *q, uint32_t id);
void list_remove(struct lists *l, struct list *q, uint32_t id);
uint32_t list_pop(struct lists *l, struct list *q);
void ghost_add(struct ghost *g, uint32_t id);
bool ghost_take(struct ghost *g, uint32_t id);
bool lru_get(struct sim *s, uint32_t id);
void lru_set(struct sim *s, uint32_t id);
bool s3_get(struct sim *s, uint32_t id);
void s3_set(struct sim *s, uint32_t id);
bool arc_get(struct sim *s, uint32_t id);
void arc_set(struct sim *s, uint32_t id);
bool wt_get(struct sim *s, uint32_t id);
void wt_set(struct sim *s, uint32_t id);
bool lirs_get(struct sim *s, uint32_t id);
void lirs_set(struct sim *s, uint32_t id);
void lfu_init(struct sim *s, bool admit_ties);
void lfu_free(struct sim *s);
bool lfu_get(struct sim *s, uint32_t id);
void lfu_set(struct sim *s, uint32_t id);

#endif
