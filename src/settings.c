/* memcached's command line, mapped onto the SETTINGS table.
 *
 * Messages and exit codes follow memcached 1.6 where it has them (1 for a
 * value out of range, 64 = EX_USAGE for conflicting options). Where memcached
 * silently reads garbage as 0 (atoi), nodelay refuses with a message instead:
 * a typo in an init script should not start a server on another port. */
#include "settings.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

#define SETTINGS_EX_USAGE 64
#define SETTINGS_ITEM_SIZE_MIN 1024
#define SETTINGS_ITEM_SIZE_MAX (1024u * 1024 * 1024)

void settings_defaults(struct settings *s)
{
#define SETTINGS_DEFAULT(type, name, def, help) s->name = def;
    SETTINGS(SETTINGS_DEFAULT)
#undef SETTINGS_DEFAULT
}

void settings_release(struct settings *s)
{
    free(s->inter_alloc);
    s->inter_alloc = NULL;
    free(s->metrics_listen);
    s->metrics_listen = NULL;
}

/* Parsing state that is not a setting: what the user asked for explicitly. */
struct settings_parse_ctx {
    struct settings *s;
    FILE *err;
    bool protocol_given;
    bool chunk_max_given;
    bool udp_given;
    bool listen_given;
};

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

static int settings_bad_value(struct settings_parse_ctx *c, const char *what, const char *val,
                              int *exit_code)
{
    fprintf(c->err, "Invalid value for %s: \"%s\"\n", what, val ? val : "");
    *exit_code = SETTINGS_EX_USAGE;
    return -1;
}

/* Join several -l flags into one list, as memcached does; the first one
 * replaces the default. */
static int settings_add_listen(struct settings_parse_ctx *c, const char *arg)
{
    struct settings *s = c->s;
    if (!c->listen_given) {
        c->listen_given = true;
        s->inter = arg;
        return 0;
    }
    size_t n = strlen(s->inter) + 1 + strlen(arg) + 1;
    char *joined = malloc(n);
    if (!joined)
        return -1;
    snprintf(joined, n, "%s,%s", s->inter, arg);
    free(s->inter_alloc);
    s->inter_alloc = joined;
    s->inter = joined;
    return 0;
}

/* One -o sub-option: name[=value]. Returns 0, or -1 with *exit_code set. */
static int settings_suboption(struct settings_parse_ctx *c, char *opt, int *exit_code)
{
    struct settings *s = c->s;
    char *val = strchr(opt, '=');
    if (val)
        *val++ = '\0';
    long n;
    double d;

#define NEED_NUMBER(name)                                                      \
    do {                                                                       \
        if (!val) {                                                            \
            fprintf(c->err, "Missing numeric argument for %s\n", name);        \
            *exit_code = 1;                                                    \
            return -1;                                                         \
        }                                                                      \
    } while (0)
#define FAIL(code, ...)                                                        \
    do {                                                                       \
        fprintf(c->err, __VA_ARGS__);                                          \
        *exit_code = (code);                                                   \
        return -1;                                                             \
    } while (0)

    if (strcmp(opt, "maxconns_fast") == 0) {
        s->maxconns_fast = true;
    } else if (strcmp(opt, "no_maxconns_fast") == 0) {
        s->maxconns_fast = false;
    } else if (strcmp(opt, "hashpower") == 0) {
        NEED_NUMBER("hashpower");
        if (settings_long(val, INT_MIN, INT_MAX, &n) < 0)
            return settings_bad_value(c, "hashpower", val, exit_code);
        if (n < 12)
            FAIL(1, "Initial hashtable multiplier of %ld is too low\n", n);
        if (n > 32)
            FAIL(1, "Initial hashtable multiplier of %ld is too high\n"
                    "Choose a value based on \"STAT hash_power_level\" from a running instance\n",
                 n);
        s->hashpower_init = (int)n;
    } else if (strcmp(opt, "no_hashexpand") == 0) {
        s->hash_expand = false;
    } else if (strcmp(opt, "slab_reassign") == 0) {
        s->slab_reassign = true;
    } else if (strcmp(opt, "no_slab_reassign") == 0) {
        s->slab_reassign = false;
    } else if (strcmp(opt, "slab_automove") == 0) {
        if (!val) {
            s->slab_automove = 1;
        } else {
            if (settings_long(val, INT_MIN, INT_MAX, &n) < 0)
                return settings_bad_value(c, "slab_automove", val, exit_code);
            if (n < 0 || n > 2)
                FAIL(1, "slab_automove must be between 0 and 2\n");
            s->slab_automove = (int)n;
        }
    } else if (strcmp(opt, "no_slab_automove") == 0) {
        s->slab_automove = 0;
    } else if (strcmp(opt, "slab_automove_ratio") == 0) {
        NEED_NUMBER("slab_automove_ratio");
        if (settings_double(val, &d) < 0)
            return settings_bad_value(c, "slab_automove_ratio", val, exit_code);
        s->slab_automove_ratio = d;
    } else if (strcmp(opt, "slab_automove_window") == 0) {
        NEED_NUMBER("slab_automove_window");
        if (settings_long(val, INT_MIN, INT_MAX, &n) < 0)
            return settings_bad_value(c, "slab_automove_window", val, exit_code);
        if (n < 3)
            FAIL(1, "slab_automove_window must be > 2\n");
        if (n > 1800)
            FAIL(1, "slab_automove_window must be <= 1800\n");
        s->slab_automove_window = (int)n;
    } else if (strcmp(opt, "tail_repair_time") == 0) {
        NEED_NUMBER("tail_repair_time");
        if (settings_long(val, INT_MIN, INT_MAX, &n) < 0)
            return settings_bad_value(c, "tail_repair_time", val, exit_code);
        if (n < 10)
            FAIL(1, "Cannot set tail_repair_time to less than 10 seconds\n");
        s->tail_repair_time = (int)n;
    } else if (strcmp(opt, "hash_algorithm") == 0) {
        if (!val)
            FAIL(1, "Missing hash_algorithm argument\n");
        if (strcmp(val, "jenkins") == 0)
            s->hash_algorithm = "jenkins";
        else if (strcmp(val, "murmur3") == 0)
            s->hash_algorithm = "murmur3";
        else if (strcmp(val, "xxh3") == 0)
            s->hash_algorithm = "xxh3";
        else
            FAIL(1, "Unknown hash_algorithm option (jenkins, murmur3, xxh3)\n");
    } else if (strcmp(opt, "lru_crawler") == 0) {
        s->lru_crawler = true;
    } else if (strcmp(opt, "no_lru_crawler") == 0) {
        s->lru_crawler = false;
    } else if (strcmp(opt, "lru_crawler_sleep") == 0) {
        NEED_NUMBER("lru_crawler_sleep");
        if (settings_long(val, INT_MIN, INT_MAX, &n) < 0)
            return settings_bad_value(c, "lru_crawler_sleep", val, exit_code);
        if (n > 1000000 || n < 0)
            FAIL(1, "LRU crawler sleep must be between 0 and 1 second\n");
        s->lru_crawler_sleep = (int)n;
    } else if (strcmp(opt, "lru_crawler_tocrawl") == 0) {
        NEED_NUMBER("lru_crawler_tocrawl");
        if (settings_long(val, 0, INT_MAX, &n) < 0)
            return settings_bad_value(c, "lru_crawler_tocrawl", val, exit_code);
        s->lru_crawler_tocrawl = (int)n;
    } else if (strcmp(opt, "lru_maintainer") == 0) {
        s->lru_maintainer_thread = true;
        s->lru_segmented = true;
    } else if (strcmp(opt, "no_lru_maintainer") == 0) {
        s->lru_maintainer_thread = false;
    } else if (strcmp(opt, "hot_lru_pct") == 0 || strcmp(opt, "warm_lru_pct") == 0) {
        NEED_NUMBER(opt);
        if (settings_long(val, INT_MIN, INT_MAX, &n) < 0)
            return settings_bad_value(c, opt, val, exit_code);
        if (n < 1 || n >= 80)
            FAIL(1, "%s must be > 1 and < 80\n", opt);
        if (opt[0] == 'h')
            s->hot_lru_pct = (int)n;
        else
            s->warm_lru_pct = (int)n;
    } else if (strcmp(opt, "hot_max_factor") == 0 || strcmp(opt, "warm_max_factor") == 0) {
        NEED_NUMBER(opt);
        if (settings_double(val, &d) < 0)
            return settings_bad_value(c, opt, val, exit_code);
        if (d <= 0)
            FAIL(1, "%s must be > 0\n", opt);
        if (opt[0] == 'h')
            s->hot_max_factor = d;
        else
            s->warm_max_factor = d;
    } else if (strcmp(opt, "temporary_ttl") == 0) {
        NEED_NUMBER("temporary_ttl");
        if (settings_long(val, 0, INT_MAX, &n) < 0)
            return settings_bad_value(c, "temporary_ttl", val, exit_code);
        s->temp_lru = true;
        s->temporary_ttl = (int)n;
    } else if (strcmp(opt, "idle_timeout") == 0) {
        NEED_NUMBER("idle_timeout");
        if (settings_long(val, 0, INT_MAX, &n) < 0)
            return settings_bad_value(c, "idle_timeout", val, exit_code);
        s->idle_timeout = (int)n;
    } else if (strcmp(opt, "reply_queue_limit") == 0) {
        /* nodelay's own: MB a client may owe before it is cut off */
        NEED_NUMBER("reply_queue_limit");
        if (settings_long(val, 1, 1L << 20, &n) < 0)
            return settings_bad_value(c, "reply_queue_limit", val, exit_code);
        s->reply_queue_limit = (size_t)n << 20;
    } else if (strcmp(opt, "client_mem_limit") == 0) {
        /* nodelay's own: MB owed to all clients together (0 = -m/2) */
        NEED_NUMBER("client_mem_limit");
        if (settings_long(val, 0, 1L << 30, &n) < 0)
            return settings_bad_value(c, "client_mem_limit", val, exit_code);
        s->client_mem_limit = (size_t)n << 20;
    } else if (strcmp(opt, "watcher_logbuf_size") == 0 ||
               strcmp(opt, "worker_logbuf_size") == 0) {
        NEED_NUMBER(opt);
        if (settings_long(val, 1, INT_MAX / 1024, &n) < 0)
            return settings_bad_value(c, opt, val, exit_code);
        if (opt[1] == 'a')
            s->watcher_logbuf_size = (int)n * 1024;
        else
            s->worker_logbuf_size = (int)n * 1024;
    } else if (strcmp(opt, "slab_sizes") == 0) {
        /* a-b-c...: increasing sizes; meaningless for segments but checked
         * so a command line memcached refuses is refused here too. */
        if (!val)
            FAIL(1, "Missing slab_sizes argument\n");
        long prev = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", val);
        for (char *save = NULL, *t = strtok_r(buf, "-", &save); t; t = strtok_r(NULL, "-", &save)) {
            if (settings_long(t, 1, INT_MAX, &n) < 0)
                return settings_bad_value(c, "slab_sizes", val, exit_code);
            if (n <= prev)
                FAIL(SETTINGS_EX_USAGE,
                     "slab size %ld cannot be lower than or equal to a previous class size\n", n);
            prev = n;
        }
    } else if (strcmp(opt, "slab_chunk_max") == 0) {
        NEED_NUMBER("slab_chunk_max");
        if (settings_long(val, 1, INT_MAX / 1024, &n) < 0)
            return settings_bad_value(c, "slab_chunk_max", val, exit_code);
        s->slab_chunk_max = (int)n * 1024; /* KB, as 1.6.45 */
        c->chunk_max_given = true;
    } else if (strcmp(opt, "track_sizes") == 0) {
        s->track_sizes = true;
    } else if (strcmp(opt, "inline_ascii_resp") == 0) {
        s->inline_ascii_response = true;
    } else if (strcmp(opt, "no_inline_ascii_resp") == 0) {
        s->inline_ascii_response = false;
    } else if (strcmp(opt, "no_modern") == 0) {
        /* memcached 1.4's defaults */
        s->slab_reassign = false;
        s->slab_automove = 0;
        s->hash_algorithm = "jenkins";
        s->lru_crawler = false;
        s->lru_maintainer_thread = false;
        s->lru_segmented = false;
    } else if (strcmp(opt, "metrics_listen") == 0) {
        /* nodelay's own: [ADDR:]PORT of the Prometheus endpoint */
        if (!val || !*val)
            FAIL(1, "Missing metrics_listen argument\n");
        free(s->metrics_listen);
        s->metrics_listen = strdup(val);
        if (!s->metrics_listen)
            FAIL(1, "out of memory\n");
    } else if (strcmp(opt, "read_buf_mem_limit") == 0) {
        if (!val || settings_long(val, 0, INT_MAX, &n) < 0)
            FAIL(1, "could not parse argument to read_buf_mem_limit\n");
        s->read_buf_mem_limit = (int)n;
    } else if (strcmp(opt, "modern") == 0 || strcmp(opt, "no_chunked_items") == 0 ||
               strcmp(opt, "drop_privileges") == 0 || strcmp(opt, "no_drop_privileges") == 0 ||
               strcmp(opt, "resp_obj_mem_limit") == 0 || strcmp(opt, "relaxed_privileges") == 0 ||
               strcmp(opt, "sock_cookie_id") == 0 || strcmp(opt, "slab_automove_freeratio") == 0 ||
               strncmp(opt, "ext_", 4) == 0 || strncmp(opt, "ssl_", 4) == 0) {
        /* Accepted so existing command lines start; no effect in nodelay
         * (no extstore: its items simply stay in memory; no TLS without -Z). */
    } else if (strncmp(opt, "proxy_", 6) == 0) {
        FAIL(SETTINGS_EX_USAGE, "-o %s: nodelay has no built-in proxy\n", opt);
    } else {
        if (val)
            val[-1] = '=';
        FAIL(1, "Illegal suboption \"%s\"\n", opt);
    }
    return 0;
#undef NEED_NUMBER
#undef FAIL
}

static int settings_extended(struct settings_parse_ctx *c, const char *arg, int *exit_code)
{
    char *copy = strdup(arg);
    if (!copy) {
        *exit_code = 1;
        return -1;
    }
    int rc = 0;
    for (char *save = NULL, *opt = strtok_r(copy, ",", &save); opt && rc == 0;
         opt = strtok_r(NULL, ",", &save))
        rc = settings_suboption(c, opt, exit_code);
    free(copy);
    return rc;
}

/* Cross-flag checks, after every flag is known (memcached's order). */
static int settings_check(struct settings_parse_ctx *c, int *exit_code)
{
    struct settings *s = c->s;
#define FAIL(code, ...)                                                        \
    do {                                                                       \
        fprintf(c->err, __VA_ARGS__);                                          \
        *exit_code = (code);                                                   \
        return -1;                                                             \
    } while (0)
    if (s->item_size_max < SETTINGS_ITEM_SIZE_MIN)
        FAIL(SETTINGS_EX_USAGE, "Item max size cannot be less than 1024 bytes.\n");
    if (s->item_size_max > s->maxbytes / 2)
        FAIL(SETTINGS_EX_USAGE, "Cannot set item size limit higher than 1/2 of memory max.\n");
    if (s->item_size_max > SETTINGS_ITEM_SIZE_MAX)
        FAIL(SETTINGS_EX_USAGE, "Cannot set item size limit higher than a gigabyte.\n");
    if (c->chunk_max_given) {
        if ((size_t)s->slab_chunk_max > s->item_size_max)
            FAIL(SETTINGS_EX_USAGE,
                 "slab_chunk_max (bytes: %d) cannot be larger than -I (item_size_max %zu)\n",
                 s->slab_chunk_max, s->item_size_max);
        if (s->item_size_max % (size_t)s->slab_chunk_max != 0)
            FAIL(SETTINGS_EX_USAGE,
                 "-I (item_size_max: %zu) must be evenly divisible by slab_chunk_max (bytes: %d)\n",
                 s->item_size_max, s->slab_chunk_max);
    } else if ((size_t)s->slab_chunk_max > s->item_size_max / 2) {
        s->slab_chunk_max = (int)(s->item_size_max / 2);
    } else if (s->item_size_max > (1u << 20)) {
        s->slab_chunk_max = (int)(s->item_size_max / 2);
    }
    if (s->hot_lru_pct + s->warm_lru_pct > 80)
        FAIL(SETTINGS_EX_USAGE, "hot_lru_pct + warm_lru_pct cannot be more than 80%% combined\n");
    if (s->temp_lru && !s->lru_maintainer_thread)
        FAIL(SETTINGS_EX_USAGE, "temporary_ttl requires lru_maintainer to be enabled\n");
    if (s->sasl) {
        if (!c->protocol_given)
            s->binding_protocol = "binary";
        else if (strcmp(s->binding_protocol, "binary") != 0)
            FAIL(SETTINGS_EX_USAGE,
                 "ERROR: You cannot allow the ASCII protocol while using SASL.\n");
    }
    if (s->auth_file) {
        if (!c->protocol_given)
            s->binding_protocol = "ascii";
        else if (strcmp(s->binding_protocol, "ascii") != 0)
            FAIL(SETTINGS_EX_USAGE, "ERROR: You cannot allow the BINARY protocol while using "
                                    "ascii authentication tokens.\n");
    }
    if (s->sasl && s->auth_file)
        FAIL(SETTINGS_EX_USAGE, "ERROR: -S (SASL) and -Y (ascii auth) cannot be used together.\n");
    return 0;
#undef FAIL
}

static const struct option settings_long_options[] = {
    {"port", required_argument, NULL, 'p'},
    {"udp-port", required_argument, NULL, 'U'},
    {"unix-socket", required_argument, NULL, 's'},
    {"unix-mask", required_argument, NULL, 'a'},
    {"enable-shutdown", no_argument, NULL, 'A'},
    {"listen", required_argument, NULL, 'l'},
    {"daemon", no_argument, NULL, 'd'},
    {"enable-coredumps", no_argument, NULL, 'r'},
    {"user", required_argument, NULL, 'u'},
    {"memory-limit", required_argument, NULL, 'm'},
    {"disable-evictions", no_argument, NULL, 'M'},
    {"conn-limit", required_argument, NULL, 'c'},
    {"lock-memory", no_argument, NULL, 'k'},
    {"verbose", optional_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"license", no_argument, NULL, 'i'},
    {"version", no_argument, NULL, 'V'},
    {"pidfile", required_argument, NULL, 'P'},
    {"slab-growth-factor", required_argument, NULL, 'f'},
    {"slab-min-size", required_argument, NULL, 'n'},
    {"enable-largepages", no_argument, NULL, 'L'},
    {"threads", required_argument, NULL, 't'},
    {"max-reqs-per-event", required_argument, NULL, 'R'},
    {"disable-cas", no_argument, NULL, 'C'},
    {"listen-backlog", required_argument, NULL, 'b'},
    {"protocol", required_argument, NULL, 'B'},
    {"max-item-size", required_argument, NULL, 'I'},
    {"enable-sasl", no_argument, NULL, 'S'},
    {"disable-flush-all", no_argument, NULL, 'F'},
    {"disable-dumping", no_argument, NULL, 'X'},
    {"disable-watch", no_argument, NULL, 'W'},
    {"auth-file", required_argument, NULL, 'Y'},
    {"memory-file", required_argument, NULL, 'e'},
    {"enable-ssl", no_argument, NULL, 'Z'},
    {"napi-ids", required_argument, NULL, 'N'},
    {"extended", required_argument, NULL, 'o'},
    {0, 0, 0, 0},
};

static const char settings_short_options[] =
    ":p:U:s:a:Al:dru:m:Mc:kvhiVP:f:n:LD:t:R:Cb:B:I:SFXWY:e:ZN:o:";

enum settings_result settings_parse(struct settings *s, int argc, char **argv, FILE *out,
                                    FILE *err, int *exit_code)
{
    struct settings_parse_ctx c = {.s = s, .err = err};
    bool tcp_port_given = false;
    long n;
    double d;
    *exit_code = 0;
    optind = 0; /* glibc: full re-initialisation, so tests can parse again */
    opterr = 0;
    int opt;
#define BAD(what) do { settings_bad_value(&c, what, optarg, exit_code); return SETTINGS_EXIT; } while (0)
#define FAIL(code, ...) do { fprintf(err, __VA_ARGS__); *exit_code = (code); return SETTINGS_EXIT; } while (0)
    while ((opt = getopt_long(argc, argv, settings_short_options, settings_long_options, NULL)) != -1) {
        switch (opt) {
        case 'p':
            if (settings_long(optarg, -1, 65535, &n) < 0)
                BAD("-p (port)");
            s->port = (int)n;
            tcp_port_given = true;
            break;
        case 'U':
            if (settings_long(optarg, -1, 65535, &n) < 0)
                BAD("-U (UDP port)");
            s->udpport = (int)n;
            c.udp_given = true;
            break;
        case 's':
            s->domain_socket = optarg;
            break;
        case 'a': {
            char *end;
            errno = 0;
            long mask = strtol(optarg, &end, 8);
            if (errno || *end || !*optarg || mask < 0 || mask > 0777)
                BAD("-a (unix socket mask, octal)");
            s->umask = (int)mask;
            break;
        }
        case 'A':
            s->shutdown_command = true;
            break;
        case 'l':
            if (settings_add_listen(&c, optarg) < 0)
                FAIL(1, "out of memory\n");
            break;
        case 'd':
            s->daemonize = true;
            break;
        case 'r':
            s->enable_coredumps = true;
            break;
        case 'u':
            s->username = optarg;
            break;
        case 'm': {
            size_t mb;
            if (settings_long(optarg, 0, LONG_MAX, &n) == 0)
                mb = (size_t)n;
            else if (settings_size(optarg, &mb) == 0)
                mb /= 1024 * 1024; /* "64m", "1g": a size in bytes */
            else
                BAD("-m (memory limit, MB)");
            if (mb > SIZE_MAX / (1024 * 1024))
                BAD("-m (memory limit, MB)");
            s->maxbytes = mb * 1024 * 1024;
            break;
        }
        case 'M':
            s->evictions = false;
            break;
        case 'c':
            if (settings_long(optarg, LONG_MIN, INT_MAX, &n) < 0)
                BAD("-c (connection limit)");
            if (n <= 0)
                FAIL(1, "Maximum connections must be greater than 0\n");
            s->maxconns = (int)n;
            break;
        case 'k':
            s->lock_memory = true;
            break;
        case 'v':
            s->verbosity++;
            break;
        case 'h':
            settings_print_help(out);
            return SETTINGS_EXIT;
        case 'i':
            fprintf(out, "nodelay %s is distributed under the license in its source tree.\n"
                         "It implements the protocol of memcached %s (BSD licence); it contains no "
                         "memcached code.\n",
                    NODELAY_VERSION, NODELAY_PROTOCOL_VERSION);
            return SETTINGS_EXIT;
        case 'V':
            fprintf(out, "nodelay %s (memcached %s protocol)\n", NODELAY_VERSION,
                    NODELAY_PROTOCOL_VERSION);
            return SETTINGS_EXIT;
        case 'P':
            s->pid_file = optarg;
            break;
        case 'f':
            if (settings_double(optarg, &d) < 0)
                BAD("-f (growth factor)");
            if (d <= 1.0)
                FAIL(1, "Factor must be greater than 1\n");
            s->growth_factor = d;
            break;
        case 'n':
            if (settings_long(optarg, LONG_MIN, INT_MAX, &n) < 0)
                BAD("-n (minimum chunk size)");
            if (n <= 0)
                FAIL(1, "Chunk size must be greater than 0\n");
            s->chunk_size = (int)n;
            break;
        case 'L':
            s->large_pages = true;
            break;
        case 'D':
            if (!optarg[0])
                FAIL(1, "No delimiter specified\n"); /* memcached uses the first character */
            s->prefix_delimiter = optarg[0];
            s->detail_enabled = true;
            break;
        case 't':
            if (settings_long(optarg, LONG_MIN, INT_MAX, &n) < 0)
                BAD("-t (threads)");
            if (n <= 0)
                FAIL(1, "Number of threads must be greater than 0\n");
            if (n > 64)
                fprintf(err, "WARNING: Setting a high number of worker threads is not recommended.\n"
                             " Set this value to the number of cores in your machine or less.\n");
            s->num_threads = (int)n;
            break;
        case 'R':
            if (settings_long(optarg, LONG_MIN, INT_MAX, &n) < 0)
                BAD("-R (requests per event)");
            if (n <= 0)
                FAIL(1, "Number of requests per event must be greater than 0\n");
            s->reqs_per_event = (int)n;
            break;
        case 'C':
            s->cas_enabled = false;
            break;
        case 'b':
            if (settings_long(optarg, 1, INT_MAX, &n) < 0)
                BAD("-b (listen backlog)");
            s->tcp_backlog = (int)n;
            break;
        case 'B':
            if (strcmp(optarg, "auto") == 0)
                s->binding_protocol = "auto";
            else if (strcmp(optarg, "binary") == 0)
                s->binding_protocol = "binary";
            else if (strcmp(optarg, "ascii") == 0)
                s->binding_protocol = "ascii";
            else
                FAIL(SETTINGS_EX_USAGE, "Invalid value for binding protocol: %s\n"
                                        " -- should be one of auto, binary, or ascii\n",
                     optarg);
            c.protocol_given = true;
            break;
        case 'I':
            if (settings_size(optarg, &s->item_size_max) < 0)
                BAD("-I (max item size)");
            break;
        case 'S':
            s->sasl = true;
            break;
        case 'F':
            s->flush_enabled = false;
            break;
        case 'X':
            s->dump_enabled = false;
            break;
        case 'W':
            s->watch_enabled = false;
            break;
        case 'Y':
            s->auth_file = optarg;
            break;
        case 'e':
            s->memory_file = optarg;
            break;
        case 'Z':
            FAIL(SETTINGS_EX_USAGE, "-Z: nodelay has no TLS support; terminate TLS in front of it\n");
        case 'N':
            if (settings_long(optarg, 0, INT_MAX, &n) < 0)
                BAD("-N (NAPI ids)");
            s->num_napi_ids = (int)n;
            break;
        case 'o':
            if (settings_extended(&c, optarg, exit_code) < 0)
                return SETTINGS_EXIT;
            break;
        case ':':
            FAIL(SETTINGS_EX_USAGE, "nodelay: option requires an argument -- '%s'\n",
                 optopt ? (char[2]){(char)optopt, 0} : argv[optind - 1]);
        default:
            if (optopt)
                FAIL(1, "nodelay: invalid option -- '%c'\nIllegal argument \"?\"\n", optopt);
            FAIL(1, "nodelay: unrecognized option '%s'\nIllegal argument \"?\"\n",
                 argv[optind - 1]);
        }
    }
    if (optind < argc)
        FAIL(1, "nodelay: unexpected argument \"%s\" (see -h)\n", argv[optind]);
    /* memcached: a UDP port given alone moves the TCP port with it. */
    if (c.udp_given && s->udpport != 0 && !tcp_port_given)
        s->port = s->udpport;
    if (s->sasl && s->udpport != 0)
        FAIL(SETTINGS_EX_USAGE, "ERROR: Cannot enable UDP while using binary SASL authentication\n");
    if (settings_check(&c, exit_code) < 0)
        return SETTINGS_EXIT;
    return SETTINGS_RUN;
#undef BAD
#undef FAIL
}

void settings_print_help(FILE *out)
{
    fprintf(out,
"nodelay %s - a memcached-compatible cache server.\n"
"Speaks memcached %s's text, meta and binary protocols and takes its flags.\n"
"Flags marked (compat) are accepted and shown in `stats settings` so existing\n"
"command lines keep working, but change nothing in nodelay.\n"
"\n"
"-p, --port=<num>          TCP port (default: 11211; 0 = off, -1 = any free port)\n"
"-U, --udp-port=<num>      UDP port (default: 0 = off; UDP replies to forged sources\n"
"                          make any server a reflection amplifier: keep it off on\n"
"                          untrusted networks)\n"
"-s, --unix-socket=<file>  UNIX socket to listen on (turns TCP off)\n"
"-a, --unix-mask=<mask>    permissions of the UNIX socket, octal (default: 700)\n"
"-A, --enable-shutdown     allow the `shutdown` command\n"
"-l, --listen=<addr>       interfaces to listen on, comma separated, IPv6 as [addr]:port\n"
"                          (default: 127.0.0.1 -- memcached listens on all; say -l 0.0.0.0)\n"
"-d, --daemon              run as a daemon\n"
"-r, --enable-coredumps    raise the core file limit to the maximum\n"
"-u, --user=<user>         user to run as; required when started as root (-u root keeps root)\n"
"-m, --memory-limit=<num>  item memory in megabytes (default: 64); an exact cap\n"
"-M, --disable-evictions   answer `SERVER_ERROR out of memory` instead of evicting\n"
"-c, --conn-limit=<num>    simultaneous connections (default: 1024)\n"
"-k, --lock-memory         lock all memory (mlockall)\n"
"-v, --verbose             log errors and start-up; -vv also connections and commands;\n"
"                          -vvv also internal state changes\n"
"-h, --help                this help\n"
"-i, --license             licence\n"
"-V, --version             version\n"
"-P, --pidfile=<file>      write the process id here (with -d)\n"
"-f, --slab-growth-factor=<f>  (compat) slab growth factor (default: 1.25)\n"
"-n, --slab-min-size=<n>   (compat) smallest slab chunk (default: 48)\n"
"-L, --enable-largepages   (compat) large memory pages\n"
"-D <char>                 prefix delimiter for `stats detail` (default: ':'); turns it on\n"
"-t, --threads=<num>       worker threads, each with its own event loop (default: 4)\n"
"-R, --max-reqs-per-event=<n>  requests served per connection per turn (default: 20)\n"
"-C, --disable-cas         turn CAS off\n"
"-b, --listen-backlog=<n>  listen backlog (default: 1024)\n"
"-B, --protocol=<name>     ascii, binary or auto (default: auto)\n"
"-I, --max-item-size=<n>   largest item, k/m suffix (default: 1m, min 1k, max 1024m)\n"
"-S, --enable-sasl         SASL authentication (binary protocol only)\n"
"-F, --disable-flush-all   refuse flush_all\n"
"-X, --disable-dumping     refuse stats cachedump, stats detail and lru_crawler dumps\n"
"-W, --disable-watch       refuse watch\n"
"-Y, --auth-file=<file>    ascii authentication: lines of user:password\n"
"-e, --memory-file=<file>  (compat) memcached's restartable cache file; nodelay starts empty\n"
"-Z, --enable-ssl          refused: nodelay has no TLS\n"
"-N, --napi-ids=<n>        (compat) NAPI ids\n"
"-o, --extended            comma-separated sub-options:\n"
"   idle_timeout=<s>       close connections idle this long (default: 0 = never)\n"
"   hashpower=<n>          initial index size 2^n, 12..32\n"
"   no_hashexpand          (compat) fixed-size index\n"
"   maxconns_fast, no_maxconns_fast  reject over -c at once (always done by nodelay)\n"
"   reply_queue_limit=<MB> (nodelay) cut off a client owing more than this while it\n"
"                          does not read (default: 64)\n"
"   metrics_listen=[ADDR:]PORT (nodelay) serve Prometheus /metrics there; the\n"
"                          address defaults to 127.0.0.1 (default: off)\n"
"   client_mem_limit=<MB>  (nodelay) replies and read buffers owed to all clients\n"
"                          together; past it those owing most are not read\n"
"                          (default: 0 = half of -m, at least 32)\n"
"   (compat) slab_reassign, no_slab_reassign, slab_automove[=0|1|2], no_slab_automove,\n"
"   slab_automove_ratio=<f>, slab_automove_window=<n>, slab_automove_freeratio=<f>,\n"
"   slab_chunk_max=<KB>, slab_sizes=<a-b-c..>, no_chunked_items, tail_repair_time=<s>,\n"
"   hash_algorithm=murmur3|jenkins|xxh3, lru_crawler, no_lru_crawler,\n"
"   lru_crawler_sleep=<us>, lru_crawler_tocrawl=<n>, lru_maintainer, no_lru_maintainer,\n"
"   hot_lru_pct=<n>, warm_lru_pct=<n>, hot_max_factor=<f>, warm_max_factor=<f>,\n"
"   temporary_ttl=<s>, watcher_logbuf_size=<KB>, worker_logbuf_size=<KB>,\n"
"   read_buf_mem_limit=<MB>, track_sizes, inline_ascii_resp, no_inline_ascii_resp,\n"
"   modern, no_modern, drop_privileges, no_drop_privileges, resp_obj_mem_limit,\n"
"   relaxed_privileges, sock_cookie_id, ext_* (no extstore), ssl_* (no TLS)\n"
"\n"
"`version` answers VERSION %s: nodelay implements memcached %s's protocol.\n"
"`stats nodelay` shows nodelay's own version and counters.\n",
            NODELAY_VERSION, NODELAY_PROTOCOL_VERSION, NODELAY_PROTOCOL_VERSION,
            NODELAY_PROTOCOL_VERSION);
}
