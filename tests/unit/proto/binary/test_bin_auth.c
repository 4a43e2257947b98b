/* SPDX-License-Identifier: BSD-3-Clause */
/* SASL (-S) through the binary protocol: what is allowed before
 * authentication, PLAIN in one step and in two, failures, CVE-2013-7239
 * (a failed attempt never leaves a connection authenticated), counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_bin_harness.h"
#include "proto/sasl.h"

#define MSG(lit) lit, sizeof(lit) - 1

static int setup(void **state)
{
    struct th *t = th_create();
    t->settings.sasl = true;
    th_session(t);
    const char pwdb[] = "user:pass\nother:word\n";
    if (sasl_load_text(pwdb, sizeof pwdb - 1) != 0)
        return -1;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    th_destroy(*state);
    sasl_teardown();
    return 0;
}

static struct th_resp next(struct th *t, size_t *pos, uint8_t op, uint16_t status)
{
    struct th_resp r;
    if (!th_next(t, pos, &r))
        fail_msg("no response (opcode %02x expected)", op);
    assert_int_equal(r.opcode, op);
    assert_int_equal(r.status, status);
    return r;
}

static void auth(struct th *t, uint8_t op, const char *mech, const char *data, size_t n)
{
    th_do(t, op, NULL, 0, mech, data, n, 0);
}

static void test_refused_until_authenticated(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_do(t, BIN_OP_VERSION, NULL, 0, NULL, NULL, 0, 0);
    next(t, &pos, BIN_OP_VERSION, 0);
    th_do(t, BIN_OP_SASL_LIST_MECHS, NULL, 0, NULL, NULL, 0, 0);
    struct th_resp r = next(t, &pos, BIN_OP_SASL_LIST_MECHS, 0);
    assert_int_equal(r.nvalue, 5);
    assert_memory_equal(r.value, "PLAIN", 5);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    r = next(t, &pos, BIN_OP_GET, BIN_STATUS_AUTH_ERROR);
    assert_memory_equal(r.value, "Auth failure.", 13);
    assert_true(t->closed);
}

static void test_noop_refused(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    th_do(t, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    next(t, &pos, BIN_OP_NOOP, BIN_STATUS_AUTH_ERROR);
    assert_true(t->closed);
}

static void test_plain_one_step(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    auth(t, BIN_OP_SASL_AUTH, "PLAIN", MSG("\0user\0pass"));
    struct th_resp r = next(t, &pos, BIN_OP_SASL_AUTH, 0);
    assert_int_equal(r.nvalue, 13);
    assert_memory_equal(r.value, "Authenticated", 13);
    th_set(t, BIN_OP_SET, "k", "v", 0, 0, 0);
    next(t, &pos, BIN_OP_SET, 0);
    assert_false(t->closed);
    assert_int_equal(t->stats.auth_cmds, 1);
    assert_int_equal(t->stats.auth_errors, 0);
}

static void test_plain_two_steps(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    auth(t, BIN_OP_SASL_AUTH, "PLAIN", NULL, 0);
    struct th_resp r = next(t, &pos, BIN_OP_SASL_AUTH, BIN_STATUS_AUTH_CONTINUE);
    assert_int_equal(r.bodylen, 0);
    auth(t, BIN_OP_SASL_STEP, "PLAIN", MSG("\0other\0word"));
    next(t, &pos, BIN_OP_SASL_STEP, 0);
    th_do(t, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    next(t, &pos, BIN_OP_NOOP, 0);
}

static void test_failures(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    auth(t, BIN_OP_SASL_AUTH, "PLAIN", MSG("\0user\0wrong"));
    struct th_resp r = next(t, &pos, BIN_OP_SASL_AUTH, BIN_STATUS_AUTH_ERROR);
    assert_memory_equal(r.value, "Auth failure.", 13);
    auth(t, BIN_OP_SASL_AUTH, "CRAM-MD5", MSG("\0user\0pass"));
    next(t, &pos, BIN_OP_SASL_AUTH, BIN_STATUS_AUTH_ERROR);
    auth(t, BIN_OP_SASL_STEP, "PLAIN", MSG("\0user\0pass")); /* no AUTH before */
    next(t, &pos, BIN_OP_SASL_STEP, BIN_STATUS_AUTH_ERROR);
    char mech[40];
    memset(mech, 'M', 33);
    mech[33] = '\0';
    auth(t, BIN_OP_SASL_AUTH, mech, MSG("\0user\0pass"));
    next(t, &pos, BIN_OP_SASL_AUTH, BIN_STATUS_EINVAL);
    assert_false(t->closed);
    /* a long message is received, then fails */
    char big[2000];
    memset(big, 'x', sizeof big);
    auth(t, BIN_OP_SASL_AUTH, "PLAIN", big, sizeof big);
    next(t, &pos, BIN_OP_SASL_AUTH, BIN_STATUS_AUTH_ERROR);
    assert_int_equal(t->stats.auth_cmds, 4);
    assert_int_equal(t->stats.auth_errors, 4);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    next(t, &pos, BIN_OP_GET, BIN_STATUS_AUTH_ERROR);
    assert_true(t->closed);
}

/* CVE-2013-7239: authenticate, fail a second attempt, and be refused. */
static void test_failed_reauth_drops(void **state)
{
    struct th *t = *state;
    size_t pos = 0;
    auth(t, BIN_OP_SASL_AUTH, "PLAIN", MSG("\0user\0pass"));
    next(t, &pos, BIN_OP_SASL_AUTH, 0);
    auth(t, BIN_OP_SASL_AUTH, "PLAIN", MSG("\0user\0nope"));
    next(t, &pos, BIN_OP_SASL_AUTH, BIN_STATUS_AUTH_ERROR);
    th_do(t, BIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    next(t, &pos, BIN_OP_GET, BIN_STATUS_AUTH_ERROR);
    assert_true(t->closed);
}

static void test_split_auth(void **state)
{
    struct th *t = *state;
    unsigned char buf[128];
    size_t n = th_req(buf, BIN_OP_SASL_AUTH, NULL, 0, "PLAIN", "\0user\0pass", 10, 0);
    n += th_req(buf + n, BIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    th_send_step(t, buf, n, 1);
    size_t pos = 0;
    next(t, &pos, BIN_OP_SASL_AUTH, 0);
    next(t, &pos, BIN_OP_NOOP, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refused_until_authenticated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_noop_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_one_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_two_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_reauth_drops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_auth, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
