/* SPDX-License-Identifier: BSD-3-Clause */
/* Parse hooks for flags whose checks and messages are memcached's own
 * ("Maximum connections must be greater than 0", exit 1 ...), and for the
 * options that act rather than set (-h, -V, -i, --man, -o no_modern). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "event/event.h"
#include "settings/settings_internal.h"
#include "base/version.h"

/* -m: megabytes, or a size with a suffix ("64m", "1g"). */
int settings_parse_MEGS(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    long n;
    size_t mb;
    if (settings_value_long(val, 0, LONG_MAX, &n) == 0)
        mb = (size_t)n;
    else if (settings_value_size(val, &mb) == 0)
        mb /= 1024 * 1024;
    else
        return settings_value_bad(c, r, name, val);
    if (mb > SIZE_MAX / (1024 * 1024))
        return settings_value_bad(c, r, name, val);
    settings_row_set_long(c->s, r, (long)(mb * 1024 * 1024));
    return 0;
}

/* A positive int with memcached's message for 0 or less. */
static int settings_positive(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val, const char *msg)
{
    long n;
    if (settings_value_long(val, LONG_MIN, INT_MAX, &n) < 0)
        return settings_value_bad(c, r, name, val);
    if (n <= 0)
        SETTINGS_FAIL(c, 1, "%s must be greater than 0\n", msg);
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
        SETTINGS_FAIL(c, 1, "out of memory\n");
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
    if (settings_value_double(val, &d) < 0)
        return settings_value_bad(c, r, name, val);
    if (d <= 1.0)
        SETTINGS_FAIL(c, 1, "Factor must be greater than 1\n");
    settings_row_set_double(c->s, r, d);
    return 0;
}

/* -D: memcached takes the first character and turns stats detail on. */
int settings_parse_DELIM(struct settings_parse_ctx *c, const struct settings_row *r,
                         const char *name, const char *val)
{
    (void)name;
    if (!val[0])
        SETTINGS_FAIL(c, 1, "No delimiter specified\n");
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
    SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
         "Invalid value for binding protocol: %s\n -- should be one of auto, binary, or ascii\n",
         val);
}

int settings_parse_HASHPOWER(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val)
{
    long n;
    if (settings_value_int(c, r, name, val, &n) < 0)
        return -1;
    if (n < 12)
        SETTINGS_FAIL(c, 1, "Initial hashtable multiplier of %ld is too low\n", n);
    if (n > 32)
        SETTINGS_FAIL(c, 1,
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
        if (settings_value_int(c, r, name, val, &n) < 0)
            return -1;
        if (n < 0 || n > 2)
            SETTINGS_FAIL(c, 1, "slab_automove must be between 0 and 2\n");
    }
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_WINDOW(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    long n;
    if (settings_value_int(c, r, name, val, &n) < 0)
        return -1;
    if (n < 3)
        SETTINGS_FAIL(c, 1, "slab_automove_window must be > 2\n");
    if (n > 1800)
        SETTINGS_FAIL(c, 1, "slab_automove_window must be <= 1800\n");
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_TAIL_REPAIR(struct settings_parse_ctx *c, const struct settings_row *r,
                               const char *name, const char *val)
{
    long n;
    if (settings_value_int(c, r, name, val, &n) < 0)
        return -1;
    if (n < 10)
        SETTINGS_FAIL(c, 1, "Cannot set tail_repair_time to less than 10 seconds\n");
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_HASH(struct settings_parse_ctx *c, const struct settings_row *r,
                        const char *name, const char *val)
{
    (void)name;
    static const char *const names[] = {"jenkins", "murmur3", "xxh3"};
    if (!val)
        SETTINGS_FAIL(c, 1, "Missing hash_algorithm argument\n");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(val, names[i]) == 0) {
            settings_row_set_str(c->s, r, names[i]);
            return 0;
        }
    }
    SETTINGS_FAIL(c, 1, "Unknown hash_algorithm option (jenkins, murmur3, xxh3)\n");
}

int settings_parse_CRAWL_SLEEP(struct settings_parse_ctx *c, const struct settings_row *r,
                               const char *name, const char *val)
{
    long n;
    if (settings_value_int(c, r, name, val, &n) < 0)
        return -1;
    if (n > 1000000 || n < 0)
        SETTINGS_FAIL(c, 1, "LRU crawler sleep must be between 0 and 1 second\n");
    settings_row_set_long(c->s, r, n);
    return 0;
}

/* lru_maintainer also brings the segmented LRU back, no_lru_maintainer
 * turns it off (memcached does both). */
int settings_parse_MAINTAINER(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val)
{
    (void)val;
    bool on = strncmp(name, "no_", 3) != 0;
    settings_row_set_long(c->s, r, on);
    SETTINGS_SET(c->s, lru_segmented, on);
    return 0;
}

int settings_parse_LRU_PCT(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    long n;
    if (settings_value_int(c, r, name, val, &n) < 0)
        return -1;
    if (n < 1 || n >= 80)
        SETTINGS_FAIL(c, 1, "%s must be > 1 and < 80\n", name);
    settings_row_set_long(c->s, r, n);
    return 0;
}

int settings_parse_AGE_FACTOR(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val)
{
    double d;
    if (settings_value_need(c, name, val) < 0)
        return -1;
    if (settings_value_double(val, &d) < 0)
        return settings_value_bad(c, r, name, val);
    if (d <= 0)
        SETTINGS_FAIL(c, 1, "%s must be > 0\n", name);
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
    if (!val || settings_value_long(val, r->lo, r->hi, &n) < 0)
        SETTINGS_FAIL(c, 1, "could not parse argument to read_buf_mem_limit\n");
    settings_row_set_long(c->s, r, n);
    return 0;
}

/* slab_chunk_max is in KB, as in 1.6.45 (1.6.18 took bytes). */
int settings_parse_CHUNK_MAX(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val)
{
    long n;
    if (settings_value_need(c, name, val) < 0)
        return -1;
    if (settings_value_long(val, 1, INT_MAX / 1024, &n) < 0)
        return settings_value_bad(c, r, name, val);
    settings_row_set_long(c->s, r, n * 1024);
    c->chunk_max_given = true;
    return 0;
}

/* a-b-c...: increasing sizes; meaningless for segments but checked so a
 * command line memcached refuses is refused here too. */
int settings_parse_SLAB_SIZES(struct settings_parse_ctx *c, const struct settings_row *r,
                              const char *name, const char *val)
{
    if (!val)
        SETTINGS_FAIL(c, 1, "Missing slab_sizes argument\n");
    long prev = 0, n;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", val);
    for (char *save = NULL, *t = strtok_r(buf, "-", &save); t; t = strtok_r(NULL, "-", &save)) {
        if (settings_value_long(t, 1, INT_MAX, &n) < 0)
            return settings_value_bad(c, r, name, val);
        if (n <= prev)
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                 "slab size %ld cannot be lower than or equal to a previous class size\n", n);
        prev = n;
    }
    return 0;
}

/* memcached 1.4's defaults: every field 1.6.45's NO_MODERN case sets, the
 * same way (maxconns_fast and slab_chunk_max were missing here once, and
 * `stats` then kept rejected_connections). A slab_chunk_max given before it
 * stays; one given after it wins, as there. */
int settings_parse_NO_MODERN(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    struct settings *s = c->s;
    if (!c->chunk_max_given)
        s->slab_chunk_max = SETTINGS_SLAB_PAGE;
    s->slab_reassign = false;
    SETTINGS_SET(s, slab_automove, 0);
    s->maxconns_fast = false;
    SETTINGS_SET(s, lru_segmented, false);
    s->hash_algorithm = "jenkins";
    SETTINGS_SET(s, lru_crawler, false);
    s->lru_maintainer_thread = false;
    return 0;
}

/* memcached's messages for the ssl_* options (exit 1): a missing value, a
 * value that is not a number, a number outside lo..hi. */
static int settings_ssl_need(struct settings_parse_ctx *c, const char *name, const char *val)
{
    if (val)
        return 0;
    SETTINGS_FAIL(c, 1, "Missing %s argument\n", name);
}

static int settings_ssl_long(struct settings_parse_ctx *c, const struct settings_row *r,
                             const char *name, const char *val, long *n)
{
    if (settings_ssl_need(c, name, val) < 0)
        return -1;
    if (settings_value_long(val, LONG_MIN, LONG_MAX, n) < 0)
        SETTINGS_FAIL(c, 1, "could not parse argument to %s\n", name);
    if (*n < r->lo || *n > r->hi)
        SETTINGS_FAIL(c, 1, "Invalid %s. Use help to see valid options.\n", name);
    return 0;
}

int settings_parse_SSL_STR(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    if (settings_ssl_need(c, name, val) < 0)
        return -1;
    const char *kept = settings_keep(c->s, val); /* the -o list is a temporary */
    if (!kept)
        SETTINGS_FAIL(c, 1, "out of memory\n");
    settings_row_set_str(c->s, r, kept);
    return 0;
}

int settings_parse_SSL_NUM(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    long n;
    if (settings_ssl_long(c, r, name, val, &n) < 0)
        return -1;
    settings_row_set_long(c->s, r, n);
    return 0;
}

/* ssl_wbuf_size: kilobytes, kept in bytes. */
int settings_parse_SSL_KB(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    long n;
    if (settings_ssl_long(c, r, name, val, &n) < 0)
        return -1;
    settings_row_set_long(c->s, r, n * 1024);
    return 0;
}

int settings_parse_NO_PROXY(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    (void)r, (void)val;
    SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "-o %s: nodelay has no built-in proxy\n", name);
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
            "nodelay %s is released under the BSD 3-Clause licence (the LICENSE file;\n"
            "/usr/share/doc/nodelay/copyright when installed as a package).\n"
            "Copyright (c) 2026, the nodelay developers. All rights reserved.\n"
            "It implements the protocol of memcached %s (BSD licence); it contains no "
            "memcached code.\n",
            NODELAY_VERSION, NODELAY_PROTOCOL_VERSION);
    return settings_done(c);
}

int settings_parse_VERSION(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    fprintf(c->out, "nodelay %s (memcached %s protocol)\nevent backends: %s\n", NODELAY_VERSION,
            NODELAY_PROTOCOL_VERSION, event_backends_built());
    return settings_done(c);
}

/* --config is taken apart before getopt runs (settings_parse); getopt only
 * gets here for an abbreviation such as --conf. */
int settings_parse_CONFIG(struct settings_parse_ctx *c, const struct settings_row *r,
                          const char *name, const char *val)
{
    (void)r, (void)name, (void)val;
    SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "nodelay: spell --config FILE in full\n");
}

