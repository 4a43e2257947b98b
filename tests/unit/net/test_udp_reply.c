/* SPDX-License-Identifier: BSD-3-Clause */
/* Replies over UDP: memcached's 8-byte frame, the datagram count, and how
 * much a datagram may be answered with (the reflection bound and the
 * loopback sources it does not apply to). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "net/udp.h"

static void test_frame(void **state)
{
    (void)state;
    unsigned char f[UDP_HEADER_SIZE];
    udp_frame(f, 0x1234, 2, 0x0305);
    static const unsigned char want[] = {0x12, 0x34, 0x00, 0x02, 0x03, 0x05, 0x00, 0x00};
    assert_memory_equal(f, want, sizeof want);
}

static void test_datagram_count(void **state)
{
    (void)state;
    /* 1400-byte datagrams, the frame included: 1392 bytes of reply each */
    assert_int_equal(udp_datagrams(0), 0);
    assert_int_equal(udp_datagrams(1), 1);
    assert_int_equal(udp_datagrams(1392), 1);
    assert_int_equal(udp_datagrams(1393), 2);
    assert_int_equal(udp_datagrams(5025), 4); /* as memcached splits a 5000-byte get */
}

static bool from4(const char *addr)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(11211)};
    assert_int_equal(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
    return udp_from_loopback((struct sockaddr *)&sa, sizeof sa);
}

static bool from6(const char *addr)
{
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(11211)};
    assert_int_equal(inet_pton(AF_INET6, addr, &sa.sin6_addr), 1);
    return udp_from_loopback((struct sockaddr *)&sa, sizeof sa);
}

static void test_loopback_sources(void **state)
{
    (void)state;
    assert_true(from4("127.0.0.1"));
    assert_true(from4("127.0.0.0"));
    assert_true(from4("127.255.255.255"));
    assert_true(from4("127.1.2.3"));
    assert_false(from4("126.255.255.255"));
    assert_false(from4("128.0.0.1"));
    assert_false(from4("0.0.0.0"));
    assert_false(from4("10.0.0.1"));
    assert_false(from4("192.0.2.2"));
    assert_false(from4("255.255.255.255"));
    assert_true(from6("::1"));
    /* IPv4-mapped: our sockets are V6ONLY, so this came as IPv6, from anywhere */
    assert_false(from6("::ffff:127.0.0.1"));
    assert_false(from6("::ffff:10.0.0.1"));
    assert_false(from6("::ffff:128.0.0.1"));
    assert_false(from6("::"));
    assert_false(from6("::2"));
    assert_false(from6("::127.0.0.1"));       /* IPv4-compatible: an IPv6 address */
    assert_false(from6("64:ff9b::127.0.0.1")); /* NAT64: someone else's 127.0.0.1 */
    assert_false(from6("fe80::1"));
    assert_false(from6("fd00::2"));
    assert_false(from6("1::1"));
    assert_false(from6("100::1"));
    /* a short address or another family is never loopback */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_true(udp_from_loopback((struct sockaddr *)&sa, sizeof sa));
    assert_false(udp_from_loopback((struct sockaddr *)&sa, sizeof sa - 1));
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    assert_false(udp_from_loopback((struct sockaddr *)&s6, sizeof s6 - 1));
    struct sockaddr un = {.sa_family = AF_UNIX};
    assert_false(udp_from_loopback(&un, sizeof un));
}

static void test_reply_bound(void **state)
{
    (void)state;
    /* factor times the datagram, for any other source */
    assert_int_equal(udp_reply_bound(10, 17, false), 170);
    assert_int_equal(udp_reply_bound(1, 65536, false), 65536);
    assert_int_equal(udp_reply_bound(1000000, 65536, false), (size_t)1000000 * 65536);
    /* a loopback source: at least UDP_LOOPBACK_REPLY_MAX, 4 MiB */
    assert_int_equal(UDP_LOOPBACK_REPLY_MAX, 4u << 20);
    assert_int_equal(udp_reply_bound(10, 17, true), UDP_LOOPBACK_REPLY_MAX);
    assert_int_equal(udp_reply_bound(1, 65536, true), UDP_LOOPBACK_REPLY_MAX);
    assert_int_equal(udp_reply_bound(1000000, 65536, true), (size_t)1000000 * 65536);
    /* 0: no bound at all (memcached's behaviour) */
    assert_int_equal(udp_reply_bound(0, 17, false), SIZE_MAX);
    assert_int_equal(udp_reply_bound(0, 17, true), SIZE_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame),
        cmocka_unit_test(test_datagram_count),
        cmocka_unit_test(test_loopback_sources),
        cmocka_unit_test(test_reply_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
