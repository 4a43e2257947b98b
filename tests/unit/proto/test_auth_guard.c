/* SPDX-License-Identifier: BSD-3-Clause */
/* Password-guessing limits and the shared password-file loader. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "proto/auth_guard.h"
#include "proto/passwd.h"

static int reset(void **state)
{
    (void)state;
    auth_guard_reset();
    return 0;
}

static void test_per_connection(void **state)
{
    (void)state;
    struct auth_guard g;
    auth_guard_init(&g, "tcp:10.0.0.1:5000");
    assert_true(g.has_addr);
    assert_false(auth_guard_failed(&g, 3, 100));
    assert_false(auth_guard_failed(&g, 3, 100));
    assert_true(auth_guard_failed(&g, 3, 100)); /* the 3rd closes */
    /* limit 0: no limit at all */
    struct auth_guard off;
    auth_guard_init(&off, "tcp:10.0.0.2:5000");
    for (int i = 0; i < 1000; i++)
        assert_false(auth_guard_failed(&off, 0, 100));
    assert_true(auth_guard_admit(&off, 0, 100));
}

static void test_per_address_window(void **state)
{
    (void)state;
    const int limit = 2; /* 8 failures a minute per address */
    for (int i = 0; i < 4; i++) {
        struct auth_guard g;
        /* other ports of the same address count together */
        char peer[64];
        snprintf(peer, sizeof peer, "tcp:192.0.2.7:%d", 4000 + i);
        auth_guard_init(&g, peer);
        assert_true(auth_guard_admit(&g, limit, 100));
        auth_guard_failed(&g, limit, 100);
        auth_guard_failed(&g, limit, 100);
    }
    struct auth_guard next, other, later;
    auth_guard_init(&next, "tcp:192.0.2.7:9999");
    assert_false(auth_guard_admit(&next, limit, 100 + AUTH_GUARD_WINDOW - 1));
    auth_guard_init(&other, "tcp:192.0.2.8:9999");
    assert_true(auth_guard_admit(&other, limit, 100));
    /* the minute over, the address may try again */
    auth_guard_init(&later, "tcp6:[2001:db8::1]:1");
    assert_true(auth_guard_admit(&next, limit, 100 + AUTH_GUARD_WINDOW));
    assert_true(auth_guard_admit(&later, limit, 100));
}

static void test_no_address(void **state)
{
    (void)state;
    struct auth_guard g;
    auth_guard_init(&g, NULL);
    assert_false(g.has_addr);
    auth_guard_init(&g, "unix:/tmp/sock");
    assert_false(g.has_addr);
    for (int i = 0; i < 100; i++)
        (void)auth_guard_failed(&g, 5, 100);
    assert_true(auth_guard_admit(&g, 5, 100)); /* only the connection limit */
}

static void test_passwd_formats(void **state)
{
    (void)state;
    struct passwd_file y = PASSWD_FILE_INIT(PASSWD_AUTHFILE);
    static const char yfile[] = "alice:a:b\r\nbob:pw"; /* no final newline */
    assert_int_equal(passwd_file_load_text(&y, yfile, sizeof yfile - 1), 0);
    assert_int_equal(passwd_file_count(&y), 2);
    assert_true(passwd_file_check(&y, "alice", 5, "a:b", 3)); /* the rest of the line */
    assert_true(passwd_file_check(&y, "bob", 3, "pw", 2));
    assert_false(passwd_file_check(&y, "bob", 3, "pw ", 3));
    assert_false(passwd_file_check(&y, "bo", 2, "pw", 2));
    static const char bad[] = "alice:x\nnocolon\n";
    assert_int_equal(passwd_file_load_text(&y, bad, sizeof bad - 1), -1);
    assert_true(passwd_file_check(&y, "bob", 3, "pw", 2)); /* the old list stays */
    passwd_file_unload(&y);
    assert_false(passwd_file_check(&y, "bob", 3, "pw", 2));

    struct passwd_file sdb = PASSWD_FILE_INIT(PASSWD_SASLDB);
    static const char sfile[] = "alice:a:ignored\nnocolon\n:nouser\nalice:second\n";
    assert_int_equal(passwd_file_load_text(&sdb, sfile, sizeof sfile - 1), 0);
    assert_int_equal(passwd_file_count(&sdb), 1);
    assert_true(passwd_file_check(&sdb, "alice", 5, "a", 1));
    assert_false(passwd_file_check(&sdb, "alice", 5, "second", 6)); /* the first line counts */
    passwd_file_unload(&sdb);
}

static void test_ct_equal(void **state)
{
    (void)state;
    assert_true(passwd_ct_equal("abc", 3, "abc", 3));
    assert_false(passwd_ct_equal("abc", 3, "abd", 3));
    assert_false(passwd_ct_equal("abc", 3, "abc\0", 4));
    assert_true(passwd_ct_equal("", 0, "", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_per_connection, reset),
        cmocka_unit_test_setup(test_per_address_window, reset),
        cmocka_unit_test_setup(test_no_address, reset),
        cmocka_unit_test(test_passwd_formats),
        cmocka_unit_test(test_ct_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
