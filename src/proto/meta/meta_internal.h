/* SPDX-License-Identifier: BSD-3-Clause */
/* What the meta*.c files share among themselves and with their unit tests
 * (not an interface for the rest of the server: see meta.h for that).
 *
 *   meta.c          dispatch: a parsed request to its command
 *   meta_parse.c    text_line -> struct meta_req (pure: no store, no reply)
 *   meta_get.c ...  the commands, against the store
 *   meta_compose.c  reply lines, appended to the reply queue
 *   meta_base64.c   binary keys
 *
 * A header alone, beneath them all: its inline helpers call no meta file. */
#ifndef NODELAY_PROTO_META_INTERNAL_H
#define NODELAY_PROTO_META_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "proto/line/line.h"
#include "proto/meta/meta.h"
#include "proto/meta/meta_base64.h"
#include "store/store.h"

enum meta_cmd { META_MG, META_MS, META_MD, META_MA, META_MN, META_ME };

/* One parsed meta request. Pointers point into the text_line's buffer or
 * into keybuf (a base64-decoded key); valid while both live. */
struct meta_req {
    enum meta_cmd cmd;
    const char *key;
    size_t nkey;
    bool base64_key;          /* b */
    /* flags in request order (each token's first byte), for the echo */
    char order[META_FLAGS_MAX];
    size_t norder;
    const char *opaque;       /* O token including the 'O' */
    size_t nopaque;
    uint64_t seen[2];         /* bitmap of flag bytes present */
    bool quiet;               /* q */
    bool value;               /* v */
    bool no_update;           /* u */
    bool invalidate;          /* I */
    bool drop_value;          /* x */
    bool has_ttl;             /* T */
    int64_t ttl;
    bool has_vivify;          /* N */
    int64_t vivify_ttl;
    bool has_recache;         /* R */
    int64_t recache_ttl;
    bool has_cas;             /* C */
    uint64_t cas;
    bool has_cas_new;         /* E */
    uint64_t cas_new;
    uint32_t client_flags;    /* F */
    char mode;                /* M, 0 when absent */
    uint64_t delta;           /* D, default 1 */
    uint64_t initial;         /* J, default 0 */
    uint32_t datalen;         /* ms */
    char keybuf[STORE_KEY_MAX]; /* last: meta_parse leaves it uninitialised */
};

/* Outcome of meta_parse(). */
enum meta_parse_status {
    META_PARSE_OK,
    META_PARSE_ERROR,         /* *err is the error line; nothing to swallow */
    META_PARSE_ERROR_SWALLOW, /* ms: *err, and req->datalen bytes (+2) follow */
};

/* Parse a meta command line (tok[0] already known to be a meta command).
 * On error *err points at a static "CLIENT_ERROR ..." string, without CRLF,
 * byte-exact with memcached. */
enum meta_parse_status meta_parse(const struct text_line *line, struct meta_req *req,
                                  const char **err);

static inline bool meta_has(const struct meta_req *req, unsigned char flag)
{
    return flag < 128 && (req->seen[flag >> 6] >> (flag & 63)) & 1;
}

/* Convert a wire TTL with memcached's exptime rules. */
static inline rel_time_t meta_exptime(int64_t ttl)
{
    return clock_exptime(ttl);
}

/* The expiry the request's T and N flags before position `upto` leave, in
 * request order from `start` (N only on an item the request created):
 * what 1.6.45's `t` return flag shows (meta_get.c; mg and ma). */
rel_time_t meta_walk_exptime(const struct meta_req *req, size_t upto, rel_time_t start,
                             bool created);

/* ---- composing replies (meta_compose.c) ---- */

/* Append "<line>\r\n" (an error always goes out, whatever q says). */
void meta_reply_error(struct session *s, const char *line);

/* Line composition: a bounded buffer the reply line is built in. Start one
 * with `l.len = 0`, not an initialiser, which would zero all 1 KiB. */
struct meta_line {
    char buf[1024];
    size_t len;
};

void meta_line_str(struct meta_line *l, const char *s);
void meta_line_mem(struct meta_line *l, const void *p, size_t n);
void meta_line_u64(struct meta_line *l, uint64_t v);
void meta_line_i64(struct meta_line *l, int64_t v);
/* " <flag><u64>" */
void meta_line_flag_u64(struct meta_line *l, char flag, uint64_t v);
/* " k<key>" or " k<base64 key> b" */
void meta_line_key(struct meta_line *l, const char *key, size_t nkey, bool base64);
/* " O..." */
void meta_line_opaque(struct meta_line *l, const char *opaque, size_t nopaque);
/* The request's O and k flags, in request order (the echo of a reply that
 * has no item to describe: EN, NF, HD of md). */
void meta_line_echo(struct meta_line *l, const struct meta_req *req);
/* Append the line plus "\r\n" to the reply queue. */
void meta_line_send(struct session *s, struct meta_line *l);


/* The commands. */
void meta_get(struct session *s, const struct meta_req *req);
void meta_debug(struct session *s, const struct meta_req *req);
void meta_set(struct session *s, const struct meta_req *req);
void meta_delete(struct session *s, const struct meta_req *req);
void meta_arith(struct session *s, const struct meta_req *req);

#endif
