/* SPDX-License-Identifier: BSD-3-Clause */
#include "tracefile.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_KEY_MAX 250 /* memcached's key limit */

static uint64_t key_hash(const char *k, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)k[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int rehash(struct lg_trace *t)
{
    uint32_t size = t->tab ? (t->tabmask + 1) * 2 : 1u << 16;
    uint32_t *tab = calloc(size, sizeof(*tab));
    if (!tab)
        return -1;
    for (uint32_t id = 0; id < t->nkeys; id++) {
        uint32_t len;
        const char *k = lg_trace_key(t, id, &len);
        uint32_t i = (uint32_t)key_hash(k, len) & (size - 1);
        while (tab[i])
            i = (i + 1) & (size - 1);
        tab[i] = id + 1;
    }
    free(t->tab);
    t->tab = tab;
    t->tabmask = size - 1;
    return 0;
}

/* The id of key k, a new one on its first appearance; -1 on no memory. */
static int64_t intern(struct lg_trace *t, const char *k, size_t n)
{
    if (!t->tab || (uint64_t)t->nkeys * 2 >= t->tabmask) {
        if (rehash(t) != 0)
            return -1;
    }
    uint32_t i = (uint32_t)key_hash(k, n) & t->tabmask;
    for (; t->tab[i]; i = (i + 1) & t->tabmask) {
        uint32_t len;
        const char *o = lg_trace_key(t, t->tab[i] - 1, &len);
        if (len == n && memcmp(o, k, n) == 0)
            return t->tab[i] - 1;
    }
    if (grow((void **)&t->key_at, &t->key_cap, (size_t)t->nkeys + 2, sizeof(*t->key_at)) != 0 ||
        grow((void **)&t->pool, &t->pool_cap, t->pool_len + n, 1) != 0)
        return -1;
    memcpy(t->pool + t->pool_len, k, n);
    t->key_at[t->nkeys] = t->pool_len;
    t->pool_len += n;
    t->key_at[t->nkeys + 1] = t->pool_len;
    t->tab[i] = ++t->nkeys;
    return t->nkeys - 1;
}

static int add_access(struct lg_trace *t, const char *k, size_t n, uint32_t size, int kv)
{
    int64_t id = intern(t, k, n);
    if (id < 0 || grow((void **)&t->acc, &t->acc_cap, t->nacc + 1, sizeof(*t->acc)) != 0)
        return -1;
    if (kv) {
        if (grow((void **)&t->size, &t->size_cap, t->nacc + 1, sizeof(*t->size)) != 0)
            return -1;
        t->size[t->nacc] = size;
    }
    t->acc[t->nacc++] = (uint32_t)id;
    return 0;
}

int lg_trace_fmt_parse(const char *s, enum lg_trace_fmt *fmt)
{
    if (strcmp(s, "lis") == 0)
        *fmt = LG_TRACE_LIS;
    else if (strcmp(s, "kv") == 0)
        *fmt = LG_TRACE_KV;
    else
        return -1;
    return 0;
}

int lg_trace_load(struct lg_trace *t, FILE *f, enum lg_trace_fmt fmt, unsigned max_keys,
                  uint64_t max_lines)
{
    memset(t, 0, sizeof(*t));
    char line[1024];
    uint64_t lineno = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        if (max_lines && t->nreq >= max_lines)
            break;
        size_t len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            fprintf(stderr, "trace: line %lu is too long\n", lineno);
            return -1;
        }
        if (line[0] == '\n' || line[0] == '#')
            continue;
        if (grow((void **)&t->req_at, &t->req_cap, (size_t)t->nreq + 2, sizeof(*t->req_at)) != 0)
            goto nomem;
        t->req_at[t->nreq] = t->nacc;
        if (fmt == LG_TRACE_LIS) {
            unsigned long long start, nb;
            if (sscanf(line, "%llu %llu", &start, &nb) != 2 || nb == 0) {
                fprintf(stderr, "trace: line %lu is not \"start nblocks ...\"\n", lineno);
                return -1;
            }
            if (nb > max_keys)
                nb = max_keys;
            if (start > ULLONG_MAX - nb) { /* its blocks would wrap: no key at all */
                fprintf(stderr, "trace: line %lu: blocks past 2^64\n", lineno);
                return -1;
            }
            for (unsigned long long b = start; b < start + nb; b++) {
                char k[24];
                int n = snprintf(k, sizeof(k), "%llu", b);
                if (add_access(t, k, (size_t)n, 0, 0) != 0)
                    goto nomem;
            }
        } else {
            char *sp = strpbrk(line, " \t");
            char *end;
            unsigned long sz = sp ? strtoul(sp + 1, &end, 10) : 0;
            size_t kn = sp ? (size_t)(sp - line) : 0;
            if (!sp || end == sp + 1 || kn == 0 || kn > TRACE_KEY_MAX || sz > UINT32_MAX) {
                fprintf(
                    stderr,
                    "trace: line %lu is not \"key size\" (key of 1..250 bytes, size under 4 GiB)\n",
                    lineno);
                return -1;
            }
            for (size_t i = 0; i < kn; i++) {
                if ((unsigned char)line[i] <= ' ' || line[i] == 0x7f) {
                    fprintf(stderr, "trace: line %lu: a key byte memcached refuses\n", lineno);
                    return -1;
                }
            }
            if (add_access(t, line, kn, (uint32_t)sz, 1) != 0)
                goto nomem;
        }
        t->nreq++;
        t->req_at[t->nreq] = t->nacc;
    }
    if (t->nreq == 0) {
        fprintf(stderr, "trace: no requests\n");
        return -1;
    }
    return 0;
nomem:
    fprintf(stderr, "trace: out of memory at line %lu\n", lineno);
    return -1;
}

void lg_trace_release(struct lg_trace *t)
{
    free(t->req_at);
    free(t->acc);
    free(t->size);
    free(t->key_at);
    free(t->pool);
    free(t->tab);
    memset(t, 0, sizeof(*t));
}
