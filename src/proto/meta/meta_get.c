/* SPDX-License-Identifier: BSD-3-Clause */
/* mg (meta get) and me (meta debug). */
#include <string.h>

#include "base/clock.h"
#include "reply/reply.h"
#include "proto/meta/meta_internal.h"
#include "proto/session.h"
#include "stats/stats.h"
#include "proto/watch_note.h"
#include "store/store_compat.h"

/* R<ttl>: win the recache when the item's remaining TTL is below this many
 * seconds; ttl follows the exptime rules, so compute it the same way. */
static rel_time_t meta_recache_below(int64_t ttl)
{
    rel_time_t when = meta_exptime(ttl);
    rel_time_t now = clock_now();
    if (when == REL_TIME_NEVER || when <= now)
        return 0;
    return when - now;
}

static void meta_get_miss(struct session *s, const struct meta_req *req)
{
    if (req->quiet)
        return;
    struct meta_line l;
    l.len = 0;
    meta_line_mem(&l, "EN", 2);
    meta_line_echo(&l, req);
    meta_line_send(s, &l);
}

/* The request's T and N move the item's expiry in request order (1.6.45
 * applies them as it walks the flags): N counts only on an item this
 * request created. Returns the last one's expiry, or `start`. */
rel_time_t meta_walk_exptime(const struct meta_req *req, size_t upto, rel_time_t start,
                             bool created)
{
    rel_time_t e = start;
    for (size_t i = 0; i < upto && i < req->norder; i++) {
        if (req->order[i] == 'T')
            e = meta_exptime(req->ttl);
        else if (req->order[i] == 'N' && created)
            e = meta_exptime(req->vivify_ttl);
    }
    return e;
}

/* True when flag a comes before flag b in the request. */
static bool meta_flag_before(const struct meta_req *req, char a, char b)
{
    for (size_t i = 0; i < req->norder; i++) {
        if (req->order[i] == a)
            return true;
        if (req->order[i] == b)
            return false;
    }
    return false;
}

static void meta_get_hit(struct session *s, const struct meta_req *req, struct store_item *it,
                         bool created)
{
    /* 1.6.45 mg C<cas>: the client already holds this version; skip the value */
    bool value = req->value && !(meta_has(req, 'C') && req->cas == it->cas);
    /* the clock only when a relative time is asked for */
    rel_time_t now = meta_has(req, 't') || meta_has(req, 'l') ? clock_now() : 0;
    struct meta_line l;
    l.len = 0;

    if (value) {
        meta_line_mem(&l, "VA ", 3);
        meta_line_u64(&l, it->nvalue);
    } else {
        meta_line_mem(&l, "HD", 2);
    }
    for (size_t i = 0; i < req->norder; i++) {
        switch (req->order[i]) {
        case 's':
            meta_line_flag_u64(&l, 's', it->nvalue);
            break;
        case 't': {
            /* the expiry as the flags before this one left it */
            rel_time_t e = meta_walk_exptime(req, i, created ? REL_TIME_NEVER : it->exptime_before,
                                             created);
            meta_line_mem(&l, " t", 2);
            if (e == REL_TIME_NEVER)
                meta_line_mem(&l, "-1", 2);
            else
                meta_line_u64(&l, e > now ? e - now : 0);
            break;
        }
        case 'c':
            meta_line_flag_u64(&l, 'c', it->cas);
            break;
        case 'f':
            meta_line_flag_u64(&l, 'f', it->flags);
            break;
        case 'l':
            meta_line_flag_u64(&l, 'l', now > it->last_access ? now - it->last_access : 0);
            break;
        case 'h':
            meta_line_mem(&l, it->fetched ? " h1" : " h0", 3);
            break;
        case 'O':
            meta_line_opaque(&l, req->opaque, req->nopaque);
            break;
        case 'k':
            meta_line_key(&l, req->key, req->nkey, req->base64_key);
            break;
        default:
            break;
        }
    }
    /* memcached's order: Z (a win already went out), X (stale), W (you won) */
    if (it->win_sent)
        meta_line_mem(&l, " Z", 2);
    if (it->stale)
        meta_line_mem(&l, " X", 2);
    if (it->won)
        meta_line_mem(&l, " W", 2);
    meta_line_send(s, &l);

    if (value) {
        if (it->nvalue > 0) {
            /* by reference: the pin keeps the bytes until they are sent */
            reply_value(&s->reply, it->value, it->nvalue, it->pin);
            it->pin = NULL;
        }
        reply_copy(&s->reply, "\r\n", 2);
    }
}

/* A short value, copied out while the store holds its bucket
 * (store_get_req.copy): the hit then takes no pin, so the store is called
 * once, where a pin would be given back to it (reply_value) at once. */
struct meta_value_copy {
    char buf[REPLY_COPY_MAX];
};

static void meta_value_copy(void *arg, const struct store_item *it)
{
    if (it->nvalue)
        memcpy(((struct meta_value_copy *)arg)->buf, it->value, it->nvalue);
}

void meta_get(struct session *s, const struct meta_req *req)
{
    struct meta_value_copy vc;
    struct store_get_req g = {
        .want_value = req->value,
        .no_update = req->no_update,
        .touch = req->has_ttl,
        .exptime = req->has_ttl ? meta_exptime(req->ttl) : 0,
        .vivify = req->has_vivify,
        /* a created item keeps whichever of N and T came last */
        .vivify_exptime = req->has_vivify ? meta_walk_exptime(req, req->norder, 0, true) : 0,
        .recache = req->has_recache,
        .stale_wins = true,
        .recache_below = req->has_recache ? meta_recache_below(req->recache_ttl) : 0,
        .recache_before_touch = req->has_recache && req->has_ttl && meta_flag_before(req, 'R', 'T'),
        .cas_new = req->has_cas_new ? req->cas_new : 0,
        .cas_given = req->has_cas_new,
        .copy = req->value ? meta_value_copy : NULL,
        .copy_arg = &vc,
        .copy_max = REPLY_COPY_MAX,
    };
    struct store_item it;
    memset(&it, 0, sizeof it);
    enum store_status st = store_get(s->store, req->key, req->nkey, &g, &it);
    if (st == STORE_NO_MEMORY) { /* T found no room for the TTL (-M, full): as a write */
        meta_reply_error(s, "SERVER_ERROR out of memory storing object");
        return;
    }
    if (st == STORE_OK && req->value && !it.pin)
        it.value = vc.buf; /* copied: no pin to give back */
    if (watch_active(WATCH_LOOKUPS))
        watch_note_get(s, req->key, req->nkey, st, &it);

    /* a vivified miss answers as a hit on the new, empty item (memcached
     * counts it as one too) */
    bool hit = st == STORE_OK || (st == STORE_MISS && req->has_vivify && it.won);
    if (hit) {
        if (req->has_ttl) {
            STAT_INC(s->stats, cmd_touch);
            STAT_INC(s->stats, touch_hits);
            STAT_CLS_INC(s->stats, it.class_id, touch_hits);
        } else {
            STAT_INC(s->stats, cmd_get);
            STAT_INC(s->stats, get_hits);
            stats_count_get_hit(s->stats, it.class_id, it.lru);
        }
        meta_get_hit(s, req, &it, st == STORE_MISS);
    } else {
        /* memcached counts a touching miss as a get miss */
        STAT_INC(s->stats, cmd_get);
        STAT_INC(s->stats, get_misses);
        meta_get_miss(s, req);
    }
    if (it.pin)
        store_pin_release(it.pin);
}

void meta_debug(struct session *s, const struct meta_req *req)
{
    struct store_get_req g = {.no_update = true};
    struct store_item it;
    memset(&it, 0, sizeof it);
    if (store_get(s->store, req->key, req->nkey, &g, &it) != STORE_OK) {
        reply_copy(&s->reply, "EN\r\n", 4);
        if (it.pin)
            store_pin_release(it.pin);
        return;
    }
    rel_time_t now = clock_now();
    struct meta_line l;
    l.len = 0;
    meta_line_mem(&l, "ME ", 3);
    if (req->base64_key && !meta_base64_key_plain(req->key, req->nkey)) {
        char enc[(STORE_KEY_MAX + 2) / 3 * 4];
        meta_line_mem(&l, enc, meta_base64_encode((const unsigned char *)req->key, req->nkey, enc));
    } else {
        meta_line_mem(&l, req->key, req->nkey);
    }
    meta_line_str(&l, " exp=");
    if (it.exptime == REL_TIME_NEVER)
        meta_line_str(&l, "-1");
    else
        meta_line_i64(&l, (int64_t)it.exptime - (int64_t)now);
    meta_line_str(&l, " la=");
    meta_line_u64(&l, now > it.last_access ? now - it.last_access : 0);
    meta_line_str(&l, " cas=");
    meta_line_u64(&l, it.cas);
    meta_line_str(&l, it.fetched ? " fetch=yes cls=" : " fetch=no cls=");
    meta_line_u64(&l, it.class_id);
    /* size: what memcached's item would take, so tools comparing me output
     * across servers see the same number; nodelay's own, smaller header is
     * reported by stats. */
    meta_line_str(&l, " size=");
    meta_line_u64(&l, store_item_mc_size(store_ctx_store(s->store), &it));
    meta_line_send(s, &l);
    if (it.pin)
        store_pin_release(it.pin);
}
