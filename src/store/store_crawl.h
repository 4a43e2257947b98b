/* SPDX-License-Identifier: BSD-3-Clause */
/* The housekeeper and the crawler (store_crawl.c): the thread that reaps
 * dead items and reclaims dead segments, and `lru_crawler crawl`.
 * docs/store-expiry.md "Expiry". */
#ifndef NODELAY_STORE_CRAWL_H
#define NODELAY_STORE_CRAWL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct store_ctx;

struct store_house {
    struct store_ctx *ctx;  /* the housekeeper's own ctx */
    uint64_t crawl_cursor;  /* next bucket for store_crawl (housekeeper) */
    uint64_t cold_cursor;   /* next bucket for the idle flush (store_cold.h) */
    bool cold_more;         /* the idle flush stopped at full buffers: soon again */
    uint64_t whole_at;      /* CLOCK_MONOTONIC ns the last whole pass ended (housekeeper) */
    uint64_t whole_passes;  /* whole passes run (store_housekeep), atomic */
    uint64_t idle_passes;   /* idle-flush-only passes run between them, atomic */
    uint64_t crawl_classes; /* classes `lru_crawler crawl` asked for (lock) */
    bool crawl_active;      /* the housekeeper is crawling them (lock) */
    bool crawl_running;     /* from the request to the crawl's end, atomic */
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    bool kick;              /* run a pass now (an immediate flush_all) */
};

/* The housekeeper thread (arg: the store); one whole pass of its
 * work, which tests call directly; and its sweep, which unlinks expired and
 * flushed items from up to max buckets of the index, reading only items
 * whose segment may hold some. */
void *store_housekeeper(void *arg);
void store_housekeep(struct store *s);
size_t store_crawl(struct store_ctx *ctx, uint64_t max);

#endif
