/* SPDX-License-Identifier: BSD-3-Clause */
/* `extstore SUB VALUE`: memcached's run-time tuning of its flash tier. The
 * values are the run-time ext_* settings (settings_rows_ext.h), shown by
 * `stats settings` and read by the flash tier through
 * settings_flash_tuning. Answered as 1.6.45 answers, with or without an
 * ext_path: OK, or a bare ERROR for anything it does not take. */
#include "proto/session.h"
#include "proto/text/text_internal.h"

/* memcached matches the subcommand as a prefix of each name in this order,
 * so "i" is item_size and "d" drop_under. */
enum text_ext_sub {
    TEXT_EXT_FREE_MEMCHUNKS,
    TEXT_EXT_ITEM_SIZE,
    TEXT_EXT_ITEM_AGE,
    TEXT_EXT_LOW_TTL,
    TEXT_EXT_RECACHE_RATE,
    TEXT_EXT_COMPACT_UNDER,
    TEXT_EXT_DROP_UNDER,
    TEXT_EXT_MAX_SLEEP,
    TEXT_EXT_MAX_FRAG,
    TEXT_EXT_DROP_UNREAD,
    TEXT_EXT_NONE,
};

static const char *const text_ext_names[] = {
    [TEXT_EXT_FREE_MEMCHUNKS] = "free_memchunks", [TEXT_EXT_ITEM_SIZE] = "item_size",
    [TEXT_EXT_ITEM_AGE] = "item_age",             [TEXT_EXT_LOW_TTL] = "low_ttl",
    [TEXT_EXT_RECACHE_RATE] = "recache_rate",     [TEXT_EXT_COMPACT_UNDER] = "compact_under",
    [TEXT_EXT_DROP_UNDER] = "drop_under",         [TEXT_EXT_MAX_SLEEP] = "max_sleep",
    [TEXT_EXT_MAX_FRAG] = "max_frag",             [TEXT_EXT_DROP_UNREAD] = "drop_unread",
};

/* The first name `sub` is a prefix of; free_memchunks only with its two
 * arguments (without them memcached goes on down the list). */
static enum text_ext_sub text_ext_find(const struct text_token *sub, size_t ntok)
{
    for (int i = 0; i < TEXT_EXT_NONE; i++) {
        const char *name = text_ext_names[i];
        if (i == TEXT_EXT_FREE_MEMCHUNKS && ntok <= 3)
            continue;
        if (sub->len <= strlen(name) && memcmp(sub->s, name, sub->len) == 0)
            return (enum text_ext_sub)i;
    }
    return TEXT_EXT_NONE;
}

/* Apply one subcommand; false for memcached's ERROR. */
static bool text_ext_apply(struct session *s, const struct text_line *l, enum text_ext_sub sub)
{
    const struct text_token *v = &l->tok[2];
    uint32_t u, limit;
    double d;
    if (sub == TEXT_EXT_MAX_FRAG) {
        if (!text_tok_double(v, &d))
            return false;
        SETTINGS_RUN_SET(s->run, ext_max_frag, d);
        return true;
    }
    if (sub == TEXT_EXT_NONE || !text_tok_u32(v, &u))
        return false;
    switch (sub) {
    case TEXT_EXT_FREE_MEMCHUNKS:
        /* deprecated in memcached, checked and ignored: a class id under
         * its 64 classes and a count */
        return text_tok_u32(&l->tok[3], &limit) && u < 64;
    case TEXT_EXT_ITEM_SIZE:
        SETTINGS_RUN_SET(s->run, ext_item_size, u);
        break;
    case TEXT_EXT_ITEM_AGE:
        SETTINGS_RUN_SET(s->run, ext_item_age, u);
        break;
    case TEXT_EXT_LOW_TTL:
        SETTINGS_RUN_SET(s->run, ext_low_ttl, u);
        break;
    case TEXT_EXT_RECACHE_RATE:
        SETTINGS_RUN_SET(s->run, ext_recache_rate, u);
        break;
    case TEXT_EXT_COMPACT_UNDER:
        SETTINGS_RUN_SET(s->run, ext_compact_under, u);
        break;
    case TEXT_EXT_DROP_UNDER:
        SETTINGS_RUN_SET(s->run, ext_drop_under, u);
        break;
    case TEXT_EXT_MAX_SLEEP:
        SETTINGS_RUN_SET(s->run, ext_max_sleep, u);
        break;
    case TEXT_EXT_DROP_UNREAD:
        SETTINGS_RUN_SET(s->run, ext_drop_unread, u != 0);
        break;
    default:
        return false;
    }
    return true;
}

/* A last word `noreply` silences the reply, errors included, and counts as
 * an argument (as for slabs and lru_crawler). */
void text_cmd_extstore(struct session *s, const struct text_line *l)
{
    text_of(s)->noreply = text_line_noreply(l);
    enum text_ext_sub sub = l->ntok < 3 ? TEXT_EXT_NONE : text_ext_find(&l->tok[1], l->ntok);
    if (text_ext_apply(s, l, sub))
        TEXT_OUT(s, "OK");
    else
        TEXT_OUT(s, "ERROR");
}
