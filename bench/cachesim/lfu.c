/* SPDX-License-Identifier: BSD-3-Clause */
/* Exact LFU, as an upper bound for frequency-based policies (see
 * cachesim.c's head): every access of every key counted, held or not, and
 * the held keys in a min-heap by (count, last access). */
#include "cachesim.h"

#include <stdlib.h>
#include <string.h>

/* a orders before b: fewer accesses, or as many and less recent */
static bool lfu_less(const struct sim *s, uint32_t a, uint32_t b)
{
    if (s->lcount[a] != s->lcount[b])
        return s->lcount[a] < s->lcount[b];
    return s->llast[a] < s->llast[b];
}
static void lfu_place(struct sim *s, uint32_t i, uint32_t id)
{
    s->lheap[i] = id;
    s->lpos[id] = i;
}
static void lfu_down(struct sim *s, uint32_t i)
{
    uint32_t id = s->lheap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= s->n)
            break;
        if (c + 1 < s->n && lfu_less(s, s->lheap[c + 1], s->lheap[c]))
            c++;
        if (!lfu_less(s, s->lheap[c], id))
            break;
        lfu_place(s, i, s->lheap[c]);
        i = c;
    }
    lfu_place(s, i, id);
}
static void lfu_up(struct sim *s, uint32_t i)
{
    uint32_t id = s->lheap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!lfu_less(s, id, s->lheap[p]))
            break;
        lfu_place(s, i, s->lheap[p]);
        i = p;
    }
    lfu_place(s, i, id);
}

void lfu_init(struct sim *s, bool admit_ties)
{
    s->lcount = xcalloc(s->nkeys, sizeof(uint32_t));
    s->llast = xcalloc(s->nkeys, sizeof(uint64_t));
    s->lheap = xcalloc(s->cap, sizeof(uint32_t));
    s->lpos = xcalloc(s->nkeys, sizeof(uint32_t));
    memset(s->lpos, 0xff, (size_t)s->nkeys * sizeof(uint32_t));
    s->lfu_ge = admit_ties;
}
void lfu_free(struct sim *s)
{
    free(s->lcount);
    free(s->llast);
    free(s->lheap);
    free(s->lpos);
}
bool lfu_get(struct sim *s, uint32_t id)
{
    s->lcount[id]++;
    s->llast[id] = ++s->ltick;
    if (s->lpos[id] == NIL)
        return false;
    lfu_down(s, s->lpos[id]); /* its count and recency only grew */
    return true;
}
void lfu_set(struct sim *s, uint32_t id)
{
    if (s->lpos[id] != NIL)
        return;
    if (s->n < s->cap) {
        lfu_place(s, s->n++, id);
        lfu_up(s, s->n - 1);
        return;
    }
    uint32_t v = s->lheap[0];
    if (s->lfu_ge ? s->lcount[id] < s->lcount[v] : s->lcount[id] <= s->lcount[v])
        return; /* not admitted: no more frequent than the victim */
    s->lpos[v] = NIL;
    lfu_place(s, 0, id);
    lfu_down(s, 0);
}
