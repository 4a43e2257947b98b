/* SPDX-License-Identifier: BSD-3-Clause */
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
 * by the connection count); larger ones while the bytes of all incomplete
 * large uploads stay within upload_limit. Past it, the oldest upload that
 * has received nothing for STORE_UPLOAD_STALL seconds is cut off to make
 * room; when none has stalled, the new one is refused. A cut-off upload's
 * memory belongs to its connection's thread, which may be reading into it:
 * it is only marked here, and its value freed by that thread at its next
 * look (store_upload_alive: on its next bytes, or its connection's next
 * tick), so until then it still counts, against twice the limit; its key
 * stays until the commit, which deletes a set's old value.
 * docs/store.md "Uploads" has the reasons.
 */
#include "store/store_upload.h"
#include "store/store_core.h"

#include <stdlib.h>
#include <string.h>

/* A staged value: this header, then the key, then the value. */
struct store_upload {
    struct store_upload *prev, *next; /* s->up, oldest first (up.lock) */
    size_t bytes;                     /* key + value */
    rel_time_t progress;              /* last bytes received: owner writes, relaxed */
    bool large;                       /* counts against upload_limit */
    bool cut;                         /* cut off: set under up.lock, read by the owner */
    char data[];
};

uint64_t store_upload_default_limit(size_t mem_limit, size_t item_size_max)
{
    /* An eighth of -m, but always room for four of the largest values. */
    uint64_t lim = mem_limit / 8;
    uint64_t floor = 4 * (uint64_t)item_size_max;
    return lim > floor ? lim : floor;
}

void store_upload_set_limit(struct store_uploads *up, uint64_t limit)
{
    pthread_mutex_lock(&up->lock);
    __atomic_store_n(&up->limit, limit, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&up->lock);
}

void store_upload_init(struct store_uploads *up)
{
    pthread_mutex_init(&up->lock, NULL);
}

void store_upload_release(struct store_uploads *up)
{
    pthread_mutex_destroy(&up->lock);
}

/* Make room for n large bytes (up.lock held): cut off the oldest
 * stalled uploads while the live ones would pass the limit. With here (its
 * bytes are all queued: it cannot stall), it may pass the limit when none
 * can be cut; held bytes stay within twice the limit either way. */
static bool upload_admit(struct store_ctx *ctx, size_t n, bool here)
{
    struct store *s = ctx->store;
    rel_time_t now = clock_now();
    for (struct store_upload *u = s->up.head; u && s->up.live + n > s->up.limit;
         u = u->next) {
        if (!u->large || u->cut ||
            now - __atomic_load_n(&u->progress, __ATOMIC_RELAXED) < STORE_UPLOAD_STALL)
            continue;
        __atomic_store_n(&u->cut, true, __ATOMIC_RELEASE);
        s->up.live -= u->bytes;
        CTR_INC(ctx, uploads_cut);
    }
    return (here || s->up.live + n <= s->up.limit) &&
           s->up.held + n <= 2 * s->up.limit;
}

bool store_upload_fits(const struct store_ctx *ctx, size_t nvalue)
{
    struct store *s = ctx->store;
    if (nvalue <= STORE_UPLOAD_SMALL)
        return true;
    pthread_mutex_lock(&s->up.lock);
    bool fits = s->up.live + nvalue <= s->up.limit;
    pthread_mutex_unlock(&s->up.lock);
    return fits;
}

enum store_status store_reserve_upload(struct store_ctx *ctx, const char *key, size_t nkey,
                                       size_t nvalue, bool fields_known, uint32_t flags,
                                       rel_time_t exptime, struct store_reservation *res)
{
    return store_reserve_upload_here(ctx, key, nkey, nvalue, fields_known, flags, exptime, false,
                                     res);
}

enum store_status store_reserve_upload_here(struct store_ctx *ctx, const char *key, size_t nkey,
                                            size_t nvalue, bool fields_known, uint32_t flags,
                                            rel_time_t exptime, bool here,
                                            struct store_reservation *res)
{
    struct store *s = ctx->store;
    enum store_status st = store_check_size(s, nkey, nvalue, fields_known ? flags : 0);
    if (st != STORE_OK)
        return st;
    size_t n = nkey + nvalue;
    struct store_upload *u = malloc(sizeof(*u) + n);
    if (!u)
        return STORE_NO_MEMORY;
    *u = (struct store_upload){.bytes = n, .progress = clock_now(),
                               .large = nvalue > STORE_UPLOAD_SMALL};
    pthread_mutex_lock(&s->up.lock);
    if (u->large && !upload_admit(ctx, n, here)) {
        pthread_mutex_unlock(&s->up.lock);
        free(u);
        CTR_INC(ctx, uploads_refused);
        return STORE_NO_MEMORY;
    }
    if (u->large) {
        s->up.live += n;
        s->up.held += n;
    }
    u->prev = s->up.tail;
    if (u->prev)
        u->prev->next = u;
    else
        s->up.head = u;
    s->up.tail = u;
    pthread_mutex_unlock(&s->up.lock);
    __atomic_add_fetch(&s->up.bytes, n, __ATOMIC_RELAXED);
    if (!u->large)
        __atomic_add_fetch(&s->up.small, n, __ATOMIC_RELAXED);

    memcpy(u->data, key, nkey);
    *res = (struct store_reservation){
        .value = u->data + nkey,
        .nvalue = (uint32_t)nvalue,
        .stage = u,
        .nkey = (uint8_t)nkey,
        .known = fields_known,
        .flags = flags,
        .exptime = exptime,
    };
    return STORE_OK;
}

size_t store_upload_small_bytes(const struct store *s)
{
    return (size_t)__atomic_load_n(&s->up.small, __ATOMIC_RELAXED);
}

void store_upload_free(struct store_ctx *ctx, struct store_reservation *res)
{
    struct store *s = ctx->store;
    struct store_upload *u = res->stage;
    pthread_mutex_lock(&s->up.lock);
    if (u->prev)
        u->prev->next = u->next;
    else
        s->up.head = u->next;
    if (u->next)
        u->next->prev = u->prev;
    else
        s->up.tail = u->prev;
    if (u->large) {
        s->up.held -= u->bytes;
        if (!u->cut)
            s->up.live -= u->bytes;
    }
    pthread_mutex_unlock(&s->up.lock);
    __atomic_sub_fetch(&s->up.bytes, u->bytes, __ATOMIC_RELAXED);
    if (!u->large)
        __atomic_sub_fetch(&s->up.small, u->bytes, __ATOMIC_RELAXED);
    free(u);
    res->stage = NULL;
    res->value = NULL;
}

/* A cut-off upload gives back its value's memory but keeps its key, so
 * that its commit can still delete the key's old value (a set that fails
 * must not leave it readable, as memcached's rule for a set refused for
 * memory). The key is copied to a stage of its own size rather than the
 * stage shrunk: a large stage is an mmap of glibc's, which realloc only
 * shrinks to a page. Moved in the list under up.lock; when there is no
 * memory for the copy, the whole stage goes and the old value stays. */
static void upload_keep_key(struct store_ctx *ctx, struct store_reservation *res)
{
    struct store *s = ctx->store;
    struct store_upload *u = res->stage;
    size_t gone = u->bytes - res->nkey;
    struct store_upload *k = malloc(sizeof(*u) + res->nkey);
    if (!k) {
        store_upload_free(ctx, res);
        return;
    }
    pthread_mutex_lock(&s->up.lock);
    memcpy(k, u, sizeof(*u) + res->nkey);
    if (k->prev)
        k->prev->next = k;
    else
        s->up.head = k;
    if (k->next)
        k->next->prev = k;
    else
        s->up.tail = k;
    k->bytes = res->nkey;
    s->up.held -= gone; /* large: only those are cut */
    pthread_mutex_unlock(&s->up.lock);
    free(u);
    __atomic_sub_fetch(&s->up.bytes, gone, __ATOMIC_RELAXED);
    res->stage = k;
    res->value = NULL;
}

bool store_upload_alive(struct store_ctx *ctx, struct store_reservation *res, bool got_bytes)
{
    struct store_upload *u = res->stage;
    if (res->cut)
        return false;
    if (!u)
        return true;
    if (!__atomic_load_n(&u->cut, __ATOMIC_ACQUIRE)) {
        if (got_bytes)
            __atomic_store_n(&u->progress, clock_now(), __ATOMIC_RELAXED);
        return true;
    }
    upload_keep_key(ctx, res);
    res->cut = true;
    return false;
}

const char *store_upload_key(const struct store_reservation *res)
{
    return res->stage ? ((const struct store_upload *)res->stage)->data : NULL;
}

