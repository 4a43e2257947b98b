/* SPDX-License-Identifier: BSD-3-Clause */
/* ma (meta arithmetic): incr/decr with optional create (N, J), CAS (C, E)
 * and TTL (T); v returns the new number as a value. */
#include "base/clock.h"
#include "proto/meta/meta_internal.h"
#include "proto/session.h"
#include "stats/stats.h"
#include "proto/watch_note.h"

static void meta_arith_tokens(struct meta_line *l, const struct meta_req *req,
                              const struct store_arith_res *res)
{
    rel_time_t now = res && meta_has(req, 't') ? clock_now() : 0;
    for (size_t i = 0; i < req->norder; i++) {
        switch (req->order[i]) {
        case 'c':
            if (res)
                meta_line_flag_u64(l, 'c', res->cas);
            break;
        case 't': {
            if (!res)
                break;
            /* as mg: the expiry the T and N before this flag left */
            rel_time_t e =
                meta_walk_exptime(req, i, res->created ? REL_TIME_NEVER : res->exptime_before,
                                  res->created);
            meta_line_mem(l, " t", 2);
            if (e == REL_TIME_NEVER)
                meta_line_mem(l, "-1", 2);
            else
                meta_line_u64(l, e > now ? e - now : 0);
            break;
        }
        case 'O':
            meta_line_opaque(l, req->opaque, req->nopaque);
            break;
        case 'k':
            meta_line_key(l, req->key, req->nkey, req->base64_key);
            break;
        default:
            break;
        }
    }
}

void meta_arith(struct session *s, const struct meta_req *req)
{
    bool incr = !(req->mode == 'D' || req->mode == '-');
    struct store_arith_req a = {
        .incr = incr,
        .delta = req->delta,
        .create = req->has_vivify,
        .initial = req->initial,
        .create_exptime = req->has_vivify ? meta_exptime(req->vivify_ttl) : 0,
        .cas_compare = req->has_cas ? req->cas : 0,
        .cas_new = req->has_cas_new ? req->cas_new : 0,
        .cas_given = req->has_cas_new,
        .touch = req->has_ttl,
        .exptime = req->has_ttl ? meta_exptime(req->ttl) : 0,
    };
    struct store_arith_res res = {0};
    if (watch_active(WATCH_LOOKUPS))
        watch_peek(s, req->key, req->nkey, NULL);
    enum store_status st = store_arith(s->store, req->key, req->nkey, &a, &res);

    struct meta_line l;
    l.len = 0;
    switch (st) {
    case STORE_OK: {
        if (!res.created)
            stats_count_arith(s->stats, incr, true, res.class_id);
        /* q hides a success, the number included */
        if (req->quiet)
            return;
        struct meta_line num;
        num.len = 0;
        meta_line_u64(&num, res.value);
        if (req->value) {
            meta_line_mem(&l, "VA ", 3);
            meta_line_u64(&l, num.len);
        } else {
            meta_line_mem(&l, "HD", 2);
        }
        meta_arith_tokens(&l, req, &res);
        if (req->value) {
            meta_line_mem(&l, "\r\n", 2);
            meta_line_mem(&l, num.buf, num.len);
        }
        meta_line_send(s, &l);
        return;
    }
    case STORE_MISS:
        stats_count_arith(s->stats, incr, false, 0);
        meta_line_mem(&l, "NF", 2);
        break;
    case STORE_EXISTS:
        meta_line_mem(&l, "EX", 2);
        break;
    case STORE_NOT_STORED:
        meta_line_mem(&l, "NS", 2);
        break;
    case STORE_NON_NUMERIC:
        meta_reply_error(s, "CLIENT_ERROR cannot increment or decrement non-numeric value");
        return;
    default:
        meta_reply_error(s, "SERVER_ERROR out of memory");
        return;
    }
    meta_arith_tokens(&l, req, NULL);
    meta_line_send(s, &l);
}
