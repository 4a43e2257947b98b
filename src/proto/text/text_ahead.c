/* SPDX-License-Identifier: BSD-3-Clause */
/* One read's batch: the request lines buffered from the current one on,
 * each found and tokenized once, their keys' index buckets and items
 * loaded ahead of their lookups (store_prefetch_start).
 *
 * text_process takes each line from here when the batch reached it, so a
 * line is scanned twice in all (memchr for its end, the tokenizer) however
 * many parts of the server read it: the batch picks its key from the
 * tokens, the command from the same tokens, a get's keys are its tokens.
 * A read's first line the worker's read hint (text_read_hint) split
 * already, and hashed its key to start its loads: the session keeps that
 * (text_hint), and the batch takes the line from there, its hash for the
 * lookup with it.
 */
#include <string.h>

#include "proto/session.h"
#include "proto/text/text_internal.h"
#ifdef NODELAY_DEBUG
#include <stdlib.h>

#include "base/log.h"
#include "store/store_lookup.h"
#endif

/* The key a request line looks up, or NULL when it is not a command the
 * batch knows. A storage command's key is looked up too (to replace the
 * old item), and *data is the value's length (with its "\r\n"), which
 * follows the line: the batch steps over it to the requests after it.
 * Inline: every line of a batch asks, and the call was a third of it. */
static inline __attribute__((always_inline)) const struct text_token *
text_batch_key(const struct text_line *l, size_t *data)
{
    *data = 0;
    /* memcached's command is what precedes the first space: a line that
     * starts with one names none. */
    if (l->ntok < 2 || l->tok[0].s != l->raw)
        return NULL;
    const struct text_token *c = &l->tok[0];
    size_t key_at = 1, bytes_at = 0;
    if (TEXT_TOK_IS(c, "get") || TEXT_TOK_IS(c, "gets") || TEXT_TOK_IS(c, "mg"))
        key_at = 1;
    else if (TEXT_TOK_IS(c, "gat") || TEXT_TOK_IS(c, "gats"))
        key_at = 2;
    else if (TEXT_TOK_IS(c, "set") || TEXT_TOK_IS(c, "add") || TEXT_TOK_IS(c, "cas") ||
             TEXT_TOK_IS(c, "append") || TEXT_TOK_IS(c, "prepend") ||
             TEXT_TOK_IS(c, "replace"))
        bytes_at = 4;
    else
        return NULL;
    /* A token before the last is a word; the last may hold the line's
     * unsplit rest. */
    size_t need = (bytes_at ? bytes_at : key_at) + 1;
    if (l->ntok < need || (l->ntok == TEXT_MAX_TOKENS && need == TEXT_MAX_TOKENS))
        return NULL;
    const struct text_token *key = &l->tok[key_at];
    if (key->len > STORE_KEY_MAX)
        return NULL;
    if (bytes_at) {
        /* Only a plain length is stepped over; anything else (the command
         * will answer it) ends the batch here. */
        const struct text_token *b = &l->tok[bytes_at];
        if (b->len > 9)
            return NULL;
        for (size_t i = 0; i < b->len; i++) {
            if (b->s[i] < '0' || b->s[i] > '9')
                return NULL;
            *data = *data * 10 + (size_t)(b->s[i] - '0');
        }
        *data += 2;
    }
    return key;
}

/* Every key of a batch is hashed (store_prefetch_start), so its hkey holds. */
_Static_assert(TEXT_PREFETCH_BATCH <= STORE_PREFETCH_MAX, "a batch's keys are all prefetched");

#ifdef NODELAY_DEBUG
/* A stale hint runs a request as other bytes (another key, another
 * command): debug builds check every one against a fresh split of the
 * bytes it is put back over (buf[0..len)), its key's hash with it. */
static void text_hint_check(const struct text_hint *h, const struct text_line *l,
                            const struct text_token *k, const char *buf, size_t len)
{
    struct text_line fresh;
    const char *nl = memchr(buf, '\n', len);
    bool ok = nl == buf + h->nl;
    if (ok) {
        text_tokenize(&fresh, buf, l->len);
        ok = fresh.ntok == l->ntok;
    }
    for (size_t i = 0; ok && i < l->ntok; i++)
        ok = fresh.tok[i].s == l->tok[i].s && fresh.tok[i].len == l->tok[i].len;
    size_t data = 0;
    const struct text_token *fk = ok ? text_batch_key(&fresh, &data) : NULL;
    if (ok && fk)
        ok = k && k - l->tok == fk - fresh.tok && data == h->data &&
             store_key_of(k->s, k->len).hv == h->hv;
    else if (ok)
        ok = !k;
    if (!ok) {
        log_error("read hint (nl %u, %u tokens) does not describe [%.*s]", (unsigned)h->nl,
                  (unsigned)h->ntok, (int)(len < 80 ? len : 80), buf);
        abort();
    }
}
#endif

/* The read's first line as text_read_hint split it, put back over buf (the
 * same bytes, maybe elsewhere) into *rec; *data and the key's token as
 * text_batch_key gives them. */
static const struct text_token *text_hint_line(const struct text_hint *h,
                                               struct text_ahead_line *rec, const char *buf,
                                               size_t len, size_t *data)
{
    struct text_line *l = &rec->line;
    rec->start = 0;
    rec->nl = h->nl;
    l->raw = buf;
    l->len = h->nl > 0 && buf[h->nl - 1] == '\r' ? h->nl - 1 : h->nl;
    l->ntok = h->ntok;
    for (size_t i = 0; i < h->ntok; i++)
        l->tok[i] = (struct text_token){buf + h->tok[i].off, h->tok[i].len};
    l->hkey = NULL;
    l->hv = h->hv;
    *data = h->data;
    const struct text_token *k = h->key ? &l->tok[h->key] : NULL;
#ifdef NODELAY_DEBUG
    text_hint_check(h, l, k, buf, len);
#else
    (void)len;
#endif
    return k;
}

size_t text_prefetch_ahead(struct session *s, struct store_prefetch_run *run,
                           struct text_ahead *ahead, const char *buf, size_t pos, size_t len)
{
    const struct text_hint *h = &text_of(s)->hint;
    struct store_keyref keys[TEXT_PREFETCH_BATCH];
    size_t n = 0, at = pos;
    bool hashed = false; /* the first key's hash came with the hint */
    ahead->n = ahead->next = 0;
    while (ahead->n < TEXT_PREFETCH_BATCH && at < len) {
        struct text_ahead_line *rec = &ahead->line[ahead->n];
        const struct text_token *k;
        size_t data;
        if (at == 0 && h->ntok && h->nl < len) {
            k = text_hint_line(h, rec, buf, len, &data);
            hashed = k != NULL;
        } else {
            const char *nl = memchr(buf + at, '\n', len - at);
            if (!nl)
                break;
            const char *e = nl > buf + at && nl[-1] == '\r' ? nl - 1 : nl;
            rec->start = at;
            rec->nl = (size_t)(nl - buf);
            text_tokenize(&rec->line, buf + at, (size_t)(e - (buf + at)));
            k = text_batch_key(&rec->line, &data);
        }
        ahead->n++;
        if (!k)
            break; /* recorded (text_process tokenizes it no more), not stepped over */
        /* its hash for its lookup (text_line.hkey) */
        rec->line.hkey = k->s;
        keys[n++] = (struct store_keyref){.key = k->s, .nkey = k->len, .hv = &rec->line.hv};
        size_t next = rec->nl + 1;
        if (data > len - next) {
            at = next; /* the value is not all here: the batch ends with it */
            break;
        }
        at = next + data;
    }
    /* One lookup alone has nothing to overlap with (a multiget's further
     * keys are text_get_run's); its hash is the hint's, if any. */
    if (n > 1)
        store_prefetch_start(s->store, run, keys, n);
    else
        run->n = run->next = 0;
    if (n == 1 && !hashed)
        ahead->line[0].line.hkey = NULL; /* not hashed: the lookup hashes it */
    return at;
}

/* Keep what text_read_hint found of line l (its '\n' at nl) for the
 * text_process that runs it, when its tokens fit the hint. */
static void text_hint_keep(struct text_hint *h, const struct text_line *l, size_t nl,
                           const struct text_token *key, size_t data)
{
    if (l->ntok > TEXT_HINT_TOKENS || nl > UINT16_MAX)
        return;
    for (size_t i = 0; i < l->ntok; i++) {
        h->tok[i].off = (uint16_t)(l->tok[i].s - l->raw);
        h->tok[i].len = (uint16_t)l->tok[i].len;
    }
    h->nl = (uint32_t)nl;
    h->data = (uint32_t)data;
    h->key = key ? (uint8_t)(key - l->tok) : 0;
    h->ntok = (uint8_t)l->ntok;
}

void text_read_hint(struct session *s, const char *buf, size_t len, struct store_prefetch_run *run)
{
    struct text_hint *h = &text_of(s)->hint;
    run->n = run->next = 0;
    h->ntok = 0;
    const char *nl = memchr(buf, '\n', len);
    if (!nl)
        return; /* no request to run yet */
    const char *e = nl > buf && nl[-1] == '\r' ? nl - 1 : nl;
    struct text_line line;
    text_tokenize(&line, buf, (size_t)(e - buf));
    size_t data;
    const struct text_token *k = text_batch_key(&line, &data);
    if (k) {
        struct store_keyref key = {.key = k->s, .nkey = k->len, .hv = &h->hv};
        store_prefetch_buckets(s->store, run, &key, 1);
    }
    text_hint_keep(h, &line, (size_t)(nl - buf), k, data);
}
