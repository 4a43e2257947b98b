/* get gets gat gats (multi-key, any line length) and touch.
 *
 * Each hit adds a header composed in place and the value by reference (the
 * item stays pinned until the bytes are written). The "\r\n" after a value
 * is put in front of the next header (or of END), so a hit costs two iovecs.
 */
#include <string.h>

#include "log.h"
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "stats/stats.h"
#include "proto/watch_note.h"

/* "\r\n" + "VALUE " + key + " " + flags + " " + bytes + " " + cas + "\r\n" */
#define TEXT_VALUE_HEADER_MAX (2 + 6 + STORE_KEY_MAX + 1 + 10 + 1 + 10 + 1 + TEXT_U64_MAX_DIGITS + 2)

static int text_value_header(struct session *s, const char *key, size_t nkey,
                             const struct store_item *it, bool want_cas, bool crlf_first)
{
    char *p = reply_reserve(&s->reply, TEXT_VALUE_HEADER_MAX);
    if (!p)
        return -1;
    char *q = p;
    if (crlf_first) {
        *q++ = '\r';
        *q++ = '\n';
    }
    memcpy(q, "VALUE ", 6);
    q += 6;
    memcpy(q, key, nkey);
    q += nkey;
    *q++ = ' ';
    q = text_u64toa(it->flags, q);
    *q++ = ' ';
    q = text_u64toa(it->nvalue, q);
    if (want_cas) {
        *q++ = ' ';
        q = text_u64toa(it->cas, q);
    }
    *q++ = '\r';
    *q++ = '\n';
    reply_commit(&s->reply, (size_t)(q - p));
    return 0;
}

/* Keys looked up per call before a long multiget lets other clients run. */
#define TEXT_GET_KEY_BUDGET 2048

/* Lookups prefetched together: enough misses in flight to hide memory
 * latency (a core keeps 10-20 outstanding), few enough that the first
 * lines are still in cache when the last lookup runs. */
#define TEXT_PREFETCH_BATCH 16

/* The key a buffered request line [p, e) looks up, or NULL when it is not
 * a command the batch knows. A storage command's key is looked up too (to
 * replace the old item), and *data is the value's length, which follows
 * the line: the batch steps over it to the requests after it. */
static const char *text_batch_key(const char *p, const char *e, size_t *nkey, size_t *data)
{
    size_t n = (size_t)(e - p);
    int key_at, bytes_at = 0; /* token indexes, the command's word being 0 */
    if (n > 4 && memcmp(p, "get ", 4) == 0)
        key_at = 1;
    else if (n > 5 && memcmp(p, "gets ", 5) == 0)
        key_at = 1;
    else if (n > 3 && memcmp(p, "mg ", 3) == 0)
        key_at = 1;
    else if (n > 4 && (memcmp(p, "gat ", 4) == 0 || memcmp(p, "gats ", 5) == 0))
        key_at = 2;
    else if (n > 4 && (memcmp(p, "set ", 4) == 0 || memcmp(p, "add ", 4) == 0 ||
                       memcmp(p, "cas ", 4) == 0))
        key_at = 1, bytes_at = 4;
    else if (n > 7 && (memcmp(p, "append ", 7) == 0 || memcmp(p, "prepend ", 8) == 0 ||
                       memcmp(p, "replace ", 8) == 0))
        key_at = 1, bytes_at = 4;
    else
        return NULL;
    const char *key = NULL;
    *data = 0;
    for (int i = 0;; i++) {
        while (p < e && *p == ' ')
            p++;
        const char *t = p;
        while (p < e && *p != ' ')
            p++;
        if (p == t)
            return NULL;
        if (i == key_at) {
            *nkey = (size_t)(p - t);
            if (*nkey > STORE_KEY_MAX)
                return NULL;
            key = t;
            if (!bytes_at)
                return key;
        } else if (bytes_at && i == bytes_at) {
            /* Only a plain length is stepped over; anything else (the
             * command will answer it) ends the batch here. */
            if (p - t > 9)
                return NULL;
            for (; t < p; t++) {
                if (*t < '0' || *t > '9')
                    return NULL;
                *data = *data * 10 + (size_t)(*t - '0');
            }
            *data += 2; /* its "\r\n" */
            return key;
        }
    }
}

size_t text_prefetch_ahead(struct session *s, struct store_prefetch_run *run, const char *buf,
                           size_t pos, size_t len)
{
    struct store_keyref keys[TEXT_PREFETCH_BATCH];
    size_t n = 0, at = pos;
    while (n < TEXT_PREFETCH_BATCH && at < len) {
        const char *nl = memchr(buf + at, '\n', len - at);
        if (!nl)
            break;
        const char *e = nl > buf + at && nl[-1] == '\r' ? nl - 1 : nl;
        size_t data;
        const char *k = text_batch_key(buf + at, e, &keys[n].nkey, &data);
        if (!k)
            break;
        keys[n++].key = k;
        size_t next = (size_t)(nl - buf) + 1;
        if (data > len - next) {
            at = next; /* the value is not all here: the batch ends with it */
            break;
        }
        at = next + data;
    }
    /* One lookup alone has nothing to overlap with (a multiget's further
     * keys are text_get_run's). */
    store_prefetch_start(s->store, run, keys, n > 1 ? n : 0);
    return at;
}

/* Prefetches the keys from p on in a multiget line (up to a batch), when
 * there are several. */
static void text_get_prefetch(struct session *s, const char *p, const char *end)
{
    struct store_keyref keys[TEXT_PREFETCH_BATCH];
    size_t n = 0;
    while (p < end && n < TEXT_PREFETCH_BATCH) {
        if (*p == ' ') {
            p++;
            continue;
        }
        const char *k = p;
        while (p < end && *p != ' ')
            p++;
        keys[n++] = (struct store_keyref){k, (size_t)(p - k)};
    }
    if (n > 1)
        store_prefetch(s->store, keys, n);
}

/* True when no key in p[0..end) is longer than memcached allows. */
static bool text_get_rest_ok(const char *p, const char *end)
{
    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *e = sp ? sp : end;
        if ((size_t)(e - p) > STORE_KEY_MAX)
            return false;
        p = e + 1;
    }
    return true;
}

/* Look up keys from s->text.cont.off on. Stops (s->text.cont.kind set) when
 * the connection owes more than it may or after TEXT_GET_KEY_BUDGET keys,
 * and goes on from there when called again: a multiget of any size is
 * produced as the client takes it, in memcached's order and bytes. */
static void text_get_run(struct session *s, const struct text_line *l)
{
    struct text_cont *c = &s->text.cont;
    struct store_get_req req = {.want_value = true, .touch = c->touch, .exptime = c->exptime};
    struct reply_mark mark;
    reply_get_mark(&s->reply, &mark);
    bool detail = TEXT_DETAIL_ON(s);
    bool crlf = c->crlf;
    size_t keys = 0;
    c->kind = TEXT_CONT_NONE;

    /* Walk the raw line: a multiget may have far more keys than tokens. */
    const char *p = l->raw + c->off;
    const char *end = l->raw + l->len;
    while (p < end) {
        if (*p == ' ') {
            p++;
            continue;
        }
        if (!c->no_pause &&
            (keys >= TEXT_GET_KEY_BUDGET || reply_pending(&s->reply) > s->reply_allow)) {
            /* memcached sends nothing but the error for a line with an
             * over-long key, so pause only a line that has none. */
            if (!c->rest_ok && !(c->rest_ok = text_get_rest_ok(p, end)))
                c->no_pause = true;
            if (c->rest_ok) {
                c->kind = TEXT_CONT_GET;
                c->off = (size_t)(p - l->raw);
                c->crlf = crlf;
                return;
            }
        }
        if (keys % TEXT_PREFETCH_BATCH == 0)
            text_get_prefetch(s, p, end);
        const char *key = p;
        while (p < end && *p != ' ')
            p++;
        size_t nkey = (size_t)(p - key);
        if (nkey > STORE_KEY_MAX) {
            /* memcached discards what it composed and sends only the error;
             * 1.6.45 follows it with an empty line. */
            reply_rollback(&s->reply, &mark);
            TEXT_OUT(s, "CLIENT_ERROR bad command line format\r\n");
            return;
        }
        keys++;
        struct store_item it;
        enum store_status st = store_get(s->store, key, nkey, &req, &it);
        bool hit = st == STORE_OK;
        if (watch_active(WATCH_LOOKUPS))
            watch_note_get(s, key, nkey, st, &it);
        if (detail)
            session_stats_detail(s, key, nkey, 'g', hit);
        stats_count_fetch(s->stats, c->touch, hit, it.class_id, it.lru);
        if (!hit)
            continue;
        if (text_value_header(s, key, nkey, &it, c->want_cas, crlf) != 0) {
            if (it.pin)
                store_pin_release(it.pin);
            goto oom;
        }
        if (reply_value(&s->reply, it.value, it.nvalue, it.pin) != 0)
            goto oom;
        log_verbose(">%d sending key %.*s", s->cfd, (int)nkey, key);
        crlf = true;
    }
    log_verbose(">%d END", s->cfd);
    if (crlf) {
        if (reply_copy(&s->reply, "\r\nEND\r\n", 7) != 0)
            goto oom;
    } else if (reply_copy(&s->reply, "END\r\n", 5) != 0) {
        goto oom;
    }
    return;
oom:
    reply_rollback(&s->reply, &mark);
    TEXT_OUT(s, "SERVER_ERROR out of memory writing get response");
}

void text_cmd_get(struct session *s, const struct text_line *l, bool want_cas, bool touch)
{
    struct text_cont *c = &s->text.cont;
    *c = (struct text_cont){.want_cas = want_cas, .touch = touch};
    size_t first = 1;
    if (touch) {
        int32_t exptime;
        if (!text_tok_i32(&l->tok[1], &exptime)) {
            TEXT_OUT(s, "CLIENT_ERROR invalid exptime argument");
            return;
        }
        c->exptime = clock_exptime(exptime);
        first = 2;
    }
    c->off = (size_t)(l->tok[first].s - l->raw);
    text_get_run(s, l);
}

void text_get_resume(struct session *s, const struct text_line *l)
{
    text_get_run(s, l);
}

void text_cmd_touch(struct session *s, const struct text_line *l)
{
    const struct text_token *key = text_one_key(s, l);
    if (!key)
        return;
    int32_t exptime;
    if (!text_tok_i32(&l->tok[2], &exptime)) {
        TEXT_OUT(s, "CLIENT_ERROR invalid exptime argument");
        return;
    }
    STAT_INC(s->stats, cmd_touch);
    if (watch_active(WATCH_LOOKUPS))
        watch_peek(s, key->s, key->len, NULL);
    struct store_get_req touch = {.touch = true, .exptime = clock_exptime(exptime)};
    struct store_item it;
    if (store_get(s->store, key->s, key->len, &touch, &it) == STORE_OK) {
        STAT_INC(s->stats, touch_hits);
        STAT_CLS_INC(s->stats, it.class_id, touch_hits);
        TEXT_OUT(s, "TOUCHED");
    } else {
        STAT_INC(s->stats, touch_misses);
        TEXT_OUT(s, "NOT_FOUND");
    }
}
