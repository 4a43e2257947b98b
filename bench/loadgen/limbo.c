/* SPDX-License-Identifier: BSD-3-Clause */
#include "limbo.h"

#include <stdlib.h>

int lg_limbo_add(struct lg_limbo *l, uint32_t ver, uint64_t dropped_ns)
{
    if (l->n == l->cap) {
        /* drops are rare (a few per key at most): small, exact lists */
        uint32_t cap = l->cap ? 2 * l->cap : 2;
        struct lg_abandoned *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (struct lg_abandoned){ .ver = ver, .dropped_ns = dropped_ns };
    return 0;
}

const struct lg_abandoned *lg_limbo_find(const struct lg_limbo *l, uint32_t ver)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->v[i].ver == ver && ver != LG_LIMBO_DELETE)
            return &l->v[i];
    return NULL;
}

bool lg_limbo_has_delete(const struct lg_limbo *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->v[i].ver == LG_LIMBO_DELETE)
            return true;
    return false;
}

void lg_limbo_release(struct lg_limbo *l)
{
    free(l->v);
    *l = (struct lg_limbo){ 0 };
}
