/* Replies over UDP: memcached's 8-byte frame and the datagram count. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame),
        cmocka_unit_test(test_datagram_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
