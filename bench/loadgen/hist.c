/* SPDX-License-Identifier: BSD-3-Clause */
#include "hist.h"

#include <string.h>

void lg_hist_init(struct lg_hist *h)
{
    memset(h, 0, sizeof(*h));
}

static unsigned hist_index(uint64_t v)
{
    if (v < LG_HIST_SUB)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - LG_HIST_SUB_BITS;
    unsigned sub = (unsigned)(v >> shift) & (LG_HIST_SUB - 1);
    return (shift + 1) * LG_HIST_SUB + sub;
}

/* Largest value that maps to bucket i. */
static uint64_t hist_upper(unsigned i)
{
    if (i < LG_HIST_SUB)
        return i;
    unsigned shift = i / LG_HIST_SUB - 1;
    uint64_t sub = i % LG_HIST_SUB;
    return (((uint64_t)LG_HIST_SUB + sub + 1) << shift) - 1;
}

void lg_hist_add(struct lg_hist *h, uint64_t value)
{
    h->bucket[hist_index(value)]++;
    h->count++;
    h->sum += value;
    if (value > h->max)
        h->max = value;
}

void lg_hist_merge(struct lg_hist *into, const struct lg_hist *from)
{
    for (unsigned i = 0; i < LG_HIST_BUCKETS; i++)
        into->bucket[i] += from->bucket[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->max > into->max)
        into->max = from->max;
}

uint64_t lg_hist_quantile(const struct lg_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count);
    if (rank >= h->count)
        rank = h->count - 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < LG_HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen > rank) {
            uint64_t up = hist_upper(i);
            return up < h->max ? up : h->max;
        }
    }
    return h->max;
}
