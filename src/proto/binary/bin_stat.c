/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: STAT [group].
 *
 * The server walks the group's rows (server_ops.stats) and hands each to
 * this file's emitter, which writes memcached's binary form: one packet
 * per stat (key = name, body = value), then an empty packet that ends the
 * list. `stats detail dump` is one packet named "detailed" holding the
 * whole dump, as memcached sends it. */
#include "proto/binary/binary.h"

#include <string.h>

#include "proto/proto.h"
#include "proto/session.h"
#include "reply/reply.h"

static int bin_stat_emit_row(void *ctx, const char *name, size_t nname, const char *value,
                             size_t nvalue)
{
    struct bin_stat_emitter *be = ctx;
    if (nname > UINT16_MAX || nvalue > UINT32_MAX)
        return 0; /* cannot be framed; no stat is that long */
    return bin_compose(be->out, be->r, NULL, 0, name, (uint16_t)nname, value, (uint32_t)nvalue);
}

struct stats_emit bin_stat_emitter(struct bin_stat_emitter *be)
{
    return (struct stats_emit){.fn = bin_stat_emit_row, .ctx = be};
}

static bool bin_stat_has_prefix(const char *s, size_t n, const char *prefix)
{
    size_t np = strlen(prefix);
    return n >= np && memcmp(s, prefix, np) == 0;
}

static bool bin_stat_is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(s, word, n) == 0;
}

const char *bin_stat_group(const char *key, size_t n)
{
    if (n == 0)
        return "";
    if (bin_stat_has_prefix(key, n, "reset"))
        return "reset";
    if (bin_stat_has_prefix(key, n, "settings"))
        return "settings";
    if (bin_stat_has_prefix(key, n, "detail")) {
        if (bin_stat_has_prefix(key + 6, n - 6, " dump"))
            return "detail dump";
        if (bin_stat_has_prefix(key + 6, n - 6, " on"))
            return "detail on";
        if (bin_stat_has_prefix(key + 6, n - 6, " off"))
            return "detail off";
        return NULL;
    }
    static const char *const exact[] = {"items", "slabs", "sizes", "nodelay"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (bin_stat_is(key, n, exact[i]))
            return exact[i];
    return NULL;
}

static enum proto_status bin_stat_error(struct session *s, const struct bin_header *h,
                                        uint16_t status)
{
    int rc = bin_reply_error(s, h->opcode, h->opaque, status);
    return rc == 0 ? PROTO_OK : PROTO_CLOSE;
}

enum proto_status bin_stat(struct session *s, const struct bin_header *h, const char *key)
{
    const char *group = bin_stat_group(key, h->keylen);
    if (!group)
        return bin_stat_error(s, h, BIN_STATUS_KEY_ENOENT);
    struct bin_resp r = {.opcode = h->opcode, .status = BIN_STATUS_OK, .opaque = h->opaque};
    struct bin_stat_emitter be = {.out = &s->reply, .r = &r};
    struct server_stats_out out = {.emit = bin_stat_emitter(&be), .raw = NULL};
    struct reply_mark mark;
    reply_get_mark(&s->reply, &mark);
    switch (s->ops->stats(s->ops->ctx, group, strlen(group), &out)) {
    case SERVER_STATS_END:
    case SERVER_STATS_RESET:
    case SERVER_STATS_OK:
    case SERVER_STATS_DONE:
        break;
    case SERVER_STATS_UNKNOWN:
    case SERVER_STATS_REFUSED:
        reply_rollback(&s->reply, &mark);
        return bin_stat_error(s, h, BIN_STATUS_KEY_ENOENT);
    case SERVER_STATS_NOMEM: {
        reply_rollback(&s->reply, &mark);
        struct bin_resp e = {.opcode = h->opcode, .status = BIN_STATUS_ENOMEM,
                             .opaque = h->opaque};
        static const char oom[] = "Out of memory generating stats";
        int rc = bin_reply(s, &e, NULL, 0, NULL, 0, oom, sizeof oom - 1);
        return rc == 0 ? PROTO_OK : PROTO_CLOSE;
    }
    }
    /* An empty packet ends the list (memcached logs none of these at -vv). */
    if (bin_compose(&s->reply, &r, NULL, 0, NULL, 0, NULL, 0) != 0)
        return PROTO_CLOSE;
    return PROTO_OK;
}
