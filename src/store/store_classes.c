/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's size classes, a view over items (store_classes.h). */
#include "store/store_classes.h"

uint8_t classes_walk(const struct store_classes *c, size_t mc_size)
{
    for (unsigned i = 1; i < c->n; i++)
        if (mc_size <= c->size[i])
            return (uint8_t)i;
    return (uint8_t)(c->n - 1);
}

/* memcached's slabs_init: the first class is its 48-byte item header plus
 * -n, each next one -f times larger rounded up to 8, while below
 * slab_chunk_max / -f; a last class of slab_chunk_max holds the rest. */
void classes_init(struct store_classes *c, const struct store_options *opt)
{
    double f = opt->growth_factor > 1.0 ? opt->growth_factor : 1.25;
    size_t chunk_max = opt->slab_chunk_max ? opt->slab_chunk_max : opt->item_size_max / 2;
    size_t size = 48 + (opt->chunk_size ? opt->chunk_size : 48);
    unsigned i = 1;
    while (i < STORE_CLASSES - 1 && (double)size <= (double)chunk_max / f) {
        size = (size + 7) & ~(size_t)7;
        c->size[i++] = (uint32_t)size;
        size = (size_t)((double)size * f);
    }
    c->size[i++] = (uint32_t)chunk_max;
    c->n = i;
    c->cas_enabled = opt->cas_enabled;
    for (size_t g = 0; g <= STORE_CLASS_TABLE_MAX >> 3; g++)
        c->of8[g] = classes_walk(c, g << 3);
}
