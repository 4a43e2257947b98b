/* Parsing a meta command line into a struct meta_req. Pure: no store, no
 * reply queue, so every flag and every error string is unit-testable.
 *
 * Checks run in memcached's order, because with several faults in one line
 * the first one found decides the error string the client sees. */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "proto/meta/meta.h"
#include "proto/text/text.h"

static const char ERR_FORMAT[] = "CLIENT_ERROR bad command line format";
static const char ERR_BAD_TOKEN[] = "CLIENT_ERROR bad token in command line format";
static const char ERR_DUPLICATE[] = "CLIENT_ERROR duplicate flag";
static const char ERR_INVALID[] = "CLIENT_ERROR invalid flag";
static const char ERR_INVALID_OR_DUP[] = "CLIENT_ERROR invalid or duplicate flag";
static const char ERR_TOO_LONG[] = "CLIENT_ERROR options flags too long";
static const char ERR_TOO_LONG_MG[] = "CLIENT_ERROR options flags are too long";
static const char ERR_OPAQUE[] = "CLIENT_ERROR opaque token too long";
static const char ERR_DECODE[] = "CLIENT_ERROR error decoding key";
static const char ERR_M_LENGTH[] = "CLIENT_ERROR incorrect length for M token";
static const char ERR_INITIAL[] = "CLIENT_ERROR invalid numeric initial value";
static const char ERR_DELTA[] = "CLIENT_ERROR invalid numeric delta value";
static const char ERR_MODE_MS[] = "CLIENT_ERROR invalid mode for ms M token";
static const char ERR_MODE_MA[] = "CLIENT_ERROR invalid mode for ma M token";

/* An optionally signed decimal that fits in int32 (memcached's safe_strtol). */
static bool parse_i32(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i == n)
        return false;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
        if (v > (int64_t)INT32_MAX + 1)
            return false;
    }
    if (neg)
        v = -v;
    if (v > INT32_MAX || v < INT32_MIN)
        return false;
    *out = v;
    return true;
}

/* An unsigned decimal u64; "-0" is accepted as memcached's safe_strtoull
 * does, any other negative is not. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i == n)
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (neg && v != 0)
        return false;
    *out = v;
    return true;
}

/* Client flags: any u64, truncated to 32 bits as memcached does. */
static bool parse_client_flags(const char *s, size_t n, uint32_t *out)
{
    uint64_t v;
    if (!parse_u64(s, n, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Walk the flag tokens from `first` on (memcached's _meta_flag_preparse).
 * A duplicate or unknown flag stops at once; a bad token is remembered and
 * the walk goes on, so the last bad token names the error. */
static bool meta_parse_flags(const struct text_line *line, size_t first, struct meta_req *req,
                             const char **err, bool *unknown)
{
    bool bad = false;
    *unknown = false;
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
            if (!parse_client_flags(arg, narg, &req->client_flags))
                bad = true;
            break;
        case 'C':
            if (!parse_u64(arg, narg, &req->cas)) {
                *err = ERR_BAD_TOKEN;
                bad = true;
            }
            req->has_cas = true;
            break;
        case 'E':
            if (!parse_u64(arg, narg, &req->cas_new)) {
                *err = ERR_BAD_TOKEN;
                bad = true;
            }
            req->has_cas_new = true;
            break;
        case 'M':
            if (t->len != 2) {
                *err = ERR_M_LENGTH;
                bad = true;
            } else {
                req->mode = t->s[1];
            }
            break;
        case 'J':
            if (!parse_u64(arg, narg, &req->initial)) {
                *err = ERR_INITIAL;
                bad = true;
            }
            break;
        case 'D':
            if (!parse_u64(arg, narg, &req->delta)) {
                *err = ERR_DELTA;
                bad = true;
            }
            break;
        default:
            *err = ERR_INVALID;
            *unknown = true;
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

static enum meta_parse_status meta_parse_me(const struct text_line *line, struct meta_req *req,
                                            const char **err)
{
    if (line->ntok < 2 || line->tok[1].len > STORE_KEY_MAX) {
        *err = ERR_FORMAT;
        return META_PARSE_ERROR;
    }
    req->key = line->tok[1].s;
    req->nkey = line->tok[1].len;
    /* me takes a single optional flag, b, right after the key */
    if (line->ntok >= 3 && line->tok[2].len == 1 && line->tok[2].s[0] == 'b') {
        size_t n = meta_base64_decode(req->key, req->nkey, (unsigned char *)req->keybuf,
                                      sizeof req->keybuf);
        if (n == 0) {
            *err = ERR_DECODE;
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
            len > INT_MAX - 2) {
            *err = ERR_FORMAT;
            return META_PARSE_ERROR;
        }
        req->datalen = (uint32_t)len;
        first = 3;
        /* the value's length is known: from here on an error swallows it */
        fail = META_PARSE_ERROR_SWALLOW;
    } else if (line->ntok < 2) {
        *err = ERR_FORMAT;
        return META_PARSE_ERROR;
    }

    req->key = line->tok[1].s;
    req->nkey = line->tok[1].len;
    if (req->nkey > STORE_KEY_MAX) {
        *err = ERR_FORMAT;
        return fail;
    }
    /* memcached counts tokens plus one terminal token and allows 20 (ms: 21):
     * 17 flags in every case. */
    if (line->ntok - first > META_FLAGS_MAX) {
        *err = req->cmd == META_MG ? ERR_TOO_LONG_MG : ERR_TOO_LONG;
        return fail;
    }

    bool unknown;
    if (!meta_parse_flags(line, first, req, err, &unknown)) {
        if (req->cmd == META_MD || req->cmd == META_MA)
            *err = ERR_INVALID_OR_DUP;
        else if (*err == NULL)
            *err = ERR_FORMAT;
        else if (unknown && req->cmd == META_MG)
            *err = ERR_FORMAT; /* 1.6.45's mg; 1.6.18 said "invalid flag" */
        return fail;
    }
    if (req->nopaque > META_OPAQUE_MAX) {
        *err = ERR_OPAQUE;
        return fail;
    }
    if (!meta_mode_ok(req->cmd, req->mode)) {
        *err = req->cmd == META_MS ? ERR_MODE_MS : ERR_MODE_MA;
        return fail;
    }
    return META_PARSE_OK;
}
