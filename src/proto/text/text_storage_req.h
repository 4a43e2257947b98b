/* SPDX-License-Identifier: BSD-3-Clause */
/* The storage commands' (set add replace append prepend cas) parse and
 * compose steps, beside their execution in text_storage.c: the request,
 * read from the line with no session and no store, and the line that
 * answers a commit. A header alone, inline: both run on every set. */
#ifndef NODELAY_PROTO_TEXT_STORAGE_REQ_H
#define NODELAY_PROTO_TEXT_STORAGE_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/line/line.h"
#include "proto/text/text_internal.h"
#include "store/store.h"

struct text_storage_req {
    struct text_token key;
    uint32_t flags;
    int32_t exptime; /* as sent */
    uint64_t cas;    /* cas: the unique to compare, else 0 */
    int32_t vlen;    /* the value's length, when known */
    bool noreply;
};

enum text_storage_parsed {
    TEXT_STORAGE_OK,
    TEXT_STORAGE_SHORT,       /* too few tokens: the error ignores noreply */
    TEXT_STORAGE_BAD,         /* bad length: nothing swallowed, noreply ignored */
    TEXT_STORAGE_BAD_SWALLOW, /* another field is bad: swallow vlen bytes */
};

/* 1.6.45 reads flags and exptime with strto* on the line in place, not on
 * the token alone: a token of white space only (`set k 0 \t 1`) is skipped
 * with the spaces after it and the next token's number is read (exptime 1
 * there). For any other token the two readings agree. */
static inline struct text_token text_storage_rest(const struct text_line *l, size_t i)
{
    return (struct text_token){l->tok[i].s, (size_t)(l->raw + l->len - l->tok[i].s)};
}

/* Read a storage command's line. noreply is set from TEXT_STORAGE_BAD on,
 * vlen from TEXT_STORAGE_BAD_SWALLOW on, the rest with TEXT_STORAGE_OK.
 * Inline: out of line it cost a set 24 instructions more in pipecost. */
static inline enum text_storage_parsed text_storage_parse(const struct text_line *l,
                                                         enum store_mode mode,
                                                         struct text_storage_req *r)
{
    if (l->ntok < 5)
        return TEXT_STORAGE_SHORT;
    r->noreply = text_line_noreply(l);
    if (!text_tok_i32(&l->tok[4], &r->vlen) || r->vlen < 0 || r->vlen > INT32_MAX - 2)
        return TEXT_STORAGE_BAD;
    r->key = l->tok[1];
    r->cas = 0;
    struct text_token flags = text_storage_rest(l, 2), exptime = text_storage_rest(l, 3);
    if (r->key.len > STORE_KEY_MAX || !text_parse_u32(&flags, &r->flags) ||
        !text_parse_i32(&exptime, &r->exptime) ||
        (mode == STORE_MODE_CAS && (l->ntok < 6 || !text_tok_u64(&l->tok[5], &r->cas))))
        return TEXT_STORAGE_BAD_SWALLOW;
    return TEXT_STORAGE_OK;
}

/* The reply to a commit that returned st, with its "\r\n". */
static inline const char *text_storage_line(enum store_status st, size_t *len)
{
#define TEXT_STORAGE_LINE(lit) (*len = sizeof(lit "\r\n") - 1, lit "\r\n")
    switch (st) {
    case STORE_OK:
        return TEXT_STORAGE_LINE("STORED");
    case STORE_EXISTS:
        return TEXT_STORAGE_LINE("EXISTS");
    case STORE_MISS:
        return TEXT_STORAGE_LINE("NOT_FOUND");
    case STORE_NOT_STORED:
        return TEXT_STORAGE_LINE("NOT_STORED");
    case STORE_TOO_LARGE:
        return TEXT_STORAGE_LINE("SERVER_ERROR object too large for cache");
    case STORE_NO_MEMORY:
    default:
        return TEXT_STORAGE_LINE("SERVER_ERROR out of memory storing object");
    }
#undef TEXT_STORAGE_LINE
}

#endif
