/* SPDX-License-Identifier: BSD-3-Clause */
/* pipecost: the cache's own cost per request at pipeline 16, without the
 * kernel (docs/benchmark-cost.md "The cache's own cost").
 *
 *   build/bench/pipecost [-k KEYS] [-v BYTES] [-c CONNS] [-n REQUESTS] [-r ROUNDS] [-d DEPTH]
 *
 * The server's own path, byte for byte what a worker runs after its read:
 * proto_process over a read of DEPTH (16; -d 1: pipeline 1) pipelined requests (90 % `get`, 10 %
 * `set`, keys drawn uniformly from KEYS prefilled ones of BYTES bytes, as
 * get90_p16 sends them), then the reply queue turned into iovecs and
 * consumed as a full writev would. CONNS sessions take turns, as a worker's
 * connections do. Prints the median ns/request over ROUNDS rounds of
 * REQUESTS requests (and the range): the figure B - F estimates from the
 * outside, measured here without the loopback TCP noise around it. The
 * reads are generated before the clock starts (and copied into the
 * session's read buffer inside it, as the kernel copies them). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "settings/options.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "settings/settings.h"
#include "stats/stats.h"
#include "store/store.h"

#define PC_DEPTH_MAX 16
static int pc_depth = PC_DEPTH_MAX; /* requests a read (-d) */
#define PC_IOV 1024 /* IOV_MAX on Linux: what one writev takes */
#define PC_READS 4096 /* distinct reads, reused in turn */

/* CPU time, not wall time: on a shared machine the process is often off
 * the CPU, and that is no cost of the cache's. */
static uint64_t pc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: the same stream every run */
static uint64_t pc_rand(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1Dull;
}

static void pc_drain(struct session *s)
{
    struct iovec iov[PC_IOV];
    while (reply_pending(&s->reply) > 0) {
        int n = reply_iov(&s->reply, iov, PC_IOV);
        size_t got = 0;
        for (int i = 0; i < n; i++)
            got += iov[i].iov_len;
        reply_consume(&s->reply, got);
    }
}

/* One read's bytes: pc_depth requests. */
static size_t pc_read(char *out, size_t cap, uint64_t *rng, unsigned keys, const char *value,
                      size_t vlen)
{
    size_t n = 0;
    for (int i = 0; i < pc_depth; i++) {
        unsigned k = (unsigned)(pc_rand(rng) % keys);
        bool set = pc_rand(rng) % 10 == 0;
        if (set)
            n += (size_t)snprintf(out + n, cap - n, "set key:%010u 0 0 %zu\r\n%s\r\n", k, vlen,
                                  value);
        else
            n += (size_t)snprintf(out + n, cap - n, "get key:%010u\r\n", k);
    }
    return n;
}

static int pc_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    unsigned keys = 100000, conns = 50, rounds = 7;
    size_t vlen = 100, per_round = 2000000;
    int o;
    while ((o = getopt(argc, argv, "k:v:c:n:r:d:h")) != -1) {
        switch (o) {
        case 'k': keys = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'v': vlen = strtoul(optarg, NULL, 10); break;
        case 'c': conns = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'n': per_round = strtoul(optarg, NULL, 10); break;
        case 'r': rounds = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'd': pc_depth = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: pipecost [-k KEYS] [-v BYTES] [-c CONNS] [-n REQUESTS] "
                            "[-r ROUNDS] [-d DEPTH]\n");
            return o == 'h' ? 0 : 2;
        }
    }
    if (!keys || !conns || !rounds || vlen > 4096 || pc_depth < 1 ||
        pc_depth > PC_DEPTH_MAX || per_round < (size_t)pc_depth) {
        fprintf(stderr, "pipecost: bad arguments\n");
        return 2;
    }
    clock_setup();
    struct settings set;
    settings_defaults(&set);
    SETTINGS_SET(&set, maxbytes, 256u << 20);
    struct options opt;
    options_from_settings(&set, &opt);
    struct store *store;
    if (store_create(&store, &opt.store) != 0) {
        fprintf(stderr, "pipecost: store_create failed\n");
        return 1;
    }
    struct store_ctx *ctx = store_ctx_create(store);
    static struct stats_thread stats;
    struct session *ss = calloc(conns, sizeof *ss);
    char *value = malloc(vlen + 1);
    size_t rcap = PC_DEPTH_MAX * (64 + vlen);
    char *reads = malloc((size_t)PC_READS * rcap);
    size_t *rlen = malloc(PC_READS * sizeof *rlen);
    char *rbuf = malloc(rcap);
    double *ns = calloc(rounds, sizeof *ns);
    if (!ctx || !ss || !value || !reads || !rlen || !rbuf || !ns) {
        fprintf(stderr, "pipecost: out of memory\n");
        return 1;
    }
    memset(value, 'v', vlen);
    value[vlen] = 0;
    for (unsigned i = 0; i < conns; i++) {
        session_init(&ss[i], ctx, &stats, &opt.proto, settings_runtime_of(&set));
        ss[i].reply_allow = SIZE_MAX;
    }

    /* Prefill every key, 16 sets a read. */
    char *line = malloc(PC_DEPTH_MAX * (64 + vlen));
    for (unsigned k = 0; k < keys;) {
        size_t n = 0;
        for (int i = 0; i < PC_DEPTH_MAX && k < keys; i++, k++)
            n += (size_t)sprintf(line + n, "set key:%010u 0 0 %zu\r\n%s\r\n", k, vlen, value);
        size_t used;
        proto_process(&ss[0], line, n, &used);
        pc_drain(&ss[0]);
        if (used != n) {
            fprintf(stderr, "pipecost: prefill stopped at key %u\n", k);
            return 1;
        }
    }
    free(line);

    uint64_t rng = 42;
    for (int i = 0; i < PC_READS; i++)
        rlen[i] = pc_read(reads + (size_t)i * rcap, rcap, &rng, keys, value, vlen);

    size_t reads_per_round = per_round / (size_t)pc_depth;
    unsigned r = 0, c = 0;
    for (unsigned round = 0; round < rounds; round++) {
        uint64_t t0 = pc_now();
        for (size_t i = 0; i < reads_per_round; i++) {
            struct session *s = &ss[c];
            c = c + 1 == conns ? 0 : c + 1;
            const char *in = reads + (size_t)r * rcap;
            size_t len = rlen[r];
            r = (r + 1) % PC_READS;
            memcpy(rbuf, in, len);
            size_t used, off = 0;
            for (;;) {
                enum proto_status st = proto_process(s, rbuf + off, len - off, &used);
                off += used;
                if (st != PROTO_YIELD || off == len)
                    break;
            }
            pc_drain(s);
        }
        ns[round] = (double)(pc_now() - t0) / (double)(reads_per_round * (size_t)pc_depth);
    }
    double med[64];
    unsigned m = rounds < 64 ? rounds : 64;
    memcpy(med, ns, m * sizeof *med);
    qsort(med, m, sizeof *med, pc_cmp);
    printf("pipecost: %u keys of %zu B, %u sessions, %u rounds of %zu requests: "
           "median %.1f CPU ns/request (min %.1f, max %.1f); get_hits %llu\n",
           keys, vlen, conns, rounds, reads_per_round * (size_t)pc_depth, med[m / 2], med[0],
           med[m - 1], (unsigned long long)stats.get_hits);

    for (unsigned i = 0; i < conns; i++)
        proto_release(&ss[i]);
    store_ctx_destroy(&ctx);
    store_destroy(&store);
    free(ss);
    free(value);
    free(reads);
    free(rlen);
    free(rbuf);
    free(ns);
    return 0;
}
