/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's meta commands (mg ms md ma mn me), framed by the text protocol:
 * text_process() hands every line whose command is a meta command to
 * meta_command().
 *
 * Inside, a request goes through three steps, each testable alone:
 *   meta_parse()      text_line -> struct meta_req (pure: no store, no reply)
 *   meta_<cmd>()      runs it against the store (meta_get.c, meta_set.c, ...)
 *   meta_compose_*()  appends the reply line to the reply queue
 * The declarations below the "internal" mark are shared by the meta*.c files
 * and the unit tests; nothing else should need them.
 */
#ifndef NODELAY_PROTO_META_H
#define NODELAY_PROTO_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct session;
struct text_line;
struct reply_queue;

/* memcached's limits: an opaque token (with its 'O') is at most 32 bytes; a
 * line has at most 20 tokens, so at most 18 flags (17 for ms). */
#define META_OPAQUE_MAX 32
#define META_TOKENS_MAX 20
#define META_FLAGS_MAX 18

/* What an ms keeps while its value arrives: what to store and what to echo. */
struct meta_state {
    bool active;
    bool quiet;
    bool base64_key;        /* echo the key base64-encoded, followed by " b" */
    bool cas_mode;          /* C given with set/replace: counts as a cas command */
    struct store_set_req req;
    uint32_t datalen;
    char key[STORE_KEY_MAX];
    uint8_t nkey;
    char opaque[META_OPAQUE_MAX]; /* the O token, 'O' included */
    uint8_t nopaque;
    char ret[META_FLAGS_MAX]; /* return flags (O k c s b) in request order */
    uint8_t nret;
};

/* True if the line's command (tok[0]) is a meta command. */
bool meta_is_command(const struct text_line *line);

/* Run one meta command. Replies go to s->reply. For ms it calls
 * text_expect_value() and finishes when the value has arrived. */
void meta_command(struct session *s, const struct text_line *line);

/* Release anything held by an unfinished ms. */
void meta_state_release(struct session *s);

/* ---- internal to the meta*.c files (and their unit tests) ---- */

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
rel_time_t meta_exptime(int64_t ttl);

/* text_expect_value() callback for the value of a rejected ms: it is read
 * past and dropped. */
void meta_swallow_done(struct session *s, bool chunk_ok);

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

/* base64 (RFC 4648 alphabet), as memcached uses for binary keys. encode
 * pads and returns the output length (out must hold 4 * ceil(n / 3)); decode
 * follows memcached's lenient rules (see meta_base64.c) and returns the
 * decoded length, or 0 when the input cannot be decoded or the output would
 * exceed outmax. */
size_t meta_base64_encode(const unsigned char *in, size_t n, char *out);
size_t meta_base64_decode(const char *in, size_t n, unsigned char *out, size_t outmax);

/* The commands. */
void meta_get(struct session *s, const struct meta_req *req);
void meta_debug(struct session *s, const struct meta_req *req);
void meta_set(struct session *s, const struct meta_req *req);
void meta_delete(struct session *s, const struct meta_req *req);
void meta_arith(struct session *s, const struct meta_req *req);

#endif
