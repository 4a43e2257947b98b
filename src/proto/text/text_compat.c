/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached commands that tune machinery our store does not have (slab
 * classes, the segmented LRU, the LRU crawler), and refresh_certs. They are
 * validated exactly as memcached validates them and then answered as
 * memcached answers when it accepts a request it has nothing to do for, so
 * existing scripts and tools keep working. See docs/protocol-text.md. */
#include <string.h>

#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "settings/settings_run.h"
#include "store/store.h"
#include "store/store_compat.h"

/* Our store never moves pages between classes, but it reports items in
 * memcached's size classes (1..store_class_largest(), the ids `me`, dumps
 * and `stats items` show), so a reassignment is checked against those ids
 * in memcached's order and then answered as memcached answers for a class
 * with no spare page. */
static void text_slabs_reassign(struct session *s, const struct text_line *l)
{
    int32_t src, dst;
    int32_t largest = (int32_t)store_class_largest(store_ctx_store(s->store));
    if (!s->opt->slab_reassign)
        TEXT_OUT(s, "CLIENT_ERROR slab reassignment disabled");
    else if (!text_tok_i32(&l->tok[2], &src) || !text_tok_i32(&l->tok[3], &dst))
        TEXT_OUT(s, "CLIENT_ERROR bad command line format");
    else if (src == dst)
        TEXT_OUT(s, "SAME src and dst class are identical");
    else if (src < 0 || src > largest || dst < 0 || dst > largest)
        /* -1 ("any class") finds no class with a spare page: BADCLASS too */
        TEXT_OUT(s, "BADCLASS invalid src or dst class id");
    else
        TEXT_OUT(s, "NOSPARE source class has no spare pages");
}

/* slabs, lru_crawler (and shutdown): a last word `noreply` silences every
 * reply, errors included, but still counts as an argument (1.6.45:
 * `slabs reassign 1 noreply` and `lru_crawler disable noreply` are silent
 * and change nothing). */
void text_cmd_slabs(struct session *s, const struct text_line *l)
{
    text_of(s)->noreply = text_line_noreply(l);
    if (l->ntok == 4 && TEXT_TOK_IS(&l->tok[1], "reassign")) {
        text_slabs_reassign(s, l);
        return;
    }
    if (l->ntok < 3 || !TEXT_TOK_IS(&l->tok[1], "automove")) {
        TEXT_OUT(s, "ERROR");
        return;
    }
    const struct text_token *arg = &l->tok[2];
    double d;
    uint32_t v;
    /* stored so `stats settings` shows them, as memcached's do */
    if (TEXT_TOK_IS(arg, "ratio") || TEXT_TOK_IS(arg, "freeratio")) {
        if (l->ntok < 4 || !text_tok_double(&l->tok[3], &d)) {
            TEXT_OUT(s, "ERROR");
            return;
        }
        if (TEXT_TOK_IS(arg, "ratio"))
            SETTINGS_RUN_SET(s->run, slab_automove_ratio, d);
        else
            SETTINGS_RUN_SET(s->run, slab_automove_freeratio, d);
    } else if (TEXT_TOK_IS(arg, "window")) {
        if (l->ntok < 4 || !text_tok_u32(&l->tok[3], &v)) {
            TEXT_OUT(s, "CLIENT_ERROR bad command line format");
            return;
        }
        if (v < 3 || v > 1800) {
            TEXT_OUT(s, "CLIENT_ERROR automove window too low or too high");
            return;
        }
        SETTINGS_RUN_SET(s->run, slab_automove_window, (int)v);
    } else {
        if (!text_tok_u32(arg, &v)) {
            TEXT_OUT(s, "CLIENT_ERROR bad command line format");
            return;
        }
        if (v > 2) {
            TEXT_OUT(s, "ERROR");
            return;
        }
        SETTINGS_RUN_SET(s->run, slab_automove, (int)v);
    }
    TEXT_OUT(s, "OK");
}

/* lru tune: stored so `stats settings` shows it, as memcached does. */
static void text_lru_tune(struct session *s, int hot, int warm, double hot_factor,
                          double warm_factor)
{
    SETTINGS_RUN_SET(s->run, hot_lru_pct, hot);
    SETTINGS_RUN_SET(s->run, warm_lru_pct, warm);
    SETTINGS_RUN_SET(s->run, hot_max_factor, hot_factor);
    SETTINGS_RUN_SET(s->run, warm_max_factor, warm_factor);
    TEXT_OUT(s, "OK");
}

void text_cmd_lru(struct session *s, const struct text_line *l)
{
    if (l->ntok < 2) {
        TEXT_OUT(s, "ERROR");
        return;
    }
    text_of(s)->noreply = text_line_noreply(l);
    const struct text_token *sub = &l->tok[1];
    if (TEXT_TOK_IS(sub, "tune") && l->ntok >= 6) {
        uint32_t hot, warm;
        double hot_factor, warm_factor;
        if (!text_tok_u32(&l->tok[2], &hot) || !text_tok_u32(&l->tok[3], &warm) ||
            !text_tok_double(&l->tok[4], &hot_factor) ||
            !text_tok_double(&l->tok[5], &warm_factor))
            TEXT_OUT(s, "ERROR");
        else if ((uint64_t)hot + warm > 80)
            TEXT_OUT(s, "ERROR hot and warm pcts must not exceed 80");
        else if (hot_factor <= 0 || warm_factor <= 0)
            TEXT_OUT(s, "ERROR hot/warm age factors must be greater than 0");
        else
            text_lru_tune(s, (int)hot, (int)warm, hot_factor, warm_factor);
    } else if (TEXT_TOK_IS(sub, "mode") && l->ntok >= 3 && s->opt->lru_maintainer_thread) {
        if (TEXT_TOK_IS(&l->tok[2], "flat") || TEXT_TOK_IS(&l->tok[2], "segmented")) {
            bool segmented = TEXT_TOK_IS(&l->tok[2], "segmented");
            SETTINGS_RUN_SET(s->run, lru_segmented, segmented);
            store_set_lru_segmented(store_ctx_store(s->store), segmented);
            TEXT_OUT(s, "OK");
        } else
            TEXT_OUT(s, "ERROR");
    } else if (TEXT_TOK_IS(sub, "temp_ttl") && l->ntok >= 3 &&
               s->opt->lru_maintainer_thread) {
        int32_t ttl;
        if (!text_tok_i32(&l->tok[2], &ttl)) {
            TEXT_OUT(s, "ERROR");
        } else {
            /* memcached: a negative TTL turns the TEMP LRU off */
            SETTINGS_RUN_SET(s->run, temp_lru, ttl >= 0);
            if (ttl >= 0)
                SETTINGS_RUN_SET(s->run, temporary_ttl, (int)ttl);
            store_set_temporary_ttl(store_ctx_store(s->store), ttl);
            TEXT_OUT(s, "OK");
        }
    } else {
        TEXT_OUT(s, "ERROR");
    }
}

/* memcached's class list: "all", or comma-separated ids 1..63; *classes
 * gets bit k for class k. */
static bool text_class_list(const struct text_token *t, uint64_t *classes)
{
    *classes = 0;
    if (TEXT_TOK_IS(t, "all")) {
        *classes = ~(uint64_t)1;
        return true;
    }
    size_t i = 0;
    while (i <= t->len) {
        size_t b = i;
        while (i < t->len && t->s[i] != ',')
            i++;
        if (i > b) { /* strtok skips empty fields */
            struct text_token one = {t->s + b, i - b};
            uint32_t id;
            if (!text_parse_u32(&one, &id) || id < 1 || id >= 64)
                return false;
            *classes |= (uint64_t)1 << id;
        }
        i++;
    }
    return true;
}

/* `lru_crawler enable|disable` switch memcached's crawler thread, and
 * crawl/metadump refuse while it is off; we keep the same switch (the
 * run-time setting lru_crawler, shown in stats settings): a crawl runs on
 * the store's housekeeper, a dump on the connection's worker. */
static bool text_crawler_on(const struct session *s)
{
    return SETTINGS_RUN_GET(s->run, lru_crawler);
}

void text_cmd_lru_crawler(struct session *s, const struct text_line *l)
{
    const struct text_token *sub = l->ntok > 1 ? &l->tok[1] : NULL;
    text_of(s)->noreply = text_line_noreply(l); /* as slabs */
    if (l->ntok == 3 && TEXT_TOK_IS(sub, "crawl")) {
        /* memcached's crawler: the expired and flushed items of those
         * classes are unlinked in the background (crawler_reclaimed). */
        uint64_t classes;
        if (!text_crawler_on(s))
            TEXT_OUT(s, "CLIENT_ERROR lru crawler disabled");
        else if (!text_class_list(&l->tok[2], &classes))
            TEXT_OUT(s, "BADCLASS invalid class id");
        else if (!classes) /* "," names none */
            TEXT_OUT(s, "NOTSTARTED no items to crawl");
        else if (!store_crawl_classes(s->store, classes))
            TEXT_OUT(s, "BUSY currently processing crawler request");
        else
            TEXT_OUT(s, "OK");
    } else if (l->ntok == 3 && (TEXT_TOK_IS(sub, "metadump") || TEXT_TOK_IS(sub, "mgdump"))) {
        if (!text_crawler_on(s))
            TEXT_OUT(s, "CLIENT_ERROR lru crawler disabled");
        else
            text_cmd_dump(s, l, sub->s[1] == 'g');
    } else if (l->ntok == 3 && TEXT_TOK_IS(sub, "tocrawl")) {
        uint32_t n;
        if (!text_tok_u32(&l->tok[2], &n))
            TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        else
            TEXT_OUT(s, "OK");
    } else if (l->ntok == 3 && TEXT_TOK_IS(sub, "sleep")) {
        uint32_t us;
        if (!text_tok_u32(&l->tok[2], &us))
            TEXT_OUT(s, "CLIENT_ERROR bad command line format");
        else if (us > 1000000)
            TEXT_OUT(s, "CLIENT_ERROR sleep must be one second or less");
        else
            TEXT_OUT(s, "OK");
    } else if (l->ntok == 2 && TEXT_TOK_IS(sub, "enable")) {
        if (text_crawler_on(s)) {
            TEXT_OUT(s, "ERROR failed to start lru crawler thread");
        } else {
            SETTINGS_RUN_SET(s->run, lru_crawler, true);
            TEXT_OUT(s, "OK");
        }
    } else if (l->ntok == 2 && TEXT_TOK_IS(sub, "disable")) {
        SETTINGS_RUN_SET(s->run, lru_crawler, false);
        TEXT_OUT(s, "OK");
    } else {
        TEXT_OUT(s, "ERROR");
    }
}

/* Reload the certificate chain and key for new connections (open ones keep
 * theirs); an error leaves the old ones and says why, as memcached. */
void text_cmd_refresh_certs(struct session *s, const struct text_line *l)
{
    (void)l;
    char msg[512];
    if (s->ops->refresh_certs(s->ops->ctx, msg, sizeof msg) == 0) {
        TEXT_OUT(s, "OK");
        return;
    }
    size_t len = strlen(msg);
    memcpy(msg + (len < sizeof msg - 2 ? len : sizeof msg - 3), "\r\n", 3);
    text_out(s, msg, strlen(msg));
}
