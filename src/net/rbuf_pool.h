/* SPDX-License-Identifier: BSD-3-Clause */
/* Read buffers: a per-worker cache of standard-size buffers and the gauge
 * of read-buffer bytes held, so a connection holds a buffer only while it
 * has bytes buffered. Knows nothing of sockets or connections. */
#ifndef NODELAY_RBUF_POOL_H
#define NODELAY_RBUF_POOL_H

#include <stdbool.h>
#include <stddef.h>

/* Read buffers start (and are cached) at this size; a longer request (a big
 * multiget line) grows its buffer up to RBUF_MAX. */
#define RBUF_SIZE (16 * 1024)
#define RBUF_MAX (16u * 1024 * 1024)
#define RBUF_CACHE 32

struct rbuf_pool {
    char *cache[RBUF_CACHE]; /* spare RBUF_SIZE buffers */
    size_t ncache;
    size_t *held;     /* gauge of bytes in buffers handed out, relaxed atomic
                         (read by `stats` on another thread) */
    size_t grow_max;  /* grown buffers' bytes together may not pass this
                         (-o read_buf_mem_limit's per-worker share); 0 = none */
};

void rbuf_pool_init(struct rbuf_pool *p, size_t *held, size_t grow_max);
/* Free the cached buffers (those handed out are their holders' to put). */
void rbuf_pool_release(struct rbuf_pool *p);

/* A buffer of RBUF_SIZE bytes, or NULL when out of memory. */
char *rbuf_pool_get(struct rbuf_pool *p);
/* Replace buf (size bytes, len of them used at its start) by one of twice
 * the size holding the same bytes. Returns NULL, leaving buf as it was, past
 * RBUF_MAX, past grow_max or when out of memory. */
char *rbuf_pool_grow(struct rbuf_pool *p, char *buf, size_t size, size_t len);
/* Give back a buffer of `size` bytes. */
void rbuf_pool_put(struct rbuf_pool *p, char *buf, size_t size);
/* Free every cached buffer (memory goes back when clients leave). */
void rbuf_pool_trim(struct rbuf_pool *p);

#endif
