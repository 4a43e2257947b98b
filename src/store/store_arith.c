/* SPDX-License-Identifier: BSD-3-Clause */
/* incr / decr with memcached's do_add_delta rules: the value must read as a
 * decimal u64 the way its safe_strtoull reads it (leading white space, an
 * optional sign that must not make it negative, digits, then the end, a
 * NUL (strtoull stops there: `1\0002` reads as 1) or white space: num.h's
 * num_safe_u64); incr wraps at 2^64, decr stops at 0; a result shorter than
 * the old value keeps the old length, padded with spaces. The new value is a
 * new item (values never change in place: readers may hold the old one). */
#include "store/store_core.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_link.h"
#include "store/store_lookup.h"
#include "store/store_write.h"
#include "store/store_classes.h"

#include "base/num.h"

#include <stdio.h>
#include <string.h>

enum store_status store_arith(struct store_ctx *ctx, const char *key, size_t nkey,
                              const struct store_arith_req *req, struct store_arith_res *res)
{
    struct store *s = ctx->store;
    memset(res, 0, sizeof(*res));
    if (nkey == 0 || nkey > STORE_KEY_MAX)
        return STORE_MISS;
    struct store_key k = store_key_of(key, nkey);
    for (;;) {
        struct store_found f;
        if (!store_lookup(ctx, &k, STORE_LOOK_FIND | STORE_LOOK_KEEP_FLASH, &f)) {
            store_found_unlock(&f);
            if (f.on_flash) /* memcached: a value on extstore is not a number */
                return STORE_NON_NUMERIC;
            if (!req->create)
                return STORE_MISS;
            /* created with N's TTL, then T's applied as to a hit (1.6.45) */
            rel_time_t cexp = req->touch ? req->exptime : req->create_exptime;
            char buf[24];
            int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)req->initial);
            struct store_reservation r;
            enum store_status st = store_reserve_for(ctx, key, nkey, (size_t)len, 0, cexp, &r);
            if (st != STORE_OK)
                return st == STORE_TOO_LARGE ? STORE_NO_MEMORY : st;
            memcpy(r.value, buf, (size_t)len);
            struct store_set_req sr = {
                .mode = STORE_MODE_ADD,
                .exptime = cexp,
                .cas_new = req->cas_new,
                .cas_given = req->cas_given,
            };
            uint64_t cas = 0;
            st = store_commit_ex(ctx, &r, &sr, 0, 0, &cas);
            if (st == STORE_NOT_STORED)
                continue; /* created by someone else meanwhile */
            if (st != STORE_OK)
                return st;
            res->value = req->initial;
            res->cas = cas;
            res->exptime = cexp;
            res->created = true;
            return STORE_OK;
        }
        const char *val = f.p + f.h.hlen + f.h.nkey;
        uint32_t flags = item_get_u32(f.p, f.h.flags_off);
        uint8_t cls = classes_item(&s->classes, f.p, &f.h).cls;
        uint64_t v;
        /* memcached: empty values and chunked (> half -I) items are not
         * numbers, and it says so before it compares the CAS; a value that
         * does not read as one is found after. */
        bool shape_ok =
            f.h.nvalue != 0 &&
            item_mc_size(nkey, f.h.nvalue, flags, s->opt.cas_enabled) <= s->opt.item_size_max / 2;
        uint64_t old_cas = item_get_cas(f.p, &f.h, f.seg->cas_base);
        if (shape_ok && req->cas_compare && req->cas_compare != old_cas) {
            store_found_unlock(&f);
            return STORE_EXISTS;
        }
        if (!shape_ok || !num_safe_u64(val, f.h.nvalue, &v)) {
            store_found_unlock(&f);
            return STORE_NON_NUMERIC;
        }
        if (req->incr)
            v += req->delta;
        else
            v = req->delta > v ? 0 : v - req->delta;
        char buf[24];
        int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
        size_t nlen = (size_t)len <= f.h.nvalue ? f.h.nvalue : (size_t)len;
        rel_time_t before = item_get_u32(f.p, f.h.exp_off);
        rel_time_t exp = req->touch ? req->exptime : before;
        uint32_t keep = item_get_status(f.p, &f.h);
        if (nlen > f.h.nvalue) {
            /* A longer value is a new item in memcached's do_add_delta:
             * the old expiry, and none of the old one's marks (not
             * fetched, not stale, no token); ma's T went to the old item. */
            exp = before;
            keep = 0;
        }
        uint64_t snap = slot_load(f.slot);
        store_found_unlock(&f);

        struct store_reservation r;
        enum store_status st = store_reserve_for(ctx, key, nkey, nlen, flags, exp, &r);
        if (st != STORE_OK)
            return st == STORE_TOO_LARGE ? STORE_NO_MEMORY : st;
        memcpy(r.value, buf, (size_t)len);
        memset(r.value + len, ' ', nlen - (size_t)len);
        struct store_set_req sr = {
            .mode = STORE_MODE_SET,
            .flags = flags,
            .exptime = exp,
            .cas_new = req->cas_new,
            .cas_given = req->cas_given,
        };
        uint64_t cas = 0;
        st = store_commit_ex(ctx, &r, &sr, keep, snap, &cas);
        if (st == STORE_EXISTS)
            continue; /* the item changed between our two looks: redo */
        if (st != STORE_OK)
            return st;
        /* memcached 1.6.45 gives every incr it applies a CAS from its
         * counter, and only then puts E's in its place: the counter moves
         * with E too (a vivifying ma, as a set, takes E's and none). */
        if (req->cas_given && s->opt.cas_enabled)
            (void)store_next_cas(s);
        res->value = v;
        res->cas = cas;
        res->exptime = exp;
        res->exptime_before = before;
        res->class_id = cls;
        return STORE_OK;
    }
}
