/* SPDX-License-Identifier: BSD-3-Clause */
#include "stats/stats_output.h"
#include "stats/stats_table.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* What a class's segments would hold were they slab pages: as many of its
 * chunk size as a segment holds, on every segment holding one of its live
 * items (the PAGE rows of STATS_SLABS). */
struct stats_class_pages {
    uint64_t per_page, total, free;
};

enum stats_cls_src { STATS_CLS_SRC_CLS, STATS_CLS_SRC_CNT, STATS_CLS_SRC_PAGE, STATS_CLS_SRC_CONST };

struct stats_cls_row {
    const char *name;
    enum stats_cls_src src;
    size_t offset, size; /* of the field in its struct, unless CONST */
    uint64_t value;      /* CONST */
    enum stats_when when;
    const char *metric, *help; /* the /metrics name and help, or NULL */
};

_Static_assert(STATS_CLASSES == STORE_CLASSES, "one class id range");
/* stats_count_get_hit (stats.h) numbers the LRUs so */
_Static_assert(STORE_LRU_HOT == 0 && STORE_LRU_WARM == 1 && STORE_LRU_COLD == 2 &&
                   STORE_LRU_TEMP == 3,
               "hits_to_* order");

#define STATS_CLS_OF_CLS struct store_class_stats
#define STATS_CLS_OF_CNT struct stats_class_counts
#define STATS_CLS_OF_PAGE struct stats_class_pages
#define STATS_CLS_SIZE_CLS(f) sizeof(((STATS_CLS_OF_CLS *)0)->f)
#define STATS_CLS_SIZE_CNT(f) sizeof(((STATS_CLS_OF_CNT *)0)->f)
#define STATS_CLS_SIZE_PAGE(f) sizeof(((STATS_CLS_OF_PAGE *)0)->f)
#define STATS_CLS_SIZE_CONST(v) 8
#define STATS_CLS_OFF_CLS(f) offsetof(STATS_CLS_OF_CLS, f), STATS_CLS_SIZE_CLS(f), 0
#define STATS_CLS_OFF_CNT(f) offsetof(STATS_CLS_OF_CNT, f), STATS_CLS_SIZE_CNT(f), 0
#define STATS_CLS_OFF_PAGE(f) offsetof(STATS_CLS_OF_PAGE, f), STATS_CLS_SIZE_PAGE(f), 0
#define STATS_CLS_OFF_CONST(v) 0, 0, (v)
#define STATS_CLS_ROW(name, src, field, when, metric, help)                                        \
    {#name, STATS_CLS_SRC_##src, STATS_CLS_OFF_##src(field), STATS_WHEN_##when, metric, help},

static const struct stats_cls_row stats_items_list[] = {STATS_ITEMS(STATS_CLS_ROW)};
static const struct stats_cls_row stats_slabs_list[] = {STATS_SLABS(STATS_CLS_ROW)};
#undef STATS_CLS_ROW

/* Fields are read as 4 or 8 bytes: checked at build time. */
#define STATS_CLS_CHECK(name, src, field, when, ...)                                               \
    _Static_assert(STATS_CLS_SIZE_##src(field) == 4 || STATS_CLS_SIZE_##src(field) == 8,           \
                   #name " is read as 4 or 8 bytes");
STATS_ITEMS(STATS_CLS_CHECK)
STATS_SLABS(STATS_CLS_CHECK)
#undef STATS_CLS_CHECK

static uint64_t stats_cls_value(const struct stats_cls_row *r, const struct store_class_stats *c,
                                const struct stats_class_counts *n,
                                const struct stats_class_pages *pg)
{
    if (r->src == STATS_CLS_SRC_CONST)
        return r->value;
    const void *base = r->src == STATS_CLS_SRC_CLS   ? (const void *)c
                       : r->src == STATS_CLS_SRC_CNT ? (const void *)n
                                                     : (const void *)pg;
    const char *p = (const char *)base + r->offset;
    if (r->size == 4) {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Every row shown of every class shown, to fn: for `stats items` a class
 * holding a live item, for `stats slabs` (pages) one with a page, as
 * memcached shows a class's slab block while it has pages, its items gone
 * or not (a segment holding its items' bytes, docs/store.md "Size
 * classes"). Returns the classes shown, or -1 when fn failed. */
static long stats_cls_walk(const struct stats_cls_row *rows, size_t n,
                           const struct stats_snapshot *s, bool pages, stats_cls_fn fn, void *ctx)
{
    int rc = 0;
    long shown = 0;
    for (unsigned k = 1; k <= s->nclasses; k++) {
        const struct store_class_stats *c = &s->cls[k];
        if (c->number == 0 && (!pages || c->pages == 0))
            continue;
        shown++;
        struct stats_class_pages pg;
        pg.per_page = c->chunk_size ? s->store.seg_size / c->chunk_size : 0;
        if (pg.per_page == 0)
            pg.per_page = 1;
        pg.total = pg.per_page * c->pages;
        pg.free = pg.total > c->number ? pg.total - c->number : 0;
        for (size_t i = 0; i < n; i++) {
            if (rows[i].when != STATS_WHEN_ALWAYS && !(s->shown & (1u << rows[i].when)))
                continue;
            struct stats_cls_sample smp = {k, rows[i].name, rows[i].metric, rows[i].help,
                                           stats_cls_value(&rows[i], c, &s->t.cls[k], &pg),
                                           rows[i].src == STATS_CLS_SRC_CONST};
            rc |= fn(ctx, &smp);
        }
    }
    return rc ? -1 : shown;
}

/* The text and binary forms: "<pre><class>:<name> <value>". */
struct stats_cls_text {
    const char *pre;
    const struct stats_emit *out;
};

static int stats_cls_text_row(void *ctx, const struct stats_cls_sample *smp)
{
    const struct stats_cls_text *t = ctx;
    char name[64];
    snprintf(name, sizeof name, "%s%u:%s", t->pre, smp->cls, smp->name);
    return stats_emit_u64(t->out, name, smp->value);
}

#define STATS_NROWS(list) (sizeof list / sizeof list[0])

int stats_items_walk(const struct stats_snapshot *s, stats_cls_fn fn, void *ctx)
{
    return stats_cls_walk(stats_items_list, STATS_NROWS(stats_items_list), s, false, fn, ctx) < 0
               ? -1
               : 0;
}

int stats_items_compose(const struct stats_snapshot *s, const struct stats_emit *out)
{
    struct stats_cls_text t = {"items:", out};
    return stats_items_walk(s, stats_cls_text_row, &t);
}

int stats_slabs_walk(const struct stats_snapshot *s, stats_cls_fn fn, void *ctx)
{
    return stats_cls_walk(stats_slabs_list, STATS_NROWS(stats_slabs_list), s, true, fn, ctx) < 0
               ? -1
               : 0;
}

uint64_t stats_slabs_malloced(const struct stats_snapshot *s)
{
    /* memcached's mem_malloced: what is counted against -m, the
     * T_MEMD_INITIAL_MALLOC hook's bytes included */
    return s->store.initial_malloced + s->store.seg_used * s->store.seg_size;
}

int stats_slabs_compose(const struct stats_snapshot *s, const struct stats_emit *out)
{
    struct stats_cls_text t = {"", out};
    long active = stats_cls_walk(stats_slabs_list, STATS_NROWS(stats_slabs_list), s, true,
                                 stats_cls_text_row, &t);
    if (active < 0)
        return -1;
    /* memcached's totals after the class blocks */
    int rc = stats_emit_u64(out, "active_slabs", (uint64_t)active);
    rc |= stats_emit_u64(out, "total_malloced", stats_slabs_malloced(s));
    return rc ? -1 : 0;
}

int stats_extstore_compose(const struct store_flash_page *pg, size_t n, const struct stats_emit *e)
{
    for (size_t i = 0; i < n; i++) {
        char key[48];
#define STATS_PAGE_ROW(name)                                                                       \
    snprintf(key, sizeof key, "%zu:%s", i, #name);                                                 \
    if (stats_emit_u64(e, key, (uint64_t)pg[i].name) != 0)                                         \
        return -1;
        STATS_EXTSTORE_PAGE(STATS_PAGE_ROW)
#undef STATS_PAGE_ROW
    }
    return 0;
}

void stats_extstore_sum(const struct store_flash_page *pg, size_t n, struct stats_extstore_sum *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        if (pg[i].version == 0) {
            out->free_pages++;
            continue;
        }
        uint32_t b = pg[i].bucket <= STATS_EXTSTORE_BUCKET_MAX ? pg[i].bucket : 0;
        out->pages[b]++;
        out->bytes[b] += pg[i].bytes;
        out->written++;
        if (!pg[i].size)
            continue;
        /* the least k with bytes <= k/STEPS of the size, in integers so
         * that a page exactly at a bound is in that bound's bucket */
        uint64_t k = (pg[i].bytes * STATS_EXTSTORE_FILL_STEPS + pg[i].size - 1) / pg[i].size;
        k = k < 1 ? 1 : k > STATS_EXTSTORE_FILL_STEPS ? STATS_EXTSTORE_FILL_STEPS : k;
        out->fill[k - 1]++;
        out->fill_sum += (double)pg[i].bytes / (double)pg[i].size;
    }
}
