/* Uploads: values that arrive over several reads.
 *
 * A value that is not all in the read buffer when its command is parsed may
 * take seconds to arrive, or never come. Reserving it in a segment would pin
 * that segment (its memory cannot be reused until the value is committed or
 * aborted), so a few clients that stop halfway could hold every segment and
 * stop eviction and every other writer (issue 9.1). Instead the value is
 * received into memory of its own, outside the segments, and copied into a
 * segment reservation only when it is complete: no segment is ever held
 * across a read. The copy costs one memcpy of a value that took at least one
 * more network round to arrive.
 *
 * That memory is bounded: values up to STORE_UPLOAD_SMALL are always
 * accepted (a connection receives one value at a time, so they are bounded
 * by the connection count); larger ones only while the bytes of all
 * incomplete uploads stay within upload_limit, else the new one is refused
 * with STORE_NO_MEMORY. docs/store.md "Uploads" has the reasons.
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

uint64_t store_upload_default_limit(size_t mem_limit, size_t item_size_max)
{
    /* An eighth of -m, but always room for four of the largest values. */
    uint64_t lim = mem_limit / 8;
    uint64_t floor = 4 * (uint64_t)item_size_max;
    return lim > floor ? lim : floor;
}

/* Stages come from malloc: mapping each large one on its own (so it went
 * back to the OS at once) cost twice the server CPU per 1 MB set in page
 * faults; the allocator reuses freed stages, and what it keeps is bounded
 * by the same limit (docs/store.md "Uploads"). */
static size_t stage_size(const struct store_reservation *res)
{
    return (size_t)res->nkey + res->nvalue;
}

static char *stage_alloc(size_t n)
{
    return malloc(n ? n : 1);
}

enum store_status store_reserve_upload(struct store_ctx *ctx, const char *key, size_t nkey,
                                       size_t nvalue, bool fields_known, uint32_t flags,
                                       rel_time_t exptime, struct store_reservation *res)
{
    struct store *s = ctx->store;
    enum store_status st = store_check_size(s, nkey, nvalue, fields_known ? flags : 0);
    if (st != STORE_OK)
        return st;
    size_t n = nkey + nvalue;
    uint64_t held = __atomic_add_fetch(&s->upload_bytes, n, __ATOMIC_RELAXED);
    if (nvalue > STORE_UPLOAD_SMALL && held > s->upload_limit) {
        __atomic_sub_fetch(&s->upload_bytes, n, __ATOMIC_RELAXED);
        CTR_INC(ctx, uploads_refused);
        return STORE_NO_MEMORY;
    }
    char *p = stage_alloc(n);
    if (!p) {
        __atomic_sub_fetch(&s->upload_bytes, n, __ATOMIC_RELAXED);
        return STORE_NO_MEMORY;
    }
    memcpy(p, key, nkey);
    *res = (struct store_reservation){
        .value = p + nkey,
        .nvalue = (uint32_t)nvalue,
        .stage = p,
        .nkey = (uint8_t)nkey,
        .known = fields_known,
        .flags = flags,
        .exptime = exptime,
    };
    return STORE_OK;
}

void store_upload_free(struct store_ctx *ctx, struct store_reservation *res)
{
    size_t n = stage_size(res);
    free(res->stage);
    __atomic_sub_fetch(&ctx->store->upload_bytes, n, __ATOMIC_RELAXED);
    res->stage = NULL;
    res->value = NULL;
}

enum store_status store_upload_place(struct store_ctx *ctx, struct store_reservation *res,
                                     bool delete_on_fail)
{
    struct store_reservation up = *res;
    struct store_reservation r;
    enum store_status st =
        up.known ? store_reserve_for(ctx, up.stage, up.nkey, up.nvalue, up.flags, up.exptime, &r)
                 : store_reserve(ctx, up.stage, up.nkey, up.nvalue, &r);
    if (st == STORE_OK)
        memcpy(r.value, up.value, up.nvalue);
    else if (delete_on_fail)
        store_delete(ctx, up.stage, up.nkey, NULL);
    store_upload_free(ctx, &up);
    *res = st == STORE_OK ? r : (struct store_reservation){0};
    return st;
}
