/* SPDX-License-Identifier: BSD-3-Clause */
/* fill: set key:%010d with fixed-size values until the server starts to
 * evict (or refuses), then report how many items it held and what each cost
 * beyond its key and value: limit_maxbytes / curr_items - key - value in
 * -m, and all in, with the index outside -m that both servers report as
 * hash_bytes: (limit_maxbytes + hash_bytes) / curr_items - key - value. */
#include "blocking.h"
#include "keyspace.h"
#include "loadgen.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_fill_main(int argc, char **argv)
{
    struct lg_config cfg = { .host = "127.0.0.1", .port = 11211 };
    uint32_t vlen = 100, batch = 200;
    uint64_t max_items = 100000000;
    const char *json = NULL;
    static const struct option opts[] = {
        { "server", 1, 0, 's' }, { "value", 1, 0, 'v' }, { "batch", 1, 0, 'b' },
        { "max-items", 1, 0, 'x' }, { "json", 1, 0, 'j' }, { 0, 0, 0, 0 },
    };
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "s:v:b:x:j:", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            if (lg_parse_server(optarg, &cfg.host, &cfg.port) != 0)
                return 2;
            break;
        case 'v': vlen = (uint32_t)atoi(optarg); break;
        case 'b': batch = (uint32_t)atoi(optarg); break;
        case 'x': max_items = strtoull(optarg, NULL, 10); break;
        case 'j': json = optarg; break;
        default:
            fprintf(stderr, "usage: loadgen fill -s HOST:PORT -v VALUE_BYTES [--json F]\n");
            return 2;
        }
    }
    struct lg_values vals;
    struct lg_bconn b;
    if (lg_values_init(&vals, vlen, vlen) != 0 || lg_bconn_open(&b, cfg.host, cfg.port) != 0) {
        fprintf(stderr, "fill: cannot connect to %s:%d\n", cfg.host, cfg.port);
        return 1;
    }
    static char stats[16384];
    struct lg_buf out = { 0 };
    struct lg_reply rep;
    uint64_t sent = 0, refused = 0;
    long long evictions = 0;
    while (sent < max_items) {
        out.len = 0;
        for (uint32_t i = 0; i < batch; i++) {
            char key[LG_KEY_LEN], *v;
            lg_key_format(key, (uint32_t)(sent + i));
            if (lg_wire_set(&out, LG_TEXT, key, vlen, 0, &v) != 0)
                return 1;
            lg_value_write(&vals, v, (uint32_t)(sent + i), 1);
        }
        if (lg_bconn_send(&b, out.p, out.len) != 0)
            goto lost;
        for (uint32_t i = 0; i < batch; i++) {
            if (lg_bconn_reply(&b, LG_OP_SET, 1, &rep) != 0)
                goto lost;
            if (rep.status != LG_ST_OK)
                refused++;
        }
        sent += batch;
        if (lg_bconn_stats(&b, stats, sizeof(stats)) != 0)
            goto lost;
        evictions = lg_stats_field(stats, "evictions");
        if (evictions > 0 || refused > 0)
            break;
    }
    long long limit = lg_stats_field(stats, "limit_maxbytes");
    long long items = lg_stats_field(stats, "curr_items");
    long long bytes = lg_stats_field(stats, "bytes");
    long long hash = lg_stats_field(stats, "hash_bytes");
    double per = items > 0 ? (double)limit / (double)items : 0;
    double overhead = per - LG_KEY_LEN - vlen;
    double all_in = items > 0 && hash >= 0 ? overhead + (double)hash / (double)items : -1;
    printf("fill: value %u B: sent %lu sets, refused %lu, evictions %lld; "
           "limit_maxbytes %lld, curr_items %lld, bytes %lld\n",
           vlen, sent, refused, evictions, limit, items, bytes);
    printf("fill: %.1f bytes of memory per item, %.1f beyond key (%d) and value (%u); "
           "hash_bytes %lld, %.1f all in\n",
           per, overhead, LG_KEY_LEN, vlen, hash, all_in);
    if (json) {
        FILE *f = strcmp(json, "-") == 0 ? stdout : fopen(json, "w");
        if (f) {
            fprintf(f, "{\"value\": %u, \"sets\": %lu, \"refused\": %lu, \"evictions\": %lld,"
                       " \"limit_maxbytes\": %lld, \"curr_items\": %lld, \"bytes\": %lld,"
                       " \"bytes_per_item\": %.2f, \"overhead\": %.2f, \"hash_bytes\": %lld,"
                       " \"all_in\": %.2f}\n",
                    vlen, sent, refused, evictions, limit, items, bytes, per, overhead, hash,
                    all_in);
            if (f != stdout)
                fclose(f);
        }
    }
    lg_buf_release(&out);
    lg_bconn_close(&b);
    lg_values_release(&vals);
    return items > 0 ? 0 : 1;
lost:
    fprintf(stderr, "fill: connection lost after %lu sets\n", sent);
    return 1;
}
