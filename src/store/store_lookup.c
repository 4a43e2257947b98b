/* The store's one lookup: every operation that reads or changes a key finds
 * it here (store_lookup's contract is in store_int.h). A batch of lookups
 * can hash its keys first (store_key_of) and prefetch their buckets
 * (index_prefetch) before the first store_lookup. */
#include "store/store_int.h"

#include <string.h>
#include <xxhash.h>

struct store_key store_key_of(const char *key, size_t nkey)
{
    uint64_t hv = XXH3_64bits(key, nkey);
    return (struct store_key){.key = key, .nkey = nkey, .hv = hv, .tag = index_tag(hv)};
}

/* Find the key in the chain of locked bucket b, unlinking it if it has
 * expired or been flushed (counted as get_expired / get_flushed). */
static bool store_find_live(struct store_ctx *ctx, uint64_t *b, const struct store_key *k,
                            struct store_found *f)
{
    struct store *s = ctx->store;
    for (uint64_t *cur = b; cur; cur = index_next(&s->index, cur)) {
        for (int i = 1; i <= INDEX_SLOTS; i++) {
            uint64_t sl = cur[i];
            if (!sl || slot_tag(sl) != k->tag)
                continue;
            char *p = seg_item(s, sl);
            if ((uint8_t)p[1] != k->nkey)
                continue;
            struct item_hdr h;
            item_decode(p, &h);
            if (h.nkey != k->nkey || memcmp(p + h.hlen, k->key, k->nkey) != 0)
                continue;
            f->slot = &cur[i];
            f->p = p;
            f->seg = seg_of(s, slot_seg(sl));
            f->h = h;
            enum item_life life = store_item_life(s, p, &h, f->seg->cas_base, f->now);
            if (life == ITEM_LIVE)
                return true;
            store_unlink(s, f);
            if (life == ITEM_FLUSHED)
                CTR_INC(ctx, get_flushed);
            else
                CTR_INC(ctx, get_expired);
            return false;
        }
    }
    return false;
}

bool store_lookup(struct store_ctx *ctx, const struct store_key *k, enum store_look how,
                  struct store_found *f)
{
    struct store *s = ctx->store;
    for (;;) {
        f->now = clock_now();
        f->bucket = index_lock_hash(&s->index, k->hv);
        if (!store_find_live(ctx, f->bucket, k, f))
            return false;
        /* A segment being compacted moves its items: wait until it is done
         * and look again, the item is somewhere else by then. */
        if (how == STORE_LOOK_PIN && !seg_try_pin(f->seg)) {
            index_unlock(f->bucket);
            seg_wait_compacted(f->seg);
            continue;
        }
        return true;
    }
}
