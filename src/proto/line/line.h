/* SPDX-License-Identifier: BSD-3-Clause */
/* A request line of the text protocol, split into tokens as memcached
 * splits it: what classic commands (proto/text/) and meta commands
 * (proto/meta/) both read, beneath both. Pure: no session, no store. */
#ifndef NODELAY_PROTO_LINE_H
#define NODELAY_PROTO_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* memcached splits a command line on spaces into at most this many tokens
 * (the last one holding the unsplit rest when there are more). */
#define TEXT_MAX_TOKENS 24

struct text_token {
    const char *s;
    size_t len;
};

/* One request line, without its "\r\n" / "\n". */
struct text_line {
    const char *raw;
    size_t len;
    struct text_token tok[TEXT_MAX_TOKENS];
    size_t ntok;
    /* A read's batch hashed this token's key (hkey, a token's s) for its
     * prefetch: its hash, so that its lookup does not hash it again. NULL
     * (text_tokenize) when not. */
    const char *hkey;
    uint64_t hv;
};

/* Split a request line (without its line end) into tokens, as memcached. */
void text_tokenize(struct text_line *l, const char *raw, size_t len);

/* The last space-separated word of the line, however many tokens it has. */
struct text_token text_line_last(const struct text_line *l);

/* True when the line's last word is "noreply" (memcached honours it only
 * there, however many tokens the line has). */
bool text_line_noreply(const struct text_line *line);

#endif
