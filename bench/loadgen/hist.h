/* SPDX-License-Identifier: BSD-3-Clause */
/* Log-linear latency histogram: 32 linear sub-buckets per power of two, so any
 * recorded value is off by at most 1/32 (about 3 %) whatever its magnitude. */
#ifndef LG_HIST_H
#define LG_HIST_H

#include <stdint.h>

#define LG_HIST_SUB_BITS 5
#define LG_HIST_SUB (1u << LG_HIST_SUB_BITS)
#define LG_HIST_BUCKETS (64u * LG_HIST_SUB)

struct lg_hist {
    uint64_t count;
    uint64_t max;
    uint64_t sum;
    uint64_t bucket[LG_HIST_BUCKETS];
};

void lg_hist_init(struct lg_hist *h);
void lg_hist_add(struct lg_hist *h, uint64_t value);
void lg_hist_merge(struct lg_hist *into, const struct lg_hist *from);
/* Upper bound of the bucket holding quantile q (0..1); 0 when empty. */
uint64_t lg_hist_quantile(const struct lg_hist *h, double q);

#endif
