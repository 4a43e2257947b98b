/* SPDX-License-Identifier: BSD-3-Clause */
/* Keys, their distribution, and self-describing values.
 *
 * A key is "key:%010u". A value starts with "<key hex 8>:<version hex 8>:" and
 * continues with bytes from a fixed pseudo-random pattern at an offset derived
 * from (key, version); its length is derived the same way. So a value read back
 * can be checked completely: that it belongs to the key it came from, that it
 * has the length its version demands, and that no byte is torn or foreign. */
#ifndef LG_KEYSPACE_H
#define LG_KEYSPACE_H

#include <stddef.h>
#include <stdint.h>

#define LG_KEY_LEN 14 /* "key:" + 10 digits */
#define LG_VALUE_HDR 18

struct lg_rng {
    uint64_t s;
};

static inline uint64_t lg_rng_next(struct lg_rng *r)
{
    /* splitmix64: tiny state, good enough for load shaping, reproducible */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double lg_rng_unit(struct lg_rng *r)
{
    return (double)(lg_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static inline uint64_t lg_mix(uint64_t a, uint64_t b)
{
    struct lg_rng r = { a * 0x100000001b3ull ^ b };
    return lg_rng_next(&r);
}

/* Key popularity: uniform, or Zipf(s) by inverse CDF over a table (exact for
 * any exponent, deterministic for a seed; n doubles of memory). */
struct lg_dist {
    uint32_t n;
    double *cdf; /* NULL for uniform */
};

int lg_dist_init(struct lg_dist *d, uint32_t n, double zipf_s);
void lg_dist_release(struct lg_dist *d);
uint32_t lg_dist_pick(const struct lg_dist *d, struct lg_rng *r);

/* Writes the 14-byte key for index k (no terminator). */
void lg_key_format(char *dst, uint32_t k);
/* Parses a 14-byte key back to its index; -1 if it is not one of ours. */
int64_t lg_key_parse(const char *s, size_t len);

/* Values: sizes in [vmin, vmax], chosen per (key, version). */
struct lg_values {
    uint32_t vmin, vmax;
    char *pattern; /* vmax + 4096 bytes */
};

int lg_values_init(struct lg_values *v, uint32_t vmin, uint32_t vmax);
void lg_values_release(struct lg_values *v);
uint32_t lg_value_len(const struct lg_values *v, uint32_t key, uint32_t ver);
/* Writes the value of (key, ver), lg_value_len bytes, into dst. */
void lg_value_write(const struct lg_values *v, char *dst, uint32_t key, uint32_t ver);

enum lg_verify {
    LG_VERIFY_OK = 0,
    LG_VERIFY_WRONG_KEY,
    LG_VERIFY_BAD_LENGTH,
    LG_VERIFY_CORRUPT,
};
/* Checks data read for key; on success stores the version found in *ver. */
enum lg_verify lg_value_check(const struct lg_values *v, uint32_t key,
                              const char *data, size_t len, uint32_t *ver);

#endif
