/* md (meta delete): delete, or with I mark stale; x drops only the value. */
#include "proto/meta.h"
#include "proto/session.h"
#include "stats/stats.h"

void meta_delete(struct session *s, const struct meta_req *req)
{
    struct store_delete_req d = {
        .cas_compare = req->has_cas ? req->cas : 0,
        .cas_new = req->has_cas_new ? req->cas_new : 0,
        .invalidate = req->invalidate,
        /* T applies to what stays: a stale item (I) or an emptied one (x,
         * which like memcached's gets no TTL unless T gives one) */
        .touch = (req->invalidate || req->drop_value) && req->has_ttl,
        .exptime = req->has_ttl ? meta_exptime(req->ttl) : 0,
        .drop_value = req->drop_value,
    };
    enum store_status st = store_delete(s->store, req->key, req->nkey, &d);

    struct meta_line l;
    l.len = 0;
    switch (st) {
    case STORE_OK:
        /* memcached counts a removal or an emptying, not a mark-stale */
        if (!req->invalidate)
            STAT_INC(s->stats, delete_hits);
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
    for (size_t i = 0; i < req->norder; i++) {
        if (req->order[i] == 'O')
            meta_line_opaque(&l, req->opaque, req->nopaque);
        else if (req->order[i] == 'k')
            meta_line_key(&l, req->key, req->nkey, req->base64_key);
    }
    meta_line_send(s, &l);
}
