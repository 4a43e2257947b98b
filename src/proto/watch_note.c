/* SPDX-License-Identifier: BSD-3-Clause */
/* Event points of the protocols turned into watch lines (watch_note.h). */
#include "proto/watch_note.h"

#include <string.h>

#include "base/log.h"
#include "proto/session.h"

void watch_note_get(const struct session *s, const char *key, size_t nkey, enum store_status st,
                    const struct store_item *it)
{
    bool found = st == STORE_OK && it;
    if (watch_active(WATCH_STDERR))
        log_debug("> %s %.*s", found ? "FOUND KEY" : "NOT FOUND", (int)nkey, key);
    if (!watch_active(WATCH_FETCHERS))
        return;
    if (found)
        watch_item_get(key, nkey, WATCH_GET_FOUND, it->class_id, s->cfd, it->nvalue);
    else
        watch_item_get(key, nkey,
                       !it || it->miss == STORE_MISS_ABSENT ? WATCH_GET_NOT_FOUND
                       : it->miss == STORE_MISS_EXPIRED     ? WATCH_GET_EXPIRED
                                                            : WATCH_GET_FLUSHED,
                       0, s->cfd, 0);
}

void watch_peek(const struct session *s, const char *key, size_t nkey, struct watch_seen *seen)
{
    struct store_get_req req = {.no_update = true};
    struct store_item it;
    enum store_status st = store_get(s->store, key, nkey, &req, &it);
    if (seen)
        *seen = (struct watch_seen){st == STORE_OK, st == STORE_OK ? it.class_id : 0,
                                    st == STORE_OK ? it.nvalue : 0};
    if (watch_active(WATCH_LOOKUPS))
        watch_note_get(s, key, nkey, st, &it);
}

static enum watch_store_status watch_store_status(enum store_status st)
{
    switch (st) {
    case STORE_OK:
        return WATCH_STORE_STORED;
    case STORE_EXISTS:
        return WATCH_STORE_EXISTS;
    case STORE_MISS:
        return WATCH_STORE_NOT_FOUND;
    case STORE_TOO_LARGE:
        return WATCH_STORE_TOO_LARGE;
    case STORE_NO_MEMORY:
        return WATCH_STORE_NO_MEMORY;
    default:
        return WATCH_STORE_NOT_STORED;
    }
}

void watch_note_store(const struct session *s, const char *key, size_t nkey, enum store_status st,
                      enum store_mode mode, rel_time_t exptime, uint32_t nvalue, unsigned clsid)
{
    static const char *const cmds[] = {
        [STORE_MODE_SET] = "set",         [STORE_MODE_ADD] = "add",
        [STORE_MODE_REPLACE] = "replace", [STORE_MODE_APPEND] = "append",
        [STORE_MODE_PREPEND] = "prepend", [STORE_MODE_CAS] = "cas",
    };
    /* memcached prints the new item's class and size: the reservation's, or
     * read back when append/prepend made the item (its size, its flags). */
    uint32_t size = nvalue;
    if (st != STORE_OK)
        clsid = 0;
    if (st == STORE_OK && (mode == STORE_MODE_APPEND || mode == STORE_MODE_PREPEND)) {
        clsid = 0;
        struct store_get_req req = {.no_update = true};
        struct store_item it;
        if (store_get(s->store, key, nkey, &req, &it) == STORE_OK) {
            clsid = it.class_id;
            size = it.nvalue;
        }
    }
    /* ttl as memcached computes it: exptime - now, unsigned, 0 for never. */
    uint32_t ttl = exptime == REL_TIME_NEVER ? 0 : (uint32_t)(exptime - clock_now());
    watch_item_store(key, nkey, watch_store_status(st), cmds[mode], ttl, clsid, s->cfd, size);
}

void watch_note_delete_lookup(const struct session *s, const char *key, size_t nkey,
                              enum store_status st, unsigned clsid, uint32_t size,
                              enum store_miss miss, struct watch_seen *seen)
{
    if (st != STORE_OK && st != STORE_MISS) {
        if (watch_active(WATCH_LOOKUPS))
            watch_peek(s, key, nkey, seen);
        return;
    }
    if (st == STORE_OK)
        *seen = (struct watch_seen){true, (uint8_t)clsid, size};
    if (watch_active(WATCH_LOOKUPS)) {
        struct store_item it = {.class_id = (uint8_t)clsid, .nvalue = size, .miss = miss};
        watch_note_get(s, key, nkey, st, &it);
    }
}

void watch_note_deleted(const char *key, size_t nkey, const char *cmd, const struct watch_seen *seen)
{
    watch_deleted(key, nkey, cmd, seen->clsid, seen->size);
}

void watch_commit_begin(const struct session *s, const struct store_reservation *res,
                        struct watch_commit *wc)
{
    size_t nkey;
    const char *key = store_reservation_key(res, &nkey);
    memcpy(wc->key, key, nkey);
    wc->nkey = (uint8_t)nkey;
    wc->nvalue = res->nvalue;
    wc->on = true;
    if (watch_active(WATCH_LOOKUPS))
        watch_peek(s, wc->key, wc->nkey, NULL);
}

void watch_commit_end(const struct session *s, const struct watch_commit *wc, enum store_status st,
                      enum store_mode mode, rel_time_t exptime, unsigned clsid)
{
    if (watch_active(WATCH_MUTATIONS))
        watch_note_store(s, wc->key, wc->nkey, st, mode, exptime, wc->nvalue, clsid);
}
