/* SPDX-License-Identifier: BSD-3-Clause */
/* Command-line parsing: memcached's flags, defaults, errors and exit codes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings/settings.h"

struct parsed {
    struct settings s;
    enum settings_result res;
    int code;
    char out[8192];
    char err[2048];
};

/* Parse a NULL-terminated argument list (argv[0] added here). */
static void parse(struct parsed *p, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = "nodelay";
    va_list ap;
    va_start(ap, p);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    memset(p, 0, sizeof *p);
    settings_defaults(&p->s);
    FILE *out = fmemopen(p->out, sizeof p->out - 1, "w");
    FILE *err = fmemopen(p->err, sizeof p->err - 1, "w");
    p->res = settings_parse(&p->s, argc, argv, out, err, &p->code);
    fclose(out);
    fclose(err);
}

static void test_defaults(void **state)
{
    (void)state;
    struct parsed p;
    parse(&p, NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.port, 11211);
    assert_int_equal(p.s.udpport, 0);
    assert_string_equal(p.s.inter, "127.0.0.1");
    assert_int_equal(p.s.maxconns, 1024);
    assert_int_equal(p.s.num_threads, 4);
    assert_int_equal(p.s.reqs_per_event, 20);
    assert_true(SETTINGS_GET(&p.s, maxbytes) == 64u << 20);
    assert_true(p.s.item_size_max == 1u << 20);
    assert_int_equal(p.s.tcp_backlog, 1024);
    assert_string_equal(p.s.binding_protocol, "auto");
    assert_true(p.s.cas_enabled);
    assert_true(p.s.evictions);
    assert_int_equal(p.s.umask, 0700);
    assert_int_equal(p.s.slab_chunk_max, 512 * 1024);
    assert_string_equal(p.s.hash_algorithm, "murmur3");
    settings_release(&p.s);
}

static void test_short_and_long_flags(void **state)
{
    (void)state;
    struct parsed p;
    parse(&p, "-p", "21111", "-m", "128", "-c", "10", "-t", "2", "-R", "5", "-C", "-M", "-A",
          "-b", "99", "-B", "ascii", "-I", "2m", "-F", "-X", "-W", "-vv", "-D", "#", "-a", "644",
          "-k", "-r", "-L", "-f", "1.5", "-n", "64", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.port, 21111);
    assert_true(SETTINGS_GET(&p.s, maxbytes) == 128u << 20);
    assert_int_equal(p.s.maxconns, 10);
    assert_int_equal(p.s.num_threads, 2);
    assert_int_equal(p.s.reqs_per_event, 5);
    assert_false(p.s.cas_enabled);
    assert_false(p.s.evictions);
    assert_true(p.s.shutdown_command);
    assert_int_equal(p.s.tcp_backlog, 99);
    assert_string_equal(p.s.binding_protocol, "ascii");
    assert_true(p.s.item_size_max == 2u << 20);
    assert_int_equal(p.s.slab_chunk_max, 512 * 1024); /* -I above 1m: half a page, as memcached */
    assert_false(p.s.flush_enabled);
    assert_false(p.s.dump_enabled);
    assert_false(p.s.watch_enabled);
    assert_int_equal(SETTINGS_GET(&p.s, verbosity), 2);
    assert_int_equal(p.s.prefix_delimiter, '#');
    assert_true(SETTINGS_GET(&p.s, detail_enabled));
    assert_int_equal(p.s.umask, 0644);
    assert_true(p.s.lock_memory);
    assert_true(p.s.enable_coredumps);
    assert_true(p.s.large_pages);
    assert_true(p.s.growth_factor > 1.49 && p.s.growth_factor < 1.51);
    assert_int_equal(p.s.chunk_size, 64);
    settings_release(&p.s);

    parse(&p, "--port=21112", "--conn-limit", "7", "--threads=3", "--memory-limit=32",
          "--disable-cas", "--listen=::1", "--unix-socket=/tmp/x.sock", "--max-item-size=512k",
          "--protocol=binary", "--enable-shutdown", "--verbose", "--user=nobody", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.port, 21112);
    assert_int_equal(p.s.maxconns, 7);
    assert_int_equal(p.s.num_threads, 3);
    assert_true(SETTINGS_GET(&p.s, maxbytes) == 32u << 20);
    assert_false(p.s.cas_enabled);
    assert_string_equal(p.s.inter, "::1");
    assert_string_equal(p.s.domain_socket, "/tmp/x.sock");
    assert_true(p.s.item_size_max == 512u * 1024);
    assert_string_equal(p.s.binding_protocol, "binary");
    assert_true(p.s.shutdown_command);
    assert_int_equal(SETTINGS_GET(&p.s, verbosity), 1);
    assert_string_equal(p.s.username, "nobody");
    settings_release(&p.s);
}

static void test_listen_list_joined(void **state)
{
    (void)state;
    struct parsed p;
    parse(&p, "-l", "127.0.0.1", "-l", "[::1]:21113", "-l", "10.0.0.1", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_string_equal(p.s.inter, "127.0.0.1,[::1]:21113,10.0.0.1");
    settings_release(&p.s);
    assert_null(p.s.inter_alloc);
}

static void test_extended_suboptions(void **state)
{
    (void)state;
    struct parsed p;
    parse(&p, "-o", "idle_timeout=30,hashpower=20,slab_reassign,slab_automove=2,"
          "lru_crawler,lru_maintainer,hash_algorithm=xxh3,hot_lru_pct=30,warm_lru_pct=30,"
          "slab_chunk_max=256,tail_repair_time=60,temporary_ttl=30,track_sizes,"
          "no_hashexpand,modern,ext_path=/tmp/x:64m,watcher_logbuf_size=512,"
          "read_buf_mem_limit=16,slab_sizes=100-200-300,slab_automove_ratio=0.5,"
          "reply_queue_limit=8",
          NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.idle_timeout, 30);
    assert_int_equal(p.s.hashpower_init, 20);
    assert_int_equal(SETTINGS_GET(&p.s, slab_automove), 2);
    assert_string_equal(p.s.hash_algorithm, "xxh3");
    assert_int_equal(SETTINGS_GET(&p.s, hot_lru_pct), 30);
    assert_int_equal(SETTINGS_GET(&p.s, warm_lru_pct), 30);
    assert_int_equal(p.s.slab_chunk_max, 256 * 1024);
    assert_int_equal(p.s.tail_repair_time, 60);
    assert_true(SETTINGS_GET(&p.s, temp_lru));
    assert_int_equal(SETTINGS_GET(&p.s, temporary_ttl), 30);
    assert_true(p.s.track_sizes);
    assert_false(p.s.hash_expand);
    assert_int_equal(p.s.watcher_logbuf_size, 512 * 1024);
    assert_int_equal(p.s.read_buf_mem_limit, 16);
    assert_true(p.s.reply_queue_limit == 8u << 20);
    settings_release(&p.s);

    parse(&p, "-o", "no_modern", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_false(p.s.slab_reassign);
    assert_false(SETTINGS_GET(&p.s, lru_crawler));
    assert_string_equal(p.s.hash_algorithm, "jenkins");
    assert_false(p.s.maxconns_fast);
    assert_int_equal(p.s.slab_chunk_max, 1 << 20); /* memcached's page size */
    settings_release(&p.s);

    /* a slab_chunk_max given before no_modern stays, as in memcached */
    parse(&p, "-o", "slab_chunk_max=64,no_modern", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.slab_chunk_max, 64 * 1024);
    settings_release(&p.s);
}

struct bad_case {
    const char *a1, *a2, *a3, *a4;
    int code;
    const char *msg;
};

static void test_errors_like_memcached(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"-c", "0", NULL, NULL, 1, "Maximum connections must be greater than 0\n"},
        {"-t", "0", NULL, NULL, 1, "Number of threads must be greater than 0\n"},
        {"-R", "0", NULL, NULL, 1, "Number of requests per event must be greater than 0\n"},
        {"-f", "1", NULL, NULL, 1, "Factor must be greater than 1\n"},
        {"-n", "0", NULL, NULL, 1, "Chunk size must be greater than 0\n"},
        {"-B", "foo", NULL, NULL, 64,
         "Invalid value for binding protocol: foo\n -- should be one of auto, binary, or ascii\n"},
        {"-I", "100", NULL, NULL, 64, "Item max size cannot be less than 1024 bytes.\n"},
        {"-I", "2000m", NULL, NULL, 64,
         "Cannot set item size limit higher than 1/2 of memory max.\n"},
        {"-I", "2m", "-m", "2", 64, "Cannot set item size limit higher than 1/2 of memory max.\n"},
        {"-I", "1025m", "-m", "4096", 64, "Cannot set item size limit higher than a gigabyte.\n"},
        {"-o", "foo", NULL, NULL, 1, "Illegal suboption \"foo\"\n"},
        {"-o", "modern,foo=1", NULL, NULL, 1, "Illegal suboption \"foo=1\"\n"},
        {"-o", "hashpower", NULL, NULL, 1, "Missing numeric argument for hashpower\n"},
        {"-o", "hashpower=5", NULL, NULL, 1, "Initial hashtable multiplier of 5 is too low\n"},
        {"-o", "slab_automove=5", NULL, NULL, 1, "slab_automove must be between 0 and 2\n"},
        {"-o", "slab_automove_window=1", NULL, NULL, 1, "slab_automove_window must be > 2\n"},
        {"-o", "tail_repair_time=5", NULL, NULL, 1,
         "Cannot set tail_repair_time to less than 10 seconds\n"},
        {"-o", "hash_algorithm=foo", NULL, NULL, 1,
         "Unknown hash_algorithm option (jenkins, murmur3, xxh3)\n"},
        {"-o", "lru_crawler_sleep=2000000", NULL, NULL, 1,
         "LRU crawler sleep must be between 0 and 1 second\n"},
        {"-o", "hot_lru_pct=90", NULL, NULL, 1, "hot_lru_pct must be > 1 and < 80\n"},
        {"-o", "hot_lru_pct=50,warm_lru_pct=40", NULL, NULL, 64,
         "hot_lru_pct + warm_lru_pct cannot be more than 80% combined\n"},
        {"-o", "hot_max_factor=0", NULL, NULL, 1, "hot_max_factor must be > 0\n"},
        {"-o", "temporary_ttl=10,no_lru_maintainer", NULL, NULL, 64,
         "temporary_ttl requires lru_maintainer to be enabled\n"},
        {"-o", "read_buf_mem_limit=x", NULL, NULL, 1,
         "could not parse argument to read_buf_mem_limit\n"},
        {"-o", "slab_sizes=100-50", NULL, NULL, 64,
         "slab size 50 cannot be lower than or equal to a previous class size\n"},
        {"-o", "slab_chunk_max=3", NULL, NULL, 64,
         "-I (item_size_max: 1048576) must be evenly divisible by slab_chunk_max (bytes: 3072)\n"},
        {"-q", NULL, NULL, NULL, 1, "nodelay: invalid option -- 'q'\nIllegal argument \"?\"\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct bad_case *c = &cases[i];
        struct parsed p;
        parse(&p, c->a1, c->a2, c->a3, c->a4, NULL);
        if (p.res != SETTINGS_EXIT || p.code != c->code || strcmp(p.err, c->msg) != 0)
            fail_msg("case %zu (%s %s): res %d code %d err \"%s\"", i, c->a1, c->a2 ? c->a2 : "",
                     p.res, p.code, p.err);
        settings_release(&p.s);
    }
}

static void test_nodelay_refusals(void **state)
{
    (void)state;
    struct parsed p;
    /* non-numbers are refused (memcached would read them as 0) */
    parse(&p, "-p", "foo", NULL);
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_equal(p.code, 64);
    assert_non_null(strstr(p.err, "-p"));
    settings_release(&p.s);
    /* UDP: off by default; -U alone moves the TCP port with it */
    parse(&p, "-U", "21114", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.udpport, 21114);
    assert_int_equal(p.s.port, 21114);
    settings_release(&p.s);
    parse(&p, "-U", "21114", "-p", "21115", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.port, 21115);
    settings_release(&p.s);
    parse(&p, "-U", "0", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.port, 11211);
    settings_release(&p.s);
    parse(&p, "-S", "-U", "21114", NULL);
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_equal(p.code, 64);
    settings_release(&p.s);
    parse(&p, "-Z", NULL); /* TLS on; the certificates are checked at start-up */
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_true(p.s.ssl_enabled);
    settings_release(&p.s);
    parse(&p, "-o", "ssl_verify_mode=3,ssl_wbuf_size=8,ssl_chain_cert=/c.pem", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.ssl_verify_mode, 3);
    assert_int_equal(p.s.ssl_wbuf_size, 8 * 1024);
    assert_string_equal(p.s.ssl_chain_cert, "/c.pem"); /* outlives the -o list */
    settings_release(&p.s);
    parse(&p, "-p", NULL);
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_not_equal(p.code, 0);
    settings_release(&p.s);
    parse(&p, "stray", NULL);
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_equal(p.code, 1);
    settings_release(&p.s);
}

static void test_auth_implies_protocol(void **state)
{
    (void)state;
    struct parsed p;
    parse(&p, "-S", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_string_equal(p.s.binding_protocol, "binary");
    settings_release(&p.s);
    parse(&p, "-Y", "/tmp/auth", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_string_equal(p.s.binding_protocol, "ascii");
    settings_release(&p.s);
    parse(&p, "-S", "-B", "ascii", NULL);
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_equal(p.code, 64);
    settings_release(&p.s);
    /* memcached refuses UDP with -Y as with -S; -U 0 keeps it off */
    parse(&p, "-Y", "/tmp/auth", "-U", "21114", NULL);
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_equal(p.code, 64);
    assert_non_null(strstr(p.err, "Cannot use UDP with ascii authentication enabled"));
    settings_release(&p.s);
    parse(&p, "-Y", "/tmp/auth", "-U", "0", NULL);
    assert_int_equal(p.res, SETTINGS_RUN);
    settings_release(&p.s);
}

static void test_help_and_version(void **state)
{
    (void)state;
    struct parsed p;
    parse(&p, "-V", NULL);
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_equal(p.code, 0);
    assert_non_null(strstr(p.out, "1.6.45"));
    settings_release(&p.s);
    parse(&p, "-h", NULL);
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_equal(p.code, 0);
    /* every short flag is documented */
    const char *flags = "pUsaAldrumMckvhiVPfnLDtRCbBISFXWYeZNo";
    for (const char *f = flags; *f; f++) {
        char needle[4] = {'-', *f, 0, 0};
        if (!strstr(p.out, needle))
            fail_msg("-h does not document -%c", *f);
    }
    assert_non_null(strstr(p.out, "idle_timeout"));
    assert_non_null(strstr(p.out, "1.6.45"));
    settings_release(&p.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_short_and_long_flags),
        cmocka_unit_test(test_listen_list_joined),
        cmocka_unit_test(test_extended_suboptions),
        cmocka_unit_test(test_errors_like_memcached),
        cmocka_unit_test(test_nodelay_refusals),
        cmocka_unit_test(test_auth_implies_protocol),
        cmocka_unit_test(test_help_and_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
