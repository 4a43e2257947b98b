/* SPDX-License-Identifier: BSD-3-Clause */
/* Which keys a text request needs from flash (proto_flash.h), probed before
 * the request has any effect: every key of a get (the rest of a paused
 * one), the key of touch, delete, incr, decr, of the storage commands that
 * look at the old item (add replace append prepend cas, at their command
 * line, before their value is received) and of the meta commands; and,
 * when one waits, the keys of the reads pipelined after it. */
#include <string.h>

#include "proto/meta/meta.h"
#include "proto/proto_flash.h"
#include "proto/session.h"
#include "proto/text/text_get_internal.h"
#include "proto/text/text_state.h"
#include "store/store_compat.h"

/* Keys probed per pass: a multiget pauses after as many lookups
 * (text_get.c) and probes the next ones when it resumes, so a long one
 * never holds more reads than it is about to use. */
#define TEXT_FLASH_KEYS 2048

static void text_flash_key(struct session *s, const char *key, size_t nkey, enum store_probe *p)
{
    if (nkey == 0 || nkey > STORE_KEY_MAX)
        return; /* an error reply: nothing is looked up */
    if (proto_flash_probe(s, key, nkey) == STORE_PROBE_WAIT)
        *p = STORE_PROBE_WAIT;
}

static enum store_probe text_flash_get(struct session *s, const struct text_line *l,
                                       const struct text_cont *c)
{
    enum store_probe p = STORE_PROBE_READY;
    struct text_keys w;
    text_keys_at(&w, l, c);
    const char *key;
    size_t nkey;
    for (size_t n = 0; n < TEXT_FLASH_KEYS && text_keys_next(&w, &key, &nkey); n++)
        text_flash_key(s, key, nkey, &p);
    return p;
}

enum store_probe text_flash_probe(struct session *s, const struct text_line *l, bool resuming)
{
    if (resuming)
        return text_of(s)->cont.kind == TEXT_CONT_GET ? text_flash_get(s, l, &text_of(s)->cont)
                                                      : store_flash_scan_probe(text_of(s)->cont.scan);
    if (l->ntok < 2)
        return STORE_PROBE_READY;
    const struct text_token *c = &l->tok[0];
    struct text_cont get;
    switch (c->len) {
    case 2:
        return meta_is_command(l) ? meta_flash_probe(s, l) : STORE_PROBE_READY;
    case 3:
        if (TEXT_TOK_IS(c, "get") || (TEXT_TOK_IS(c, "gat") && l->ntok >= 3))
            return text_get_parse(l, false, c->s[1] == 'a', &get) ? STORE_PROBE_READY
                                                                  : text_flash_get(s, l, &get);
        if (!TEXT_TOK_IS(c, "cas") && !TEXT_TOK_IS(c, "add"))
            return STORE_PROBE_READY;
        break;
    case 4:
        if (TEXT_TOK_IS(c, "gets") || (TEXT_TOK_IS(c, "gats") && l->ntok >= 3))
            return text_get_parse(l, true, c->s[1] == 'a', &get) ? STORE_PROBE_READY
                                                                 : text_flash_get(s, l, &get);
        if (!TEXT_TOK_IS(c, "incr") && !TEXT_TOK_IS(c, "decr"))
            return STORE_PROBE_READY;
        break;
    case 5:
        if (!TEXT_TOK_IS(c, "touch"))
            return STORE_PROBE_READY;
        break;
    case 6:
        if (!TEXT_TOK_IS(c, "delete") && !TEXT_TOK_IS(c, "append"))
            return STORE_PROBE_READY;
        break;
    case 7:
        if (!TEXT_TOK_IS(c, "replace") && !TEXT_TOK_IS(c, "prepend"))
            return STORE_PROBE_READY;
        break;
    default:
        return STORE_PROBE_READY;
    }
    enum store_probe p = STORE_PROBE_READY;
    text_flash_key(s, l->tok[1].s, l->tok[1].len, &p);
    return p;
}

/* Requests probed ahead of one that waits, at most (binary's reason:
 * bin_process.c). */
#define TEXT_FLASH_AHEAD 32

/* Whether the line only reads: a get or an mg. */
static bool text_flash_reader(const struct text_line *l)
{
    if (l->ntok < 2)
        return false;
    const struct text_token *c = &l->tok[0];
    return TEXT_TOK_IS(c, "get") || TEXT_TOK_IS(c, "gets") || TEXT_TOK_IS(c, "mg");
}

void text_flash_ahead(struct session *s, const char *buf, size_t pos, size_t len)
{
    struct text_line l;
    for (int n = 0; n < TEXT_FLASH_AHEAD && pos < len; n++) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        if (!nl)
            return;
        size_t end = (size_t)(nl - buf);
        size_t next = end + 1;
        if (end > pos && buf[end - 1] == '\r')
            end--;
        text_tokenize(&l, buf + pos, end - pos);
        if (!text_flash_reader(&l))
            return;
        text_flash_probe(s, &l, false);
        pos = next;
    }
}
