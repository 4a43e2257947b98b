/* SPDX-License-Identifier: BSD-3-Clause */
/* The text protocol's framing: split the read bytes into lines, run each
 * line's command, and receive values straight into item memory.
 *
 * Lines end in "\n" (a "\r" before it is dropped). A line that has no
 * newline within TEXT_LINE_MAX bytes closes the connection, unless it is a
 * multiget, which may be any length (memcached's rule). A value announced
 * by a command is received into the place text_expect_value() was given;
 * when it is not all buffered yet, s->sink lets the connection read the
 * rest of it directly there (no copy through the read buffer).
 */
#include <stdint.h>
#include <string.h>

#include "base/log.h"
#include "stats/stats_hist.h"
#include "proto/meta/meta.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "stats/stats.h"
#include "store/store_compat.h"

/* A command memcached does not know. A request line of a web client
 * ("GET / HTTP/1.1") closes the connection instead of answering ERROR;
 * a line ending in `noreply` gets no ERROR (1.6.45: `foo noreply`, and
 * `noreply` alone, are silent). */
static void text_unknown(struct session *s, const struct text_line *l)
{
    struct text_token last = text_line_last(l);
    text_of(s)->noreply = last.len == 7 && memcmp(last.s, "noreply", 7) == 0;
    if (last.len >= 5 && memcmp(last.s, "HTTP/", 5) == 0) {
        text_of(s)->closing = true;
        return;
    }
    TEXT_OUT(s, "ERROR");
}

/* memcached 1.6.45 answers a known command with too few arguments with
 * CLIENT_ERROR (1.6.18 said ERROR). */
static bool text_want(struct session *s, const struct text_line *l, size_t min)
{
    if (l->ntok >= min)
        return true;
    TEXT_OUT(s, "CLIENT_ERROR bad command line format");
    return false;
}

/* The admin commands 1.6.45 still finds by its old tokenizer, which skips
 * the spaces a line starts with (` flush_all` is flush_all); its request
 * parser finds the others, ` get k` and ` stats` among them, by the bytes
 * before the first space. */
static bool text_spaced_ok(const struct text_line *l)
{
    if (l->ntok == 0)
        return false;
    const struct text_token *c = &l->tok[0];
    return TEXT_TOK_IS(c, "flush_all") || TEXT_TOK_IS(c, "verbosity") ||
           TEXT_TOK_IS(c, "lru_crawler") || TEXT_TOK_IS(c, "slabs") || TEXT_TOK_IS(c, "extstore") ||
           TEXT_TOK_IS(c, "cache_memlimit") || TEXT_TOK_IS(c, "lru") ||
           TEXT_TOK_IS(c, "shutdown") || TEXT_TOK_IS(c, "refresh_certs");
}

/* memcached 1.6.45's request parser looks at the bytes before tokens: a
 * request shorter than 4 bytes with its line end ("a\r\n", "mn\n") is
 * CLIENT_ERROR, and its command is what precedes the first space, so a line
 * that starts with a space names no command (an unknown one: ERROR, or
 * silence after `noreply`, or a close after `HTTP/...`), but for the
 * commands of text_spaced_ok. */
static bool text_framing_ok(struct session *s, const struct text_line *l, size_t whole)
{
    text_of(s)->noreply = false;
    if (whole < 4) {
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return false;
    }
    if (l->len > 0 && l->raw[0] == ' ' && !text_spaced_ok(l)) {
        text_unknown(s, l);
        return false;
    }
    return true;
}

#define CMD_IS(c, lit) TEXT_TOK_IS((c), lit)

static inline __attribute__((always_inline)) void text_dispatch(struct session *s,
                                                                const struct text_line *l)
{
    text_of(s)->noreply = false;
    text_of(s)->reply_unlogged = false;
    if (l->ntok == 0) {
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        return;
    }
    const struct text_token *c = &l->tok[0];
    switch (c->len) {
    case 2:
        if (meta_is_command(l)) {
            meta_command(s, l);
            return;
        }
        break;
    case 3:
        if (CMD_IS(c, "get")) {
            if (text_want(s, l, 2))
                text_cmd_get(s, l, false, false);
            return;
        }
        if (CMD_IS(c, "set")) {
            text_cmd_storage(s, l, STORE_MODE_SET);
            return;
        }
        if (CMD_IS(c, "add")) {
            text_cmd_storage(s, l, STORE_MODE_ADD);
            return;
        }
        if (CMD_IS(c, "cas")) {
            text_cmd_storage(s, l, STORE_MODE_CAS);
            return;
        }
        if (CMD_IS(c, "gat")) {
            if (text_want(s, l, 3))
                text_cmd_get(s, l, false, true);
            return;
        }
        if (CMD_IS(c, "lru")) {
            text_cmd_lru(s, l);
            return;
        }
        break;
    case 4:
        if (CMD_IS(c, "gets")) {
            if (text_want(s, l, 2))
                text_cmd_get(s, l, true, false);
            return;
        }
        if (CMD_IS(c, "incr") || CMD_IS(c, "decr")) {
            if (text_want(s, l, 3))
                text_cmd_arith(s, l, c->s[0] == 'i');
            return;
        }
        if (CMD_IS(c, "gats")) {
            if (text_want(s, l, 3))
                text_cmd_get(s, l, true, true);
            return;
        }
        if (CMD_IS(c, "quit")) {
            s->close_why = SESSION_CLOSE_NORMAL;
            text_of(s)->closing = true;
            return;
        }
        break;
    case 5:
        if (CMD_IS(c, "touch")) {
            if (text_want(s, l, 3))
                text_cmd_touch(s, l);
            return;
        }
        if (CMD_IS(c, "stats")) {
            text_cmd_stats(s, l);
            return;
        }
        if (CMD_IS(c, "slabs")) {
            text_cmd_slabs(s, l);
            return;
        }
        if (CMD_IS(c, "watch")) {
            text_cmd_watch(s, l);
            return;
        }
        break;
    case 6:
        if (CMD_IS(c, "delete")) {
            if (text_want(s, l, 2))
                text_cmd_delete(s, l);
            return;
        }
        if (CMD_IS(c, "append")) {
            text_cmd_storage(s, l, STORE_MODE_APPEND);
            return;
        }
        break;
    case 7:
        if (CMD_IS(c, "replace")) {
            text_cmd_storage(s, l, STORE_MODE_REPLACE);
            return;
        }
        if (CMD_IS(c, "prepend")) {
            text_cmd_storage(s, l, STORE_MODE_PREPEND);
            return;
        }
        if (CMD_IS(c, "version")) {
            text_cmd_version(s, l);
            return;
        }
        break;
    case 8:
        if (CMD_IS(c, "shutdown")) {
            text_cmd_shutdown(s, l);
            return;
        }
        if (CMD_IS(c, "extstore")) {
            text_cmd_extstore(s, l);
            return;
        }
        break;
    case 9:
        if (CMD_IS(c, "flush_all")) {
            text_cmd_flush_all(s, l);
            return;
        }
        if (CMD_IS(c, "verbosity")) {
            text_cmd_verbosity(s, l);
            return;
        }
#ifdef NODELAY_DEBUG
        if (CMD_IS(c, "debugtime")) {
            text_cmd_debugtime(s, l);
            return;
        }
#endif
        break;
    case 11:
        if (CMD_IS(c, "lru_crawler")) {
            text_cmd_lru_crawler(s, l);
            return;
        }
        break;
    case 13:
        if (CMD_IS(c, "refresh_certs")) {
            text_cmd_refresh_certs(s, l);
            return;
        }
        break;
    case 14:
        if (CMD_IS(c, "cache_memlimit")) {
            text_cmd_memlimit(s, l);
            return;
        }
        break;
    }
    /* extstore exists only in extstore builds of memcached (Debian's is
     * not one); like a build without it we do not know it. */
    text_unknown(s, l);
}

void text_sink_filled(struct session *s, size_t n)
{
    text_value_sink_filled(s, &text_of(s)->value, n);
}

void text_tick(struct session *s)
{
    text_value_tick(s, &text_of(s)->value);
}

/* A line still without its newline past TEXT_LINE_MAX may go on only if it
 * is a multiget (memcached allows up to 100 leading spaces). */
static bool text_long_line_ok(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && buf[i] == ' ')
        i++;
    if (i > 100)
        return false;
    buf += i;
    len -= i;
    return (len >= 4 && (memcmp(buf, "get ", 4) == 0 || memcmp(buf, "gat ", 4) == 0)) ||
           (len >= 5 && (memcmp(buf, "gets ", 5) == 0 || memcmp(buf, "gats ", 5) == 0));
}

/* Service time (stats/stats_hist.h): recorded once the reply is queued, which
 * for a storage command is when its value has arrived and for a multiget
 * paused for the socket when its last key is done. */
static void text_timing_end(struct text_state *t)
{
    metrics_hist_record((enum metrics_family)t->timing_family, metrics_now_ns() - t->timing_start);
    t->timing_start = 0;
}

static void text_timing_begin(struct text_state *t, const struct text_line *l, uint64_t t0)
{
    t->timing_family = l->ntok ? metrics_family_of(l->tok[0].s, l->tok[0].len) : METRICS_OTHER;
    t->timing_start = t0;
    if (!t->value.receiving && t->cont.kind == TEXT_CONT_NONE)
        text_timing_end(t);
}

/* text_process, made twice: flash is a constant in each copy, so with no
 * flash tier a request runs no flash code at all (one test a call). */
static inline __attribute__((always_inline)) enum proto_status
text_run(struct session *s, const char *buf, size_t len, size_t *consumed, const bool flash)
{
    struct text_state *t = text_of(s);
    int budget = s->opt->reqs_per_event;
    int handled = 0;
    bool after_others = false; /* text_state.after_others */
    size_t pos = 0;
    size_t prefetched = 0; /* requests before this offset had their keys prefetched */
    /* Not cleared: start fills what next reads (and clearing its arrays
     * was a visible share of a short read's cost). */
    struct store_prefetch_run run;
    run.n = run.next = 0;
    struct text_ahead ahead;
    ahead.n = ahead.next = 0;
    enum proto_status st = PROTO_OK;

    while (!t->closing && !s->watcher) {
        if (t->value.receiving) {
            pos += text_value_receive(s, &t->value, buf + pos, len - pos);
            if (t->value.receiving)
                break;
            if (flash)
                session_flash_done(s);
            if (t->timing_start)
                text_timing_end(t);
            continue;
        }
        if (pos == len)
            break;
        bool resuming = t->cont.kind != TEXT_CONT_NONE;
        /* The batch found and tokenized this line already when it is the
         * next one it recorded (it ends on a line it cannot step past; a
         * value whose length lied may have made it record lines the parse
         * never starts at). */
        const struct text_ahead_line *rec = resuming ? NULL : text_ahead_at(&ahead, pos);
        if (!resuming && pos >= prefetched && !rec) {
            prefetched = text_prefetch_ahead(s, &run, &ahead, buf, pos, len);
            rec = text_ahead_at(&ahead, pos);
        } else if (!resuming && pos < prefetched) {
            store_prefetch_next(s->store, &run);
        }
        const char *nl = rec ? buf + rec->nl : memchr(buf + pos, '\n', len - pos);
        if (!nl) {
            if (len - pos > TEXT_LINE_MAX &&
                (!s->authenticated || !text_long_line_ok(buf + pos, len - pos)))
                t->closing = true;
            break;
        }
        if (!resuming && budget > 0 && handled >= budget) {
            st = PROTO_YIELD;
            break;
        }
        /* Owing more than the connection allows: the rest waits until the
         * queue drains, so one read cannot make us hold unbounded replies. */
        if (!resuming && reply_pending(&s->reply) > s->reply_allow) {
            st = PROTO_PAUSE;
            break;
        }
        size_t end = (size_t)(nl - buf);
        size_t next = end + 1;
        if (end > pos && buf[end - 1] == '\r')
            end--;
        struct text_line own;
        const struct text_line *lp = &own;
        if (rec)
            lp = &rec->line;
        else
            text_tokenize(&own, buf + pos, end - pos);
        size_t start = pos;
        size_t whole = next - pos; /* the request with its line end */
        /* Keys on flash are read before the request has any effect; it
         * stays unconsumed until they are in (PROTO_WAIT). */
        if (flash && (resuming || (s->authenticated && whole >= 4)) &&
            text_flash_probe(s, lp, resuming) == STORE_PROBE_WAIT) {
            text_flash_ahead(s, buf, next, len);
            st = PROTO_WAIT;
            break;
        }
        pos = next;
        uint64_t t0 = 0;
        t->avail = len - pos;
        if (resuming) {
            if (t->cont.kind == TEXT_CONT_GET)
                text_get_resume(s, lp);
            else
                text_dump_resume(s);
            if (t->timing_start && t->cont.kind == TEXT_CONT_NONE)
                text_timing_end(t);
        } else {
            log_verbose("<%d %.*s", s->cfd, (int)lp->len, lp->raw);
            if (metrics_timing())
                t0 = metrics_now_ns();
            t->after_others = after_others;
            if (!s->authenticated)
                text_auth_line(s, lp);
            else if (text_framing_ok(s, lp, whole))
                text_dispatch(s, lp);
            /* memcached sends what it owes at an mn */
            after_others = !(lp->ntok >= 1 && CMD_IS(&lp->tok[0], "mn"));
            if (t0)
                text_timing_begin(t, lp, t0);
        }
        handled++;
        if (t->cont.kind != TEXT_CONT_NONE && !t->closing) {
            pos = start; /* the line stays buffered until it is done */
            st = PROTO_PAUSE;
            break;
        }
        if (flash && !t->value.receiving)
            session_flash_done(s);
    }
    *consumed = pos;
    if (pos)
        t->hint.ntok = 0; /* it described the bytes at 0 */
    return t->closing ? PROTO_CLOSE : st;
}

enum proto_status text_process(struct session *s, const char *buf, size_t len, size_t *consumed)
{
    return s->flash ? text_run(s, buf, len, consumed, true)
                    : text_run(s, buf, len, consumed, false);
}

void text_state_release(struct session *s)
{
    struct text_state *t = text_of(s);
    text_value_abort(s, &t->value);
    t->cont.kind = TEXT_CONT_NONE;
    store_flash_scan_destroy(t->cont.scan);
    t->cont.scan = NULL;
    meta_state_release(s);
    text_auth_release(s);
}
