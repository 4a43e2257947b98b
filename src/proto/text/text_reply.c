/* SPDX-License-Identifier: BSD-3-Clause */
/* Reply helpers for the classic commands. memcached's noreply suppresses
 * every reply of the command, errors included, so it is checked here once. */
#include "log.h"
#include "proto/session.h"
#include "proto/text/text_internal.h"

/* -vv: memcached's out_string() log line, ">fd REPLY" or ">fd NOREPLY REPLY". */
static void text_log_reply(const struct session *s, const char *str, size_t len)
{
    if (text_of_const(s)->reply_unlogged)
        return;
    while (len > 0 && (str[len - 1] == '\n' || str[len - 1] == '\r'))
        len--;
    log_write(LOG_LEVEL_VERBOSE, ">%d %s%.*s", s->cfd, text_of_const(s)->noreply ? "NOREPLY " : "",
              (int)len, str);
}

void text_out_always(struct session *s, const char *str, size_t len)
{
    if (reply_copy(&s->reply, str, len) != 0)
        text_of(s)->closing = true;
}

void text_out(struct session *s, const char *str, size_t len)
{
    if (LOG_ENABLED(LOG_LEVEL_VERBOSE))
        text_log_reply(s, str, len);
    if (!text_of(s)->noreply)
        text_out_always(s, str, len);
}

void text_out_u64(struct session *s, uint64_t v)
{
    if (text_of(s)->noreply)
        return;
    char *p = reply_reserve(&s->reply, TEXT_U64_MAX_DIGITS + 2);
    if (!p) {
        text_of(s)->closing = true;
        return;
    }
    char *e = text_u64toa(v, p);
    *e++ = '\r';
    *e++ = '\n';
    reply_commit(&s->reply, (size_t)(e - p));
}
