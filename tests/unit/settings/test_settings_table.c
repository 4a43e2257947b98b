/* SPDX-License-Identifier: BSD-3-Clause */
/* The settings table drives -h, `stats settings` and the man page: walk
 * every row and check it shows up in each place it should, once, and that
 * no two rows claim the same name. Also the config file reader, start-up
 * notes and run-time values as `stats settings` shows them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/flash_tuning.h"
#include "settings/settings_internal.h"
#include "stats/stats_output.h"

/* Everything a stream printed, as one string (free it). */
typedef void print_fn(FILE *out);
static char *capture(print_fn *fn)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fn(f);
    fclose(f);
    return buf;
}

struct collected {
    char names[SETTINGS_NROWS][64];
    char values[SETTINGS_NROWS][128];
    size_t n;
};

static int collect(void *arg, const char *name, const char *value)
{
    struct collected *c = arg;
    assert_true(c->n < SETTINGS_NROWS);
    snprintf(c->names[c->n], sizeof c->names[0], "%s", name);
    snprintf(c->values[c->n], sizeof c->values[0], "%s", value);
    c->n++;
    return 0;
}

static const char *value_of(const struct collected *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0)
            return c->values[i];
    return NULL;
}

/* groff's escape of a name: '-' is written "\-". */
static void man_escape(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (; *in && o + 3 < n; in++) {
        if (*in == '-')
            out[o++] = '\\';
        out[o++] = *in;
    }
    out[o] = '\0';
}

static void test_every_row_in_help_and_man(void **state)
{
    (void)state;
    char *help = capture(settings_print_help);
    char *man = capture(settings_print_man);
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        char want[256], esc[192];
        if (r->sopt) {
            snprintf(want, sizeof want, "\n-%c", r->sopt);
            if (!strstr(help, want))
                fail_msg("-h lacks -%c (row %s)", r->sopt, r->field);
            snprintf(want, sizeof want, "\\fB\\-%c\\fR", r->sopt);
            if (!strstr(man, want))
                fail_msg("man page lacks -%c (row %s)", r->sopt, r->field);
        }
        if (r->lopt) {
            snprintf(want, sizeof want, "--%s", r->lopt);
            if (!strstr(help, want))
                fail_msg("-h lacks --%s", r->lopt);
            man_escape(r->lopt, esc, sizeof esc);
            snprintf(want, sizeof want, "\\fB\\-\\-%s\\fR", esc);
            if (!strstr(man, want))
                fail_msg("man page lacks --%s", r->lopt);
        }
        if (r->oname) {
            /* ext_path among them: memcached's tests look for it in -h */
            snprintf(want, sizeof want, "\n   %s", r->oname);
            if (!strstr(help, want))
                fail_msg("-h lacks -o %s", r->oname);
            man_escape(r->oname, esc, sizeof esc);
            snprintf(want, sizeof want, "\\fB%s\\fR", esc);
            if (!strstr(man, want))
                fail_msg("man page lacks -o %s", r->oname);
        }
        if ((r->sopt || r->lopt || r->oname) && !r->help)
            fail_msg("row %s is an option without help text", r->field);
        if (r->note && !strstr(man, "Accepted but inert"))
            fail_msg("man page does not list inert options");
        if (r->stat) {
            man_escape(r->stat, esc, sizeof esc);
            if (!strstr(man, esc))
                fail_msg("man page lacks stats settings name %s", r->stat);
        }
    }
    /* the worker counters, asked of the counters table */
    const struct stats_rows *tables[] = {&stats_general_rows, &stats_nodelay_rows};
    for (size_t t = 0; t < 2; t++)
        for (size_t i = 0; i < tables[t]->n; i++) {
            const struct stats_row *c = &tables[t]->row[i];
            if (c->src == STATS_SRC_WORKER) {
                char name[128];
                man_escape(c->name, name, sizeof name);
                if (!strstr(man, name))
                    fail_msg("man page lacks counter %s", c->name);
            }
        }
    free(help);
    free(man);
}

struct exported {
    size_t n;
    const char *metric[16], *help[16];
    char value[16][64];
};

static int collect_metric(void *arg, const char *metric, const char *help, const char *value)
{
    struct exported *e = arg;
    assert_true(e->n < 16);
    e->metric[e->n] = metric;
    e->help[e->n] = help;
    snprintf(e->value[e->n], sizeof e->value[0], "%s", value);
    e->n++;
    return 0;
}

/* /metrics' settings: the rows with a metric, each a `stats settings` row
 * (c: those lines), in its order, with the value that line prints. */
static void check_metric_rows(const struct settings *s, const struct collected *c)
{
    struct exported e = {.n = 0};
    assert_int_equal(settings_metrics_emit(s, collect_metric, &e), 0);
    size_t k = 0;
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if (!r->metric)
            continue;
        if (!r->stat)
            fail_msg("%s has a metric and no stats settings line", r->field);
        assert_true(k < e.n);
        assert_string_equal(e.metric[k], r->metric->name);
        assert_true(strncmp(e.metric[k], "memcached_", 10) == 0);
        assert_true(strlen(e.help[k]) > 0);
        assert_string_equal(e.value[k], value_of(c, r->stat));
        k++;
    }
    assert_int_equal(k, e.n);
    assert_int_equal(e.n, 9); /* memcached_exporter's settings metrics */
    assert_string_equal(e.metric[0], "memcached_max_connections");
    assert_string_equal(e.value[0], "1024");
}

static void test_every_stat_row_once_in_order(void **state)
{
    (void)state;
    struct settings s;
    settings_defaults(&s);
    struct collected c = {.n = 0};
    assert_int_equal(settings_stats_emit(&s, collect, &c), 0);
    size_t k = 0;
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        if (!settings_rows[i].stat)
            continue;
        assert_true(k < c.n);
        assert_string_equal(c.names[k], settings_rows[i].stat);
        assert_true(c.values[k][0] != '\0');
        k++;
    }
    assert_int_equal(k, c.n);
    assert_string_equal(c.names[0], "maxbytes");
    assert_string_equal(c.names[c.n - 1], "client_flags_size");
    check_metric_rows(&s, &c);
    settings_release(&s);
}

static void test_names_unique(void **state)
{
    (void)state;
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *a = &settings_rows[i];
        for (size_t j = i + 1; j < SETTINGS_NROWS; j++) {
            const struct settings_row *b = &settings_rows[j];
            if (a->sopt && a->sopt == b->sopt)
                fail_msg("-%c in rows %s and %s", a->sopt, a->field, b->field);
            if (a->lopt && b->lopt && strcmp(a->lopt, b->lopt) == 0)
                fail_msg("--%s twice", a->lopt);
            if (a->oname && b->oname && strcmp(a->oname, b->oname) == 0)
                fail_msg("-o %s twice", a->oname);
            if (a->stat && b->stat && strcmp(a->stat, b->stat) == 0)
                fail_msg("stat %s twice", a->stat);
        }
    }
}

static void test_runtime_values_shown(void **state)
{
    (void)state;
    struct settings s;
    settings_defaults(&s);
    const struct settings *ro = &s; /* writers hold it const, as sessions do */
    SETTINGS_SET(ro, verbosity, 2);
    SETTINGS_SET(ro, maxbytes, (size_t)100 << 20);
    SETTINGS_SET(ro, detail_enabled, true);
    SETTINGS_SET(ro, lru_crawler, false);
    SETTINGS_SET(ro, slab_automove, 2);
    SETTINGS_SET(ro, hot_max_factor, 0.5);
    struct collected c = {.n = 0};
    assert_int_equal(settings_stats_emit(&s, collect, &c), 0);
    assert_string_equal(value_of(&c, "verbosity"), "2");
    assert_string_equal(value_of(&c, "maxbytes"), "104857600");
    assert_string_equal(value_of(&c, "detail_enabled"), "yes");
    assert_string_equal(value_of(&c, "lru_crawler"), "no");
    assert_string_equal(value_of(&c, "slab_automove"), "2");
    assert_string_equal(value_of(&c, "hot_max_factor"), "0.50");
    settings_release(&s);
}

struct parsed {
    struct settings s;
    enum settings_result res;
    int code;
    char out[4096];
    char err[2048];
};

static void parse(struct parsed *p, char **args)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "nodelay";
    for (; *args; args++)
        argv[argc++] = *args;
    argv[argc] = NULL;
    memset(p, 0, sizeof *p);
    settings_defaults(&p->s);
    FILE *out = fmemopen(p->out, sizeof p->out - 1, "w");
    FILE *err = fmemopen(p->err, sizeof p->err - 1, "w");
    p->res = settings_parse(&p->s, argc, argv, out, err, &p->code);
    fclose(out);
    fclose(err);
}

static char *write_conf(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/nodelay-test-conf-%ld", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_config_file(void **state)
{
    (void)state;
    struct parsed p;
    char *path = write_conf("# comment\n\n-m 32   # mb\n--port=2222\n-o 'idle_timeout=7'\n"
                            "-u \"a user\"\nlogfile /tmp/x.log\n-h\n-l 127.0.0.2\n-l ::1\n"
                            "-P /tmp/a\\#b\n-vv\n");
    parse(&p, (char *[]){"-t", "3", "--config", path, "-t", "5", NULL});
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_true(SETTINGS_GET(&p.s, maxbytes) == (size_t)32 << 20);
    assert_int_equal(p.s.port, 2222);
    assert_int_equal(p.s.idle_timeout, 7);
    assert_string_equal(p.s.username, "a user");
    assert_string_equal(p.s.logfile, "/tmp/x.log");
    assert_string_equal(p.s.inter, "127.0.0.2,::1");
    assert_string_equal(p.s.pid_file, "/tmp/a#b");
    assert_int_equal(SETTINGS_GET(&p.s, verbosity), 2);
    assert_int_equal(p.s.num_threads, 5); /* after --config: overrides */
    assert_string_equal(p.out, "");       /* -h in a file is skipped */
    settings_release(&p.s);

    parse(&p, (char *[]){"--config", path, "-p", "3333", NULL});
    assert_int_equal(p.res, SETTINGS_RUN);
    assert_int_equal(p.s.port, 3333);
    settings_release(&p.s);

    /* a flag before --config is overridden by the file */
    parse(&p, (char *[]){"-p", "4444", "--config=", NULL});
    assert_int_equal(p.res, SETTINGS_EXIT);
    assert_int_equal(p.code, 64);
    settings_release(&p.s);
    parse(&p, (char *[]){"-p", "4444", "--config", path, NULL});
    assert_int_equal(p.s.port, 2222);
    settings_release(&p.s);
    unlink(path);
}

static void test_config_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int code;
        const char *msg; /* after "nodelay: PATH:" */
    } cases[] = {
        {"-m 64\n-c 0\n", 1, "2: Maximum connections must be greater than 0\n"},
        {"--bogus\n", 1, "1: unrecognized option '--bogus'\nIllegal argument \"?\"\n"},
        {"\n-q\n", 1, "2: invalid option -- 'q'\nIllegal argument \"?\"\n"},
        {"-p\n", 64, "1: option requires an argument -- 'p'\n"},
        {"-o foo\n", 1, "1: Illegal suboption \"foo\"\n"},
        {"-B x\n", 64,
         "1: Invalid value for binding protocol: x\n -- should be one of auto, binary, or ascii\n"},
        {"-m 64 extra\n", 1, "1: unexpected argument \"extra\" (see -h)\n"},
        {"-l 'open\n", 64, "1: unterminated quote or too many words\n"},
        {"verbose yes\n", 64, "1: unknown directive \"verbose\" (only flags and `logfile FILE`)\n"},
        {"--config /etc/x\n", 64, "1: --config cannot be nested\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct parsed p;
        char *path = write_conf(cases[i].text);
        parse(&p, (char *[]){"--config", path, NULL});
        char want[512];
        snprintf(want, sizeof want, "nodelay: %s:%s", path, cases[i].msg);
        if (p.res != SETTINGS_EXIT || p.code != cases[i].code || strcmp(p.err, want) != 0)
            fail_msg("case %zu: res %d code %d err \"%s\"", i, p.res, p.code, p.err);
        settings_release(&p.s);
        unlink(path);
    }
}

static void test_notes_only_for_given_inert_options(void **state)
{
    (void)state;
    struct parsed p;
    parse(&p, (char *[]){"-o",
                         "ext_path=/x:1g,ext_recache_rate=2,ext_max_sleep=5,ext_threads=2,"
                         "ssl_kernel_tls",
                         "-f", "1.5", "-m", "64", "-o", "hashpower=16", NULL});
    assert_int_equal(p.res, SETTINGS_RUN);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    settings_print_notes(&p.s, f);
    fclose(f);
    assert_string_equal(buf,
                        "nodelay: -f: " SETTINGS_CLASSES "\n");
    free(buf);
    settings_release(&p.s);

    parse(&p, (char *[]){"-m", "64", "-o", "idle_timeout=3", NULL});
    f = open_memstream(&buf, &len);
    settings_print_notes(&p.s, f);
    fclose(f);
    assert_string_equal(buf, "");
    free(buf);
    settings_release(&p.s);
}

/* The flash tier's one way to the values `extstore` changes: the start-up
 * values (with memcached's default thresholds, a hundredth of the last
 * file's pages), then a run-time change, as read through the source
 * options.c hands out. */
static void test_flash_tuning_reads_runtime_values(void **state)
{
    (void)state;
    struct parsed p;
    parse(&p, (char *[]){"-o", "ext_page_size=8,ext_path=/x:64m,ext_path=/y:8g,ext_item_size=100,"
                               "ext_max_frag=0.5,ext_drop_unread,ext_item_age=4294967297",
                         NULL});
    assert_int_equal(p.res, SETTINGS_RUN);
    struct flash_tuning_src src = {settings_flash_tuning, settings_runtime_of(&p.s)};
    struct flash_tuning t;
    flash_tuning_get(&src, &t);
    assert_int_equal(t.item_size, 100);
    assert_int_equal(t.item_age, 1); /* 32 bits, as memcached keeps it */
    assert_int_equal(t.compact_under, 10); /* 1024 pages of /y */
    assert_int_equal(t.drop_under, 10);
    assert_int_equal(t.recache_rate, 2000);
    assert_int_equal(t.max_sleep, 1000000);
    assert_true(t.max_frag == 0.5);
    assert_true(t.drop_unread);
    SETTINGS_SET(&p.s, ext_item_size, 7);
    SETTINGS_SET(&p.s, ext_drop_unread, false);
    flash_tuning_get(&src, &t);
    assert_int_equal(t.item_size, 7);
    assert_false(t.drop_unread);
    settings_release(&p.s);

    /* an ext_compact_under given keeps both as given */
    parse(&p, (char *[]){"-o", "ext_path=/y:8g,ext_compact_under=3", NULL});
    assert_int_equal(p.res, SETTINGS_RUN);
    settings_flash_tuning(&p.s.run, &t);
    assert_int_equal(t.compact_under, 3);
    assert_int_equal(t.drop_under, 0);
    settings_release(&p.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_in_help_and_man),
        cmocka_unit_test(test_every_stat_row_once_in_order),
        cmocka_unit_test(test_names_unique),
        cmocka_unit_test(test_runtime_values_shown),
        cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_notes_only_for_given_inert_options),
        cmocka_unit_test(test_flash_tuning_reads_runtime_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
