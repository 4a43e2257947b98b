/* SPDX-License-Identifier: BSD-3-Clause */
/* Anonymous memory for what lookups land on at random, the index's buckets
 * and the segments' items, on transparent huge pages where the kernel
 * gives them (docs/store.md "Huge pages"). */
#ifndef NODELAY_STORE_HUGEMEM_H
#define NODELAY_STORE_HUGEMEM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define HUGEMEM_PAGE ((size_t)2 << 20)
/* Huge pages a pool keeps faulted in ahead of need. */
#define HUGEMEM_READY 2
/* Pieces come from huge pages only once the caller holds this much in
 * pieces: below it, half the small pages' TLB reach (8 MiB here, shared
 * with the index, buffers and code) covers them, and a small cache keeps
 * the lazily touched small pages it has always had (a barely used segment
 * costs the pages it wrote, not all of it). */
#define HUGEMEM_AFTER ((size_t)4 << 20)

/* len bytes, zeroed; NULL when out of memory. A multiple of HUGEMEM_PAGE
 * is mapped HUGEMEM_PAGE-aligned and asked for huge pages (the caller
 * takes the first-touch fault, which may compact memory: not for the
 * request path); anything else is a plain mapping. Give it back with
 * munmap (any part of it). */
void *hugemem_map(size_t len);

/* Pieces of one size for the request path, carved out of huge pages that a
 * thread of the pool's own maps and faults in ahead of need, so no request
 * waits for a huge page's allocation (zeroing 2 MiB, perhaps compacting
 * memory for it). When none is ready, or the size does not divide
 * HUGEMEM_PAGE, a piece is a plain small-page mapping. Each piece is given
 * back with munmap on its own. */
struct hugemem_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started, stop, want_more;
    unsigned nready;
    char *ready[HUGEMEM_READY]; /* faulted in, none of it handed out */
    char *spare;                /* the page being handed out (caller's lock) */
    size_t spare_len;
};
void hugemem_pool_init(struct hugemem_pool *p);
/* A piece of len bytes (always the same len for one pool); in_use: bytes
 * of pieces the caller holds now (HUGEMEM_AFTER); more: whether more
 * pieces may be asked for later (false stops the faulting ahead until a
 * call says true again). NULL when out of memory. Calls are serialised by
 * the caller. */
void *hugemem_piece(struct hugemem_pool *p, size_t len, size_t in_use, bool more);
/* Stop the thread, unmap what was never handed out. */
void hugemem_pool_release(struct hugemem_pool *p);

/* One range of an existing mapping faulted in ahead of need by a thread of
 * its own: the index's next buckets, which a split touches on the request
 * path. Asked for a range (already writable, HUGEMEM_PAGE-aligned), the
 * thread asks for huge pages there, collapses the small pages already
 * written into huge ones (MADV_COLLAPSE) and populates the rest
 * (MADV_POPULATE_WRITE): the kernel's work, which keeps every byte, so the
 * owner may use the range meanwhile. A hint: without it the
 * owner's first write faults the page in. */
struct hugemem_ahead {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started, stop;
    char *want;       /* the range asked for; NULL: nothing wanted */
    size_t want_len;
    char *done;       /* the end of the last range faulted in */
};
void hugemem_ahead_init(struct hugemem_ahead *a);
/* Have [addr, addr + len) faulted in (the thread starts the first time). */
void hugemem_ahead_ask(struct hugemem_ahead *a, void *addr, size_t len);
/* The end of the last range faulted in, NULL before the first. */
void *hugemem_ahead_done(struct hugemem_ahead *a);
/* Stop the thread. */
void hugemem_ahead_release(struct hugemem_ahead *a);

#endif
