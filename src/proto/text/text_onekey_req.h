/* SPDX-License-Identifier: BSD-3-Clause */
/* The one-key commands' (delete incr decr touch) parse and compose steps,
 * beside their execution in text_onekey.c, as text_storage_req.h is for
 * the storage commands: the request, read from the line with no session
 * and no store, and the line that answers the store's status. A header
 * alone, inline: small, and one of them runs on every such request. */
#ifndef NODELAY_PROTO_TEXT_ONEKEY_REQ_H
#define NODELAY_PROTO_TEXT_ONEKEY_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/line/line.h"
#include "proto/text/text_internal.h"
#include "store/store.h"

struct text_onekey_req {
    struct text_token key;
    bool noreply;    /* set whatever the outcome: it covers the errors too */
    uint64_t delta;  /* incr decr */
    int32_t exptime; /* touch, as sent */
};

/* Each parse fills r and returns NULL, or the error line to answer (with
 * its "\r\n"). The dispatcher has checked the token count's minimum. */

/* The key and noreply of a one-key command; the key is checked first, as
 * memcached does, before any argument. */
static inline const char *text_onekey_parse(const struct text_line *l, struct text_onekey_req *r)
{
    r->noreply = text_line_noreply(l);
    r->key = l->tok[1];
    if (r->key.len > STORE_KEY_MAX)
        return "CLIENT_ERROR bad command line format\r\n";
    return NULL;
}

static inline const char *text_delete_parse(const struct text_line *l, struct text_onekey_req *r)
{
    /* One extra argument is ignored (1.6.45 answers `delete k 5` with
     * DELETED; 1.6.18 allowed only a legacy "0"), but a line with more
     * keeps memcached's usage error, which clients' conformance tests
     * expect (memccapable sends `delete a b c d e`). */
    r->noreply = text_line_noreply(l);
    if (l->ntok > (r->noreply ? 4u : 3u))
        return "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n";
    return text_onekey_parse(l, r);
}

static inline const char *text_arith_parse(const struct text_line *l, struct text_onekey_req *r)
{
    const char *err = text_onekey_parse(l, r);
    if (err)
        return err;
    if (!text_tok_u64(&l->tok[2], &r->delta))
        return "CLIENT_ERROR invalid numeric delta argument\r\n";
    return NULL;
}

static inline const char *text_touch_parse(const struct text_line *l, struct text_onekey_req *r)
{
    const char *err = text_onekey_parse(l, r);
    if (err)
        return err;
    if (!text_tok_i32(&l->tok[2], &r->exptime))
        return "CLIENT_ERROR invalid exptime argument\r\n";
    return NULL;
}

/* The replies: the line for the store's status, with its "\r\n" (an
 * incr/decr that succeeded answers with its number instead). */
#define TEXT_ONEKEY_LINE(lit) (*len = sizeof(lit "\r\n") - 1, lit "\r\n")

static inline const char *text_delete_line(enum store_status st, size_t *len)
{
    return st == STORE_OK ? TEXT_ONEKEY_LINE("DELETED") : TEXT_ONEKEY_LINE("NOT_FOUND");
}

/* STORE_NO_MEMORY: the key is there, but its item had no room for an
 * expiry and none could be made for a copy that has (-M, full): refused as
 * a write is, not answered as a miss. */
static inline const char *text_touch_line(enum store_status st, size_t *len)
{
    switch (st) {
    case STORE_OK:
        return TEXT_ONEKEY_LINE("TOUCHED");
    case STORE_NO_MEMORY:
        return TEXT_ONEKEY_LINE("SERVER_ERROR out of memory storing object");
    default:
        return TEXT_ONEKEY_LINE("NOT_FOUND");
    }
}

static inline const char *text_arith_line(enum store_status st, size_t *len)
{
    switch (st) {
    case STORE_MISS:
        return TEXT_ONEKEY_LINE("NOT_FOUND");
    case STORE_NON_NUMERIC:
        return TEXT_ONEKEY_LINE("CLIENT_ERROR cannot increment or decrement non-numeric value");
    default:
        return TEXT_ONEKEY_LINE("SERVER_ERROR out of memory");
    }
}

#undef TEXT_ONEKEY_LINE

#endif
