/* SPDX-License-Identifier: BSD-3-Clause */
/* replay: a deterministic Zipf trace, get-then-set-on-miss, as a cache in
 * front of a database would issue it. Requests go in batches: the gets of a
 * batch, then the sets for its misses, so the trace and the server's inputs
 * are the same on every run for a given seed and batch. The miss ratio is
 * measured over the second half of the Zipf requests (a warm cache); the
 * optional scan of fresh keys, spread evenly through the trace, never hits
 * and is counted apart. */
#include "blocking.h"
#include "keyspace.h"
#include "loadgen.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_replay_main(int argc, char **argv)
{
    const char *host = "127.0.0.1";
    int port = 11211;
    uint32_t keys = 1000000, vlen = 200, batch = 128;
    uint64_t requests = 5000000, scan = 0, seed = 42;
    double zipf = 0.99;
    const char *json = NULL;
    static const struct option opts[] = {
        { "server", 1, 0, 's' }, { "keys", 1, 0, 'k' }, { "value", 1, 0, 'v' },
        { "requests", 1, 0, 'n' }, { "zipf", 1, 0, 'z' }, { "scan", 1, 0, 'S' },
        { "seed", 1, 0, 'e' }, { "batch", 1, 0, 'b' }, { "json", 1, 0, 'j' },
        { 0, 0, 0, 0 },
    };
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "s:k:v:n:z:S:e:b:j:", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            if (lg_parse_server(optarg, &host, &port) != 0)
                return 2;
            break;
        case 'k': keys = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'v': vlen = (uint32_t)atoi(optarg); break;
        case 'n': requests = strtoull(optarg, NULL, 10); break;
        case 'z': zipf = atof(optarg); break;
        case 'S': scan = strtoull(optarg, NULL, 10); break;
        case 'e': seed = strtoull(optarg, NULL, 10); break;
        case 'b': batch = (uint32_t)atoi(optarg); break;
        case 'j': json = optarg; break;
        default:
            fprintf(stderr, "usage: loadgen replay -s HOST:PORT [--keys N] [--value B]"
                            " [--requests N] [--zipf S] [--scan N] [--seed N] [--json F]\n");
            return 2;
        }
    }
    if (batch < 1 || batch > LG_MAX_MULTI)
        batch = 128;
    struct lg_dist dist;
    struct lg_values vals;
    struct lg_bconn b;
    if (lg_dist_init(&dist, keys, zipf) != 0 || lg_values_init(&vals, vlen, vlen) != 0)
        return 1;
    if (lg_bconn_open(&b, host, port) != 0) {
        fprintf(stderr, "replay: cannot connect to %s:%d\n", host, port);
        return 1;
    }
    struct lg_rng rng = { seed };
    uint64_t total = requests + scan, done = 0, zdone = 0, sdone = 0;
    uint64_t zmiss2 = 0, zreq2 = 0, zmiss = 0, smiss = 0, errors = 0, wrong = 0;
    uint32_t bkeys[LG_MAX_MULTI];
    uint8_t bscan[LG_MAX_MULTI];
    uint64_t bidx[LG_MAX_MULTI];
    char keybuf[LG_MAX_MULTI * LG_KEY_LEN];
    struct lg_buf out = { 0 };
    struct lg_reply rep;
    uint64_t t0 = lg_now_ns();
    /* The sets for a batch's misses travel in front of the next batch's gets:
     * the server still sees them before those gets, as in a strict
     * get-then-set order, at one round trip per batch instead of two. */
    uint32_t nsets = 0;
    out.len = 0;
    while (done < total) {
        uint32_t n = 0;
        for (; n < batch && done < total; n++, done++) {
            /* Bresenham spreading of the scan through the trace */
            bool is_scan = scan && (done + 1) * scan / total > done * scan / total;
            uint32_t k;
            if (is_scan) {
                k = keys + (uint32_t)sdone++;
            } else {
                k = lg_dist_pick(&dist, &rng);
                bidx[n] = zdone++;
            }
            bkeys[n] = k;
            bscan[n] = is_scan;
            lg_key_format(keybuf + (size_t)n * LG_KEY_LEN, k);
        }
        /* one multiget per batch: the server answers hits in request order
         * (a key asked twice is answered twice), so hits map back by walking */
        if (lg_wire_get(&out, LG_TEXT, keybuf, n) != 0)
            return 1;
        if (lg_bconn_send(&b, out.p, out.len) != 0)
            goto lost;
        for (uint32_t i = 0; i < nsets; i++) {
            if (lg_bconn_reply(&b, LG_OP_SET, 1, &rep) != 0)
                goto lost;
            if (rep.status != LG_ST_OK)
                errors++;
        }
        if (lg_bconn_reply(&b, LG_OP_GET, n, &rep) != 0)
            goto lost;
        if (rep.status != LG_ST_OK)
            errors++;
        bool miss[LG_MAX_MULTI];
        unsigned h = 0;
        for (uint32_t i = 0; i < n; i++) {
            miss[i] = true;
            if (h < rep.nhits && lg_key_parse(rep.hits[h].key, rep.hits[h].keylen) == bkeys[i]) {
                uint32_t ver;
                if (lg_value_check(&vals, bkeys[i], rep.hits[h].data, rep.hits[h].len,
                                   &ver) != LG_VERIFY_OK)
                    wrong++;
                miss[i] = false;
                h++;
            }
            if (bscan[i]) {
                smiss += miss[i];
            } else {
                zmiss += miss[i];
                if (bidx[i] >= requests / 2) {
                    zreq2++;
                    zmiss2 += miss[i];
                }
            }
        }
        wrong += rep.nhits - h; /* hits out of order or for keys not asked */
        out.len = 0;
        nsets = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (!miss[i])
                continue;
            char key[LG_KEY_LEN], *v;
            lg_key_format(key, bkeys[i]);
            if (lg_wire_set(&out, LG_TEXT, key, vlen, 0, &v) != 0)
                return 1;
            lg_value_write(&vals, v, bkeys[i], 1);
            nsets++;
        }
    }
    if (nsets && lg_bconn_send(&b, out.p, out.len) != 0)
        goto lost;
    for (uint32_t i = 0; i < nsets; i++) {
        if (lg_bconn_reply(&b, LG_OP_SET, 1, &rep) != 0)
            goto lost;
        if (rep.status != LG_ST_OK)
            errors++;
    }
    double el = (double)(lg_now_ns() - t0) / 1e9;
    long long evictions = lg_bconn_stat(&b, "evictions");
    double ratio = zreq2 ? (double)zmiss2 / (double)zreq2 : 0;
    printf("replay: zipf %.2f over %u keys of %u B, %lu requests + %lu scan, seed %lu, "
           "%.1f s\n", zipf, keys, vlen, requests, scan, seed, el);
    printf("replay: miss ratio, second half: %.4f (%lu of %lu); all zipf: %.4f; "
           "scan misses %lu; errors %lu; wrong values %lu; evictions %lld\n",
           ratio, zmiss2, zreq2, requests ? (double)zmiss / (double)requests : 0, smiss, errors,
           wrong, evictions);
    if (json) {
        FILE *f = strcmp(json, "-") == 0 ? stdout : fopen(json, "w");
        if (f) {
            fprintf(f, "{\"zipf\": %g, \"keys\": %u, \"value\": %u, \"requests\": %lu,"
                       " \"scan\": %lu, \"seed\": %lu, \"miss_ratio\": %.6f,"
                       " \"miss_ratio_all\": %.6f, \"scan_misses\": %lu, \"errors\": %lu,"
                       " \"wrong\": %lu, \"evictions\": %lld, \"elapsed_s\": %.2f}\n",
                    zipf, keys, vlen, requests, scan, seed, ratio,
                    requests ? (double)zmiss / (double)requests : 0, smiss, errors, wrong,
                    evictions, el);
            if (f != stdout)
                fclose(f);
        }
    }
    lg_buf_release(&out);
    lg_bconn_close(&b);
    lg_dist_release(&dist);
    lg_values_release(&vals);
    return wrong ? 3 : 0;
lost:
    fprintf(stderr, "replay: connection lost after %lu requests\n", done);
    return 1;
}
