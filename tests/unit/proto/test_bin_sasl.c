/* SPDX-License-Identifier: BSD-3-Clause */
/* SASL PLAIN: the password file and the PLAIN message check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/sasl.h"

#define PLAIN(lit) lit, sizeof(lit) - 1

static int setup(void **state)
{
    (void)state;
    const char *pwdb = "alice:secret\n"
                       "bob:hunter2:extra tokens\r\n"
                       "\n"
                       "nocolon\n"
                       "alice:second-line-ignored\n"
                       "carol:";
    return sasl_load_text(pwdb, strlen(pwdb));
}

static int teardown(void **state)
{
    (void)state;
    sasl_teardown();
    return 0;
}

/* The detail behind a refusal, in the order Cyrus's PLAIN checks (the -v
 * lines, bin_sasl.c), and the authcid it names. */
static void test_verdicts(void **state)
{
    (void)state;
    const char *user;
    size_t n;
    assert_int_equal(sasl_plain_verify(PLAIN("\0alice\0secret"), &user, &n), SASL_PLAIN_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(user, "alice", 5);
    assert_int_equal(sasl_plain_verify(PLAIN("alice"), &user, &n), SASL_PLAIN_NO_AUTHCID);
    assert_int_equal(n, 0);
    assert_int_equal(sasl_plain_verify(PLAIN("\0alice"), &user, &n), SASL_PLAIN_NO_PASSWORD);
    assert_int_equal(sasl_plain_verify(PLAIN("\0alice\0secret\0x"), &user, &n),
                     SASL_PLAIN_TRAILING);
    assert_int_equal(sasl_plain_verify(PLAIN("\0alice\0wrong"), &user, &n),
                     SASL_PLAIN_BAD_PASSWORD);
    assert_int_equal(sasl_plain_verify(PLAIN("\0mallory\0secret"), &user, &n),
                     SASL_PLAIN_BAD_PASSWORD);
    assert_int_equal(n, 7);
    assert_memory_equal(user, "mallory", 7);
    /* the password is checked before the authzid, as Cyrus does */
    assert_int_equal(sasl_plain_verify(PLAIN("bob\0alice\0wrong"), &user, &n),
                     SASL_PLAIN_BAD_PASSWORD);
    assert_int_equal(sasl_plain_verify(PLAIN("bob\0alice\0secret"), &user, &n),
                     SASL_PLAIN_NOT_AUTHZID);
    char msg[300] = {0};
    memcpy(msg + 1, "alice", 5);
    memset(msg + 7, 'p', sizeof msg - 7);
    assert_int_equal(sasl_plain_verify(msg, sizeof msg, &user, &n), SASL_PLAIN_TOO_LONG);
}

static void test_good(void **state)
{
    (void)state;
    assert_true(sasl_plain_check(PLAIN("\0alice\0secret")));
    assert_true(sasl_plain_check(PLAIN("alice\0alice\0secret"))); /* authzid = authcid */
    assert_true(sasl_plain_check(PLAIN("\0bob\0hunter2")));       /* ends at ':' */
    assert_true(sasl_plain_check(PLAIN("\0carol\0")));            /* empty password */
}

static void test_bad(void **state)
{
    (void)state;
    assert_false(sasl_plain_check(PLAIN("\0alice\0secre")));
    assert_false(sasl_plain_check(PLAIN("\0alice\0secret2")));
    assert_false(sasl_plain_check(PLAIN("\0alice\0second-line-ignored")));
    assert_false(sasl_plain_check(PLAIN("\0bob\0hunter2:extra tokens")));
    assert_false(sasl_plain_check(PLAIN("bob\0alice\0secret"))); /* act as another user */
    assert_false(sasl_plain_check(PLAIN("\0mallory\0secret")));
    assert_false(sasl_plain_check(PLAIN("\0\0secret")));
    assert_false(sasl_plain_check(PLAIN("\0nocolon\0")));
    assert_false(sasl_plain_check(PLAIN("alice\0secret")));   /* one NUL only */
    assert_false(sasl_plain_check(PLAIN("alicesecret")));
    assert_false(sasl_plain_check("", 0));
    assert_false(sasl_plain_check(PLAIN("\0ALICE\0secret")));
}

static void test_too_long(void **state)
{
    (void)state;
    char msg[600];
    memset(msg, 'a', sizeof msg);
    msg[0] = '\0';
    memcpy(msg + 1, "alice", 5);
    msg[6] = '\0';
    assert_false(sasl_plain_check(msg, sizeof msg));
}

static void test_mechs(void **state)
{
    (void)state;
    assert_true(sasl_mech_supported("PLAIN", 5));
    assert_true(sasl_mech_supported("plain", 5));
    assert_false(sasl_mech_supported("PLAINX", 6));
    assert_false(sasl_mech_supported("CRAM-MD5", 8));
    assert_false(sasl_mech_supported("", 0));
}

static void test_empty_file(void **state)
{
    (void)state;
    assert_int_equal(sasl_load_text("", 0), 0);
    assert_false(sasl_plain_check(PLAIN("\0alice\0secret")));
    assert_int_equal(setup(NULL), 0);
    assert_true(sasl_plain_check(PLAIN("\0alice\0secret")));
}

static void test_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_bin_sasl_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char pwdb[] = "dave:pw1\r\neve:pw2";
    assert_int_equal(write(fd, pwdb, sizeof pwdb - 1), (ssize_t)(sizeof pwdb - 1));
    close(fd);
    assert_int_equal(sasl_load_file(path), 0);
    assert_true(sasl_plain_check(PLAIN("\0dave\0pw1")));
    assert_true(sasl_plain_check(PLAIN("\0eve\0pw2")));
    assert_false(sasl_plain_check(PLAIN("\0alice\0secret"))); /* replaced */
    /* The environment's file is read once per process: the earlier checks
     * already did that (with the variable unset), so sasl_setup now neither
     * re-reads nor replaces what is loaded. */
    assert_int_equal(setenv("MEMCACHED_SASL_PWDB", path, 1), 0);
    assert_int_equal(sasl_load_text("", 0), 0);
    assert_int_equal(sasl_setup(), 0);
    assert_false(sasl_plain_check(PLAIN("\0dave\0pw1")));
    unlink(path);
    assert_int_equal(sasl_load_file(path), -1);
    unsetenv("MEMCACHED_SASL_PWDB");
    assert_int_equal(setup(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_verdicts),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_mechs),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
