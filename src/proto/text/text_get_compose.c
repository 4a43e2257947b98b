/* SPDX-License-Identifier: BSD-3-Clause */
/* The get family's replies: a hit's VALUE line, composed in place, and its
 * value, copied right after it when short (under the store's bucket lock:
 * text_hit_copy) or by reference when long (text_value_hit). The "\r\n"
 * after a value is put in front of the next header (or of END), so a run
 * of short hits is one iovec and a long hit costs two. */
#include <string.h>

#include "proto/session.h"
#include "proto/text/text_get_internal.h"

/* Inline in both its callers: every hit composes one. */
static inline __attribute__((always_inline)) char *
text_value_header(char *q, const char *key, size_t nkey, const struct store_item *it,
                  bool want_cas, bool crlf_first)
{
    if (crlf_first) {
        *q++ = '\r';
        *q++ = '\n';
    }
    memcpy(q, "VALUE ", 6);
    q += 6;
    if (nkey >= 8 && nkey <= 16) {
        /* most keys: two overlapping words, not a call (the room is there) */
        uint64_t a, b;
        memcpy(&a, key, 8);
        memcpy(&b, key + nkey - 8, 8);
        memcpy(q, &a, 8);
        memcpy(q + nkey - 8, &b, 8);
    } else {
        memcpy(q, key, nkey);
    }
    q += nkey;
    *q++ = ' ';
    q = text_u64toa(it->flags, q);
    *q++ = ' ';
    q = text_u64toa(it->nvalue, q);
    if (want_cas) {
        *q++ = ' ';
        q = text_u64toa(it->cas, q);
    }
    *q++ = '\r';
    *q++ = '\n';
    return q;
}

void text_hit_copy(void *arg, const struct store_item *it)
{
    struct text_hit *h = arg;
    char *q = text_value_header(h->at, h->key, h->nkey, it, h->want_cas, h->crlf);
    if (it->nvalue)
        memcpy(q, it->value, it->nvalue);
    q += it->nvalue;
    if (h->last) {
        memcpy(q, TEXT_END, sizeof TEXT_END - 1);
        q += sizeof TEXT_END - 1;
    }
    h->len = (size_t)(q - h->at);
}

/* A hit's header and a value too long to copy (reply_value, by
 * reference). The pin is released or handed on, whatever the outcome. */
int text_value_hit(struct session *s, const char *key, size_t nkey, const struct store_item *it,
                   bool want_cas, bool crlf_first)
{
    char *p = reply_reserve(&s->reply, TEXT_VALUE_HEADER_MAX);
    if (!p) {
        if (it->pin)
            store_pin_release(it->pin);
        return -1;
    }
    reply_commit(&s->reply, (size_t)(text_value_header(p, key, nkey, it, want_cas, crlf_first) - p));
    return reply_value(&s->reply, it->value, it->nvalue, it->pin);
}
