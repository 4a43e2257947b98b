/* SPDX-License-Identifier: BSD-3-Clause */
#include "stats/stats_detail.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reply/reply.h"

#define DETAIL_BUCKETS 256
#define DETAIL_MAX_PREFIXES (1 << 16) /* memcached's bound on this memory */

struct detail_prefix {
    struct detail_prefix *next;
    uint64_t gets, hits, sets, dels;
    size_t len;
    char name[];
};

static pthread_mutex_t detail_lock = PTHREAD_MUTEX_INITIALIZER;
static struct detail_prefix *detail_table[DETAIL_BUCKETS];
static size_t detail_count;
static char detail_delimiter = ':';

void stats_detail_set_delimiter(char delimiter)
{
    pthread_mutex_lock(&detail_lock);
    detail_delimiter = delimiter;
    pthread_mutex_unlock(&detail_lock);
}

static unsigned detail_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a: tiny table, short prefixes */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h % DETAIL_BUCKETS;
}

/* With detail_lock held. */
static struct detail_prefix *detail_find(const char *key, size_t nkey)
{
    const char *d = memchr(key, detail_delimiter, nkey);
    if (!d)
        return NULL;
    size_t len = (size_t)(d - key);
    unsigned b = detail_hash(key, len);
    for (struct detail_prefix *p = detail_table[b]; p; p = p->next)
        if (p->len == len && memcmp(p->name, key, len) == 0)
            return p;
    if (detail_count >= DETAIL_MAX_PREFIXES)
        return NULL;
    struct detail_prefix *p = calloc(1, sizeof *p + len + 1);
    if (!p)
        return NULL;
    memcpy(p->name, key, len);
    p->len = len;
    p->next = detail_table[b];
    detail_table[b] = p;
    detail_count++;
    return p;
}

void stats_detail_record(const char *key, size_t nkey, char op, bool hit)
{
    pthread_mutex_lock(&detail_lock);
    struct detail_prefix *p = detail_find(key, nkey);
    if (p) {
        if (op == 'g') {
            p->gets++;
            if (hit)
                p->hits++;
        } else if (op == 's') {
            p->sets++;
        } else if (op == 'd') {
            p->dels++;
        }
    }
    pthread_mutex_unlock(&detail_lock);
}

char *stats_detail_text(size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    pthread_mutex_lock(&detail_lock);
    for (size_t b = 0; b < DETAIL_BUCKETS; b++)
        for (struct detail_prefix *p = detail_table[b]; p; p = p->next)
            fprintf(f, "PREFIX %s get %llu hit %llu set %llu del %llu\r\n", p->name,
                    (unsigned long long)p->gets, (unsigned long long)p->hits,
                    (unsigned long long)p->sets, (unsigned long long)p->dels);
    pthread_mutex_unlock(&detail_lock);
    fputs("END\r\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int stats_detail_dump(struct reply_queue *out)
{
    size_t len;
    char *text = stats_detail_text(&len);
    if (!text)
        return -1;
    int rc = reply_copy(out, text, len);
    free(text);
    return rc;
}

void stats_detail_clear(void)
{
    pthread_mutex_lock(&detail_lock);
    for (size_t b = 0; b < DETAIL_BUCKETS; b++) {
        struct detail_prefix *p = detail_table[b];
        while (p) {
            struct detail_prefix *next = p->next;
            free(p);
            p = next;
        }
        detail_table[b] = NULL;
    }
    detail_count = 0;
    pthread_mutex_unlock(&detail_lock);
}
