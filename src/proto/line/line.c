/* SPDX-License-Identifier: BSD-3-Clause */
#include "proto/line/line.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

#ifdef __SSE2__
/* The spaces of raw[0..len) at bit o + i for byte o + i: a compare of the
 * 16 bytes from o. */
static inline uint64_t text_spaces16(const char *raw, size_t o)
{
    __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(raw + o));
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(w, _mm_set1_epi8(' ')));
    return (uint64_t)m << o;
}

/* text_tokenize for a line of 16 to 63 bytes, most requests: its spaces as
 * one bit mask (16 bytes a compare, the last one ending at the line's end,
 * overlapping the others, so that no byte past the line is read), its
 * words the runs of clear bits, each found by a bit scan rather than byte
 * by byte. */
static void text_tokenize_mask(struct text_line *l, const char *raw, size_t len)
{
    uint64_t sp = text_spaces16(raw, 0) | text_spaces16(raw, len - 16);
    if (len > 32)
        sp |= text_spaces16(raw, 16);
    if (len > 48)
        sp |= text_spaces16(raw, 32);
    uint64_t word = ~sp & ((1ull << len) - 1);
    uint64_t starts = word & ~(word << 1);
    uint64_t ends = ~word & (word << 1); /* the byte after each word (bit len at most) */
    size_t n = 0;
    for (; starts; starts &= starts - 1, ends &= ends - 1) {
        size_t b = (size_t)__builtin_ctzll(starts);
        size_t e = (size_t)__builtin_ctzll(ends);
        if (n == TEXT_MAX_TOKENS - 1) /* the unsplit rest, as below */
            e = 64 - (size_t)__builtin_clzll(word);
        l->tok[n].s = raw + b;
        l->tok[n].len = e - b;
        if (++n == TEXT_MAX_TOKENS)
            break;
    }
    l->ntok = n;
}
#endif

/* text_tokenize a word at a time, for any line. */
static __attribute__((noinline)) void text_tokenize_words(struct text_line *l, const char *raw,
                                                          size_t len)
{
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

void text_tokenize(struct text_line *l, const char *raw, size_t len)
{
    l->raw = raw;
    l->len = len;
    l->ntok = 0;
    l->hkey = NULL;
#ifdef __SSE2__
    if (len >= 16 && len < 64) {
        text_tokenize_mask(l, raw, len);
        return;
    }
#endif
    text_tokenize_words(l, raw, len);
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
