/* Binary protocol: STAT [group].
 *
 * The server core composes every stats group once, as the text protocol's
 * "STAT name value" lines (server_stats); this file turns those lines into
 * memcached's binary form: one packet per stat (key = name, body = value),
 * then an empty packet that ends the list. `stats detail dump` is one packet
 * named "detailed" holding the whole dump, as memcached sends it. */
#include "proto/binary/binary.h"

#include <stdlib.h>
#include <string.h>

#include "reply/reply.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "server.h"

/* Everything a reply queue holds, as one malloc'd string. */
static char *bin_stat_flatten(struct reply_queue *q, size_t *len)
{
    size_t total = reply_pending(q);
    char *buf = malloc(total + 1);
    if (!buf)
        return NULL;
    size_t off = 0;
    struct iovec iov[64];
    while (reply_pending(q) > 0) {
        int n = reply_iov(q, iov, 64);
        size_t got = 0;
        for (int i = 0; i < n; i++) {
            memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
            got += iov[i].iov_len;
        }
        reply_consume(q, got);
    }
    buf[off] = '\0';
    *len = off;
    return buf;
}

static bool bin_stat_has_prefix(const char *s, size_t n, const char *prefix)
{
    size_t np = strlen(prefix);
    return n >= np && memcmp(s, prefix, np) == 0;
}

/* True when the text is an error line (the group cannot be shown). */
static bool bin_stat_is_error(const char *text, size_t len)
{
    return bin_stat_has_prefix(text, len, "ERROR") ||
           bin_stat_has_prefix(text, len, "CLIENT_ERROR") ||
           bin_stat_has_prefix(text, len, "SERVER_ERROR");
}

int bin_stat_lines(struct reply_queue *out, const struct bin_resp *r, const char *text,
                   size_t len)
{
    size_t off = 0;
    while (off < len) {
        const char *line = text + off;
        const char *nl = memchr(line, '\n', len - off);
        size_t n = nl ? (size_t)(nl - line) : len - off;
        off += nl ? n + 1 : n;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (bin_stat_is_error(line, n))
            return 1;
        if (!bin_stat_has_prefix(line, n, "STAT "))
            continue; /* END, RESET, OK */
        const char *name = line + 5;
        size_t rest = n - 5;
        const char *sp = memchr(name, ' ', rest);
        size_t nname = sp ? (size_t)(sp - name) : rest;
        const char *value = sp ? sp + 1 : name + rest;
        size_t nvalue = sp ? rest - nname - 1 : 0;
        if (nname > UINT16_MAX)
            continue;
        if (bin_compose(out, r, NULL, 0, name, (uint16_t)nname, value, (uint32_t)nvalue) != 0)
            return -1;
    }
    return 0;
}

static bool bin_stat_is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(s, word, n) == 0;
}

const char *bin_stat_group(const char *key, size_t n)
{
    if (n == 0)
        return "";
    if (bin_stat_has_prefix(key, n, "reset"))
        return "reset";
    if (bin_stat_has_prefix(key, n, "settings"))
        return "settings";
    if (bin_stat_has_prefix(key, n, "detail")) {
        if (bin_stat_has_prefix(key + 6, n - 6, " dump"))
            return "detail dump";
        if (bin_stat_has_prefix(key + 6, n - 6, " on"))
            return "detail on";
        if (bin_stat_has_prefix(key + 6, n - 6, " off"))
            return "detail off";
        return NULL;
    }
    static const char *const exact[] = {"items", "slabs", "sizes", "nodelay"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (bin_stat_is(key, n, exact[i]))
            return exact[i];
    return NULL;
}

static enum proto_status bin_stat_error(struct session *s, const struct bin_header *h,
                                        uint16_t status)
{
    int rc = bin_compose_error(&s->reply, h->opcode, h->opaque, status);
    return rc == 0 ? PROTO_OK : PROTO_CLOSE;
}

enum proto_status bin_stat(struct session *s, const struct bin_header *h, const char *key)
{
    const char *group = bin_stat_group(key, h->keylen);
    if (!group)
        return bin_stat_error(s, h, BIN_STATUS_KEY_ENOENT);
    struct reply_queue text;
    reply_init(&text);
    int rc = server_stats(group, strlen(group), &text);
    size_t len = 0;
    char *buf = rc == 0 ? bin_stat_flatten(&text, &len) : NULL;
    reply_release(&text);
    if (rc != 0)
        return bin_stat_error(s, h, BIN_STATUS_KEY_ENOENT);
    if (!buf) {
        struct bin_resp e = {.opcode = h->opcode, .status = BIN_STATUS_ENOMEM,
                             .opaque = h->opaque};
        static const char oom[] = "Out of memory generating stats";
        int rc2 = bin_compose(&s->reply, &e, NULL, 0, NULL, 0, oom, sizeof oom - 1);
        return rc2 == 0 ? PROTO_OK : PROTO_CLOSE;
    }

    struct bin_resp r = {.opcode = h->opcode, .status = BIN_STATUS_OK, .opaque = h->opaque};
    struct reply_mark mark;
    reply_get_mark(&s->reply, &mark);
    int res;
    if (bin_stat_is_error(buf, len))
        res = 1;
    else if (strcmp(group, "detail dump") == 0)
        res = bin_compose(&s->reply, &r, NULL, 0, "detailed", 8, buf, (uint32_t)len);
    else
        res = bin_stat_lines(&s->reply, &r, buf, len);
    free(buf);
    if (res == 1) {
        reply_rollback(&s->reply, &mark);
        return bin_stat_error(s, h, BIN_STATUS_KEY_ENOENT);
    }
    /* An empty packet ends the list. */
    if (res != 0 || bin_compose(&s->reply, &r, NULL, 0, NULL, 0, NULL, 0) != 0)
        return PROTO_CLOSE;
    return PROTO_OK;
}
