/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's command line, read through the table of settings_table.h:
 * getopt's short and long options and the -o dispatch are generated from
 * the rows, each row's parser (settings_value.c, settings_hooks.c) reads its
 * value, and memcached's cross-flag rules run once every flag is known.
 * Messages and exit codes follow memcached 1.6 where it has them (1 for a
 * value out of range, 64 = EX_USAGE for conflicting options). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "settings/settings_internal.h"

#define SETTINGS_ITEM_SIZE_MIN 1024
#define SETTINGS_ITEM_SIZE_MAX (1024u * 1024 * 1024)
/* getopt_long's value for a row with no letter: past every char */
#define SETTINGS_LONG_BASE 256

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
    SETTINGS_FAIL(c, 1, "Illegal suboption \"%s\"\n", opt);
}

int settings_parse_EXTENDED(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    (void)r, (void)name;
    /* kept for the settings' life: a string sub-option (metrics_listen)
     * points into it */
    char *copy = settings_keep(c->s, val);
    if (!copy)
        SETTINGS_FAIL(c, 1, "out of memory\n");
    int rc = 0;
    for (char *save = NULL, *opt = strtok_r(copy, ",", &save); opt && rc == 0;
         opt = strtok_r(NULL, ",", &save))
        rc = settings_suboption(c, opt);
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
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "nodelay: option requires an argument -- '%s'\n",
                 optopt ? (char[2]){(char)optopt, 0} : argv[optind - 1]);
        if (!r) {
            if (optopt)
                SETTINGS_FAIL(c, 1, "nodelay: invalid option -- '%c'\nIllegal argument \"?\"\n", optopt);
            SETTINGS_FAIL(c, 1, "nodelay: unrecognized option '%s'\nIllegal argument \"?\"\n",
                 argv[optind - 1]);
        }
        c->s->given[r - settings_rows] = 1;
        char label[64];
        settings_row_label(r, label, sizeof label);
        if (r->parse(c, r, label, optarg) < 0)
            return -1;
    }
    if (optind < argc)
        SETTINGS_FAIL(c, 1, "nodelay: unexpected argument \"%s\" (see -h)\n", argv[optind]);
    return 0;
}

/* Cross-flag checks, after every flag is known (memcached's order). */
int settings_check(struct settings_parse_ctx *c)
{
    struct settings *s = c->s;
    /* memcached: a UDP port given alone moves the TCP port with it. */
    if (c->udp_given && s->udpport != 0 && !c->port_given)
        s->port = s->udpport;
    size_t maxbytes = SETTINGS_GET(s, maxbytes);
    if (s->item_size_max < SETTINGS_ITEM_SIZE_MIN)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "Item max size cannot be less than 1024 bytes.\n");
    if (s->item_size_max > maxbytes / 2)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "Cannot set item size limit higher than 1/2 of memory max.\n");
    if (s->item_size_max > SETTINGS_ITEM_SIZE_MAX)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "Cannot set item size limit higher than a gigabyte.\n");
    if (c->chunk_max_given) {
        if ((size_t)s->slab_chunk_max > s->item_size_max)
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                 "slab_chunk_max (bytes: %d) cannot be larger than -I (item_size_max %zu)\n",
                 s->slab_chunk_max, s->item_size_max);
        if (s->item_size_max % (size_t)s->slab_chunk_max != 0)
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                 "-I (item_size_max: %zu) must be evenly divisible by slab_chunk_max (bytes: %d)\n",
                 s->item_size_max, s->slab_chunk_max);
    } else if (s->item_size_max > SETTINGS_SLAB_PAGE) {
        /* memcached: items above a page are chunked, half a page each */
        s->slab_chunk_max = SETTINGS_SLAB_PAGE / 2;
    } else if ((size_t)s->slab_chunk_max > s->item_size_max) {
        /* memcached refuses -I below slab_chunk_max; nodelay lowers it */
        s->slab_chunk_max = (int)s->item_size_max;
    }
    if (SETTINGS_GET(s, hot_lru_pct) + SETTINGS_GET(s, warm_lru_pct) > 80)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
             "hot_lru_pct + warm_lru_pct cannot be more than 80%% combined\n");
    if (SETTINGS_GET(s, temp_lru) && !s->lru_maintainer_thread)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "temporary_ttl requires lru_maintainer to be enabled\n");
    if (s->sasl) {
        if (!c->protocol_given)
            s->binding_protocol = "binary";
        else if (strcmp(s->binding_protocol, "binary") != 0)
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                 "ERROR: You cannot allow the ASCII protocol while using SASL.\n");
        /* a datagram carries no session to authenticate */
        if (s->udpport != 0)
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                 "ERROR: Cannot enable UDP while using binary SASL authentication.\n");
    }
    if (s->auth_file) {
        if (!c->protocol_given)
            s->binding_protocol = "ascii";
        else if (strcmp(s->binding_protocol, "ascii") != 0)
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                 "ERROR: You cannot allow the BINARY protocol while using "
                 "ascii authentication tokens.\n");
        /* each datagram would be authenticated alone, and the guessing
         * limit (auth_fail_limit) counts per TCP peer: memcached refuses */
        if (s->udpport != 0)
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                 "Cannot use UDP with ascii authentication enabled (-U 0 to disable)\n");
    }
    if (s->sasl && s->auth_file)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
             "ERROR: -S (SASL) and -Y (ascii auth) cannot be used together.\n");
    /* memcached sizes its item lock table by -t and refuses a hash table
     * no larger than it; nodelay locks buckets, but a command line that
     * memcached refuses is refused here too, with its words. */
    int lock_power = s->num_threads < 3 ? 10 : s->num_threads < 4 ? 11 : s->num_threads < 5 ? 12
                   : s->num_threads <= 10 ? 13 : s->num_threads <= 20 ? 14 : 15;
    int hashpower = s->hashpower_init ? s->hashpower_init : 16;
    if (lock_power >= hashpower)
        SETTINGS_FAIL(c, 1,
             "Hash table power size (%d) cannot be equal to or less than item lock table (%d)\n"
             "Item lock table grows with `-t N` (worker threadcount)\n"
             "Hash table grows with `-o hashpower=N` \n",
             hashpower, lock_power);
    return settings_ext_check(c);
}
