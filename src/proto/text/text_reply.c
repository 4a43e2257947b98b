/* Reply helpers for the classic commands. memcached's noreply suppresses
 * every reply of the command, errors included, so it is checked here once. */
#include "proto/session.h"
#include "proto/text/text_internal.h"

void text_out_always(struct session *s, const char *str, size_t len)
{
    if (reply_copy(&s->reply, str, len) != 0)
        s->text.closing = true;
}

void text_out(struct session *s, const char *str, size_t len)
{
    if (!s->text.noreply)
        text_out_always(s, str, len);
}

void text_out_u64(struct session *s, uint64_t v)
{
    if (s->text.noreply)
        return;
    char *p = reply_reserve(&s->reply, TEXT_U64_MAX_DIGITS + 2);
    if (!p) {
        s->text.closing = true;
        return;
    }
    char *e = text_u64toa(v, p);
    *e++ = '\r';
    *e++ = '\n';
    reply_commit(&s->reply, (size_t)(e - p));
}
