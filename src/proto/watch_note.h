/* SPDX-License-Identifier: BSD-3-Clause */
/* The protocols' side of `watch`: one call per event point, each behind
 * watch_active() at the call site so that it costs a branch when nobody
 * watches. memcached logs an item_get for every lookup its commands make
 * (a set looks its key up first, so does delete, incr, touch): watch_peek
 * reproduces that lookup, without touching the item, only while someone
 * watches. */
#ifndef NODELAY_WATCH_NOTE_H
#define NODELAY_WATCH_NOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "store/store.h"
#include "watch/watch.h"

struct session;

/* What a lookup saw, for the line that follows it (deleted's clsid, size). */
struct watch_seen {
    bool found;
    uint8_t clsid;
    uint32_t size;
};

/* A read's outcome: it (NULL or st != STORE_OK: a miss) as the command got it. */
void watch_note_get(const struct session *s, const char *key, size_t nkey, enum store_status st,
                    const struct store_item *it);
/* Look the key up without changing it; logs item_get when fetchers are
 * watched. seen may be NULL. */
void watch_peek(const struct session *s, const char *key, size_t nkey, struct watch_seen *seen);
/* A storage command's outcome (mode names cmd=, "ms" callers pass the mode
 * too); clsid is the new item's class (store_reservation.cls). */
void watch_note_store(const struct session *s, const char *key, size_t nkey, enum store_status st,
                      enum store_mode mode, rel_time_t exptime, uint32_t nvalue, unsigned clsid);
/* Around a commit: watch_commit_begin (behind watch_active(WATCH_FETCHERS |
 * WATCH_MUTATIONS)) keeps the key and logs the lookup memcached makes;
 * watch_commit_end logs the outcome when wc->on, clsid as for
 * watch_note_store. */
struct watch_commit {
    bool on;
    uint8_t nkey;
    uint32_t nvalue;
    char key[STORE_KEY_MAX];
};
void watch_commit_begin(const struct session *s, const struct store_reservation *res,
                        struct watch_commit *wc);
void watch_commit_end(const struct session *s, const struct watch_commit *wc, enum store_status st,
                      enum store_mode mode, rel_time_t exptime, unsigned clsid);
/* The lookup memcached logs before a delete, had from the delete itself:
 * what it removed (store_delete's class_out, size_out) or why it missed
 * (miss_out); a CAS mismatch changed nothing, so the key is looked up again
 * (watch_peek). seen is filled for watch_note_deleted. */
void watch_note_delete_lookup(const struct session *s, const char *key, size_t nkey,
                              enum store_status st, unsigned clsid, uint32_t size,
                              enum store_miss miss, struct watch_seen *seen);
/* A removal: cmd "delete" / "md"; seen from watch_peek before it. */
void watch_note_deleted(const char *key, size_t nkey, const char *cmd, const struct watch_seen *seen);

#endif
