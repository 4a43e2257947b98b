/* -Y ascii authentication, as memcached does it: until a connection has
 * authenticated, its only accepted command is
 *     set <any> <any> <any> <n>\r\n<user> <pass>\r\n
 * checked against a file of "user:pass" lines. The list is replaced whole
 * on reload (SIGHUP), under a lock that only authentication takes. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "settings.h"
#include "stats/stats.h"

/* memcached 1.6.45 refuses longer tokens (1.6.18 crashed on them). */
#define TEXT_AUTH_TOKEN_MAX 16384

struct text_auth_entry {
    const char *user, *pass;
    size_t nuser, npass;
};

struct text_auth_list {
    char *data; /* the file's bytes; entries point into it */
    struct text_auth_entry *entries;
    size_t n;
};

static pthread_mutex_t text_auth_lock = PTHREAD_MUTEX_INITIALIZER;
static struct text_auth_list *text_auth_current;

static void text_auth_list_free(struct text_auth_list *list)
{
    if (!list)
        return;
    free(list->data);
    free(list->entries);
    free(list);
}

static char *text_auth_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int err = ferror(f) ? EIO : ENOMEM;
    fclose(f);
    if (!buf) {
        errno = err;
        return NULL;
    }
    *len = n;
    return buf;
}

int text_auth_load(const char *path)
{
    size_t len;
    char *data = text_auth_read_file(path, &len);
    if (!data)
        return -1;
    struct text_auth_list *list = calloc(1, sizeof *list);
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += data[i] == '\n';
    struct text_auth_entry *entries = calloc(lines, sizeof *entries);
    if (!list || !entries) {
        free(data);
        free(list);
        free(entries);
        errno = ENOMEM;
        return -1;
    }
    list->data = data;
    list->entries = entries;
    /* One "user:pass" per line; the last line needs no newline. */
    size_t i = 0;
    while (i < len) {
        size_t b = i;
        while (i < len && data[i] != '\n')
            i++;
        size_t e = i++;
        if (e > b && data[e - 1] == '\r')
            e--;
        if (e == b)
            continue;
        const char *colon = memchr(data + b, ':', e - b);
        if (!colon) {
            text_auth_list_free(list);
            errno = EINVAL;
            return -1;
        }
        struct text_auth_entry *en = &entries[list->n++];
        en->user = data + b;
        en->nuser = (size_t)(colon - (data + b));
        en->pass = colon + 1;
        en->npass = (size_t)(data + e - (colon + 1));
    }
    pthread_mutex_lock(&text_auth_lock);
    struct text_auth_list *old = text_auth_current;
    __atomic_store_n(&text_auth_current, list, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&text_auth_lock);
    text_auth_list_free(old);
    return 0;
}

void text_auth_unload(void)
{
    pthread_mutex_lock(&text_auth_lock);
    struct text_auth_list *old = text_auth_current;
    __atomic_store_n(&text_auth_current, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&text_auth_lock);
    text_auth_list_free(old);
}

/* Compare without stopping at the first difference. */
static bool text_auth_same(const char *a, size_t na, const char *b, size_t nb)
{
    if (na != nb)
        return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < na; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

static bool text_auth_check(const struct text_token *user, const struct text_token *pass)
{
    bool ok = false;
    pthread_mutex_lock(&text_auth_lock);
    const struct text_auth_list *list = text_auth_current;
    for (size_t i = 0; list && i < list->n; i++) {
        const struct text_auth_entry *en = &list->entries[i];
        if (text_auth_same(en->user, en->nuser, user->s, user->len) &&
            text_auth_same(en->pass, en->npass, pass->s, pass->len))
            ok = true;
    }
    pthread_mutex_unlock(&text_auth_lock);
    return ok;
}

static void text_auth_done(struct session *s, bool chunk_ok)
{
    char *buf = s->text.auth_buf;
    size_t n = s->text.need;
    if (!chunk_ok) {
        TEXT_OUT_ALWAYS(s, "CLIENT_ERROR bad command line termination");
        goto out;
    }
    /* "user pass": split on spaces */
    struct text_token tok[2];
    size_t ntok = 0, i = 0;
    while (i < n && ntok < 2) {
        while (i < n && buf[i] == ' ')
            i++;
        if (i == n)
            break;
        size_t b = i;
        while (i < n && buf[i] != ' ')
            i++;
        tok[ntok++] = (struct text_token){buf + b, i - b};
    }
    if (ntok < 2) {
        TEXT_OUT_ALWAYS(s, "CLIENT_ERROR bad authentication token format");
        goto out;
    }
    STAT_INC(s->stats, auth_cmds);
    if (text_auth_check(&tok[0], &tok[1])) {
        s->authenticated = true;
        TEXT_OUT_ALWAYS(s, "STORED");
    } else {
        STAT_INC(s->stats, auth_errors);
        TEXT_OUT_ALWAYS(s, "CLIENT_ERROR authentication failure");
    }
out:
    free(buf);
    s->text.auth_buf = NULL;
}

void text_auth_line(struct session *s, const struct text_line *l)
{
    uint32_t size;
    s->text.noreply = false;
    /* Start-up should have loaded the file (text_auth_load); if it did not,
     * load it on first use so -Y works either way. */
    if (!__atomic_load_n(&text_auth_current, __ATOMIC_ACQUIRE) && s->settings->auth_file)
        (void)text_auth_load(s->settings->auth_file);
    if (l->ntok < 5 || !TEXT_TOK_IS(&l->tok[0], "set") || !text_parse_u32(&l->tok[4], &size)) {
        TEXT_OUT_ALWAYS(s, "CLIENT_ERROR unauthenticated");
        return;
    }
    if (size > TEXT_AUTH_TOKEN_MAX) {
        /* The token cannot be skipped safely: answer and hang up. */
        TEXT_OUT_ALWAYS(s, "CLIENT_ERROR auth token too long");
        s->text.closing = true;
        return;
    }
    s->text.auth_buf = malloc(size ? size : 1);
    if (!s->text.auth_buf) {
        s->text.closing = true;
        return;
    }
    s->text.have_res = false;
    text_expect_into(s, s->text.auth_buf, size, text_auth_done);
}

void text_auth_release(struct session *s)
{
    free(s->text.auth_buf);
    s->text.auth_buf = NULL;
}
