/* SPDX-License-Identifier: BSD-3-Clause */
/* Parsing a meta command line into a struct meta_req. Pure: no store, no
 * reply queue, so every flag and every error string is unit-testable.
 *
 * Checks run in memcached's order, because with several faults in one line
 * the first one found decides the error string the client sees. */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "base/num.h"
#include "proto/meta/meta_internal.h"
#include "proto/line/line.h"

static const char ERR_FORMAT[] = "CLIENT_ERROR bad command line format";
static const char ERR_BAD_TOKEN[] = "CLIENT_ERROR bad token in command line format";
static const char ERR_DUPLICATE[] = "CLIENT_ERROR duplicate flag";
static const char ERR_INVALID[] = "CLIENT_ERROR invalid flag";
static const char ERR_INVALID_OR_DUP[] = "CLIENT_ERROR invalid or duplicate flag";
static const char ERR_TOO_LONG[] = "CLIENT_ERROR options flags are too long";
static const char ERR_OPAQUE[] = "CLIENT_ERROR opaque token too long";
static const char ERR_DECODE[] = "CLIENT_ERROR error decoding key";
static const char ERR_INITIAL[] = "CLIENT_ERROR invalid numeric initial value";
static const char ERR_DELTA[] = "CLIENT_ERROR invalid numeric delta value";
static const char ERR_MODE_MS[] = "CLIENT_ERROR invalid mode for ms M token";
static const char ERR_MODE_MA[] = "CLIENT_ERROR invalid mode for ma M token";

/* Flag arguments use memcached's strict token numbers (num.h num_tok_*):
 * 1.6.45 refuses T+5, C-0 and F4294967296 alike. */
static bool parse_i32(const char *s, size_t n, int64_t *out)
{
    int32_t v;
    if (!num_tok_i32(s, n, &v))
        return false;
    *out = v;
    return true;
}

/* Walk the flag tokens from `first` on (memcached's _meta_flag_preparse).
 * A duplicate or unknown flag stops at once; a bad token is remembered and
 * the walk goes on, so the last bad token names the error. */
static bool meta_parse_flags(const struct text_line *line, size_t first, struct meta_req *req,
                             const char **err)
{
    bool bad = false;
    for (size_t i = first; i < line->ntok; i++) {
        const struct text_token *t = &line->tok[i];
        unsigned char f = (unsigned char)t->s[0];
        const char *arg = t->s + 1;
        size_t narg = t->len - 1;
        if (f >= 127 || meta_has(req, f)) {
            *err = ERR_DUPLICATE;
            return false;
        }
        req->seen[f >> 6] |= (uint64_t)1 << (f & 63);
        if (req->norder < META_FLAGS_MAX)
            req->order[req->norder++] = (char)f;
        switch (f) {
        case 'b': {
            size_t n = meta_base64_decode(req->key, req->nkey, (unsigned char *)req->keybuf,
                                          sizeof req->keybuf);
            if (n == 0) {
                *err = ERR_DECODE;
                bad = true;
            } else {
                req->key = req->keybuf;
                req->nkey = n;
            }
            req->base64_key = true;
            break;
        }
        case 'N':
            if (!parse_i32(arg, narg, &req->vivify_ttl)) {
                *err = ERR_BAD_TOKEN;
                bad = true;
            }
            req->has_vivify = true;
            break;
        case 'T':
            if (!parse_i32(arg, narg, &req->ttl)) {
                *err = ERR_BAD_TOKEN;
                bad = true;
            }
            req->has_ttl = true;
            break;
        case 'R':
            if (!parse_i32(arg, narg, &req->recache_ttl)) {
                *err = ERR_BAD_TOKEN;
                bad = true;
            }
            req->has_recache = true;
            break;
        case 'O':
            req->opaque = t->s;
            req->nopaque = t->len;
            break;
        case 'P': /* proxy hints: accepted and ignored */
        case 'L':
        case 'k':
        case 's':
        case 't':
        case 'c':
        case 'f':
        case 'l':
        case 'h':
            break;
        case 'v':
            req->value = true;
            break;
        case 'u':
            req->no_update = true;
            break;
        case 'q':
            req->quiet = true;
            break;
        case 'x':
            req->drop_value = true;
            break;
        case 'I':
            req->invalidate = true;
            break;
        case 'F':
            /* memcached leaves the error string as it was here */
            if (!num_tok_u32(arg, narg, &req->client_flags))
                bad = true;
            break;
        case 'C':
            if (!num_tok_u64(arg, narg, &req->cas)) {
                *err = ERR_BAD_TOKEN;
                bad = true;
            }
            req->has_cas = true;
            break;
        case 'E':
            if (!num_tok_u64(arg, narg, &req->cas_new)) {
                *err = ERR_BAD_TOKEN;
                bad = true;
            }
            req->has_cas_new = true;
            break;
        case 'M':
            /* 1.6.45 reads the byte after M and ignores the rest; a bare M
             * gives a mode no command accepts */
            req->mode = narg ? arg[0] : ' ';
            break;
        case 'J':
            if (!num_tok_u64(arg, narg, &req->initial)) {
                *err = ERR_INITIAL;
                bad = true;
            }
            break;
        case 'D':
            if (!num_tok_u64(arg, narg, &req->delta)) {
                *err = ERR_DELTA;
                bad = true;
            }
            break;
        default:
            *err = ERR_INVALID;
            return false;
        }
    }
    return !bad;
}

static enum meta_cmd meta_cmd_of(const struct text_line *line)
{
    switch (line->tok[0].s[1]) {
    case 'g': return META_MG;
    case 's': return META_MS;
    case 'd': return META_MD;
    case 'a': return META_MA;
    case 'e': return META_ME;
    default: return META_MN;
    }
}

/* 1.6.45's tokenizer takes a flag token only if its first byte is a digit
 * or in 'A'..'z'; any other byte fails the whole line before a flag is
 * looked at (CLIENT_ERROR bad command line format, and an ms value is then
 * not swallowed). Like its tokenizer, we look no further than the tokens
 * we split (a line that long fails as "too long" anyway). */
static bool meta_flag_bytes_ok(const struct text_line *line, size_t first)
{
    for (size_t i = first; i < line->ntok; i++) {
        unsigned char c = (unsigned char)line->tok[i].s[0];
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'z')))
            return false;
    }
    return true;
}

static enum meta_parse_status meta_parse_me(const struct text_line *line, struct meta_req *req,
                                            const char **err)
{
    /* 1.6.45's me takes no flags, but its tokenizer still checks them; a
     * `b` right after the key decodes it only when more tokens follow
     * (`me <key> b` looks the key up as given, `me <key> b x` decodes) */
    if (line->ntok < 2 || !meta_flag_bytes_ok(line, 2) || line->tok[1].len > STORE_KEY_MAX) {
        *err = ERR_FORMAT;
        return META_PARSE_ERROR;
    }
    req->key = line->tok[1].s;
    req->nkey = line->tok[1].len;
    if (line->ntok >= 4 && line->tok[2].len == 1 && line->tok[2].s[0] == 'b') {
        size_t n = meta_base64_decode(req->key, req->nkey, (unsigned char *)req->keybuf,
                                      sizeof req->keybuf);
        if (n == 0) {
            *err = ERR_FORMAT;
            return META_PARSE_ERROR;
        }
        req->key = req->keybuf;
        req->nkey = n;
        req->base64_key = true;
    }
    return META_PARSE_OK;
}

static bool meta_mode_ok(enum meta_cmd cmd, char mode)
{
    if (mode == 0)
        return true;
    if (cmd == META_MS)
        return strchr("EAPRS", mode) != NULL;
    if (cmd == META_MA)
        return strchr("ID+-", mode) != NULL;
    return true;
}

enum meta_parse_status meta_parse(const struct text_line *line, struct meta_req *req,
                                  const char **err)
{
    memset(req, 0, offsetof(struct meta_req, keybuf));
    req->cmd = meta_cmd_of(line);
    req->delta = 1;
    *err = NULL;

    if (req->cmd == META_MN)
        return META_PARSE_OK;
    if (req->cmd == META_ME)
        return meta_parse_me(line, req, err);

    size_t first = 2;
    enum meta_parse_status fail = META_PARSE_ERROR;
    if (req->cmd == META_MS) {
        int64_t len;
        if (line->ntok < 3 || !parse_i32(line->tok[2].s, line->tok[2].len, &len) || len < 0 ||
            len > INT_MAX - 2 || !meta_flag_bytes_ok(line, 3)) {
            *err = ERR_FORMAT;
            return META_PARSE_ERROR;
        }
        req->datalen = (uint32_t)len;
        first = 3;
        /* the value's length is known: from here on an error swallows it */
        fail = META_PARSE_ERROR_SWALLOW;
    } else if (line->ntok < 2 || !meta_flag_bytes_ok(line, 2)) {
        *err = ERR_FORMAT;
        return META_PARSE_ERROR;
    }

    req->key = line->tok[1].s;
    req->nkey = line->tok[1].len;
    bool ok = true;
    if (req->nkey > STORE_KEY_MAX) {
        *err = ERR_FORMAT;
        ok = false;
    } else if (line->ntok > META_TOKENS_MAX) {
        /* memcached counts every token of the line, command and key (and
         * ms's length) included: 18 flags, 17 for ms */
        *err = ERR_TOO_LONG;
        ok = false;
    } else if (!meta_parse_flags(line, first, req, err)) {
        if (*err == NULL)
            *err = ERR_FORMAT; /* an F that did not parse names no error */
        ok = false;
    }
    if (!ok) {
        /* 1.6.45's ma says one thing for every fault found so far */
        if (req->cmd == META_MA)
            *err = ERR_INVALID_OR_DUP;
        return fail;
    }
    if (!meta_mode_ok(req->cmd, req->mode)) {
        *err = req->cmd == META_MS ? ERR_MODE_MS : ERR_MODE_MA;
        return fail;
    }
    if (req->nopaque > META_OPAQUE_MAX) {
        *err = ERR_OPAQUE;
        return fail;
    }
    return META_PARSE_OK;
}
