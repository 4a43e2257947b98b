/* SPDX-License-Identifier: BSD-3-Clause */
/* -l entries: memcached's address forms, split into host and port. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "net/listener.h"

static void check(const char *entry, const char *host, int port)
{
    char h[256];
    int p = -2;
    if (listener_parse_addr(entry, h, sizeof h, 11211, &p) != 0)
        fail_msg("%s: refused", entry);
    if (strcmp(h, host) != 0 || p != port)
        fail_msg("%s: got host \"%s\" port %d", entry, h, p);
}

static void test_forms(void **state)
{
    (void)state;
    check("127.0.0.1", "127.0.0.1", 11211);
    check("127.0.0.1:21100", "127.0.0.1", 21100);
    check("localhost:21101", "localhost", 21101);
    check("[::1]:21102", "::1", 21102);
    check("[::1]", "::1", 11211);
    check("::1", "::1", 11211);
    check("fe80::1:2", "fe80::1:2", 11211);
    check("*", "", 11211);
    check("*:21103", "", 21103);
    check("proto[ascii]:127.0.0.1:21104", "127.0.0.1", 21104);
    check("tag[web]:proto[binary]:[::1]:21105", "::1", 21105);
}

static void test_malformed(void **state)
{
    (void)state;
    const char *bad[] = {"[::1", "[::1]x", "127.0.0.1:", "127.0.0.1:abc", "127.0.0.1:70000",
                         "proto[ascii", NULL};
    for (int i = 0; bad[i]; i++) {
        char h[256];
        int p;
        if (listener_parse_addr(bad[i], h, sizeof h, 11211, &p) == 0)
            fail_msg("%s: accepted", bad[i]);
    }
    /* a host longer than the buffer is refused, not truncated */
    char h[4];
    int p;
    assert_int_equal(listener_parse_addr("localhost", h, sizeof h, 1, &p), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
