/* SASL PLAIN against memcached's plaintext password file. */
#include "proto/sasl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "settings.h"

/* memcached reads lines of at most 255 bytes and refuses user + password
 * longer than 252; nothing longer can ever authenticate. */
#define SASL_ENTRY_MAX 252

struct sasl_entry {
    char *user;
    size_t nuser;
    char *pass;
    size_t npass;
};

/* Written once at start-up, read-only while workers run. */
static struct sasl_entry *sasl_entries;
static size_t sasl_nentries;

void sasl_teardown(void)
{
    for (size_t i = 0; i < sasl_nentries; i++) {
        free(sasl_entries[i].user);
        free(sasl_entries[i].pass);
    }
    free(sasl_entries);
    sasl_entries = NULL;
    sasl_nentries = 0;
}

static char *sasl_dup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static bool sasl_have_user(const char *user, size_t n)
{
    for (size_t i = 0; i < sasl_nentries; i++)
        if (sasl_entries[i].nuser == n && memcmp(sasl_entries[i].user, user, n) == 0)
            return true;
    return false;
}

/* One line "user:password[:anything]", without its line ending. As in
 * memcached, the first line for a user is the one that counts. */
static int sasl_add_line(const char *line, size_t len, size_t *cap)
{
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return 0; /* not an entry */
    size_t nuser = (size_t)(colon - line);
    const char *pass = colon + 1;
    const char *end = memchr(pass, ':', len - nuser - 1);
    size_t npass = end ? (size_t)(end - pass) : len - nuser - 1;
    if (sasl_have_user(line, nuser))
        return 0;
    if (sasl_nentries == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        struct sasl_entry *e = realloc(sasl_entries, ncap * sizeof *e);
        if (!e)
            return -1;
        sasl_entries = e;
        *cap = ncap;
    }
    struct sasl_entry *e = &sasl_entries[sasl_nentries];
    e->user = sasl_dup(line, nuser);
    e->pass = sasl_dup(pass, npass);
    if (!e->user || !e->pass) {
        free(e->user);
        free(e->pass);
        return -1;
    }
    e->nuser = nuser;
    e->npass = npass;
    sasl_nentries++;
    return 0;
}

int sasl_load_text(const char *text, size_t len)
{
    sasl_teardown();
    size_t cap = 0;
    size_t off = 0;
    while (off < len) {
        const char *nl = memchr(text + off, '\n', len - off);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t n = end - off;
        if (n > 0 && text[off + n - 1] == '\r')
            n--;
        if (sasl_add_line(text + off, n, &cap) != 0) {
            sasl_teardown();
            return -1;
        }
        off = end + 1;
    }
    return 0;
}

int sasl_load_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        log_error("failed to open the SASL password file %s: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n > cap) {
            size_t ncap = (len + n) * 2;
            char *t = realloc(text, ncap);
            if (!t) {
                rc = -1;
                break;
            }
            text = t;
            cap = ncap;
        }
        memcpy(text + len, chunk, n);
        len += n;
    }
    if (ferror(f))
        rc = -1;
    fclose(f);
    if (rc == 0)
        rc = sasl_load_text(text ? text : "", len);
    free(text);
    if (rc != 0) {
        log_error("failed to read the SASL password file %s", path);
        return -1;
    }
    log_info("SASL: %zu users loaded from %s", sasl_nentries, path);
    return 0;
}

/* The file named by MEMCACHED_SASL_PWDB; with the variable unset, what is
 * loaded stays. */
static int sasl_load_env(void)
{
    const char *path = getenv("MEMCACHED_SASL_PWDB");
    if (!path) {
        log_error("WARNING: SASL is on but MEMCACHED_SASL_PWDB is not set: "
                  "no user can authenticate");
        return 0;
    }
    return sasl_load_file(path);
}

/* The file is read exactly once, by sasl_setup() at start-up or, if start-up
 * did not call it, by the first authentication. */
static pthread_once_t sasl_once = PTHREAD_ONCE_INIT;
static int sasl_load_rc;

static void sasl_load_once(void)
{
    sasl_load_rc = sasl_load_env();
}

int sasl_setup(const struct settings *settings)
{
    (void)settings;
    pthread_once(&sasl_once, sasl_load_once);
    return sasl_load_rc;
}

bool sasl_mech_supported(const char *mech, size_t len)
{
    /* Mechanism names are case-insensitive (RFC 4422). */
    return len == 5 && strncasecmp(mech, "PLAIN", 5) == 0;
}

/* Equal in time that depends only on the lengths, never on where the bytes
 * first differ. */
static int sasl_ct_equal(const char *a, size_t na, const char *b, size_t nb)
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

bool sasl_plain_check(const char *msg, size_t len)
{
    pthread_once(&sasl_once, sasl_load_once);
    const char *nul1 = memchr(msg, '\0', len);
    if (!nul1)
        return false;
    size_t nauthz = (size_t)(nul1 - msg);
    const char *user = nul1 + 1;
    size_t rest = len - nauthz - 1;
    const char *nul2 = memchr(user, '\0', rest);
    if (!nul2)
        return false;
    size_t nuser = (size_t)(nul2 - user);
    const char *pass = nul2 + 1;
    size_t npass = rest - nuser - 1;
    if (nuser == 0 || nuser + npass > SASL_ENTRY_MAX)
        return false;
    /* Acting as another user is not something a password file can grant. */
    if (nauthz != 0 && !(nauthz == nuser && memcmp(msg, user, nuser) == 0))
        return false;
    /* Visit every entry so the time taken does not say which user exists. */
    int ok = 0;
    for (size_t i = 0; i < sasl_nentries; i++) {
        const struct sasl_entry *e = &sasl_entries[i];
        ok |= sasl_ct_equal(user, nuser, e->user, e->nuser) &
              sasl_ct_equal(pass, npass, e->pass, e->npass);
    }
    return ok != 0;
}
