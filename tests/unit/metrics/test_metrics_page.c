/* SPDX-License-Identifier: BSD-3-Clause */
/* The /metrics page composed with no socket: a server over a small store
 * with a few items, no workers and no listeners. The page must be valid
 * Prometheus text (every family announced by one HELP and one TYPE line
 * right before its samples, legal names, counters named _total, numeric
 * values), carry memcached_exporter's names for memcached's fields, and
 * show what the store holds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/clock.h"
#include "metrics/metrics.h"
#include "settings/options.h"
#include "reply/reply.h"
#include "server/server.h"
#include "server/server_ops.h"
#include "settings/settings.h"
#include "store/store.h"

#define MEM (8u << 20)
#define MAX_FAMILIES 1024

struct fixture {
    struct settings set;
    struct options opt;
    struct server srv;
    struct store_ctx *ctx;
    char flash_dir[64], flash_path[96]; /* "" without a flash tier */
};

/* With flash: FLASH bytes in 64 KiB pages (ext_wbuf_size), where items of
 * 512 bytes and up go when evicted from RAM. */
#define FLASH (16u << 20)
#define FLASH_WBUF (64u << 10)

static void fixture_open_ex(struct fixture *f, bool flash)
{
    memset(f, 0, sizeof *f);
    settings_defaults(&f->set);
    SETTINGS_SET(&f->set, maxbytes, MEM);
    options_from_settings(&f->set, &f->opt);
    if (flash) {
        snprintf(f->flash_dir, sizeof f->flash_dir, "/tmp/nd-metrics-XXXXXX");
        assert_non_null(mkdtemp(f->flash_dir));
        snprintf(f->flash_path, sizeof f->flash_path, "%s/flash", f->flash_dir);
        f->opt.store.flash = (struct store_flash_options){
            .nfiles = 1,
            .paths = {f->flash_path},
            .sizes = {FLASH},
            .page_size = 256u << 10,
            .wbuf_size = FLASH_WBUF,
            .threads = 1,
            .item_size = 512,
            .item_age = UINT32_MAX,
            .max_frag = 0.8,
            .max_sleep = 1000000,
        };
    }
    assert_int_equal(server_init(&f->srv, &f->set, &f->opt.net, &f->opt.proto), 0);
    assert_int_equal(store_create(&f->srv.pool.store, &f->opt.store), 0);
    assert_true(registry_init(&f->srv.pool.registry) >= 0);
    f->ctx = store_ctx_create(f->srv.pool.store);
    assert_non_null(f->ctx);
}

static void fixture_open(struct fixture *f)
{
    fixture_open_ex(f, false);
}

static void fixture_close(struct fixture *f)
{
    store_ctx_destroy(&f->ctx);
    registry_release(&f->srv.pool.registry);
    store_destroy(&f->srv.pool.store);
    server_release(&f->srv);
    settings_release(&f->set);
    if (f->flash_path[0]) {
        unlink(f->flash_path);
        rmdir(f->flash_dir);
    }
}

static void put(struct fixture *f, const char *key, const char *value)
{
    struct store_set_req r = {.mode = STORE_MODE_SET};
    assert_int_equal(store_store(f->ctx, key, strlen(key), value, strlen(value), &r, NULL),
                     STORE_OK);
}

/* The page as one NUL-terminated string (the caller frees it). */
static char *compose(struct fixture *f)
{
    struct reply_queue q;
    reply_init(&q);
    assert_int_equal(metrics_compose(&f->srv, &q), 0);
    size_t cap = reply_pending(&q) + 1, len = 0;
    char *page = malloc(cap);
    assert_non_null(page);
    struct iovec iov[64];
    /* the queue is drained in bounded steps: at most `cap` bytes in all */
    for (int guard = 0; reply_pending(&q) > 0 && guard < 100000; guard++) {
        int n = reply_iov(&q, iov, 64);
        assert_true(n > 0);
        size_t took = 0;
        for (int i = 0; i < n; i++) {
            assert_true(len + iov[i].iov_len < cap);
            memcpy(page + len, iov[i].iov_base, iov[i].iov_len);
            len += iov[i].iov_len;
            took += iov[i].iov_len;
        }
        reply_consume(&q, took);
    }
    assert_int_equal(reply_pending(&q), 0);
    page[len] = '\0';
    reply_release(&q);
    return page;
}

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == ':'))
            return false;
    }
    return true;
}

/* The family a sample belongs to: its name, less a histogram's suffix. */
static bool in_family(const char *name, size_t n, const char *fam, const char *type)
{
    size_t fl = strlen(fam);
    if (n == fl && memcmp(name, fam, n) == 0)
        return true;
    if (strcmp(type, "histogram") != 0 || n <= fl || memcmp(name, fam, fl) != 0)
        return false;
    const char *rest = name + fl;
    size_t rl = n - fl;
    return (rl == 7 && memcmp(rest, "_bucket", 7) == 0) ||
           (rl == 4 && memcmp(rest, "_sum", 4) == 0) || (rl == 6 && memcmp(rest, "_count", 6) == 0);
}

/* Walk the page line by line and check its grammar; returns the families. */
static size_t check_grammar(char *page)
{
    static char fams[MAX_FAMILIES][128];
    size_t nfam = 0;
    char fam[128] = "", type[16] = "";
    bool want_type = false;
    size_t samples = 0;
    for (char *line = page, *next; *line; line = next) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl); /* every line ends in \n, the last one too */
        *nl = '\0';
        next = nl + 1;
        if (strncmp(line, "# HELP ", 7) == 0) {
            assert_false(want_type);
            const char *name = line + 7, *sp = strchr(name, ' ');
            assert_non_null(sp);
            assert_true(sp[1] != '\0'); /* a help text follows */
            assert_true(name_ok(name, (size_t)(sp - name)));
            assert_true((size_t)(sp - name) < sizeof fam);
            snprintf(fam, sizeof fam, "%.*s", (int)(sp - name), name);
            for (size_t i = 0; i < nfam; i++)
                if (strcmp(fams[i], fam) == 0)
                    fail_msg("family %s announced twice", fam);
            assert_true(nfam < MAX_FAMILIES);
            strcpy(fams[nfam++], fam);
            want_type = true;
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            assert_true(want_type);
            size_t fl = strlen(fam);
            assert_memory_equal(line + 7, fam, fl);
            assert_int_equal(line[7 + fl], ' ');
            snprintf(type, sizeof type, "%s", line + 8 + fl);
            if (strcmp(type, "counter") == 0) {
                if (fl < 6 || strcmp(fam + fl - 6, "_total") != 0)
                    fail_msg("counter %s not named _total", fam);
            } else if (strcmp(type, "gauge") != 0 && strcmp(type, "histogram") != 0) {
                fail_msg("family %s of type '%s'", fam, type);
            }
            want_type = false;
            continue;
        }
        assert_true(line[0] != '#');
        assert_false(want_type);
        assert_true(fam[0] != '\0'); /* no sample before the first HELP */
        size_t n = strcspn(line, "{ ");
        assert_true(name_ok(line, n));
        if (!in_family(line, n, fam, type))
            fail_msg("sample %s outside its family %s", line, fam);
        const char *v = line + n;
        if (*v == '{') {
            v = strstr(v, "} ");
            assert_non_null(v);
            v++;
        }
        assert_int_equal(*v, ' ');
        char *end;
        strtod(v + 1, &end);
        if (end == v + 1 || *end != '\0')
            fail_msg("sample with a value that is no number: %s", line);
        samples++;
    }
    assert_false(want_type);
    assert_true(samples > nfam);
    return nfam;
}

/* The value of the sample written exactly `sample` (name and labels). */
static double value_of(const char *page, const char *sample)
{
    size_t n = strlen(sample);
    for (const char *p = page; (p = strstr(p, sample)) != NULL; p += n)
        if ((p == page || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    fail_msg("no sample %s", sample);
    return -1;
}

static void test_page_grammar(void **state)
{
    (void)state;
    struct fixture f;
    fixture_open(&f);
    put(&f, "a", "1");
    put(&f, "b", "22");
    put(&f, "c", "333");
    char *page = compose(&f);
    char *copy = strdup(page);
    assert_non_null(copy);
    size_t nfam = check_grammar(copy);
    assert_true(nfam > 20);
    free(copy);
    free(page);
    fixture_close(&f);
}

static void test_page_values(void **state)
{
    (void)state;
    struct fixture f;
    fixture_open(&f);
    put(&f, "a", "1");
    put(&f, "b", "22");
    put(&f, "c", "333");
    put(&f, "c", "4444"); /* an overwrite: still three items */
    char *page = compose(&f);
    /* memcached's fields under memcached_exporter's names, from the store */
    assert_true(value_of(page, "memcached_up") == 1);
    assert_true(value_of(page, "memcached_current_items") == 3);
    assert_true(value_of(page, "memcached_items_total") == 4);
    assert_true(value_of(page, "memcached_limit_bytes") == MEM);
    assert_true(value_of(page, "memcached_current_bytes") > 0);
    /* exporter names keep the exporter's help; ours have a kind */
    assert_non_null(strstr(page, "\n# TYPE memcached_current_items gauge\n"));
    assert_non_null(strstr(page, "\n# TYPE memcached_items_total counter\n"));
    assert_non_null(strstr(page, "\n# TYPE nodelay_request_duration_seconds histogram\n"));
    free(page);
    fixture_close(&f);
}

/* With a flash tier: `stats extstore`'s rows (the store's pages, as that
 * command prints them) summed, with no page label, and the page still
 * valid Prometheus text. Items go to flash as RAM evicts them; the writer
 * is waited for so that the pages hold still. */
static void test_page_flash_sums(void **state)
{
    (void)state;
    struct fixture f;
    fixture_open_ex(&f, true);
    char key[32], value[1001];
    memset(value, 'v', 1000);
    value[1000] = '\0';
    struct store_stats st;
    for (int i = 0; i < 12000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(&f, key, value);
        /* paced to the writer: a buffer free when eviction needs one */
        for (int w = 0; w < 2000; w++) {
            store_stats(f.srv.pool.store, &st);
            if (st.extstore_io_queue == 0)
                break;
            usleep(1000);
        }
    }
    assert_true(st.extstore_objects_written > 0);
    struct store_flash_page *pg;
    size_t n;
    assert_int_equal(server_extstore_pages(&f.srv, &pg, &n), 0);
    assert_int_equal(n, FLASH / FLASH_WBUF);
    char *page = compose(&f);
    uint64_t pages[4] = {0}, bytes[4] = {0}, written = 0, tenths[11] = {0};
    for (size_t i = 0; i < n; i++) {
        if (!pg[i].version)
            continue;
        assert_true(pg[i].bucket < 4);
        pages[pg[i].bucket]++;
        bytes[pg[i].bucket] += pg[i].bytes;
        written++;
        for (int k = 1; k <= 10; k++)
            tenths[k] += pg[i].bytes * 10 <= (uint64_t)k * FLASH_WBUF;
    }
    assert_true(written > 0);
    static const int bucket[] = {0, 1, 3};
    char name[96];
    for (size_t i = 0; i < 3; i++) {
        int b = bucket[i];
        snprintf(name, sizeof name, "nodelay_extstore_bucket_pages{bucket=\"%d\"}", b);
        assert_true(value_of(page, name) == (double)pages[b]);
        snprintf(name, sizeof name, "nodelay_extstore_bucket_bytes{bucket=\"%d\"}", b);
        assert_true(value_of(page, name) == (double)bytes[b]);
    }
    assert_true(value_of(page, "nodelay_extstore_free_pages") == (double)(n - written));
    for (int k = 1; k <= 10; k++) {
        snprintf(name, sizeof name, "nodelay_extstore_page_fill_ratio_bucket{le=\"%g\"}", k / 10.0);
        assert_true(value_of(page, name) == (double)tenths[k]);
    }
    assert_true(value_of(page, "nodelay_extstore_page_fill_ratio_count") == (double)written);
    assert_null(strstr(page, "page=\""));
    char *copy = strdup(page);
    assert_non_null(copy);
    check_grammar(copy);
    free(copy);
    free(page);
    free(pg);
    fixture_close(&f);
}

int main(void)
{
    clock_setup();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_grammar),
        cmocka_unit_test(test_page_values),
        cmocka_unit_test(test_page_flash_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
