/* SPDX-License-Identifier: BSD-3-Clause */
/* -Y ascii authentication, as memcached does it: until a connection has
 * authenticated, its only accepted command is
 *     set <any> <any> <any> <n>\r\n<user> <pass>\r\n
 * checked against a file of "user:pass" lines (proto/passwd.c, which SASL
 * shares). The list is replaced whole on reload (SIGHUP). */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "proto/passwd.h"
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "stats/stats.h"

/* memcached 1.6.45 refuses longer tokens (1.6.18 crashed on them). */
#define TEXT_AUTH_TOKEN_MAX 16384

static struct passwd_file text_auth_pw = PASSWD_FILE_INIT(PASSWD_AUTHFILE);

int text_auth_load(const char *path)
{
    return passwd_file_load(&text_auth_pw, path);
}

void text_auth_unload(void)
{
    passwd_file_unload(&text_auth_pw);
}

static void text_auth_done(struct session *s, bool chunk_ok)
{
    char *buf = text_of(s)->auth_buf;
    size_t n = text_of(s)->value.need;
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
    int limit = s->opt->auth_fail_limit;
    rel_time_t now = clock_now();
    /* an address over its guessing limit is refused without a check */
    if (auth_guard_admit(&s->auth, limit, now) &&
        passwd_file_check(&text_auth_pw, tok[0].s, tok[0].len, tok[1].s, tok[1].len)) {
        s->authenticated = true;
        TEXT_OUT_ALWAYS(s, "STORED");
    } else {
        STAT_INC(s->stats, auth_errors);
        TEXT_OUT_ALWAYS(s, "CLIENT_ERROR authentication failure");
        if (auth_guard_failed(&s->auth, limit, now) || !auth_guard_admit(&s->auth, limit, now))
            text_of(s)->closing = true; /* after the reply (auth_guard.h) */
    }
out:
    free(buf);
    text_of(s)->auth_buf = NULL;
}

void text_auth_line(struct session *s, const struct text_line *l)
{
    uint32_t size;
    text_of(s)->noreply = false;
    /* Start-up should have loaded the file (text_auth_load); if it did not,
     * load it on first use so -Y works either way. */
    if (!passwd_file_loaded(&text_auth_pw) && s->opt->auth_file)
        (void)text_auth_load(s->opt->auth_file);
    if (l->ntok < 5 || !TEXT_TOK_IS(&l->tok[0], "set") || !text_parse_u32(&l->tok[4], &size)) {
        TEXT_OUT_ALWAYS(s, "CLIENT_ERROR unauthenticated");
        return;
    }
    if (size > TEXT_AUTH_TOKEN_MAX) {
        /* As 1.6.45: refused, and nothing is swallowed or buffered; what
         * follows the line is read as the next command (which, while
         * unauthenticated, is another authentication attempt). */
        TEXT_OUT_ALWAYS(s, "CLIENT_ERROR auth token too long");
        return;
    }
    text_of(s)->auth_buf = malloc(size ? size : 1);
    if (!text_of(s)->auth_buf) {
        text_of(s)->closing = true;
        return;
    }
    text_of(s)->value.have_res = false;
    text_expect_into(s, &text_of(s)->value, text_of(s)->auth_buf, size, text_auth_done);
}

void text_auth_release(struct session *s)
{
    free(text_of(s)->auth_buf);
    text_of(s)->auth_buf = NULL;
}
