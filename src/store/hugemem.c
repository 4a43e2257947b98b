/* SPDX-License-Identifier: BSD-3-Clause */
/* Why huge pages: a lookup reads one random bucket and one random item, so
 * on 4 KiB pages nearly every lookup misses the TLB once the index and the
 * items outgrow what it maps (2,048 entries, 8 MiB, on the AMD EPYC here),
 * and each miss is a page walk, a two-level one under a hypervisor. A
 * prefetch does not hide that walk: get90_p16's profile had the first
 * prefetch of each item as the lookup's costliest instruction
 * (docs/benchmark.md). A 2 MiB page maps 512 times as much.
 *
 * Why a thread: with THP's usual "madvise" defrag setting the first touch
 * of a madvised huge page allocates it synchronously, compacting memory
 * when none is free: 50-600 ms for a 2 MiB segment, measured in the
 * delayed-ACK tests on this machine, where a request may take none of that.
 *
 * It is a hint (MADV_HUGEPAGE: THP "never" ignores it); without huge pages
 * everything works the same, on small pages. */
#define _GNU_SOURCE /* MADV_POPULATE_WRITE */
#include "store/hugemem.h"

#include <stdint.h>
#include <sys/mman.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1; older kernels refuse it, harmlessly */
#endif

void *hugemem_map(size_t len)
{
    int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MADV_HUGEPAGE
    if (len >= HUGEMEM_PAGE && len % HUGEMEM_PAGE == 0) {
        /* A huge page must be aligned: map one more and trim both ends. */
        char *raw = mmap(NULL, len + HUGEMEM_PAGE, prot, flags, -1, 0);
        if (raw == MAP_FAILED)
            return NULL;
        char *p = (char *)(((uintptr_t)raw + HUGEMEM_PAGE - 1) & ~(uintptr_t)(HUGEMEM_PAGE - 1));
        if (p > raw)
            munmap(raw, (size_t)(p - raw));
        munmap(p + len, (size_t)(raw + HUGEMEM_PAGE - p));
        madvise(p, len, MADV_HUGEPAGE);
        return p;
    }
#endif
    void *p = mmap(NULL, len, prot, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A huge-page mapping with every page faulted in: the fault is taken by a
 * thread of the store's own, never by a request. */
static char *hugemem_map_faulted(size_t len)
{
    char *m = hugemem_map(len);
    if (m)
        for (size_t o = 0; o < len; o += 4096)
            m[o] = 0;
    return m;
}

void hugemem_pool_init(struct hugemem_pool *p)
{
    *p = (struct hugemem_pool){0};
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
}

/* Keeps HUGEMEM_READY pages faulted in while pieces are wanted. */
static void *hugemem_filler(void *arg)
{
    struct hugemem_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (!p->want_more || p->nready == HUGEMEM_READY) {
            pthread_cond_wait(&p->wake, &p->lock);
            continue;
        }
        pthread_mutex_unlock(&p->lock);
        char *page = hugemem_map_faulted(HUGEMEM_PAGE);
        pthread_mutex_lock(&p->lock);
        if (!page) {
            p->want_more = false; /* out of memory: wait for the next ask */
            continue;
        }
        p->ready[p->nready++] = page;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void *hugemem_small(size_t len)
{
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* Tell the filler whether to keep pages ready, starting it the first time. */
static void hugemem_ask(struct hugemem_pool *p, bool more)
{
    pthread_mutex_lock(&p->lock);
    p->want_more = more;
    if (more && !p->started && !p->stop)
        p->started = pthread_create(&p->thread, NULL, hugemem_filler, p) == 0;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
}

void *hugemem_piece(struct hugemem_pool *p, size_t len, size_t in_use, bool more)
{
    if (len == 0 || len > HUGEMEM_PAGE || HUGEMEM_PAGE % len != 0)
        return hugemem_small(len);
    if (in_use < HUGEMEM_AFTER) {
        /* Small pages still; the filler starts a page early, to have its
         * pages ready when the caller's pieces reach HUGEMEM_AFTER. */
        if (in_use + HUGEMEM_PAGE >= HUGEMEM_AFTER)
            hugemem_ask(p, true);
        return hugemem_small(len);
    }
    if (p->spare_len < len) {
        pthread_mutex_lock(&p->lock);
        p->spare = p->nready ? p->ready[--p->nready] : NULL;
        p->spare_len = p->spare ? HUGEMEM_PAGE : 0;
        pthread_mutex_unlock(&p->lock);
        hugemem_ask(p, more);
    } else if (!more) {
        hugemem_ask(p, false);
    }
    if (p->spare_len < len)
        return hugemem_small(len); /* none ready: small pages rather than a wait */
    char *piece = p->spare;
    p->spare += len;
    p->spare_len -= len;
    return piece;
}

void hugemem_pool_release(struct hugemem_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    if (p->started)
        pthread_join(p->thread, NULL);
    p->started = false;
    while (p->nready)
        munmap(p->ready[--p->nready], HUGEMEM_PAGE);
    if (p->spare_len)
        munmap(p->spare, p->spare_len);
    p->spare = NULL;
    p->spare_len = 0;
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
}

void hugemem_ahead_init(struct hugemem_ahead *a)
{
    *a = (struct hugemem_ahead){0};
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->wake, NULL);
}

/* Faults in the range asked for, here rather than in a request. */
static void *hugemem_ahead_maker(void *arg)
{
    struct hugemem_ahead *a = arg;
    pthread_mutex_lock(&a->lock);
    while (!a->stop) {
        if (!a->want) {
            pthread_cond_wait(&a->wake, &a->lock);
            continue;
        }
        char *m = a->want;
        size_t len = a->want_len;
        pthread_mutex_unlock(&a->lock);
#ifdef MADV_HUGEPAGE
        (void)madvise(m, len, MADV_HUGEPAGE);
#endif
#ifdef MADV_COLLAPSE
        /* pages written already on small pages become a huge one (the
         * kernel copies them, as khugepaged would, while others use them) */
        (void)madvise(m, len, MADV_COLLAPSE);
#endif
#ifdef MADV_POPULATE_WRITE
        (void)madvise(m, len, MADV_POPULATE_WRITE);
#endif
        pthread_mutex_lock(&a->lock);
        if (a->want == m)
            a->want = NULL;
        if (m + len > a->done)
            a->done = m + len;
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

void hugemem_ahead_ask(struct hugemem_ahead *a, void *addr, size_t len)
{
    pthread_mutex_lock(&a->lock);
    if (!a->stop) {
        a->want = addr;
        a->want_len = len;
        if (!a->started)
            a->started = pthread_create(&a->thread, NULL, hugemem_ahead_maker, a) == 0;
        pthread_cond_signal(&a->wake);
    }
    pthread_mutex_unlock(&a->lock);
}

void *hugemem_ahead_done(struct hugemem_ahead *a)
{
    pthread_mutex_lock(&a->lock);
    void *d = a->done;
    pthread_mutex_unlock(&a->lock);
    return d;
}

void hugemem_ahead_release(struct hugemem_ahead *a)
{
    pthread_mutex_lock(&a->lock);
    a->stop = true;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->lock);
    if (a->started)
        pthread_join(a->thread, NULL);
    a->started = false;
    pthread_cond_destroy(&a->wake);
    pthread_mutex_destroy(&a->lock);
}
