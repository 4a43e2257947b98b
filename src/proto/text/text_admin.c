/* SPDX-License-Identifier: BSD-3-Clause */
/* flush_all, version, verbosity, shutdown, cache_memlimit, stats, debugtime. */
#include <string.h>

#include "base/clock.h"
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "stats/stats.h"
#include "stats/stats_emit.h"
#include "store/store.h"

#define TEXT_VERSION "1.6.45"

/* flush_all's request, read from its line (no session, no store). */
struct text_flush_req {
    bool noreply;
    int32_t delay; /* seconds as sent; zero or negative: now */
};

enum text_flush_parsed {
    TEXT_FLUSH_OK,
    TEXT_FLUSH_BAD_DELAY, /* said after the count and the -F check, as memcached */
};

/* memcached 1.6.45 reads the delay from the first argument and noreply from
 * the last, and ignores any between (1.6.18 answered ERROR to them). */
static enum text_flush_parsed text_flush_parse(const struct text_line *l, struct text_flush_req *r)
{
    r->noreply = text_line_noreply(l);
    r->delay = 0;
    if (l->ntok != (r->noreply ? 2u : 1u) && !text_tok_i32(&l->tok[1], &r->delay))
        return TEXT_FLUSH_BAD_DELAY;
    return TEXT_FLUSH_OK;
}

void text_cmd_flush_all(struct session *s, const struct text_line *l)
{
    struct text_flush_req r;
    enum text_flush_parsed p = text_flush_parse(l, &r);
    text_of(s)->noreply = r.noreply;
    STAT_INC(s->stats, cmd_flush); /* counted even when refused, as memcached */
    if (!s->opt->flush_enabled) {
        TEXT_OUT(s, "CLIENT_ERROR flush_all not allowed");
        return;
    }
    if (p == TEXT_FLUSH_BAD_DELAY) {
        TEXT_OUT(s, "CLIENT_ERROR invalid exptime argument");
        return;
    }
    /* A delay uses exptime rules; zero or negative means now. */
    store_flush(store_ctx_store(s->store), r.delay > 0 ? clock_exptime(r.delay) : clock_now());
    TEXT_OUT(s, "OK");
}

void text_cmd_version(struct session *s, const struct text_line *l)
{
    (void)l;
    TEXT_OUT(s, "VERSION " TEXT_VERSION);
}

void text_cmd_verbosity(struct session *s, const struct text_line *l)
{
    text_of(s)->noreply = text_line_noreply(l);
    uint32_t level;
    if (l->ntok < 2 || !text_tok_u32(&l->tok[1], &level)) {
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return;
    }
    s->ops->set_verbosity(s->ops->ctx, level);
    TEXT_OUT(s, "OK");
}

/* A last word `noreply` silences the refusals (1.6.45), as for slabs. */
void text_cmd_shutdown(struct session *s, const struct text_line *l)
{
    text_of(s)->noreply = text_line_noreply(l);
    if (!s->opt->shutdown_command) {
        TEXT_OUT(s, "SERVER_ERROR: shutdown not enabled");
        return;
    }
    if (l->ntok == 1) {
        s->ops->shutdown(s->ops->ctx, false);
        s->close_why = SESSION_CLOSE_SHUTDOWN;
        text_of(s)->closing = true;
    } else if (l->ntok == 2 && TEXT_TOK_IS(&l->tok[1], "graceful")) {
        s->ops->shutdown(s->ops->ctx, true);
        s->close_why = SESSION_CLOSE_SHUTDOWN;
        text_of(s)->closing = true;
    } else {
        TEXT_OUT(s, "CLIENT_ERROR invalid shutdown mode");
    }
}

/* As flush_all: 1.6.45 reads the size from the first argument and noreply
 * from the last, ignoring any between. */
void text_cmd_memlimit(struct session *s, const struct text_line *l)
{
    if (l->ntok < 2) {
        TEXT_OUT(s, "ERROR");
        return;
    }
    text_of(s)->noreply = text_line_noreply(l);
    uint32_t mb;
    if (!text_tok_u32(&l->tok[1], &mb))
        TEXT_OUT(s, "ERROR");
    else if (mb < 8)
        TEXT_OUT(s, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
    else if (mb > 1000000000)
        TEXT_OUT(s, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes");
    else if (s->ops->set_memlimit(s->ops->ctx, mb) != 0)
        TEXT_OUT(s, "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust");
    else
        TEXT_OUT(s, "OK");
}

/* memcached has 64 slab classes; ids at or above that are refused. */
#define TEXT_MAX_CLASSES 64

void text_cmd_stats(struct session *s, const struct text_line *l)
{
    const char *args = "";
    size_t nargs = 0;
    if (l->ntok > 1) {
        args = l->tok[1].s;
        nargs = (size_t)(l->raw + l->len - args);
        while (nargs > 0 && args[nargs - 1] == ' ')
            nargs--;
        const struct text_token *sub = &l->tok[1];
        if (TEXT_TOK_IS(sub, "detail")) {
            if (!s->opt->dump_enabled) {
                TEXT_OUT(s, "CLIENT_ERROR stats detail not allowed");
                return;
            }
            if (l->ntok < 3 || !(TEXT_TOK_IS(&l->tok[2], "on") || TEXT_TOK_IS(&l->tok[2], "off") ||
                                 TEXT_TOK_IS(&l->tok[2], "dump"))) {
                TEXT_OUT(s, "CLIENT_ERROR usage: stats detail on|off|dump");
                return;
            }
        } else if (TEXT_TOK_IS(sub, "cachedump")) {
            uint32_t id, limit;
            if (!s->opt->dump_enabled) {
                TEXT_OUT(s, "CLIENT_ERROR stats cachedump not allowed");
                return;
            }
            if (l->ntok < 4) {
                TEXT_OUT(s, "CLIENT_ERROR bad command line");
                return;
            }
            if (!text_tok_u32(&l->tok[2], &id) || !text_tok_u32(&l->tok[3], &limit)) {
                TEXT_OUT(s, "CLIENT_ERROR bad command line format");
                return;
            }
            if (id >= TEXT_MAX_CLASSES) {
                TEXT_OUT(s, "CLIENT_ERROR Illegal slab id");
                return;
            }
        }
    }
    struct reply_mark mark;
    reply_get_mark(&s->reply, &mark);
    struct server_stats_out out = {.emit = stats_emit_text(&s->reply), .raw = &s->reply};
    switch (s->ops->stats(s->ops->ctx, args, nargs, &out)) {
    /* written whatever noreply said, as the rows before them */
    case SERVER_STATS_END:
        TEXT_OUT_ALWAYS(s, "END");
        return;
    case SERVER_STATS_RESET:
        TEXT_OUT_ALWAYS(s, "RESET");
        return;
    case SERVER_STATS_OK:
        TEXT_OUT_ALWAYS(s, "OK");
        return;
    case SERVER_STATS_DONE:
        return;
    case SERVER_STATS_REFUSED:
        reply_rollback(&s->reply, &mark);
        text_out_always(s, out.msg, strlen(out.msg));
        text_out_always(s, "\r\n", 2);
        return;
    case SERVER_STATS_UNKNOWN:
    case SERVER_STATS_NOMEM:
        break;
    }
    reply_rollback(&s->reply, &mark);
    TEXT_OUT(s, "ERROR");
}

#ifdef NODELAY_DEBUG
void text_cmd_debugtime(struct session *s, const struct text_line *l)
{
    if (l->ntok < 2) {
        TEXT_OUT(s, "ERROR");
        return;
    }
    int64_t delta;
    if (TEXT_TOK_IS(&l->tok[1], "p")) {
        clock_debug_pause(true);
    } else if (TEXT_TOK_IS(&l->tok[1], "r")) {
        clock_debug_pause(false);
    } else if (!text_parse_i64(&l->tok[1], &delta)) {
        TEXT_OUT(s, "ERROR");
        return;
    } else if (delta > 0) {
        /* Our clock only moves forward: a negative step would break the
         * ordering the store relies on. */
        clock_debug_advance(delta > UINT32_MAX ? UINT32_MAX : (uint32_t)delta);
    }
    TEXT_OUT(s, "OK");
}
#endif
