/* SPDX-License-Identifier: BSD-3-Clause */
/* SASL PLAIN against memcached's plaintext password file. */
#include "proto/sasl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "proto/passwd.h"

/* memcached reads lines of at most 255 bytes and refuses user + password
 * longer than 252; nothing longer can ever authenticate. */
#define SASL_ENTRY_MAX 252

/* Read at start-up (or by the first authentication) and on SIGHUP; shared
 * loader and check with -Y (proto/passwd.c). */
static struct passwd_file sasl_pw = PASSWD_FILE_INIT(PASSWD_SASLDB);

void sasl_teardown(void)
{
    passwd_file_unload(&sasl_pw);
}

int sasl_load_text(const char *text, size_t len)
{
    return passwd_file_load_text(&sasl_pw, text, len);
}

int sasl_load_file(const char *path)
{
    if (passwd_file_load(&sasl_pw, path) != 0) {
        log_error("failed to read the SASL password file %s: %s", path, strerror(errno));
        return -1;
    }
    log_info("SASL: %zu users loaded from %s", passwd_file_count(&sasl_pw), path);
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

int sasl_setup(void)
{
    pthread_once(&sasl_once, sasl_load_once);
    return sasl_load_rc;
}

int sasl_reload(void)
{
    pthread_once(&sasl_once, sasl_load_once); /* a first load is not repeated */
    const char *path = getenv("MEMCACHED_SASL_PWDB");
    return path ? sasl_load_file(path) : 0;
}

bool sasl_mech_supported(const char *mech, size_t len)
{
    /* Mechanism names are case-insensitive (RFC 4422). */
    return len == 5 && strncasecmp(mech, "PLAIN", 5) == 0;
}

/* The field at *p up to the next NUL, which it steps over; false when no
 * NUL is left in the *rest bytes. */
static bool sasl_plain_field(const char **p, size_t *rest, size_t *n)
{
    const char *nul = memchr(*p, '\0', *rest);
    if (!nul)
        return false;
    *n = (size_t)(nul - *p);
    *rest -= *n + 1;
    *p = nul + 1;
    return true;
}

/* In the order Cyrus SASL's PLAIN plugin checks, under memcached: the
 * message's three fields, then the password (memcached's password-file
 * callback, which refuses an over-long entry first), then whether the
 * authcid may act as the authzid. */
enum sasl_plain_verdict sasl_plain_verify(const char *msg, size_t len, const char **user_out,
                                          size_t *nuser_out)
{
    pthread_once(&sasl_once, sasl_load_once);
    *user_out = msg;
    *nuser_out = 0;
    const char *p = msg, *user;
    size_t rest = len, nauthz, nuser;
    if (!sasl_plain_field(&p, &rest, &nauthz))
        return SASL_PLAIN_NO_AUTHCID;
    user = p;
    if (!sasl_plain_field(&p, &rest, &nuser))
        return SASL_PLAIN_NO_PASSWORD;
    const char *pass = p;
    size_t npass = rest;
    *user_out = user;
    *nuser_out = nuser;
    if (memchr(pass, '\0', npass))
        return SASL_PLAIN_TRAILING;
    if (nuser + npass > SASL_ENTRY_MAX)
        return SASL_PLAIN_TOO_LONG;
    if (nuser == 0 || !passwd_file_check(&sasl_pw, user, nuser, pass, npass))
        return SASL_PLAIN_BAD_PASSWORD;
    /* Acting as another user is not something a password file can grant. */
    if (nauthz != 0 && !(nauthz == nuser && memcmp(msg, user, nuser) == 0))
        return SASL_PLAIN_NOT_AUTHZID;
    return SASL_PLAIN_OK;
}

bool sasl_plain_check(const char *msg, size_t len)
{
    const char *user;
    size_t nuser;
    return sasl_plain_verify(msg, len, &user, &nuser) == SASL_PLAIN_OK;
}
