/* SPDX-License-Identifier: BSD-3-Clause */
/* `stats detail`: per key-prefix counts (prefix = the key up to the -D
 * delimiter; keys without it are not counted, as in memcached). Shared by
 * all workers under one mutex, so it costs only while detail is on. */
#ifndef NODELAY_STATS_DETAIL_H
#define NODELAY_STATS_DETAIL_H

#include <stdbool.h>
#include <stddef.h>

struct reply_queue;

void stats_detail_set_delimiter(char delimiter);
/* op: 'g' get (hit tells), 's' set, 'd' delete. */
void stats_detail_record(const char *key, size_t nkey, char op, bool hit);
/* PREFIX lines, then END, as one malloc'd string (the binary protocol sends
 * it as one value); NULL when out of memory. */
char *stats_detail_text(size_t *len);
/* The same appended to out. Returns 0 or -1 (out of memory). */
int stats_detail_dump(struct reply_queue *out);
/* Forget every prefix (stats reset). */
void stats_detail_clear(void);

#endif
