/* SPDX-License-Identifier: BSD-3-Clause */
/* One read's batch: the request lines buffered from the current one on,
 * each found and tokenized once, their keys' index buckets and items
 * loaded ahead of their lookups (store_prefetch_start).
 *
 * text_process takes each line from here when the batch reached it, so a
 * line is scanned twice in all (memchr for its end, the tokenizer) however
 * many parts of the server read it: the batch picks its key from the
 * tokens, the command from the same tokens, a get's keys are its tokens.
 */
#include <string.h>

#include "proto/session.h"
#include "proto/text/text_internal.h"

/* The key a request line looks up, or NULL when it is not a command the
 * batch knows. A storage command's key is looked up too (to replace the
 * old item), and *data is the value's length (with its "\r\n"), which
 * follows the line: the batch steps over it to the requests after it. */
static const struct text_token *text_batch_key(const struct text_line *l, size_t *data)
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

size_t text_prefetch_ahead(struct session *s, struct store_prefetch_run *run,
                           struct text_ahead *ahead, const char *buf, size_t pos, size_t len)
{
    struct store_keyref keys[TEXT_PREFETCH_BATCH];
    size_t n = 0, at = pos;
    ahead->n = ahead->next = 0;
    while (ahead->n < TEXT_PREFETCH_BATCH && at < len) {
        const char *nl = memchr(buf + at, '\n', len - at);
        if (!nl)
            break;
        const char *e = nl > buf + at && nl[-1] == '\r' ? nl - 1 : nl;
        struct text_ahead_line *rec = &ahead->line[ahead->n++];
        rec->start = at;
        rec->nl = (size_t)(nl - buf);
        text_tokenize(&rec->line, buf + at, (size_t)(e - (buf + at)));
        size_t data;
        const struct text_token *k = text_batch_key(&rec->line, &data);
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
     * keys are text_get_run's). */
    if (n == 1)
        ahead->line[0].line.hkey = NULL; /* not hashed: the lookup hashes it */
    store_prefetch_start(s->store, run, keys, n > 1 ? n : 0);
    return at;
}

void text_read_hint(struct session *s, const char *buf, size_t len, struct store_prefetch_run *run)
{
    run->n = run->next = 0;
    const char *nl = memchr(buf, '\n', len);
    if (!nl)
        return; /* no request to run yet */
    const char *e = nl > buf && nl[-1] == '\r' ? nl - 1 : nl;
    struct text_line line;
    text_tokenize(&line, buf, (size_t)(e - buf));
    size_t data;
    const struct text_token *k = text_batch_key(&line, &data);
    if (k) {
        struct store_keyref key = {.key = k->s, .nkey = k->len, .hv = NULL};
        store_prefetch_buckets(s->store, run, &key, 1);
    }
}
