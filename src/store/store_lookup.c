/* SPDX-License-Identifier: BSD-3-Clause */
/* The store's one lookup: every operation that reads or changes a key finds
 * it here (store_lookup's contract is in store_lookup.h; the find itself is
 * inline in store_find.h, which store_get runs too). A batch of lookups
 * can hash its keys first (store_key_of) and prefetch their buckets
 * (index_prefetch) before the first store_lookup. */
#include "store/store_lookup.h"
#include "store/store_find.h"
#include "store/store_core.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_seg.h"
#include "store/store_life.h"
#include "store/store_classes.h"
#include "store/seg_counts.h"
#include "store/flash/flash_tier.h"

#include <string.h>

bool store_lookup_write(struct store_ctx *ctx, const struct store_key *k, enum store_look how,
                        bool reclaim, struct store_found *f)
{
    return store_lookup_at(ctx, k, how, reclaim, f);
}

bool store_lookup_drop(struct store_ctx *ctx, const char *key, size_t nkey)
{
    if (nkey == 0 || nkey > STORE_KEY_MAX)
        return false;
    struct store_key k = store_key_of(key, nkey);
    struct store_found f;
    bool found = store_lookup(ctx, &k, STORE_LOOK_FIND, &f);
    if (found)
        store_unlink(ctx->store, &f);
    else if (ctx->store->flash) /* its flash copy, if any, goes too */
        flash_tier_drop_tag(ctx->store->flash, &f.keys, index_flash_tag(&ctx->store->index, k.hv),
                            NULL);
    store_found_unlock(&f);
    return found;
}
