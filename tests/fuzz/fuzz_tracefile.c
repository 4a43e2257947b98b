/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz-link: bench/loadgen/tracefile.c */
/* libFuzzer harness for the trace file reader that `loadgen trace` and
 * cachesim share (bench/loadgen/tracefile.c): the first byte picks the
 * format ('L' the ARC paper's "start nblocks" lines, anything else "key
 * size" lines), the rest is the file. A file it takes must come out
 * whole: each request's accesses in order, every access a key it
 * interned, every key 1-250 bytes with no byte memcached refuses, a lis
 * request at most FZ_MAX_KEYS blocks and a kv request one key. One it
 * refuses must still free what it read (the caller releases). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bench/loadgen/tracefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_KEYS 16

static void fz_check(const struct lg_trace *t, enum lg_trace_fmt fmt)
{
    if (t->nreq == 0 || t->req_at[0] != 0 || t->req_at[t->nreq] != t->nacc)
        abort();
    for (uint32_t r = 0; r < t->nreq; r++) {
        uint64_t n = t->req_at[r + 1] - t->req_at[r];
        if (t->req_at[r + 1] < t->req_at[r] || n == 0 ||
            (fmt == LG_TRACE_LIS ? n > FZ_MAX_KEYS : n != 1))
            abort();
    }
    for (uint64_t i = 0; i < t->nacc; i++)
        if (t->acc[i] >= t->nkeys)
            abort();
    for (uint32_t id = 0; id < t->nkeys; id++) {
        uint32_t len;
        const char *k = lg_trace_key(t, id, &len);
        if (len == 0 || len > 250)
            abort();
        for (uint32_t j = 0; j < len; j++)
            if ((unsigned char)k[j] <= ' ' || k[j] == 0x7f)
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum lg_trace_fmt fmt = data[0] == 'L' ? LG_TRACE_LIS : LG_TRACE_KV;
    FILE *f = fmemopen((void *)(data + 1), size - 1 ? size - 1 : 1, "r");
    if (!f)
        return 0;
    if (size == 1)
        fseek(f, 0, SEEK_END); /* an empty file: fmemopen wants a byte */
    struct lg_trace t;
    if (lg_trace_load(&t, f, fmt, FZ_MAX_KEYS, 0) == 0)
        fz_check(&t, fmt);
    lg_trace_release(&t);
    fclose(f);
    return 0;
}
