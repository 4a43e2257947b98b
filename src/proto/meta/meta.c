/* SPDX-License-Identifier: BSD-3-Clause */
/* Meta command dispatch (mg ms md ma mn me): parse, then the command. */
#include "proto/meta/meta.h"

#include <string.h>

#include "base/log.h"
#include "reply/reply.h"
#include "proto/proto_flash.h"
#include "proto/session.h"
#include "proto/meta/meta_internal.h"
#include "proto/text/text_state.h"
#include "stats/stats.h"

bool meta_is_command(const struct text_line *line)
{
    if (line->ntok == 0 || line->tok[0].len != 2 || line->tok[0].s[0] != 'm')
        return false;
    switch (line->tok[0].s[1]) {
    case 'g': case 's': case 'd': case 'a': case 'n': case 'e':
        return true;
    default:
        return false;
    }
}

void meta_command(struct session *s, const struct text_line *line)
{
    struct meta_req req;
    const char *err;

    STAT_INC(s->stats, cmd_meta);
    switch (meta_parse(line, &req, &err)) {
    case META_PARSE_ERROR:
        meta_reply_error(s, err);
        return;
    case META_PARSE_ERROR_SWALLOW:
        meta_reply_error(s, err);
        text_expect_value(s, &text_of(s)->value, req.datalen, false, text_swallowed);
        return;
    case META_PARSE_OK:
        break;
    }
    switch (req.cmd) {
    case META_MG: meta_get(s, &req); break;
    case META_MS: meta_set(s, &req); break;
    case META_MD: meta_delete(s, &req); break;
    case META_MA: meta_arith(s, &req); break;
    case META_ME: meta_debug(s, &req); break;
    case META_MN:
        /* memcached flushes its write buffer here; nodelay sends everything
         * parsed from one read in one writev anyway, so MN needs no more. */
        reply_copy(&s->reply, "MN\r\n", 4);
        log_verbose(">%d MN", s->cfd);
        break;
    }
}

enum store_probe meta_flash_probe(struct session *s, const struct text_line *line)
{
    struct meta_req req;
    const char *err;
    if (meta_parse(line, &req, &err) != META_PARSE_OK || req.cmd == META_MN)
        return STORE_PROBE_READY; /* an error, or no key */
    if (req.cmd == META_MS && !req.has_cas && (req.mode == 0 || req.mode == 'S'))
        return STORE_PROBE_READY; /* a plain set replaces what was there unseen */
    return proto_flash_probe(s, req.key, req.nkey);
}

void meta_state_release(struct session *s)
{
    /* the reservation belongs to the text framing (text_of(s)->value.res) */
    text_of(s)->meta.active = false;
}
