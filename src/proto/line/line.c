/* SPDX-License-Identifier: BSD-3-Clause */
#include "proto/line/line.h"

#include <string.h>

/* The first space in raw[i..len), or len. Eight bytes at a time where the
 * byte order lets the lowest flagged byte be the first: a key is most of a
 * get line, and a byte at a time was the tokenizer's whole cost. */
static size_t text_word_end(const char *raw, size_t i, size_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, spaces = 0x2020202020202020ull;
    while (len - i >= 8) {
        uint64_t w;
        memcpy(&w, raw + i, 8);
        w ^= spaces; /* a space is now a zero byte */
        /* High bit set in each zero byte (and maybe in bytes above one,
         * never below the first). */
        uint64_t z = (w - ones) & ~w & (ones << 7);
        if (z)
            return i + (size_t)(__builtin_ctzll(z) >> 3);
        i += 8;
    }
    if (i < len && len >= 8) {
        /* Fewer than 8 left: the line's last 8 bytes, those before i
         * shifted out (what comes in is zero, not a space), rather than a
         * byte at a time. */
        uint64_t w;
        memcpy(&w, raw + len - 8, 8);
        w >>= (8 - (len - i)) * 8;
        w ^= spaces;
        uint64_t z = (w - ones) & ~w & (ones << 7);
        return z ? i + (size_t)(__builtin_ctzll(z) >> 3) : len;
    }
#endif
    while (i < len && raw[i] != ' ')
        i++;
    return i;
}

void text_tokenize(struct text_line *l, const char *raw, size_t len)
{
    l->raw = raw;
    l->len = len;
    l->ntok = 0;
    l->hkey = NULL;
    size_t i = 0;
    while (i < len) {
        while (i < len && raw[i] == ' ')
            i++;
        if (i == len)
            break;
        if (l->ntok == TEXT_MAX_TOKENS - 1) {
            /* The last token keeps the unsplit rest, as memcached's tokenizer. */
            size_t e = len;
            while (e > i && raw[e - 1] == ' ')
                e--;
            l->tok[l->ntok].s = raw + i;
            l->tok[l->ntok].len = e - i;
            l->ntok++;
            return;
        }
        size_t start = i;
        i = text_word_end(raw, i, len);
        l->tok[l->ntok].s = raw + start;
        l->tok[l->ntok].len = i - start;
        l->ntok++;
    }
}

/* The last space-separated word of the line, however many tokens it has. */
struct text_token text_line_last(const struct text_line *l)
{
    size_t e = l->len;
    while (e > 0 && l->raw[e - 1] == ' ')
        e--;
    size_t b = e;
    while (b > 0 && l->raw[b - 1] != ' ')
        b--;
    return (struct text_token){l->raw + b, e - b};
}

bool text_line_noreply(const struct text_line *line)
{
    struct text_token last = text_line_last(line);
    return line->ntok > 1 && last.len == 7 && memcmp(last.s, "noreply", 7) == 0;
}
