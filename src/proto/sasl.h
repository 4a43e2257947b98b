/* SPDX-License-Identifier: BSD-3-Clause */
/* SASL for the binary protocol: the PLAIN mechanism against a password file.
 *
 * nodelay implements PLAIN itself instead of linking Cyrus SASL: PLAIN is a
 * dozen lines (RFC 4616), Cyrus brings a plugin loader, configuration files
 * and a global library state that is awkward to use from several worker
 * threads, and memcached's own plaintext database (MEMCACHED_SASL_PWDB, lines
 * of user:password) is all that memcached users of PLAIN configure. See
 * docs/protocol-binary.md for the file format.
 */
#ifndef NODELAY_PROTO_SASL_H
#define NODELAY_PROTO_SASL_H

#include <stdbool.h>
#include <stddef.h>

/* The mechanisms LIST_MECHS answers, space-separated. */
#define SASL_MECHS "PLAIN"

/* Load the password file named by MEMCACHED_SASL_PWDB. main() calls it at
 * start-up when -S is on, so a bad file stops the server there;
 * otherwise the first authentication loads it. Returns 0, or -1 with a message
 * logged when the variable is set but the file cannot be read. With the
 * variable unset it logs a warning and returns 0: every AUTH then fails. */
int sasl_setup(void);

/* SIGHUP: read the MEMCACHED_SASL_PWDB file again (memcached reads it at
 * every authentication; nodelay at start-up and here, off the request
 * path). Returns 0 (also with the variable unset: nothing to read), or -1
 * (logged) when it cannot be read: the passwords loaded before stay. */
int sasl_reload(void);

/* Free the loaded passwords. */
void sasl_teardown(void);

/* Load a password file (replacing any loaded). Returns 0, or -1 (logged)
 * when it cannot be read. */
int sasl_load_file(const char *path);

/* Load entries from the text of a password file (replacing any loaded).
 * Returns 0, or -1 when out of memory. Used by sasl_setup and by tests (not
 * while workers may be authenticating). */
int sasl_load_text(const char *text, size_t len);

/* True when mech (not NUL-terminated) names a mechanism we offer. */
bool sasl_mech_supported(const char *mech, size_t len);

/* Check a PLAIN message: [authzid] NUL authcid NUL password. True only when
 * the authzid is empty or equal to the authcid and the user and password
 * match an entry. Runs in time independent of where the strings differ. */
bool sasl_plain_check(const char *msg, size_t len);

/* sasl_plain_check's answer in detail, for the lines memcached prints at -v
 * (docs/protocol-binary.md "SASL"). *user is the authcid (not
 * NUL-terminated), *nuser 0 when the message has none. */
enum sasl_plain_verdict {
    SASL_PLAIN_OK,
    SASL_PLAIN_NO_AUTHCID,   /* no NUL after the authzid */
    SASL_PLAIN_NO_PASSWORD,  /* no NUL after the authcid */
    SASL_PLAIN_TRAILING,     /* a NUL inside the password: more than three fields */
    SASL_PLAIN_TOO_LONG,     /* user and password longer than a file entry may be */
    SASL_PLAIN_BAD_PASSWORD, /* no such user, or not its password */
    SASL_PLAIN_NOT_AUTHZID,  /* the right password, asking to act as another user */
};
enum sasl_plain_verdict sasl_plain_verify(const char *msg, size_t len, const char **user,
                                          size_t *nuser);

#endif
