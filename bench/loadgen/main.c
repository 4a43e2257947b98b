/* SPDX-License-Identifier: BSD-3-Clause */
/* nodelay's load generator: see usage() and docs/benchmark.md. */
#include "loadgen.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
"usage: loadgen [options]            drive load, verify every value read\n"
"       loadgen fill [options]       fill until evictions; bytes per item\n"
"       loadgen replay [options]     deterministic Zipf get-then-set replay\n"
"       loadgen trace [options]      a real trace (.lis or \"key size\" lines), look-aside\n"
"       loadgen selftest             check histogram, verification, parsers\n"
"load options:\n"
"  -s, --server HOST:PORT     target (127.0.0.1:11211)\n"
"  -t, --threads N            load threads (1)\n"
"  -c, --conns N              connections in total (50)\n"
"  -d, --depth N              requests in flight per connection (1)\n"
"  -k, --keys N               key space key:0000000000.. (100000)\n"
"      --key-base N           first key index (0)\n"
"      --zipf S               Zipf exponent for key popularity (0 = uniform)\n"
"  -v, --value N|MIN-MAX      value bytes (100)\n"
"  -g, --get-ratio F          fraction of requests that are gets (0.9)\n"
"      --del-ratio F          fraction that are deletes (0)\n"
"  -m, --multi N              keys per get (1); --multi-random: 1..N\n"
"  -p, --proto text|meta|binary|mixed   (text)\n"
"  -n, --requests N           stop after N requests, or\n"
"  -D, --duration SEC         stop after SEC seconds (5)\n"
"  -r, --rate OPS             fixed offered rate, open loop (latency from the\n"
"                             intended send time)\n"
"      --prefill              set every key once, then stop\n"
"      --ttl SEC              exptime on sets (0)\n"
"      --seed N               (1)\n"
"      --json FILE            write results as JSON ('-' = stdout)\n"
"      --strict               each key owned by one connection: a get must\n"
"                             return the last acknowledged version or a miss\n"
"      --no-verify            check only that each hit is a requested key, not\n"
"                             its value (for bench/floor's canned values)\n"
"      --disconnect F         per request, drop the connection abruptly\n"
"                             (half the time mid-way through a set)\n"
"environment: LOADGEN_TLS=1 makes every connection TLS (fill and replay too)\n"
"      --trace-slow           print requests that take 40 ms or more, with their times,\n"
"                             sends and the kernel's TCP state (2000 per thread)\n"
"  -q, --quiet\n");
}

int lg_parse_server(char *arg, const char **host, int *port)
{
    char *colon = strrchr(arg, ':');
    if (!colon || atoi(colon + 1) <= 0)
        return -1;
    *colon = 0;
    *host = arg;
    *port = atoi(colon + 1);
    return 0;
}

static int parse_range(const char *s, uint32_t *lo, uint32_t *hi)
{
    char *end;
    *lo = (uint32_t)strtoul(s, &end, 10);
    *hi = *lo;
    if (*end == '-')
        *hi = (uint32_t)strtoul(end + 1, &end, 10);
    return *end || *hi < *lo ? -1 : 0;
}

static void print_json(FILE *f, const struct lg_config *cfg, const struct lg_stats *st,
                       double el)
{
    static const double qs[] = { 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999 };
    fprintf(f, "{\n  \"requests\": %lu, \"elapsed_s\": %.4f, \"ops_per_s\": %.1f,\n",
            st->requests, el, el > 0 ? (double)st->requests / el : 0);
    fprintf(f, "  \"gets\": %lu, \"sets\": %lu, \"deletes\": %lu, \"keys_requested\": %lu,\n",
            st->gets, st->sets, st->deletes, st->keys_requested);
    fprintf(f, "  \"hits\": %lu, \"misses\": %lu, \"errors\": %lu, \"server_errors\": %lu,"
               " \"not_stored\": %lu,\n", st->hits, st->misses, st->errors,
            st->server_errors, st->not_stored);
    fprintf(f, "  \"verified\": %s, \"verify_failures\": %lu, \"stale\": %lu, \"future\": %lu,"
               " \"miss_after_ack\": %lu,\n", cfg->no_verify ? "false" : "true", st->verify_failures, st->stale, st->future,
            st->miss_after_ack);
    fprintf(f, "  \"abandoned_seen\": %lu, \"abandoned_late\": %lu,"
               " \"abandoned_late_max_ms\": %.1f,\n",
            st->abandoned_seen, st->abandoned_late, (double)st->abandoned_late_max / 1e6);
    fprintf(f, "  \"disconnects\": %lu, \"partial_sends\": %lu, \"conn_errors\": %lu,"
               " \"late_sends\": %lu, \"slow40\": %lu, \"slow40_50\": %lu,\n"
               "  \"self_stalls\": %lu, \"self_stall_max_ms\": %.1f,\n",
            st->disconnects, st->partial_sends, st->conn_errors, st->late_sends,
            st->slow40, st->slow40_50, st->self_stalls, (double)st->self_stall_max / 1e6);
    const struct lg_hist *h = &st->lat;
    fprintf(f, "  \"lat_us\": {\"mean\": %.2f, \"p50\": %.2f, \"p90\": %.2f, \"p99\": %.2f,"
               " \"p999\": %.2f, \"max\": %.2f},\n",
            h->count ? (double)h->sum / (double)h->count / 1e3 : 0,
            lg_hist_quantile(h, 0.5) / 1e3, lg_hist_quantile(h, 0.9) / 1e3,
            lg_hist_quantile(h, 0.99) / 1e3, lg_hist_quantile(h, 0.999) / 1e3,
            h->max / 1e3);
    fprintf(f, "  \"percentiles\": [");
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
        fprintf(f, "[%g, %.2f], ", qs[i] * 100, lg_hist_quantile(h, qs[i]) / 1e3);
    fprintf(f, "[100, %.2f]],\n", h->max / 1e3);
    fprintf(f, "  \"config\": {\"conns\": %d, \"threads\": %d, \"depth\": %d, \"keys\": %u,"
               " \"zipf\": %g, \"vmin\": %u, \"vmax\": %u, \"get_ratio\": %g, \"multi\": %u,"
               " \"proto\": %d, \"rate\": %g}\n}\n",
            cfg->conns, cfg->threads, cfg->depth, cfg->keys, cfg->zipf, cfg->vmin, cfg->vmax,
            cfg->get_ratio, cfg->multi, (int)cfg->proto, cfg->rate);
}

void lg_report(const struct lg_config *cfg, const struct lg_stats *st, double el)
{
    const struct lg_hist *h = &st->lat;
    if (!cfg->quiet) {
        printf("requests %lu in %.2f s: %.0f ops/s (gets %lu, sets %lu, deletes %lu)\n",
               st->requests, el, el > 0 ? (double)st->requests / el : 0, st->gets, st->sets,
               st->deletes);
        printf("keys %lu: hits %lu misses %lu; errors %lu server_errors %lu not_stored %lu\n",
               st->keys_requested, st->hits, st->misses, st->errors, st->server_errors,
               st->not_stored);
        printf("verify failures %lu, stale %lu, never-written %lu, miss-after-ack %lu\n",
               st->verify_failures, st->stale, st->future, st->miss_after_ack);
        printf("latency us: p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f;"
               " >=40ms %lu (40-50ms %lu); late sends %lu\n",
               lg_hist_quantile(h, 0.5) / 1e3, lg_hist_quantile(h, 0.9) / 1e3,
               lg_hist_quantile(h, 0.99) / 1e3, lg_hist_quantile(h, 0.999) / 1e3,
               h->max / 1e3, st->slow40, st->slow40_50, st->late_sends);
        if (st->self_stalls)
            printf("the load generator itself was held up %lu times (max %.1f ms): busy machine\n",
                   st->self_stalls, (double)st->self_stall_max / 1e6);
        if (st->disconnects || st->conn_errors)
            printf("disconnects %lu (partial sets %lu), connection errors %lu\n",
                   st->disconnects, st->partial_sends, st->conn_errors);
    }
    if (cfg->json_path) {
        FILE *f = strcmp(cfg->json_path, "-") == 0 ? stdout : fopen(cfg->json_path, "w");
        if (!f) {
            perror(cfg->json_path);
            return;
        }
        print_json(f, cfg, st, el);
        if (f != stdout)
            fclose(f);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "fill") == 0)
        return lg_fill_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "replay") == 0)
        return lg_replay_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "trace") == 0)
        return lg_trace_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "selftest") == 0)
        return lg_selftest_main();

    struct lg_config cfg = {
        .host = "127.0.0.1", .port = 11211, .threads = 1, .conns = 50, .depth = 1,
        .keys = 100000, .vmin = 100, .vmax = 100, .get_ratio = 0.9, .multi = 1,
        .proto = LG_TEXT, .duration = 5, .seed = 1,
    };
    enum { O_BASE = 255, O_ZIPF = 256, O_DEL, O_PREFILL, O_TTL, O_SEED, O_JSON, O_STRICT, O_DISC, O_MR, O_TRACE, O_NOVERIFY };
    static const struct option opts[] = {
        { "server", 1, 0, 's' }, { "threads", 1, 0, 't' }, { "conns", 1, 0, 'c' },
        { "depth", 1, 0, 'd' }, { "keys", 1, 0, 'k' }, { "zipf", 1, 0, O_ZIPF }, { "key-base", 1, 0, O_BASE },
        { "value", 1, 0, 'v' }, { "get-ratio", 1, 0, 'g' }, { "del-ratio", 1, 0, O_DEL },
        { "multi", 1, 0, 'm' }, { "multi-random", 0, 0, O_MR }, { "proto", 1, 0, 'p' },
        { "requests", 1, 0, 'n' }, { "duration", 1, 0, 'D' }, { "rate", 1, 0, 'r' },
        { "prefill", 0, 0, O_PREFILL }, { "ttl", 1, 0, O_TTL }, { "seed", 1, 0, O_SEED },
        { "json", 1, 0, O_JSON }, { "strict", 0, 0, O_STRICT },
        { "no-verify", 0, 0, O_NOVERIFY },
        { "disconnect", 1, 0, O_DISC }, { "quiet", 0, 0, 'q' }, { "trace-slow", 0, 0, O_TRACE }, { "help", 0, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "s:t:c:d:k:v:g:m:p:n:D:r:qh", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            if (lg_parse_server(optarg, &cfg.host, &cfg.port) != 0) {
                fprintf(stderr, "bad --server %s\n", optarg);
                return 2;
            }
            break;
        case 't': cfg.threads = atoi(optarg); break;
        case 'c': cfg.conns = atoi(optarg); break;
        case 'd': cfg.depth = atoi(optarg); break;
        case 'k': cfg.keys = (uint32_t)strtoul(optarg, NULL, 10); break;
        case O_ZIPF: cfg.zipf = atof(optarg); break;
        case O_BASE: cfg.key_base = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'v':
            if (parse_range(optarg, &cfg.vmin, &cfg.vmax) != 0) {
                fprintf(stderr, "bad --value %s\n", optarg);
                return 2;
            }
            break;
        case 'g': cfg.get_ratio = atof(optarg); break;
        case O_DEL: cfg.del_ratio = atof(optarg); break;
        case 'm': cfg.multi = (unsigned)atoi(optarg); break;
        case O_MR: cfg.multi_random = true; break;
        case 'p':
            if (strcmp(optarg, "text") == 0) cfg.proto = LG_TEXT;
            else if (strcmp(optarg, "meta") == 0) cfg.proto = LG_META;
            else if (strcmp(optarg, "binary") == 0) cfg.proto = LG_BINARY;
            else if (strcmp(optarg, "mixed") == 0) cfg.proto = LG_PROTO_MIXED;
            else {
                fprintf(stderr, "bad --proto %s\n", optarg);
                return 2;
            }
            break;
        case 'n': cfg.requests = strtoull(optarg, NULL, 10); break;
        case 'D': cfg.duration = atof(optarg); break;
        case 'r': cfg.rate = atof(optarg); break;
        case O_PREFILL: cfg.prefill = true; break;
        case O_TTL: cfg.ttl = (uint32_t)atoi(optarg); break;
        case O_SEED: cfg.seed = strtoull(optarg, NULL, 10); break;
        case O_JSON: cfg.json_path = optarg; break;
        case O_STRICT: cfg.strict = true; break;
        case O_NOVERIFY: cfg.no_verify = true; break;
        case O_DISC: cfg.disconnect_ratio = atof(optarg); break;
        case 'q': cfg.quiet = true; break;
        case O_TRACE: cfg.trace_slow = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (cfg.threads < 1 || cfg.conns < cfg.threads || cfg.depth < 1 || cfg.depth > 4096 ||
        cfg.multi < 1 || cfg.multi > LG_MAX_MULTI || cfg.keys < 1 ||
        (cfg.strict && cfg.keys < (uint32_t)cfg.conns) || (cfg.strict && cfg.no_verify)) {
        fprintf(stderr, "bad option combination (see --help)\n");
        return 2;
    }
    struct lg_shared sh = { .cfg = &cfg };
    if (lg_dist_init(&sh.dist, cfg.keys, cfg.zipf) != 0 ||
        lg_values_init(&sh.values, cfg.vmin, cfg.vmax) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if (cfg.strict) {
        /* indexed by key number, so sized for the whole range from 0 */
        size_t n = (size_t)cfg.key_base + cfg.keys;
        sh.lo = calloc(n, sizeof(uint32_t));
        sh.hi = calloc(n, sizeof(uint32_t));
        sh.taint_until = calloc(n, sizeof(uint64_t));
        sh.limbo = calloc(n, sizeof(struct lg_limbo));
        sh.deleted = calloc(n, sizeof(bool));
        if (!sh.lo || !sh.hi || !sh.taint_until || !sh.limbo || !sh.deleted) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
    }
    struct lg_stats st;
    double el;
    int rc = lg_run_load(&sh, &st, &el);
    lg_report(&cfg, &st, el);
    free(sh.lo);
    free(sh.hi);
    free(sh.taint_until);
    if (sh.limbo)
        for (size_t i = 0; i < (size_t)cfg.key_base + cfg.keys; i++)
            lg_limbo_release(&sh.limbo[i]);
    free(sh.limbo);
    free(sh.deleted);
    lg_dist_release(&sh.dist);
    lg_values_release(&sh.values);
    if (rc != 0)
        return 1;
    /* any sign of a wrong value is a failure of the run */
    return st.verify_failures || st.stale || st.future ? 3 : 0;
}
