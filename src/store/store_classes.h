/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's size classes as a view (store_classes.c): the class sizes -n
 * and -f make, and the class and memcached size of an item. Nothing is laid
 * out by class: segments count their items per class through this, for
 * `stats items`/`stats slabs`, me, dumps and watch lines. docs/store.md
 * "Size classes". */
#ifndef NODELAY_STORE_CLASSES_H
#define NODELAY_STORE_CLASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_compat.h"
#include "store/store_item.h"

#define STORE_CLASS_TABLE_MAX 16384

/* An item's memcached size class and memcached size (classes_item). */
struct store_cls_of {
    uint8_t cls;
    uint32_t mc_size;
};

struct store_classes {
    uint32_t size[STORE_CLASSES]; /* memcached's class sizes */
    unsigned n;                   /* classes 1..n-1 are in use */
    bool cas_enabled;             /* an item's memcached size counts its CAS */
    /* The class of the sizes up to STORE_CLASS_TABLE_MAX, by 8-byte step:
     * a hit's class (its per-class counters) without a walk of the sizes. */
    uint8_t of8[(STORE_CLASS_TABLE_MAX >> 3) + 1];
};

/* memcached's slabs_init from -n, -f, slab_chunk_max and -I. */
void classes_init(struct store_classes *c, const struct store_options *opt);
/* The class of a size past the table, by a walk of the sizes. */
uint8_t classes_walk(const struct store_classes *c, size_t mc_size);

/* The class of a memcached size: the one mapping, for everything (me,
 * metadump, watch lines, stats items/slabs). Inline: a hit takes it. */
static inline uint8_t classes_id(const struct store_classes *c, size_t mc_size)
{
    /* Every class size but the last is a multiple of 8, so a size has the
     * class of the multiple of 8 it rounds up to (classes_init). */
    if (mc_size <= STORE_CLASS_TABLE_MAX)
        return c->of8[(mc_size + 7) >> 3];
    return classes_walk(c, mc_size);
}

/* An item's class and memcached size. */
static inline struct store_cls_of classes_item(const struct store_classes *c, const char *p,
                                               const struct item_hdr *h)
{
    size_t mc = item_mc_size(h->nkey, h->nvalue, item_get_u32(p, h->flags_off), c->cas_enabled);
    return (struct store_cls_of){classes_id(c, mc), (uint32_t)mc};
}

/* memcached's sizeof(item_hdr): the value of the header item it keeps in
 * RAM for an item on flash (its key, client flags and where the rest is).
 * nodelay keeps no such header, but an item on flash is reported as that
 * header: its class and memcached size (`stats items`, dumps), as memcached
 * counts it. */
#define CLASSES_EXT_HDR_BYTES 12u

/* That header's memcached size (its 12 bytes stand for value and CRLF). */
static inline uint32_t classes_ext_hdr_size(const struct store_classes *c, size_t nkey,
                                            uint32_t flags)
{
    return (uint32_t)item_mc_size(nkey, CLASSES_EXT_HDR_BYTES - 2, flags, c->cas_enabled);
}

#endif
