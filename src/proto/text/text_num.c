/* Printing numbers for text replies (reading them is src/num.c's job). */
#include "proto/text/text_internal.h"

char *text_u64toa(uint64_t v, char *p)
{
    char tmp[TEXT_U64_MAX_DIGITS];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}
