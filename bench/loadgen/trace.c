/* SPDX-License-Identifier: BSD-3-Clause */
/* trace: a real trace replayed as a look-aside cache. Each line is one
 * multiget of its keys; every miss is then set (with the trace's size, or
 * --value bytes), its set travelling in front of the next line's get, so the
 * server sees a strict get-then-set order at one round trip per line. The
 * miss ratio is over the accesses of the second half of the lines (a warm
 * cache), the same accesses cachesim counts. A hit's value must be the one
 * last set for its key (length and leading key bytes), else it is "wrong". */
#include "blocking.h"
#include "loadgen.h"
#include "tracefile.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value set for a key: its key bytes repeated, so a hit names its key. */
static void value_fill(char *v, uint32_t vlen, const char *k, uint32_t klen)
{
    for (uint32_t i = 0; i < vlen; i++)
        v[i] = k[i % klen];
}

static int value_ok(const char *d, size_t len, uint32_t want, const char *k, uint32_t klen)
{
    if (len != want)
        return 0;
    for (uint32_t i = 0; i < len && i < 2 * klen; i++)
        if (d[i] != k[i % klen])
            return 0;
    return 1;
}

/* An item's bytes besides its key and value in the footprint: memcached
 * 1.6.45's item header with its CAS, so -m scaled by the footprint means the
 * same share of the trace at every value size. */
#define FOOTPRINT_HEADER 56

/* The trace's footprint: every distinct key with the value last set for it.
 * Returns 0, or -1 when out of memory. */
static int footprint_bytes(const struct lg_trace *t, uint32_t vlen, uint64_t *bytes)
{
    uint32_t *last = NULL;
    if (!vlen) {
        last = calloc(t->nkeys ? t->nkeys : 1, sizeof(*last));
        if (!last)
            return -1;
        for (uint64_t a = 0; a < t->nacc; a++)
            last[t->acc[a]] = t->size[a];
    }
    *bytes = 0;
    for (uint32_t id = 0; id < t->nkeys; id++) {
        uint32_t kl;
        lg_trace_key(t, id, &kl);
        *bytes += kl + (uint64_t)(last ? last[id] : vlen) + FOOTPRINT_HEADER;
    }
    free(last);
    return 0;
}

static int append(struct lg_buf *b, const char *p, size_t n)
{
    if (lg_buf_reserve(b, n) != 0)
        return -1;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

int lg_trace_main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *file = "-", *json = NULL, *label = "";
    int port = 11211;
    uint32_t vlen = 0;
    unsigned max_keys = 16;
    uint64_t max_lines = 0;
    double time_limit = 0;
    int footprint = 0;
    enum lg_trace_fmt fmt = LG_TRACE_LIS;
    static const struct option opts[] = {
        { "server", 1, 0, 's' }, { "file", 1, 0, 'f' }, { "format", 1, 0, 'F' },
        { "value", 1, 0, 'v' }, { "max-keys", 1, 0, 'K' }, { "lines", 1, 0, 'n' },
        { "time-limit", 1, 0, 'T' }, { "json", 1, 0, 'j' }, { "label", 1, 0, 'l' },
        { "footprint", 0, 0, 'P' }, { 0, 0, 0, 0 },
    };
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "s:f:F:v:K:n:T:j:l:P", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            if (lg_parse_server(optarg, &host, &port) != 0)
                return 2;
            break;
        case 'f': file = optarg; break;
        case 'F':
            if (lg_trace_fmt_parse(optarg, &fmt) != 0)
                goto usage;
            break;
        case 'v': vlen = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'K': max_keys = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'n': max_lines = strtoull(optarg, NULL, 10); break;
        case 'T': time_limit = atof(optarg); break;
        case 'j': json = optarg; break;
        case 'l': label = optarg; break;
        case 'P': footprint = 1; break;
        default:
            goto usage;
        }
    }
    if (max_keys < 1 || max_keys > LG_MAX_MULTI)
        goto usage;
    if (fmt == LG_TRACE_LIS && vlen == 0)
        vlen = 512;
    struct lg_trace t;
    FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!in) {
        perror(file);
        return 1;
    }
    int rc = lg_trace_load(&t, in, fmt, max_keys, max_lines);
    if (in != stdin)
        fclose(in);
    if (rc != 0)
        return 1;
    if (footprint) {
        uint64_t bytes;
        rc = footprint_bytes(&t, vlen, &bytes);
        if (rc == 0)
            printf("footprint: %u keys, %llu bytes\n", t.nkeys, (unsigned long long)bytes);
        else
            fprintf(stderr, "trace: out of memory\n");
        lg_trace_release(&t);
        return rc == 0 ? 0 : 1;
    }
    struct lg_bconn b;
    if (lg_bconn_open(&b, host, port) != 0) {
        fprintf(stderr, "trace: cannot connect to %s:%d\n", host, port);
        return 1;
    }
    /* the size last set for each key, to check hits against */
    uint32_t *set_len = calloc(t.nkeys, sizeof(*set_len));
    if (!set_len)
        return 1;
    struct lg_buf out = { 0 };
    struct lg_reply rep;
    uint64_t miss2 = 0, acc2 = 0, miss = 0, errors = 0, wrong = 0;
    uint32_t nsets = 0, half = t.nreq / 2, r = 0;
    int cut = 0;
    uint64_t t0 = lg_now_ns();
    for (; r < t.nreq; r++) {
        if (time_limit > 0 && (r & 1023) == 0 &&
            (double)(lg_now_ns() - t0) / 1e9 > time_limit) {
            cut = 1;
            break;
        }
        uint64_t a0 = t.req_at[r], n = t.req_at[r + 1] - a0;
        if (append(&out, "get", 3) != 0)
            return 1;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t kl;
            const char *k = lg_trace_key(&t, t.acc[a0 + i], &kl);
            if (append(&out, " ", 1) != 0 || append(&out, k, kl) != 0)
                return 1;
        }
        if (append(&out, "\r\n", 2) != 0)
            return 1;
        if (lg_bconn_send(&b, out.p, out.len) != 0)
            goto lost;
        for (uint32_t i = 0; i < nsets; i++) {
            if (lg_bconn_reply(&b, LG_OP_SET, 1, &rep) != 0)
                goto lost;
            if (rep.status != LG_ST_OK)
                errors++;
        }
        if (lg_bconn_reply(&b, LG_OP_GET, (unsigned)n, &rep) != 0)
            goto lost;
        if (rep.status != LG_ST_OK)
            errors++;
        bool hit[LG_MAX_MULTI];
        unsigned h = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t id = t.acc[a0 + i], kl;
            const char *k = lg_trace_key(&t, id, &kl);
            hit[i] = false;
            if (h < rep.nhits && rep.hits[h].keylen == kl && memcmp(rep.hits[h].key, k, kl) == 0) {
                if (!value_ok(rep.hits[h].data, rep.hits[h].len, set_len[id], k, kl))
                    wrong++;
                hit[i] = true;
                h++;
            }
            miss += !hit[i];
            if (r >= half) {
                acc2++;
                miss2 += !hit[i];
            }
        }
        wrong += rep.nhits - h; /* hits out of order or for keys not asked */
        out.len = 0;
        nsets = 0;
        for (uint64_t i = 0; i < n; i++) {
            if (hit[i])
                continue;
            uint32_t id = t.acc[a0 + i], kl;
            const char *k = lg_trace_key(&t, id, &kl);
            uint32_t sz = vlen ? vlen : t.size[a0 + i];
            char key[256], *v;
            memcpy(key, k, kl);
            key[kl] = 0;
            /* lg_wire_set writes a fixed-width key: the text set is written here */
            char hdr[300];
            int hn = snprintf(hdr, sizeof(hdr), "set %s 0 0 %u\r\n", key, sz);
            if (append(&out, hdr, (size_t)hn) != 0 || lg_buf_reserve(&out, sz + 2) != 0)
                return 1;
            v = out.p + out.len;
            value_fill(v, sz, k, kl);
            memcpy(v + sz, "\r\n", 2);
            out.len += sz + 2;
            set_len[id] = sz;
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
    char stats[16384];
    long long items = -1, evictions = -1, limit = -1;
    if (lg_bconn_stats(&b, stats, sizeof(stats)) == 0) {
        items = lg_stats_field(stats, "curr_items");
        evictions = lg_stats_field(stats, "evictions");
        limit = lg_stats_field(stats, "limit_maxbytes");
    }
    double ratio = acc2 ? (double)miss2 / (double)acc2 : 0;
    char vdesc[32];
    if (vlen)
        snprintf(vdesc, sizeof(vdesc), "%u B", vlen);
    else
        snprintf(vdesc, sizeof(vdesc), "the trace's sizes");
    printf("trace%s%s: %u lines, %lu accesses, %u keys, values of %s; %u lines replayed%s in "
           "%.1f s\n", *label ? " " : "", label, t.nreq, t.nacc, t.nkeys, vdesc, r,
           cut ? " (cut by --time-limit: the ratio is not the whole trace's)" : "", el);
    printf("trace%s%s: miss ratio, second half: %.4f (%lu of %lu); all: %.4f; items %lld; "
           "evictions %lld; errors %lu; wrong values %lu\n", *label ? " " : "", label, ratio,
           miss2, acc2, t.req_at[r] ? (double)miss / (double)t.req_at[r] : 0, items, evictions,
           errors, wrong);
    if (json) {
        FILE *f = strcmp(json, "-") == 0 ? stdout : fopen(json, "w");
        if (f) {
            fprintf(f, "{\"label\": \"%s\", \"lines\": %u, \"lines_replayed\": %u, \"cut\": %s,"
                       " \"accesses\": %lu, \"keys\": %u, \"value\": %u, \"miss_ratio\": %.6f,"
                       " \"misses_2nd_half\": %lu, \"accesses_2nd_half\": %lu,"
                       " \"miss_ratio_all\": %.6f, \"items\": %lld, \"evictions\": %lld,"
                       " \"limit_maxbytes\": %lld, \"errors\": %lu, \"wrong\": %lu,"
                       " \"elapsed_s\": %.2f}\n",
                    label, t.nreq, r, cut ? "true" : "false", t.nacc, t.nkeys, vlen, ratio, miss2,
                    acc2, t.req_at[r] ? (double)miss / (double)t.req_at[r] : 0, items, evictions,
                    limit, errors, wrong, el);
            if (f != stdout)
                fclose(f);
        }
    }
    free(set_len);
    lg_buf_release(&out);
    lg_bconn_close(&b);
    lg_trace_release(&t);
    return wrong ? 3 : cut ? 4 : 0;
lost:
    fprintf(stderr, "trace: connection lost after %u lines\n", r);
    return 1;
usage:
    fprintf(stderr, "usage: loadgen trace -s HOST:PORT [--format lis|kv] [--file F|-]"
                    " [--value B] [--max-keys 16] [--lines N] [--time-limit S] [--label L]"
                    " [--json F]\n"
                    "       loadgen trace --footprint [--format lis|kv] [--file F|-] [--value B]\n"
                    "  --footprint: print the distinct keys and their bytes (key, value and"
                    " 56 B each), no server\n"
                    "  lis: \"start nblocks _ _\" per line (--value defaults to 512);"
                    " kv: \"key size\" per line (--value overrides size)\n");
    return 2;
}
