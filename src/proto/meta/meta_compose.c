/* SPDX-License-Identifier: BSD-3-Clause */
/* Meta replies: the bounded line a reply is built in, its pieces (numbers,
 * flags, the key, the opaque), and the error line. The commands execute;
 * this composes. */
#include <string.h>

#include "log.h"
#include "proto/meta/meta_internal.h"
#include "proto/session.h"
#include "reply/reply.h"

void meta_reply_error(struct session *s, const char *line)
{
    log_verbose(">%d %s", s->cfd, line);
    size_t n = strlen(line);
    char *p = reply_reserve(&s->reply, n + 2);
    if (!p)
        return;
    memcpy(p, line, n);
    memcpy(p + n, "\r\n", 2);
    reply_commit(&s->reply, n + 2);
}

void meta_line_mem(struct meta_line *l, const void *p, size_t n)
{
    /* the buffer holds the longest line the flag limits allow */
    if (n > sizeof l->buf - 2 - l->len)
        n = sizeof l->buf - 2 - l->len;
    memcpy(l->buf + l->len, p, n);
    l->len += n;
}

void meta_line_str(struct meta_line *l, const char *s)
{
    meta_line_mem(l, s, strlen(s));
}

void meta_line_u64(struct meta_line *l, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[sizeof tmp - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    meta_line_mem(l, tmp + sizeof tmp - n, n);
}

void meta_line_i64(struct meta_line *l, int64_t v)
{
    if (v < 0) {
        meta_line_mem(l, "-", 1);
        meta_line_u64(l, (uint64_t)0 - (uint64_t)v);
    } else {
        meta_line_u64(l, (uint64_t)v);
    }
}

void meta_line_flag_u64(struct meta_line *l, char flag, uint64_t v)
{
    char f[2] = {' ', flag};
    meta_line_mem(l, f, 2);
    meta_line_u64(l, v);
}

void meta_line_key(struct meta_line *l, const char *key, size_t nkey, bool base64)
{
    meta_line_mem(l, " k", 2);
    if (!base64) {
        meta_line_mem(l, key, nkey);
        return;
    }
    char enc[(STORE_KEY_MAX + 2) / 3 * 4];
    size_t n = meta_base64_encode((const unsigned char *)key, nkey, enc);
    meta_line_mem(l, enc, n);
    meta_line_mem(l, " b", 2);
}

void meta_line_opaque(struct meta_line *l, const char *opaque, size_t nopaque)
{
    meta_line_mem(l, " ", 1);
    meta_line_mem(l, opaque, nopaque);
}

void meta_line_echo(struct meta_line *l, const struct meta_req *req)
{
    for (size_t i = 0; i < req->norder; i++) {
        if (req->order[i] == 'O')
            meta_line_opaque(l, req->opaque, req->nopaque);
        else if (req->order[i] == 'k')
            meta_line_key(l, req->key, req->nkey, req->base64_key);
    }
}

void meta_line_send(struct session *s, struct meta_line *l)
{
    memcpy(l->buf + l->len, "\r\n", 2);
    reply_copy(&s->reply, l->buf, l->len + 2);
}
