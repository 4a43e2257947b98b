/* SPDX-License-Identifier: BSD-3-Clause */
/* Work split over threads, one per core (split.c): what a restore and a
 * graceful stop's checksums share. Beneath both persist.c and restore.c, so
 * neither calls the other for it. */
#ifndef NODELAY_STORE_SPLIT_H
#define NODELAY_STORE_SPLIT_H

#include <stddef.h>
#include <stdint.h>

/* Threads a restore (or a graceful stop's checksums) uses: one per core,
 * at most this many. */
#define SPLIT_THREADS 4
/* Each thread's own state lies on cache lines of its own: two threads
 * writing counters on one line, once per item each, would move it between
 * the cores at every item. */
#define SPLIT_LINE 64
/* How many threads for `work` units, one per core. */
uint32_t split_threads(uint32_t work);
/* Run fn on args[0..t) (t structs of `size` bytes), on threads where they
 * can be made, else here. */
void split_run(void *(*fn)(void *), char *args, size_t size, uint32_t t);

#endif
