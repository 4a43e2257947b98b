/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/rbuf_pool.h"

#include <stdlib.h>
#include <string.h>

static void rbuf_pool_account(struct rbuf_pool *p, size_t add, size_t sub)
{
    size_t v = __atomic_load_n(p->held, __ATOMIC_RELAXED);
    __atomic_store_n(p->held, v + add - sub, __ATOMIC_RELAXED);
}

void rbuf_pool_init(struct rbuf_pool *p, size_t *held, size_t grow_max)
{
    memset(p, 0, sizeof *p);
    p->held = held;
    p->grow_max = grow_max;
}

void rbuf_pool_trim(struct rbuf_pool *p)
{
    for (size_t i = 0; i < p->ncache; i++)
        free(p->cache[i]);
    p->ncache = 0;
}

void rbuf_pool_release(struct rbuf_pool *p)
{
    rbuf_pool_trim(p);
}

char *rbuf_pool_get(struct rbuf_pool *p)
{
    char *b = p->ncache > 0 ? p->cache[--p->ncache] : malloc(RBUF_SIZE);
    if (b)
        rbuf_pool_account(p, RBUF_SIZE, 0);
    return b;
}

char *rbuf_pool_grow(struct rbuf_pool *p, char *buf, size_t size, size_t len)
{
    if (size >= RBUF_MAX)
        return NULL;
    size_t nsize = size * 2;
    if (p->grow_max > 0) {
        size_t held = __atomic_load_n(p->held, __ATOMIC_RELAXED);
        if (held + nsize - size > p->grow_max)
            return NULL;
    }
    char *n = malloc(nsize);
    if (!n)
        return NULL;
    memcpy(n, buf, len);
    rbuf_pool_put(p, buf, size);
    rbuf_pool_account(p, nsize, 0);
    return n;
}

void rbuf_pool_put(struct rbuf_pool *p, char *buf, size_t size)
{
    if (!buf)
        return;
    rbuf_pool_account(p, 0, size);
    if (size == RBUF_SIZE && p->ncache < RBUF_CACHE)
        p->cache[p->ncache++] = buf;
    else
        free(buf);
}
