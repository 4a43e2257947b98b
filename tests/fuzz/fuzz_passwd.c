/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the password files (proto/passwd.c): -Y's
 * authfile when the first byte is 'A', else a SASL PLAIN database; the
 * rest is the file. Parses the file again here by the formats' rules
 * (passwd.h) and checks the loader against that: an authfile is refused
 * exactly when a non-empty line has no ':'; every entry the rules give
 * authenticates, as many entries as they give are loaded, and a password
 * one byte longer than an entry's is refused unless the rules give that
 * one too. A refused file keeps the contents loaded before. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/passwd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX 4096

struct fz_entry {
    const char *user, *pass;
    size_t nuser, npass;
};

static bool fz_has(const struct fz_entry *e, size_t n, const char *u, size_t nu, const char *p,
                   size_t np)
{
    for (size_t i = 0; i < n; i++)
        if (e[i].nuser == nu && e[i].npass == np && !memcmp(e[i].user, u, nu) &&
            !memcmp(e[i].pass, p, np))
            return true;
    return false;
}

static bool fz_has_user(const struct fz_entry *e, size_t n, const char *u, size_t nu)
{
    for (size_t i = 0; i < n; i++)
        if (e[i].nuser == nu && !memcmp(e[i].user, u, nu))
            return true;
    return false;
}

/* The entries by the format's rules; false for an invalid authfile. */
static bool fz_model(const char *t, size_t len, enum passwd_format fmt, struct fz_entry *e,
                     size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < len;) {
        size_t b = i;
        while (i < len && t[i] != '\n')
            i++;
        size_t end = i++;
        if (end > b && t[end - 1] == '\r')
            end--;
        if (end == b)
            continue;
        const char *colon = memchr(t + b, ':', end - b);
        if (!colon && fmt == PASSWD_AUTHFILE)
            return false;
        if (!colon || colon == t + b)
            continue; /* no user: not an entry */
        struct fz_entry x = {t + b, colon + 1, (size_t)(colon - (t + b)),
                             (size_t)(t + end - (colon + 1))};
        if (fmt == PASSWD_SASLDB) {
            const char *c2 = memchr(x.pass, ':', x.npass);
            if (c2)
                x.npass = (size_t)(c2 - x.pass);
            if (fz_has_user(e, *n, x.user, x.nuser))
                continue;
        }
        e[(*n)++] = x;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FZ_MAX)
        return 0;
    enum passwd_format fmt = data[0] == 'A' ? PASSWD_AUTHFILE : PASSWD_SASLDB;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct passwd_file pf = PASSWD_FILE_INIT(fmt);
    /* what a refused file must leave in place */
    if (passwd_file_load_text(&pf, "old:pw", 6) != 0 || !passwd_file_check(&pf, "old", 3, "pw", 2))
        abort();
    static struct fz_entry e[FZ_MAX];
    size_t n;
    bool valid = fz_model(text, len, fmt, e, &n);
    int rc = passwd_file_load_text(&pf, text, len);
    if ((rc == 0) != valid)
        abort();
    if (rc != 0) {
        if (!passwd_file_check(&pf, "old", 3, "pw", 2) || passwd_file_count(&pf) != 1)
            abort();
    } else {
        if (passwd_file_count(&pf) != n)
            abort();
        char longer[FZ_MAX + 1];
        for (size_t i = 0; i < n; i++) {
            if (!passwd_file_check(&pf, e[i].user, e[i].nuser, e[i].pass, e[i].npass))
                abort();
            memcpy(longer, e[i].pass, e[i].npass);
            longer[e[i].npass] = 'x';
            if (passwd_file_check(&pf, e[i].user, e[i].nuser, longer, e[i].npass + 1) !=
                fz_has(e, n, e[i].user, e[i].nuser, longer, e[i].npass + 1))
                abort();
        }
    }
    passwd_file_unload(&pf);
    if (passwd_file_loaded(&pf))
        abort();
    return 0;
}
