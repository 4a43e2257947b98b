/* SPDX-License-Identifier: BSD-3-Clause */
/* The `stats conns` registry: rows in fd order through the emitter, and
 * connection_structures counting descriptors ever used, as memcached keeps
 * one conn struct per descriptor it has seen. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "stats/registry.h"
#include "stats/stats_emit.h"

struct rows {
    char text[1024];
    size_t len;
};

static int collect(void *ctx, const char *name, size_t nname, const char *value, size_t nvalue)
{
    struct rows *r = ctx;
    int n = snprintf(r->text + r->len, sizeof r->text - r->len, "%.*s=%.*s;", (int)nname, name,
                     (int)nvalue, value);
    assert_true(n > 0 && (size_t)n < sizeof r->text - r->len);
    r->len += (size_t)n;
    return 0;
}

static void test_structures_count_descriptors_ever_used(void **state)
{
    (void)state;
    struct registry r;
    assert_int_equal(registry_init(&r), 0);
    struct registry_entry a = {.fd = 5}, b = {.fd = 7}, c = {.fd = 5}, far = {.fd = 700};
    assert_int_equal(registry_add(&r, &a), 0);
    assert_int_equal(registry_add(&r, &b), 0);
    assert_int_equal(registry_structures(&r), 2);
    registry_remove(&r, &a);
    /* fd 5 comes back for another connection: the same structure */
    assert_int_equal(registry_add(&r, &c), 0);
    assert_int_equal(registry_structures(&r), 2);
    /* a descriptor past the table grows it and counts once */
    assert_int_equal(registry_add(&r, &far), 0);
    assert_int_equal(registry_structures(&r), 3);
    registry_remove(&r, &far);
    registry_remove(&r, &b);
    registry_remove(&r, &c);
    assert_int_equal(registry_structures(&r), 3);
    struct registry_entry bad = {.fd = -1};
    assert_int_equal(registry_add(&r, &bad), -1);
    registry_release(&r);
}

static void test_rows_in_fd_order(void **state)
{
    (void)state;
    struct registry r;
    assert_int_equal(registry_init(&r), 0);
    struct registry_entry l = {.fd = 3, .state = REGISTRY_LISTENING, .last_cmd = 10};
    snprintf(l.addr, sizeof l.addr, "tcp:127.0.0.1:11211");
    struct registry_entry c = {.fd = 9, .listen_addr = "tcp:127.0.0.1:11211",
                               .state = REGISTRY_NREAD, .last_cmd = 12};
    snprintf(c.addr, sizeof c.addr, "tcp:127.0.0.1:40000");
    assert_int_equal(registry_add(&r, &c), 0);
    assert_int_equal(registry_add(&r, &l), 0);
    struct rows rows = {0};
    struct stats_emit e = {.fn = collect, .ctx = &rows};
    assert_int_equal(registry_compose(&r, 15, &e), 0);
    assert_string_equal(rows.text,
                        "3:addr=tcp:127.0.0.1:11211;3:state=conn_listening;"
                        "3:secs_since_last_cmd=5;"
                        "9:addr=tcp:127.0.0.1:40000;9:listen_addr=tcp:127.0.0.1:11211;"
                        "9:state=conn_nread;9:secs_since_last_cmd=3;");
    registry_remove(&r, &c);
    registry_remove(&r, &l);
    registry_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structures_count_descriptors_ever_used),
        cmocka_unit_test(test_rows_in_fd_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
