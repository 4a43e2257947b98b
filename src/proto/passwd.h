/* SPDX-License-Identifier: BSD-3-Clause */
/* Password files, one loader and one check for both users of them: -Y ascii
 * authentication (memcached's authfile: "user:pass" lines, reloaded on
 * SIGHUP) and SASL PLAIN (memcached's MEMCACHED_SASL_PWDB: "user:pass[:x]",
 * read at start-up and on SIGHUP). The formats differ in small ways memcached gives them, so a
 * file is loaded with its format's rules; the check is the same for both:
 * it visits every entry and compares in time that depends on the lengths
 * only, so neither which user exists nor where a guess first goes wrong can
 * be timed. */
#ifndef NODELAY_PROTO_PASSWD_H
#define NODELAY_PROTO_PASSWD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

enum passwd_format {
    PASSWD_AUTHFILE, /* -Y: a line without ':' makes the file invalid; the
                        password is the rest of the line */
    PASSWD_SASLDB,   /* SASL: lines without a user are skipped; the password
                        ends at the next ':'; a user's first line counts */
};

struct passwd_db;

/* A file's current contents, replaced whole on reload. */
struct passwd_file {
    pthread_mutex_t lock; /* taken by loads and checks (authentication only) */
    struct passwd_db *db; /* NULL until loaded */
    enum passwd_format format;
};

#define PASSWD_FILE_INIT(fmt) {PTHREAD_MUTEX_INITIALIZER, NULL, (fmt)}

/* Replace the contents with the file at path, or with text. 0, or -1 with
 * errno (EINVAL: a malformed -Y file; the old contents stay). */
int passwd_file_load(struct passwd_file *pf, const char *path);
int passwd_file_load_text(struct passwd_file *pf, const char *text, size_t len);
/* Drop the contents: every check fails until the next load. */
void passwd_file_unload(struct passwd_file *pf);
bool passwd_file_loaded(struct passwd_file *pf);
size_t passwd_file_count(struct passwd_file *pf);

/* True when user and pass match an entry. */
bool passwd_file_check(struct passwd_file *pf, const char *user, size_t nuser, const char *pass,
                       size_t npass);

/* Equal, in time that depends on the lengths only. */
bool passwd_ct_equal(const char *a, size_t na, const char *b, size_t nb);

#endif
