/* SPDX-License-Identifier: BSD-3-Clause */
/* md (meta delete): delete, or with I mark stale; x drops only the value. */
#include <string.h>

#include "proto/meta/meta_internal.h"
#include "proto/session.h"
#include "stats/stats.h"
#include "proto/watch_note.h"

void meta_delete(struct session *s, const struct meta_req *req)
{
    uint8_t cls = 0;
    struct store_delete_req d = {
        .cas_compare = req->has_cas ? req->cas : 0,
        .cas_new = req->has_cas_new ? req->cas_new : 0,
        .cas_given = req->has_cas_new,
        .invalidate = req->invalidate,
        /* T applies to what stays: a stale item (I) or an emptied one (x,
         * which like memcached's gets no TTL unless T gives one) */
        .touch = (req->invalidate || req->drop_value) && req->has_ttl,
        .exptime = req->has_ttl ? meta_exptime(req->ttl) : 0,
        .drop_value = req->drop_value,
        .flags = req->client_flags, /* memcached's emptied item takes F's */
        .class_out = &cls,
    };
    enum store_status st;
    struct watch_seen seen = {0};
    if (watch_active(WATCH_LOOKUPS | WATCH_DELETIONS))
        watch_peek(s, req->key, req->nkey, &seen);
    if (req->has_cas && req->cas == 0) {
        /* C0 compares too (the store reads cas_compare 0 as "any"): a live
         * item's CAS is 0 only with -C, so otherwise it is EX */
        struct store_get_req g = {.no_update = true};
        struct store_item it;
        memset(&it, 0, sizeof it);
        st = store_get(s->store, req->key, req->nkey, &g, &it);
        if (it.pin)
            store_pin_release(it.pin);
        if (st == STORE_OK && it.cas != 0)
            st = STORE_EXISTS;
        else if (st == STORE_OK)
            st = store_delete(s->store, req->key, req->nkey, &d);
    } else {
        st = store_delete(s->store, req->key, req->nkey, &d);
    }

    struct meta_line l;
    l.len = 0;
    if (st == STORE_OK && !req->invalidate && watch_active(WATCH_DELETIONS))
        watch_note_deleted(req->key, req->nkey, "md", &seen);
    switch (st) {
    case STORE_OK:
        /* memcached counts a removal or an emptying, not a mark-stale */
        if (!req->invalidate) {
            STAT_INC(s->stats, delete_hits);
            STAT_CLS_INC(s->stats, cls, delete_hits);
        }
        if (req->quiet)
            return;
        meta_line_mem(&l, "HD", 2);
        break;
    case STORE_EXISTS:
        STAT_INC(s->stats, delete_misses);
        meta_line_mem(&l, "EX", 2);
        break;
    default:
        STAT_INC(s->stats, delete_misses);
        meta_line_mem(&l, "NF", 2);
        break;
    }
    meta_line_echo(&l, req);
    meta_line_send(s, &l);
}
