/* SPDX-License-Identifier: BSD-3-Clause */
/* Printing numbers for text replies (reading them is src/base/num.c's job). */
#include <string.h>

#include "proto/text/text_internal.h"

/* A digit at a time was a visible share of a hit's cost. */
const char text_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static unsigned text_u64_digits(uint64_t v)
{
    unsigned n = 1;
    for (;;) {
        if (v < 10)
            return n;
        if (v < 100)
            return n + 1;
        if (v < 1000)
            return n + 2;
        if (v < 10000)
            return n + 3;
        v /= 10000;
        n += 4;
    }
}

char *text_u64toa_long(uint64_t v, char *p)
{
    char *end = p + text_u64_digits(v);
    char *q = end;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        q -= 2;
        memcpy(q, text_digit_pairs + d, 2);
    }
    if (v >= 10) {
        q -= 2;
        memcpy(q, text_digit_pairs + v * 2, 2);
    } else {
        *--q = (char)('0' + v);
    }
    return end;
}
