/* SPDX-License-Identifier: BSD-3-Clause */
/* A real request trace, loaded whole: the look-aside replay (loadgen trace)
 * and the offline simulator (cachesim) read the same stream through this,
 * so their miss ratios count the same accesses.
 *
 * Formats, one request per line:
 *   lis  "start nblocks _ _" (the ARC paper's traces, Megiddo and Modha,
 *        FAST '03): one multiget of blocks start .. start+nblocks-1, at
 *        most max_keys of them; a block's key is its number in decimal.
 *   kv   "key size": one get of key; a miss sets size bytes.
 * Keys are interned to dense ids in order of first appearance. */
#ifndef LG_TRACEFILE_H
#define LG_TRACEFILE_H

#include <stdint.h>
#include <stdio.h>

enum lg_trace_fmt { LG_TRACE_LIS, LG_TRACE_KV };

struct lg_trace {
    uint32_t nreq;      /* requests (lines) */
    uint64_t nacc;      /* accesses: keys over all requests */
    uint64_t *req_at;   /* nreq + 1 offsets into acc */
    uint32_t *acc;      /* key id of each access */
    uint32_t *size;     /* value size of each access (kv), or NULL (lis) */
    uint32_t nkeys;     /* distinct keys */
    uint64_t *key_at;   /* nkeys + 1 offsets into pool */
    char *pool;         /* key bytes, back to back */
    /* interning: open addressing over key ids + 1 (0 = empty) */
    uint32_t *tab;
    uint32_t tabmask;
    size_t acc_cap, size_cap, key_cap, pool_cap, pool_len, req_cap;
};

/* Reads f to its end (or max_lines lines when not 0). Returns 0, or -1 with
 * a message on stderr (a malformed line names its number). */
int lg_trace_load(struct lg_trace *t, FILE *f, enum lg_trace_fmt fmt, unsigned max_keys,
                  uint64_t max_lines);
int lg_trace_fmt_parse(const char *s, enum lg_trace_fmt *fmt);
static inline const char *lg_trace_key(const struct lg_trace *t, uint32_t id, uint32_t *len)
{
    *len = (uint32_t)(t->key_at[id + 1] - t->key_at[id]);
    return t->pool + t->key_at[id];
}
void lg_trace_release(struct lg_trace *t);

#endif
