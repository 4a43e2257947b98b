/* SPDX-License-Identifier: BSD-3-Clause */
/* What the text protocol's files share among themselves (not an interface
 * for the rest of the server: see text.h for that).
 *
 *   text.c          framing: lines, dispatch, -R budget (the tokenizer and
 *                   the value receiver: proto/line/)
 *   text_ahead.c    a read's batch: lines tokenized once, keys prefetched
 *   text_num.c      memcached's number parsing rules, integer formatting
 *   text_reply.c    reply helpers that honour noreply
 *   text_storage.c  set add replace append prepend cas (their parse and
 *                   reply line: text_storage_req.h)
 *   text_get*.c     get gets gat gats (parse, lookups, replies:
 *                   text_get_internal.h)
 *   text_onekey.c   delete incr decr touch (their parse and reply lines:
 *                   text_onekey_req.h)
 *   text_admin.c    flush_all version verbosity quit shutdown cache_memlimit
 *                   stats debugtime
 *   text_compat.c   memcached commands our store has no use for (slabs, lru,
 *                   lru_crawler crawl/...), refresh_certs
 *   text_extstore.c extstore (the flash tier's run-time tuning)
 *   text_watch.c    watch (the streams: watch/)
 *   text_dump.c     lru_crawler metadump / mgdump
 *   text_auth.c     -Y ascii authentication
 *   text_flash.c    the keys a request probes before it waits for flash
 */
#ifndef NODELAY_PROTO_TEXT_INTERNAL_H
#define NODELAY_PROTO_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/text/text.h"
#include "base/num.h"
#include "settings/settings_run.h"
#include "store/store_flash.h"

struct session;

/* memcached's limit for a line that is not a multiget. */
#define TEXT_LINE_MAX 2048
/* Longest number we print: 2^64-1 has 20 digits. */
#define TEXT_U64_MAX_DIGITS 20

/* ---- numbers over a token (src/base/num.h) ----
 * 1.6.45 reads a storage command's flags and exptime with its permissive
 * safe_strto* rules (text_parse_*) and every other number (lengths, cas
 * unique, deltas, touch/gat/flush_all times, admin arguments) with its
 * strict token rules (text_tok_*). */

static inline bool text_parse_u64(const struct text_token *t, uint64_t *out)
{
    return num_safe_u64(t->s, t->len, out);
}
static inline bool text_parse_u32(const struct text_token *t, uint32_t *out)
{
    return num_safe_u32(t->s, t->len, out);
}
static inline bool text_parse_i32(const struct text_token *t, int32_t *out)
{
    return num_safe_i32(t->s, t->len, out);
}
static inline bool text_parse_i64(const struct text_token *t, int64_t *out)
{
    return num_safe_i64(t->s, t->len, out);
}
static inline bool text_tok_u64(const struct text_token *t, uint64_t *out)
{
    return num_tok_u64(t->s, t->len, out);
}
static inline bool text_tok_u32(const struct text_token *t, uint32_t *out)
{
    return num_tok_u32(t->s, t->len, out);
}
static inline bool text_tok_i32(const struct text_token *t, int32_t *out)
{
    return num_tok_i32(t->s, t->len, out);
}
static inline bool text_tok_double(const struct text_token *t, double *out)
{
    return num_tok_double(t->s, t->len, out);
}

/* "00" .. "99" (text_num.c): two digits a division, from the end. */
extern const char text_digit_pairs[201];
/* text_u64toa of 10,000 and more. */
char *text_u64toa_long(uint64_t v, char *p);
/* Write v in decimal at p; returns the end. Inline below 10,000: a hit
 * prints its flags and its length, mostly short, and the call was a
 * visible share of it. */
static inline char *text_u64toa(uint64_t v, char *p)
{
    if (v < 10) {
        *p = (char)('0' + v);
        return p + 1;
    }
    if (v >= 10000)
        return text_u64toa_long(v, p);
    /* one 32-bit division, no digit count */
    unsigned x = (unsigned)v, hi = x / 100, lo = x % 100;
    if (!hi) {
        memcpy(p, text_digit_pairs + lo * 2, 2);
        return p + 2;
    }
    if (hi < 10)
        *p++ = (char)('0' + hi);
    else {
        memcpy(p, text_digit_pairs + hi * 2, 2);
        p += 2;
    }
    memcpy(p, text_digit_pairs + lo * 2, 2);
    return p + 2;
}

static inline bool text_tok_eq(const struct text_token *t, const char *lit, size_t n)
{
    /* memcmp of a constant length: a load or two and a compare, where the
     * loop was a byte at a time (every request's command is looked up so) */
    return t->len == n && memcmp(t->s, lit, n) == 0;
}
#define TEXT_TOK_IS(t, lit) text_tok_eq((t), lit, sizeof(lit) - 1)

/* `stats detail on|off` flips this at run time from another thread. */
#define TEXT_DETAIL_ON(s) SETTINGS_RUN_GET((s)->run, detail_enabled)

/* ---- replies (text_reply.c) ---- */

/* Append bytes unless the command said noreply. An allocation failure marks
 * the connection for closing (nothing else could be promised to the client). */
void text_out(struct session *s, const char *str, size_t len);
#define TEXT_OUT(s, lit) text_out((s), lit "\r\n", sizeof(lit "\r\n") - 1)
/* Append regardless of noreply (multi-line replies that noreply never covers). */
void text_out_always(struct session *s, const char *str, size_t len);
#define TEXT_OUT_ALWAYS(s, lit) text_out_always((s), lit "\r\n", sizeof(lit "\r\n") - 1)
/* A decimal number and "\r\n" (incr/decr). */
void text_out_u64(struct session *s, uint64_t v);


/* ---- commands ---- */

void text_cmd_storage(struct session *s, const struct text_line *l, enum store_mode mode);
void text_cmd_get(struct session *s, const struct text_line *l, bool want_cas, bool touch);
void text_cmd_touch(struct session *s, const struct text_line *l);
void text_cmd_delete(struct session *s, const struct text_line *l);
void text_cmd_arith(struct session *s, const struct text_line *l, bool incr);
void text_cmd_flush_all(struct session *s, const struct text_line *l);
void text_cmd_version(struct session *s, const struct text_line *l);
void text_cmd_verbosity(struct session *s, const struct text_line *l);
void text_cmd_shutdown(struct session *s, const struct text_line *l);
void text_cmd_memlimit(struct session *s, const struct text_line *l);
void text_cmd_stats(struct session *s, const struct text_line *l);
void text_cmd_debugtime(struct session *s, const struct text_line *l);
void text_cmd_slabs(struct session *s, const struct text_line *l);
void text_cmd_lru(struct session *s, const struct text_line *l);
void text_cmd_extstore(struct session *s, const struct text_line *l);
void text_cmd_lru_crawler(struct session *s, const struct text_line *l);
void text_cmd_watch(struct session *s, const struct text_line *l);
void text_cmd_refresh_certs(struct session *s, const struct text_line *l);
void text_cmd_dump(struct session *s, const struct text_line *l, bool mgdump);
/* Go on with a paused multiget (its line again) or dump. */
void text_get_resume(struct session *s, const struct text_line *l);
/* Lookups prefetched together: enough misses in flight to hide memory
 * latency (a core keeps 10-20 outstanding), few enough that the first
 * lines are still in cache when the last lookup runs. */
#define TEXT_PREFETCH_BATCH 16

/* What text_prefetch_ahead found of the request lines it looked at, so
 * text_process does not scan them again: where each line ends and its
 * tokens. A record describes the bytes at its offset, whatever path the
 * parse took there. */
struct text_ahead_line {
    size_t start; /* the line's first byte, an offset in the read */
    size_t nl;    /* its '\n' */
    struct text_line line;
};
struct text_ahead {
    uint32_t n, next; /* lines recorded; the first not yet passed */
    struct text_ahead_line line[TEXT_PREFETCH_BATCH];
};

/* The record of the line at pos, if any; records before it are passed. */
static inline const struct text_ahead_line *text_ahead_at(struct text_ahead *a, size_t pos)
{
    /* in locals: a is in memory, and each a->next was a load and a store */
    uint32_t i = a->next, n = a->n;
    const struct text_ahead_line *r = &a->line[i];
    while (i < n && r->start < pos) {
        i++;
        r++;
    }
    bool at = i < n && r->start == pos;
    a->next = at ? i + 1 : i;
    return at ? r : NULL;
}

/* Called before the line at buf[pos..]: when it is a lookup (get, gets,
 * gat, gats, mg) or a storage command, starts loading the index buckets of
 * its key and of the keys of such requests buffered after it (a storage
 * command's value stepped over), in *run, records those lines (and the
 * one the batch stops at) in *ahead, and returns the offset past the last request so covered; else returns
 * pos. The caller calls store_prefetch_next(run) before each of those
 * requests, which loads the items a few requests ahead (store.h). Changes
 * nothing but caches and *ahead. */
size_t text_prefetch_ahead(struct session *s, struct store_prefetch_run *run,
                           struct text_ahead *ahead, const char *buf, size_t pos, size_t len);
void text_dump_resume(struct session *s);

/* Flash (proto_flash.h): probe the keys the request on line l needs
 * (resuming: the rest of a paused multiget's); WAIT when a read went out.
 * Only while s->flash is set. */
enum store_probe text_flash_probe(struct session *s, const struct text_line *l, bool resuming);
/* The request before buf[pos..len) waits: probe the keys of the gets and
 * mg that follow it, up to the first other request or incomplete line, so
 * that their reads go out with its own (a pipeline of single-key reads
 * is a multiget too). */
void text_flash_ahead(struct session *s, const char *buf, size_t pos, size_t len);

/* -Y: handle one line from a connection that has not authenticated yet. */
void text_auth_line(struct session *s, const struct text_line *l);
void text_auth_release(struct session *s);

#endif
