/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's views of the store (store_compat.h): size classes as it
 * reports them, `stats items`/`stats slabs`, and the walk behind
 * `lru_crawler metadump` and mgdump. Off the get and set paths. */
#include "store/store_compat.h"
#include "store/store_core.h"
#include "store/store_classes.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_life.h"
#include "store/store_lookup.h"
#include "store/seg_counts.h"
#include "store/store_seg.h"

#include <string.h>

size_t store_item_mc_size(const struct store *s, const struct store_item *it)
{
    return item_mc_size(it->nkey, it->nvalue, it->flags, s->opt.cas_enabled);
}

unsigned store_class_largest(const struct store *s)
{
    return s->classes.n - 1;
}

unsigned store_class_for(const struct store_ctx *ctx, size_t nkey, size_t nvalue, uint32_t flags)
{
    const struct store *s = ctx->store;
    return classes_id(&s->classes, item_mc_size(nkey, nvalue, flags, s->opt.cas_enabled));
}

size_t store_walk(struct store *s, uint64_t *cursor, size_t max, store_walk_fn fn, void *arg)
{
    /* The cursor is a bucket number. If the index grows between two calls,
     * a key may be visited twice (a bucket's items split into two). */
    size_t visited = 0;
    uint64_t i = *cursor, nb = 0;
    uint64_t *b;
    /* Within a call no entry moves back past the walk (index_walk_begin);
     * between two calls one may, which a walk of several calls misses. */
    index_walk_begin(&s->index);
    while (visited < max && (b = index_lock_nth(&s->index, i, &nb))) {
        rel_time_t now = clock_now();
        /* A bucket is visited whole: stop before one that would pass max
         * (unless it is the first, so that every call makes progress). */
        size_t inb = 0;
        for (uint64_t *cur = b; cur; cur = index_next(&s->index, cur))
            for (int j = 0; j < INDEX_SLOTS; j++)
                inb += slot_load(index_slot(cur, j)) != 0;
        if (visited && visited + inb > max) {
            index_unlock(b);
            break;
        }
        for (uint64_t *cur = b; cur; cur = index_next(&s->index, cur)) {
            for (int j = 0; j < INDEX_SLOTS; j++) {
                uint64_t sl = slot_load(index_slot(cur, j));
                if (!sl || slot_is_flash(sl))
                    continue;
                struct store_found f = {
                    .chain = b,
                    .slot = index_slot(cur, j),
                    .p = seg_item(&s->pool, sl),
                    .seg = seg_of(&s->pool, slot_seg(sl)),
                };
                item_decode(f.p, &f.h);
                if (life_of_item(&s->life, f.p, &f.h, f.seg->cas_base, f.seg->tbase, now) != ITEM_LIVE)
                    continue;
                struct store_item it;
                memset(&it, 0, sizeof(it));
                store_fill_item(&s->classes, &f, &it);
                fn(&it, arg);
                visited++;
            }
        }
        index_unlock(b);
        i++;
    }
    index_walk_end(&s->index);
    *cursor = i >= nb ? UINT64_MAX : i;
    return visited;
}

void store_cls_fold(struct store_cls_ctr *into, const struct store_cls_ctr *from)
{
#define CLS_FOLD(f) into->f += __atomic_load_n(&from->f, __ATOMIC_RELAXED);
    STORE_CLASS_EVENTS(CLS_FOLD)
#undef CLS_FOLD
    uint32_t t = __atomic_load_n(&from->evicted_time, __ATOMIC_RELAXED);
    /* one worker's last eviction stands for the class's: the largest shown */
    if (t > into->evicted_time)
        into->evicted_time = t;
}

unsigned store_class_stats(struct store *s, struct store_class_stats *out)
{
    memset(out, 0, STORE_CLASSES * sizeof(*out));
    unsigned n = s->classes.n - 1;
    struct store_cls_ctr sum[STORE_CLASSES];
    pthread_mutex_lock(&s->ctx_lock);
    memcpy(sum, s->gone_cls, sizeof(sum));
    for (struct store_ctx *c = s->ctxs; c; c = c->next)
        for (unsigned k = 1; k <= n; k++)
            store_cls_fold(&sum[k], &c->cls[k]);
    pthread_mutex_unlock(&s->ctx_lock);
    for (unsigned k = 1; k <= n; k++) {
        struct store_class_stats *o = &out[k];
        o->chunk_size = s->classes.size[k];
#define CLS_COPY(f) o->f = sum[k].f;
        STORE_CLASS_EVENTS(CLS_COPY)
#undef CLS_COPY
        o->evicted_time = sum[k].evicted_time;
    }
    seg_class_counts(&s->pool, out, n, clock_now());
    if (s->flash) {
        /* an item on flash counts as the header memcached keeps in RAM for
         * it: in that header's class, in COLD (where 1.6.45 shows them) */
        uint64_t items[STORE_CLASSES] = {0}, bytes[STORE_CLASSES] = {0};
        flash_tier_class_counts(s->flash, items, bytes);
        for (unsigned k = 1; k <= n; k++) {
            out[k].number += items[k];
            out[k].number_lru[STORE_LRU_COLD] += items[k];
            out[k].mem_requested += bytes[k];
        }
    }
    return n;
}
