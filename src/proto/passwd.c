/* SPDX-License-Identifier: BSD-3-Clause */
/* Password files (see passwd.h). */
#include "proto/passwd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct passwd_entry {
    const char *user, *pass;
    size_t nuser, npass;
};

struct passwd_db {
    char *data; /* the file's bytes; entries point into them */
    struct passwd_entry *entries;
    size_t n;
};

static void passwd_db_free(struct passwd_db *db)
{
    if (!db)
        return;
    free(db->data);
    free(db->entries);
    free(db);
}

static bool passwd_have_user(const struct passwd_db *db, const char *user, size_t n)
{
    for (size_t i = 0; i < db->n; i++)
        if (db->entries[i].nuser == n && memcmp(db->entries[i].user, user, n) == 0)
            return true;
    return false;
}

/* One line, without its line ending. 0, or -1 for a line that makes the
 * whole file invalid. */
static int passwd_add_line(struct passwd_db *db, enum passwd_format fmt, const char *line,
                           size_t len)
{
    if (len == 0)
        return 0;
    const char *colon = memchr(line, ':', len);
    if (fmt == PASSWD_AUTHFILE && !colon)
        return -1;
    if (!colon || colon == line)
        return 0; /* SASL: not an entry */
    size_t nuser = (size_t)(colon - line);
    const char *pass = colon + 1;
    size_t npass = len - nuser - 1;
    if (fmt == PASSWD_SASLDB) {
        const char *end = memchr(pass, ':', npass);
        if (end)
            npass = (size_t)(end - pass);
        if (passwd_have_user(db, line, nuser))
            return 0;
    }
    db->entries[db->n++] = (struct passwd_entry){line, pass, nuser, npass};
    return 0;
}

/* Takes ownership of data. */
static struct passwd_db *passwd_db_parse(char *data, size_t len, enum passwd_format fmt)
{
    struct passwd_db *db = calloc(1, sizeof *db);
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += data[i] == '\n';
    struct passwd_entry *entries = calloc(lines, sizeof *entries);
    if (!db || !entries) {
        free(data);
        free(db);
        free(entries);
        errno = ENOMEM;
        return NULL;
    }
    db->data = data;
    db->entries = entries;
    /* the last line needs no newline */
    size_t i = 0;
    while (i < len) {
        size_t b = i;
        while (i < len && data[i] != '\n')
            i++;
        size_t e = i++;
        if (e > b && data[e - 1] == '\r')
            e--;
        if (passwd_add_line(db, fmt, data + b, e - b) != 0) {
            passwd_db_free(db);
            errno = EINVAL;
            return NULL;
        }
    }
    return db;
}

static char *passwd_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
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
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) {
        errno = err;
        return NULL;
    }
    *len = n;
    return buf;
}

static void passwd_file_swap(struct passwd_file *pf, struct passwd_db *db)
{
    pthread_mutex_lock(&pf->lock);
    struct passwd_db *old = pf->db;
    pf->db = db;
    pthread_mutex_unlock(&pf->lock);
    passwd_db_free(old);
}

int passwd_file_load(struct passwd_file *pf, const char *path)
{
    size_t len;
    char *data = passwd_read_file(path, &len);
    if (!data)
        return -1;
    struct passwd_db *db = passwd_db_parse(data, len, pf->format);
    if (!db)
        return -1;
    passwd_file_swap(pf, db);
    return 0;
}

int passwd_file_load_text(struct passwd_file *pf, const char *text, size_t len)
{
    char *data = malloc(len ? len : 1);
    if (!data) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(data, text, len);
    struct passwd_db *db = passwd_db_parse(data, len, pf->format);
    if (!db)
        return -1;
    passwd_file_swap(pf, db);
    return 0;
}

void passwd_file_unload(struct passwd_file *pf)
{
    passwd_file_swap(pf, NULL);
}

bool passwd_file_loaded(struct passwd_file *pf)
{
    pthread_mutex_lock(&pf->lock);
    bool loaded = pf->db != NULL;
    pthread_mutex_unlock(&pf->lock);
    return loaded;
}

size_t passwd_file_count(struct passwd_file *pf)
{
    pthread_mutex_lock(&pf->lock);
    size_t n = pf->db ? pf->db->n : 0;
    pthread_mutex_unlock(&pf->lock);
    return n;
}

bool passwd_ct_equal(const char *a, size_t na, const char *b, size_t nb)
{
    volatile unsigned char diff = (unsigned char)(na != nb);
    size_t n = na > nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < na ? (unsigned char)a[i] : 0;
        unsigned char y = i < nb ? (unsigned char)b[i] : 0;
        diff |= x ^ y;
    }
    return diff == 0;
}

bool passwd_file_check(struct passwd_file *pf, const char *user, size_t nuser, const char *pass,
                       size_t npass)
{
    int ok = 0;
    pthread_mutex_lock(&pf->lock);
    const struct passwd_db *db = pf->db;
    /* every entry, whatever matched already */
    for (size_t i = 0; db && i < db->n; i++) {
        const struct passwd_entry *e = &db->entries[i];
        ok |= passwd_ct_equal(user, nuser, e->user, e->nuser) &
              passwd_ct_equal(pass, npass, e->pass, e->npass);
    }
    pthread_mutex_unlock(&pf->lock);
    return ok != 0;
}
