/* memcached's command line, read through the table of settings_table.h:
 * getopt's short and long options are generated from the rows, and each
 * row's parse hook reads its value.
 *
 * Messages and exit codes follow memcached 1.6 where it has them (1 for a
 * value out of range, 64 = EX_USAGE for conflicting options). Where memcached
 * silently reads garbage as 0 (atoi), nodelay refuses with a message instead:
 * a typo in an init script should not start a server on another port. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "settings_internal.h"
#include "version.h"

#define SETTINGS_ITEM_SIZE_MIN 1024
#define SETTINGS_ITEM_SIZE_MAX (1024u * 1024 * 1024)
/* getopt_long's value for a row with no letter: past every char */
#define SETTINGS_LONG_BASE 256

#define FAIL(c, code, ...)                                                     \
    do {                                                                       \
        fprintf((c)->err, __VA_ARGS__);                                        \
        (c)->exit_code = (code);                                               \
        return -1;                                                             \
    } while (0)
#define ROW(id) (&settings_rows[SETTINGS_ROW_##id])

/* Whole-string decimal integer in [min, max]. */
static int settings_long(const char *str, long min, long max, long *out)
{
    if (!str || !*str)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(str, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int settings_double(const char *str, double *out)
{
    if (!str || !*str)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(str, &end);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* A byte size with an optional k/m/g suffix (memcached's -I). */
static int settings_size(const char *str, size_t *out)
{
    if (!str || !*str)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(str, &end, 10);
    if (errno || end == str || str[0] == '-')
        return -1;
    unsigned long long unit = 1;
    if (*end == 'k' || *end == 'K')
        unit = 1024;
    else if (*end == 'm' || *end == 'M')
        unit = 1024 * 1024;
    else if (*end == 'g' || *end == 'G')
        unit = 1024ull * 1024 * 1024;
    if (unit != 1)
        end++;
    if (*end || v > SIZE_MAX / unit)
        return -1;
    *out = (size_t)(v * unit);
    return 0;
}

/* `Invalid value for -p: "foo"` (exit 64): for a flag its letter, for a
 * sub-option its name. */
static int settings_bad_value(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val)
{
    char label[64];
    if (r->oname)
        snprintf(label, sizeof label, "%s", name);
    else
        settings_row_label(r, label, sizeof label);
    FAIL(c, SETTINGS_EX_USAGE, "Invalid value for %s: \"%s\"\n", label, val ? val : "");
}

/* memcached's message for a -o sub-option given without its number. */
static int settings_need_number(struct settings_parse_ctx *c, const char *name, const char *val)
{
    if (val)
        return 0;
    FAIL(c, 1, "Missing numeric argument for %s\n", name);
}

/* An integer for row r, any int; the hook checks memcached's range. */
static int settings_int_arg(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val, long *n)
{
    if (r->oname && settings_need_number(c, name, val) < 0)
        return -1;
    if (settings_long(val, INT_MIN, INT_MAX, n) < 0)
        return settings_bad_value(c, r, name, val);
    return 0;
}

/* ---- generic parsers ---------------------------------------------------- */

int settings_parse_NOP(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    (void)c, (void)r, (void)name, (void)val;
    return 0;
}

int settings_parse_ON(struct settings_parse_ctx *c, const struct settings_row *r,
                      const char *name, const char *val)
{
    (void)name, (void)val;
    settings_row_set_long(c->s, r, 1);
    return 0;
}

int settings_parse_OFF(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    (void)name, (void)val;
    settings_row_set_long(c->s, r, 0);
    return 0;
}

/* -o x turns it on, -o no_x off. */
int settings_parse_BOOL(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    (void)val;
    settings_row_set_long(c->s, r, strncmp(name, "no_", 3) != 0);
    return 0;
}

int settings_parse_STR(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    (void)name;
    settings_row_set_str(c->s, r, val);
    return 0;
}

int settings_parse_INT(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    long n;
    if (r->oname && settings_need_number(c, name, val) < 0)
        return -1;
    if (settings_long(val, r->lo, r->hi, &n) < 0)
        return settings_bad_value(c, r, name, val);
    settings_row_set_long(c->s, r, n);
    return 0;
}

/* An integer in kilobytes, stored in bytes (memcached's logbuf sizes). */
int settings_parse_KB(struct settings_parse_ctx *c, const struct settings_row *r,
                      const char *name, const char *val)
{
    long n;
    if (settings_need_number(c, name, val) < 0)
        return -1;
    if (settings_long(val, r->lo, r->hi, &n) < 0)
        return settings_bad_value(c, r, name, val);
    settings_row_set_long(c->s, r, n * 1024);
    return 0;
}

int settings_parse_DBL(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    double d;
    if (r->oname && settings_need_number(c, name, val) < 0)
        return -1;
    if (settings_double(val, &d) < 0)
        return settings_bad_value(c, r, name, val);
    settings_row_set_double(c->s, r, d);
    return 0;
}

int settings_parse_SIZE(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    size_t n;
    if (settings_size(val, &n) < 0)
        return settings_bad_value(c, r, name, val);
    settings_row_set_long(c->s, r, (long)n);
    return 0;
}

int settings_parse_OCTAL(struct settings_parse_ctx *c, const struct settings_row *r,
                         const char *name, const char *val)
{
    char *end;
    errno = 0;
    long n = strtol(val, &end, 8);
    if (errno || *end || !*val || n < r->lo || n > r->hi)
        return settings_bad_value(c, r, name, val);
    settings_row_set_long(c->s, r, n);
    return 0;
}

/* ---- hooks: memcached's own messages per flag --------------------------- */

/* -m: megabytes, or a size with a suffix ("64m", "1g"). */
int settings_parse_MEGS(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    long n;
    size_t mb;
    if (settings_long(val, 0, LONG_MAX, &n) == 0)
        mb = (size_t)n;
    else if (settings_size(val, &mb) == 0)
        mb /= 1024 * 1024;
    else
        return settings_bad_value(c, r, name, val);
    if (mb > SIZE_MAX / (1024 * 1024))
        return settings_bad_value(c, r, name, val);
    settings_row_set_long(c->s, r, (long)(mb * 1024 * 1024));
    return 0;
}

/* A positive int with memcached's message for 0 or less. */
static int settings_positive(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val, const char *msg)
{
    long n;
    if (settings_long(val, LONG_MIN, INT_MAX, &n) < 0)
        return settings_bad_value(c, r, name, val);
    if (n <= 0)
        FAIL(c, 1, "%s must be greater than 0\n", msg);
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_CONNS(struct settings_parse_ctx *c, const struct settings_row *r,
                         const char *name, const char *val)
{
    return settings_positive(c, r, name, val, "Maximum connections");
}

int settings_parse_REQS(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    return settings_positive(c, r, name, val, "Number of requests per event");
}

int settings_parse_CHUNK(struct settings_parse_ctx *c, const struct settings_row *r,
                         const char *name, const char *val)
{
    return settings_positive(c, r, name, val, "Chunk size");
}

int settings_parse_THREADS(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    if (settings_positive(c, r, name, val, "Number of threads") < 0)
        return -1;
    if (c->s->num_threads > 64)
        fprintf(c->err, "WARNING: Setting a high number of worker threads is not recommended.\n"
                        " Set this value to the number of cores in your machine or less.\n");
    return 0;
}

int settings_parse_PORT(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    c->port_given = true;
    return settings_parse_INT(c, r, name, val);
}

int settings_parse_UDPPORT(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    c->udp_given = true;
    return settings_parse_INT(c, r, name, val);
}

/* Several -l are joined into one list, as memcached does; the first one
 * replaces the default. */
int settings_parse_LISTEN(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    (void)r, (void)name;
    struct settings *s = c->s;
    if (!c->listen_given) {
        c->listen_given = true;
        s->inter = val;
        return 0;
    }
    size_t n = strlen(s->inter) + 1 + strlen(val) + 1;
    char *joined = malloc(n);
    if (!joined)
        FAIL(c, 1, "out of memory\n");
    snprintf(joined, n, "%s,%s", s->inter, val);
    free(s->inter_alloc);
    s->inter_alloc = joined;
    s->inter = joined;
    return 0;
}

int settings_parse_VERBOSE(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    SETTINGS_SET(c->s, verbosity, SETTINGS_GET(c->s, verbosity) + 1);
    return 0;
}

int settings_parse_FACTOR(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    double d;
    if (settings_double(val, &d) < 0)
        return settings_bad_value(c, r, name, val);
    if (d <= 1.0)
        FAIL(c, 1, "Factor must be greater than 1\n");
    settings_row_set_double(c->s, r, d);
    return 0;
}

/* -D: memcached takes the first character and turns stats detail on. */
int settings_parse_DELIM(struct settings_parse_ctx *c, const struct settings_row *r,
                         const char *name, const char *val)
{
    (void)name;
    if (!val[0])
        FAIL(c, 1, "No delimiter specified\n");
    settings_row_set_long(c->s, r, val[0]);
    SETTINGS_SET(c->s, detail_enabled, true);
    return 0;
}

int settings_parse_PROTOCOL(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    (void)name;
    static const char *const names[] = {"auto", "binary", "ascii"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(val, names[i]) == 0) {
            settings_row_set_str(c->s, r, names[i]);
            c->protocol_given = true;
            return 0;
        }
    }
    FAIL(c, SETTINGS_EX_USAGE,
         "Invalid value for binding protocol: %s\n -- should be one of auto, binary, or ascii\n",
         val);
}

int settings_parse_HASHPOWER(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val)
{
    long n;
    if (settings_int_arg(c, r, name, val, &n) < 0)
        return -1;
    if (n < 12)
        FAIL(c, 1, "Initial hashtable multiplier of %ld is too low\n", n);
    if (n > 32)
        FAIL(c, 1,
             "Initial hashtable multiplier of %ld is too high\n"
             "Choose a value based on \"STAT hash_power_level\" from a running instance\n",
             n);
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_AUTOMOVE(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    long n = 1;
    if (strncmp(name, "no_", 3) == 0) {
        n = 0;
    } else if (val) {
        if (settings_int_arg(c, r, name, val, &n) < 0)
            return -1;
        if (n < 0 || n > 2)
            FAIL(c, 1, "slab_automove must be between 0 and 2\n");
    }
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_WINDOW(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    long n;
    if (settings_int_arg(c, r, name, val, &n) < 0)
        return -1;
    if (n < 3)
        FAIL(c, 1, "slab_automove_window must be > 2\n");
    if (n > 1800)
        FAIL(c, 1, "slab_automove_window must be <= 1800\n");
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_TAIL_REPAIR(struct settings_parse_ctx *c, const struct settings_row *r,
                               const char *name, const char *val)
{
    long n;
    if (settings_int_arg(c, r, name, val, &n) < 0)
        return -1;
    if (n < 10)
        FAIL(c, 1, "Cannot set tail_repair_time to less than 10 seconds\n");
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_HASH(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    (void)name;
    static const char *const names[] = {"jenkins", "murmur3", "xxh3"};
    if (!val)
        FAIL(c, 1, "Missing hash_algorithm argument\n");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(val, names[i]) == 0) {
            settings_row_set_str(c->s, r, names[i]);
            return 0;
        }
    }
    FAIL(c, 1, "Unknown hash_algorithm option (jenkins, murmur3, xxh3)\n");
}

int settings_parse_CRAWL_SLEEP(struct settings_parse_ctx *c, const struct settings_row *r,
                               const char *name, const char *val)
{
    long n;
    if (settings_int_arg(c, r, name, val, &n) < 0)
        return -1;
    if (n > 1000000 || n < 0)
        FAIL(c, 1, "LRU crawler sleep must be between 0 and 1 second\n");
    settings_row_set_long(c->s, r, n);
    return 0;
}

/* lru_maintainer also brings the segmented LRU back (memcached does). */
int settings_parse_MAINTAINER(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val)
{
    (void)val;
    bool on = strncmp(name, "no_", 3) != 0;
    settings_row_set_long(c->s, r, on);
    if (on)
        SETTINGS_SET(c->s, lru_segmented, true);
    return 0;
}

int settings_parse_LRU_PCT(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    long n;
    if (settings_int_arg(c, r, name, val, &n) < 0)
        return -1;
    if (n < 1 || n >= 80)
        FAIL(c, 1, "%s must be > 1 and < 80\n", name);
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_AGE_FACTOR(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val)
{
    double d;
    if (settings_need_number(c, name, val) < 0)
        return -1;
    if (settings_double(val, &d) < 0)
        return settings_bad_value(c, r, name, val);
    if (d <= 0)
        FAIL(c, 1, "%s must be > 0\n", name);
    settings_row_set_double(c->s, r, d);
    return 0;
}

/* temporary_ttl=N also turns memcached's TEMP LRU on. */
int settings_parse_TEMP_TTL(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    if (settings_parse_INT(c, r, name, val) < 0)
        return -1;
    SETTINGS_SET(c->s, temp_lru, true);
    return 0;
}

int settings_parse_READ_BUF(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    (void)name;
    long n;
    if (!val || settings_long(val, r->lo, r->hi, &n) < 0)
        FAIL(c, 1, "could not parse argument to read_buf_mem_limit\n");
    settings_row_set_long(c->s, r, n);
    return 0;
}

/* slab_chunk_max is in KB, as in 1.6.45 (1.6.18 took bytes). */
int settings_parse_CHUNK_MAX(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val)
{
    long n;
    if (settings_need_number(c, name, val) < 0)
        return -1;
    if (settings_long(val, 1, INT_MAX / 1024, &n) < 0)
        return settings_bad_value(c, r, name, val);
    settings_row_set_long(c->s, r, n * 1024);
    c->chunk_max_given = true;
    return 0;
}

/* Megabytes in lo..hi, stored in bytes (nodelay's own limits). */
int settings_parse_MB(struct settings_parse_ctx *c, const struct settings_row *r,
                               const char *name, const char *val)
{
    long n;
    if (settings_need_number(c, name, val) < 0)
        return -1;
    if (settings_long(val, r->lo, r->hi, &n) < 0)
        return settings_bad_value(c, r, name, val);
    settings_row_set_long(c->s, r, n << 20);
    return 0;
}

/* a-b-c...: increasing sizes; meaningless for segments but checked so a
 * command line memcached refuses is refused here too. */
int settings_parse_SLAB_SIZES(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val)
{
    if (!val)
        FAIL(c, 1, "Missing slab_sizes argument\n");
    long prev = 0, n;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", val);
    for (char *save = NULL, *t = strtok_r(buf, "-", &save); t; t = strtok_r(NULL, "-", &save)) {
        if (settings_long(t, 1, INT_MAX, &n) < 0)
            return settings_bad_value(c, r, name, val);
        if (n <= prev)
            FAIL(c, SETTINGS_EX_USAGE,
                 "slab size %ld cannot be lower than or equal to a previous class size\n", n);
        prev = n;
    }
    return 0;
}

/* memcached 1.4's defaults. */
int settings_parse_NO_MODERN(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    struct settings *s = c->s;
    s->slab_reassign = false;
    SETTINGS_SET(s, slab_automove, 0);
    s->hash_algorithm = "jenkins";
    SETTINGS_SET(s, lru_crawler, false);
    s->lru_maintainer_thread = false;
    SETTINGS_SET(s, lru_segmented, false);
    return 0;
}

int settings_parse_NO_TLS(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    FAIL(c, SETTINGS_EX_USAGE, "-Z: nodelay has no TLS support; terminate TLS in front of it\n");
}

int settings_parse_NO_PROXY(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    (void)r, (void)val;
    FAIL(c, SETTINGS_EX_USAGE, "-o %s: nodelay has no built-in proxy\n", name);
}

/* Stop parsing, successfully: -h, -V, -i, --man. */
static int settings_done(struct settings_parse_ctx *c)
{
    c->done = true;
    c->exit_code = 0;
    return -1;
}

int settings_parse_HELP(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    settings_print_help(c->out);
    return settings_done(c);
}

int settings_parse_MAN(struct settings_parse_ctx *c, const struct settings_row *r,
                       const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    settings_print_man(c->out);
    return settings_done(c);
}

int settings_parse_LICENSE(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    fprintf(c->out,
            "nodelay %s is distributed under the license in its source tree.\n"
            "It implements the protocol of memcached %s (BSD licence); it contains no "
            "memcached code.\n",
            NODELAY_VERSION, NODELAY_PROTOCOL_VERSION);
    return settings_done(c);
}

int settings_parse_VERSION(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    fprintf(c->out, "nodelay %s (memcached %s protocol)\n", NODELAY_VERSION,
            NODELAY_PROTOCOL_VERSION);
    return settings_done(c);
}

/* --config is taken apart before getopt runs (settings_parse); getopt only
 * gets here for an abbreviation such as --conf. */
int settings_parse_CONFIG(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    FAIL(c, SETTINGS_EX_USAGE, "nodelay: spell --config FILE in full\n");
}

/* Does -o name match row r's oname? */
static bool settings_oname_match(const struct settings_row *r, const char *name)
{
    const char *o = r->oname;
    if (!o)
        return false;
    if (strncmp(o, "[no_]", 5) == 0) {
        o += 5;
        if (strncmp(name, "no_", 3) == 0)
            name += 3;
        return strcmp(o, name) == 0;
    }
    size_t n = strlen(o);
    if (n > 1 && o[n - 1] == '*')
        return strncmp(o, name, n - 1) == 0;
    return strcmp(o, name) == 0;
}

/* One -o sub-option: name[=value]. */
static int settings_suboption(struct settings_parse_ctx *c, char *opt)
{
    char *val = strchr(opt, '=');
    if (val)
        *val++ = '\0';
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if (!settings_oname_match(r, opt))
            continue;
        c->s->given[i] = 1;
        return r->parse(c, r, opt, val);
    }
    if (val)
        val[-1] = '=';
    FAIL(c, 1, "Illegal suboption \"%s\"\n", opt);
}

int settings_parse_EXTENDED(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    (void)r, (void)name;
    char *copy = strdup(val);
    if (!copy)
        FAIL(c, 1, "out of memory\n");
    int rc = 0;
    for (char *save = NULL, *opt = strtok_r(copy, ",", &save); opt && rc == 0;
         opt = strtok_r(NULL, ",", &save))
        rc = settings_suboption(c, opt);
    free(copy);
    return rc;
}

/* getopt's tables, from the rows with a letter or a long name. */
struct settings_getopt {
    char shorts[2 + 2 * SETTINGS_NROWS];
    struct option longs[SETTINGS_NROWS + 1];
};

static void settings_getopt_build(struct settings_getopt *g)
{
    size_t ns = 0, nl = 0;
    g->shorts[ns++] = ':'; /* report a missing argument as ':' */
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        bool required = r->arg && r->arg[0] != '?';
        if (r->sopt) {
            g->shorts[ns++] = r->sopt;
            if (required)
                g->shorts[ns++] = ':';
        }
        if (r->lopt)
            g->longs[nl++] = (struct option){
                r->lopt, required ? required_argument : r->arg ? optional_argument : no_argument,
                NULL, r->sopt ? r->sopt : SETTINGS_LONG_BASE + (int)i};
    }
    g->shorts[ns] = '\0';
    g->longs[nl] = (struct option){0, 0, 0, 0};
}

static const struct settings_row *settings_row_for(int opt)
{
    if (opt >= SETTINGS_LONG_BASE && opt < SETTINGS_LONG_BASE + SETTINGS_NROWS)
        return &settings_rows[opt - SETTINGS_LONG_BASE];
    for (size_t i = 0; i < SETTINGS_NROWS; i++)
        if (settings_rows[i].sopt && settings_rows[i].sopt == opt)
            return &settings_rows[i];
    return NULL;
}

int settings_parse_args(struct settings_parse_ctx *c, int argc, char **argv)
{
    struct settings_getopt g;
    settings_getopt_build(&g);
    optind = 0; /* glibc: full re-initialisation, so every list parses afresh */
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        const struct settings_row *r = settings_row_for(opt);
        if (opt == ':')
            FAIL(c, SETTINGS_EX_USAGE, "nodelay: option requires an argument -- '%s'\n",
                 optopt ? (char[2]){(char)optopt, 0} : argv[optind - 1]);
        if (!r) {
            if (optopt)
                FAIL(c, 1, "nodelay: invalid option -- '%c'\nIllegal argument \"?\"\n", optopt);
            FAIL(c, 1, "nodelay: unrecognized option '%s'\nIllegal argument \"?\"\n",
                 argv[optind - 1]);
        }
        c->s->given[r - settings_rows] = 1;
        char label[64];
        settings_row_label(r, label, sizeof label);
        if (r->parse(c, r, label, optarg) < 0)
            return -1;
    }
    if (optind < argc)
        FAIL(c, 1, "nodelay: unexpected argument \"%s\" (see -h)\n", argv[optind]);
    return 0;
}

/* Cross-flag checks, after every flag is known (memcached's order). */
static int settings_check(struct settings_parse_ctx *c)
{
    struct settings *s = c->s;
    /* memcached: a UDP port given alone moves the TCP port with it. */
    if (c->udp_given && s->udpport != 0 && !c->port_given)
        s->port = s->udpport;
    if (s->sasl && s->udpport != 0)
        FAIL(c, SETTINGS_EX_USAGE,
             "ERROR: Cannot enable UDP while using binary SASL authentication\n");
    size_t maxbytes = SETTINGS_GET(s, maxbytes);
    if (s->item_size_max < SETTINGS_ITEM_SIZE_MIN)
        FAIL(c, SETTINGS_EX_USAGE, "Item max size cannot be less than 1024 bytes.\n");
    if (s->item_size_max > maxbytes / 2)
        FAIL(c, SETTINGS_EX_USAGE, "Cannot set item size limit higher than 1/2 of memory max.\n");
    if (s->item_size_max > SETTINGS_ITEM_SIZE_MAX)
        FAIL(c, SETTINGS_EX_USAGE, "Cannot set item size limit higher than a gigabyte.\n");
    if (c->chunk_max_given) {
        if ((size_t)s->slab_chunk_max > s->item_size_max)
            FAIL(c, SETTINGS_EX_USAGE,
                 "slab_chunk_max (bytes: %d) cannot be larger than -I (item_size_max %zu)\n",
                 s->slab_chunk_max, s->item_size_max);
        if (s->item_size_max % (size_t)s->slab_chunk_max != 0)
            FAIL(c, SETTINGS_EX_USAGE,
                 "-I (item_size_max: %zu) must be evenly divisible by slab_chunk_max (bytes: %d)\n",
                 s->item_size_max, s->slab_chunk_max);
    } else if ((size_t)s->slab_chunk_max > s->item_size_max / 2) {
        s->slab_chunk_max = (int)(s->item_size_max / 2);
    } else if (s->item_size_max > (1u << 20)) {
        s->slab_chunk_max = (int)(s->item_size_max / 2);
    }
    if (SETTINGS_GET(s, hot_lru_pct) + SETTINGS_GET(s, warm_lru_pct) > 80)
        FAIL(c, SETTINGS_EX_USAGE,
             "hot_lru_pct + warm_lru_pct cannot be more than 80%% combined\n");
    if (SETTINGS_GET(s, temp_lru) && !s->lru_maintainer_thread)
        FAIL(c, SETTINGS_EX_USAGE, "temporary_ttl requires lru_maintainer to be enabled\n");
    if (s->sasl) {
        if (!c->protocol_given)
            s->binding_protocol = "binary";
        else if (strcmp(s->binding_protocol, "binary") != 0)
            FAIL(c, SETTINGS_EX_USAGE,
                 "ERROR: You cannot allow the ASCII protocol while using SASL.\n");
    }
    if (s->auth_file) {
        if (!c->protocol_given)
            s->binding_protocol = "ascii";
        else if (strcmp(s->binding_protocol, "ascii") != 0)
            FAIL(c, SETTINGS_EX_USAGE,
                 "ERROR: You cannot allow the BINARY protocol while using "
                 "ascii authentication tokens.\n");
    }
    if (s->sasl && s->auth_file)
        FAIL(c, SETTINGS_EX_USAGE,
             "ERROR: -S (SASL) and -Y (ascii auth) cannot be used together.\n");
    return 0;
}

/* The command line is parsed in runs split at each `--config FILE`, whose
 * lines are parsed where it stands: flags after it override the file. */
enum settings_result settings_parse(struct settings *s, int argc, char **argv, FILE *out,
                                    FILE *err, int *exit_code)
{
    struct settings_parse_ctx c = {.s = s, .out = out, .err = err};
    char **run = malloc(((size_t)argc + 1) * sizeof *run);
    if (!run) {
        fprintf(err, "out of memory\n");
        *exit_code = 1;
        return SETTINGS_EXIT;
    }
    int rc = 0, start = 1;
    for (int i = 1; i <= argc && rc == 0; i++) {
        const char *path = NULL;
        int skip = 0;
        if (i < argc && strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                fprintf(err, "nodelay: option '--config' requires an argument\n");
                c.exit_code = SETTINGS_EX_USAGE;
                rc = -1;
                break;
            }
            path = argv[i + 1];
            skip = 2;
        } else if (i < argc && strncmp(argv[i], "--config=", 9) == 0) {
            path = argv[i] + 9;
            skip = 1;
        } else if (i < argc) {
            continue;
        }
        int n = 0;
        run[n++] = argv[0];
        for (int k = start; k < i; k++)
            run[n++] = argv[k];
        run[n] = NULL;
        rc = settings_parse_args(&c, n, run);
        if (rc == 0 && path) {
            s->given[SETTINGS_ROW_config_file] = 1;
            s->config_file = path;
            rc = settings_config_read(&c, path);
        }
        i += skip ? skip - 1 : 0;
        start = i + 1;
    }
    free(run);
    if (rc == 0)
        rc = settings_check(&c);
    *exit_code = rc == 0 ? 0 : c.exit_code;
    return rc == 0 ? SETTINGS_RUN : SETTINGS_EXIT;
}
