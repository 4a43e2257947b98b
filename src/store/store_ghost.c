/* SPDX-License-Identifier: BSD-3-Clause */
/* The ghost list's table (store_ghost.h). */
#include "store/store_ghost.h"

#include <stdlib.h>

void ghost_init(struct store_ghost *g, size_t mem_limit)
{
    /* About one ghost entry per 256 bytes of -m (a 200-byte item). */
    size_t n = 1024;
    while (n < mem_limit / 256 && n < ((size_t)1 << 26))
        n <<= 1;
    g->tab = calloc(n, sizeof(*g->tab));
    g->mask = g->tab ? n - 1 : 0;
}

void ghost_release(struct store_ghost *g)
{
    free(g->tab);
    g->tab = NULL;
    g->mask = 0;
}
