/* SPDX-License-Identifier: BSD-3-Clause */
/* cachesim's key lists and item ghost, and the policies over whole items
 * (see cachesim.c's head for each). */
#include "cachesim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s);
    if (!p) {
        fprintf(stderr, "cachesim: out of memory\n");
        exit(1);
    }
    return p;
}

/* doubly linked lists over key ids (a key is in at most one list) */
void lists_init(struct lists *l, uint32_t nkeys)
{
    l->prev = xcalloc(nkeys, sizeof(uint32_t));
    l->next = xcalloc(nkeys, sizeof(uint32_t));
    l->in = xcalloc(nkeys, 1);
}
void lists_free(struct lists *l)
{
    free(l->prev);
    free(l->next);
    free(l->in);
}
void list_init(struct list *q, uint8_t tag)
{
    q->head = q->tail = NIL;
    q->n = 0;
    q->tag = tag;
}
void list_push(struct lists *l, struct list *q, uint32_t id)
{
    l->prev[id] = q->tail;
    l->next[id] = NIL;
    if (q->tail != NIL)
        l->next[q->tail] = id;
    else
        q->head = id;
    q->tail = id;
    q->n++;
    l->in[id] = q->tag;
}
void list_remove(struct lists *l, struct list *q, uint32_t id)
{
    uint32_t p = l->prev[id], n = l->next[id];
    if (p != NIL)
        l->next[p] = n;
    else
        q->head = n;
    if (n != NIL)
        l->prev[n] = p;
    else
        q->tail = p;
    q->n--;
    l->in[id] = 0;
}
uint32_t list_pop(struct lists *l, struct list *q)
{
    uint32_t id = q->head;
    if (id != NIL)
        list_remove(l, q, id);
    return id;
}

void ghost_add(struct ghost *g, uint32_t id)
{
    g->at[id] = ++g->count;
}
bool ghost_take(struct ghost *g, uint32_t id)
{
    bool in = g->at[id] && g->count - g->at[id] < g->size;
    g->at[id] = 0;
    return in;
}

/* LRU */
bool lru_get(struct sim *s, uint32_t id)
{
    if (!s->l.in[id])
        return false;
    list_remove(&s->l, &s->q[0], id);
    list_push(&s->l, &s->q[0], id);
    return true;
}
void lru_set(struct sim *s, uint32_t id)
{
    if (s->l.in[id])
        return;
    if (s->q[0].n >= s->cap)
        list_pop(&s->l, &s->q[0]);
    list_push(&s->l, &s->q[0], id);
}

/* S3-FIFO over items; q[0] small (tag 1), q[1] main (tag 2) */
bool s3_get(struct sim *s, uint32_t id)
{
    if (!s->l.in[id])
        return false;
    if (s->freq[id] < 3)
        s->freq[id]++;
    return true;
}
static void s3_evict(struct sim *s)
{
    for (;;) {
        bool from_small = s->q[0].n > 0 && ((double)s->q[0].n >= s->p || s->q[1].n == 0);
        if (from_small) {
            uint32_t id = list_pop(&s->l, &s->q[0]);
            if (s->freq[id] >= 1) {
                s->freq[id] = 0;
                list_push(&s->l, &s->q[1], id);
                continue;
            }
            ghost_add(&s->g[0], id);
            return;
        }
        uint32_t id = list_pop(&s->l, &s->q[1]);
        if (s->freq[id] > 0) {
            s->freq[id]--;
            list_push(&s->l, &s->q[1], id);
            continue;
        }
        if (s->adaptive)
            ghost_add(&s->g[1], id);
        return;
    }
}
void s3_set(struct sim *s, uint32_t id)
{
    if (s->l.in[id])
        return;
    bool gs = ghost_take(&s->g[0], id), gm = s->adaptive && ghost_take(&s->g[1], id);
    if (s->adaptive) {
        /* ARC's rule: grow the queue whose ghost was hit, by the other
         * ghost's weight relative to it */
        double lo = s->cap * 0.01, hi = s->cap * 0.9;
        if (gs)
            s->p += 1.0;
        if (gm)
            s->p -= 1.0;
        if (s->p < lo)
            s->p = lo;
        if (s->p > hi)
            s->p = hi;
    }
    if (s->q[0].n + s->q[1].n >= s->cap)
        s3_evict(s);
    s->freq[id] = 0;
    list_push(&s->l, &s->q[(gs || gm) ? 1 : 0], id);
}

/* ARC: q[0] T1, q[1] T2, g via lists q[2]? B1/B2 are bounded lists */
struct arc_ghosts {
    struct list b1, b2;
};
bool arc_get(struct sim *s, uint32_t id)
{
    uint8_t in = s->l.in[id];
    if (in != 1 && in != 2)
        return false;
    list_remove(&s->l, &s->q[in - 1], id);
    list_push(&s->l, &s->q[1], id);
    return true;
}
static void arc_replace(struct sim *s, bool in_b2)
{
    uint32_t id;
    if (s->q[0].n > 0 && ((double)s->q[0].n > s->p || (in_b2 && (double)s->q[0].n == s->p))) {
        id = list_pop(&s->l, &s->q[0]);
        list_push(&s->l, &s->q[2], id);
    } else {
        id = list_pop(&s->l, &s->q[1]);
        list_push(&s->l, &s->arc_b2, id);
    }
}
void arc_set(struct sim *s, uint32_t id)
{
    uint8_t in = s->l.in[id];
    uint32_t c = s->cap;
    if (in == 1 || in == 2)
        return;
    if (in == 3) {
        double d = s->q[2].n >= s->arc_b2.n ? 1.0 : (double)s->arc_b2.n / s->q[2].n;
        s->p = s->p + d > c ? c : s->p + d;
        list_remove(&s->l, &s->q[2], id);
        arc_replace(s, false);
        list_push(&s->l, &s->q[1], id);
        return;
    }
    if (in == 4) {
        double d = s->arc_b2.n >= s->q[2].n ? 1.0 : (double)s->q[2].n / s->arc_b2.n;
        s->p = s->p - d < 0 ? 0 : s->p - d;
        list_remove(&s->l, &s->arc_b2, id);
        arc_replace(s, true);
        list_push(&s->l, &s->q[1], id);
        return;
    }
    uint32_t l1 = s->q[0].n + s->q[2].n, tot = l1 + s->q[1].n + s->arc_b2.n;
    if (l1 == c) {
        if (s->q[0].n < c) {
            list_pop(&s->l, &s->q[2]);
            arc_replace(s, false);
        } else {
            list_pop(&s->l, &s->q[0]);
        }
    } else if (tot >= c) {
        if (tot == 2 * c)
            list_pop(&s->l, &s->arc_b2);
        if (s->q[0].n + s->q[1].n >= c)
            arc_replace(s, false);
    }
    list_push(&s->l, &s->q[0], id);
}

/* W-TinyLFU: q[0] window LRU (tag 1), q[1] probation (tag 2), q[2] protected (tag 3) */
static uint32_t cms_hash(uint32_t id, int row)
{
    uint64_t h = lg_mix(id, (uint64_t)row + 1);
    return (uint32_t)h;
}
static unsigned cms_est(struct sim *s, uint32_t id)
{
    unsigned m = 15;
    for (int r = 0; r < 4; r++) {
        unsigned v = s->cms[(size_t)r * (s->cms_mask + 1) + (cms_hash(id, r) & s->cms_mask)];
        if (v < m)
            m = v;
    }
    return m;
}
static void cms_add(struct sim *s, uint32_t id)
{
    unsigned m = cms_est(s, id);
    for (int r = 0; r < 4; r++) {
        uint8_t *c = &s->cms[(size_t)r * (s->cms_mask + 1) + (cms_hash(id, r) & s->cms_mask)];
        if (*c == m && *c < 15)
            (*c)++; /* conservative update */
    }
    if (++s->cms_adds >= 10ull * s->cap) {
        for (size_t i = 0; i < 4ull * (s->cms_mask + 1); i++)
            s->cms[i] >>= 1;
        s->cms_adds /= 2;
    }
}
static void wt_climb(struct sim *s)
{
    double ratio = (double)s->s_hits / (double)s->s_acc, delta = ratio - s->prev_ratio;
    double amount = delta >= 0 ? s->step : -s->step; /* on if better, else back */
    s->p += amount;
    if (s->p < 1)
        s->p = 1;
    if (s->p > s->cap * 0.99)
        s->p = s->cap * 0.99;
    s->step = fabs(delta) >= 0.05 ? 0.0625 * s->cap * (amount >= 0 ? 1 : -1) : 0.98 * amount;
    s->prev_ratio = ratio;
    s->s_hits = s->s_acc = 0;
}
bool wt_get(struct sim *s, uint32_t id)
{
    cms_add(s, id);
    uint8_t in = s->l.in[id];
    if (s->adaptive) {
        s->s_acc++;
        s->s_hits += in != 0;
        if (s->s_acc >= s->cap)
            wt_climb(s);
    }
    if (!in)
        return false;
    list_remove(&s->l, &s->q[in - 1], id);
    if (in == 1) {
        list_push(&s->l, &s->q[0], id);
    } else {
        list_push(&s->l, &s->q[2], id); /* probation or protected: to protected */
        uint32_t prot = s->cap - (uint32_t)s->p;
        prot = prot * 8 / 10;
        while (s->q[2].n > prot) {
            uint32_t d = list_pop(&s->l, &s->q[2]);
            list_push(&s->l, &s->q[1], d);
        }
    }
    return true;
}
void wt_set(struct sim *s, uint32_t id)
{
    if (s->l.in[id])
        return;
    list_push(&s->l, &s->q[0], id);
    while (s->q[0].n > (uint32_t)s->p) {
        uint32_t cand = list_pop(&s->l, &s->q[0]);
        if (s->q[0].n + s->q[1].n + s->q[2].n < s->cap) {
            list_push(&s->l, &s->q[1], cand);
            continue;
        }
        uint32_t victim = s->q[1].head != NIL ? s->q[1].head : s->q[2].head;
        if (cms_est(s, cand) > cms_est(s, victim)) {
            list_remove(&s->l, &s->q[s->l.in[victim] - 1], victim);
            list_push(&s->l, &s->q[1], cand);
        }
    }
    /* a window grown by the climber takes its room from main */
    while (s->q[0].n + s->q[1].n + s->q[2].n > s->cap) {
        struct list *q = s->q[1].n ? &s->q[1] : s->q[2].n ? &s->q[2] : &s->q[0];
        list_pop(&s->l, q);
    }
}

/* LIRS (Jiang and Zhang, SIGMETRICS '02): LIR keys (recent reuse distance
 * short) held, 1 % of cap for resident HIR keys in Q; S the recency stack */
static void lirs_prune(struct sim *s)
{
    while (s->q[0].head != NIL && s->st[s->q[0].head] != 1) {
        uint32_t id = list_pop(&s->l, &s->q[0]);
        if (s->st[id] == 3)
            s->st[id] = 0;
    }
}
/* to the top of S */
static void lirs_top(struct sim *s, uint32_t id)
{
    if (s->l.in[id])
        list_remove(&s->l, &s->q[0], id);
    list_push(&s->l, &s->q[0], id);
}
static void lirs_make_lir(struct sim *s, uint32_t id)
{
    lirs_top(s, id);
    s->st[id] = 1;
    s->nlir++;
}
static void lirs_demote(struct sim *s)
{
    uint32_t b = list_pop(&s->l, &s->q[0]);
    s->st[b] = 2;
    s->nlir--;
    list_push(&s->lq, &s->q[1], b);
    lirs_prune(s);
}
bool lirs_get(struct sim *s, uint32_t id)
{
    if (s->st[id] == 1) {
        lirs_top(s, id);
        lirs_prune(s);
        return true;
    }
    if (s->st[id] != 2)
        return false;
    list_remove(&s->lq, &s->q[1], id);
    if (s->l.in[id]) { /* reused within S's reach: LIR, and S's oldest LIR not */
        lirs_make_lir(s, id);
        lirs_demote(s);
    } else {
        lirs_top(s, id);
        list_push(&s->lq, &s->q[1], id);
    }
    return true;
}
void lirs_set(struct sim *s, uint32_t id)
{
    if (s->st[id] == 1 || s->st[id] == 2)
        return;
    if (s->nres >= s->cap) {
        uint32_t v = list_pop(&s->lq, &s->q[1]);
        if (v == NIL) { /* no HIR resident: demote first */
            lirs_demote(s);
            v = list_pop(&s->lq, &s->q[1]);
        }
        s->st[v] = s->l.in[v] ? 3 : 0;
        s->nres--;
    }
    s->nres++;
    if (s->nlir < s->llir) {
        lirs_make_lir(s, id);
    } else if (s->l.in[id]) {
        lirs_make_lir(s, id);
        lirs_demote(s);
    } else {
        list_push(&s->l, &s->q[0], id);
        list_push(&s->lq, &s->q[1], id);
        s->st[id] = 2;
    }
}
