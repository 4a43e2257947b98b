/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's views of the store, for compatibility: its size classes (the
 * class an item would have had, `stats items` and `stats slabs`), its LRU
 * crawler (`lru_crawler crawl`, and the walk behind metadump and mgdump),
 * and how a restart restored (restore_mode). Nothing here is on the way a
 * get or a set takes through the store; the operations are in store.h.
 * docs/store.md "Size classes". */
#ifndef NODELAY_STORE_COMPAT_H
#define NODELAY_STORE_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_flash.h"

/* The largest of memcached's size-class ids items are reported in (me cls=,
 * dumps, stats items); ids run 1..this. */
unsigned store_class_largest(const struct store *store);

/* memcached's MAX_NUMBER_OF_SLAB_CLASSES: class ids run 1..63. */
#define STORE_CLASSES 64

/* Where an item's segment stands, as memcached's segmented LRU names it
 * (docs/store.md "Size classes"): HOT a worker's open segment (the newest
 * writes), COLD the small (probation) queue, WARM the main queue and its
 * open segment (items carried because they were read), TEMP the
 * temporary_ttl group's segments. */
enum store_lru { STORE_LRU_HOT, STORE_LRU_WARM, STORE_LRU_COLD, STORE_LRU_TEMP, STORE_LRUS };

/* Per-class event counters, memcached's `stats items` names (docs/store.md
 * "Size classes"): items evicted (live, dropped for room), of them with an
 * expiry, never fetched; reclaimed (expired or flushed, unlinked by a read's
 * store, eviction or the housekeeper) and of them never fetched; unlinked by
 * `lru_crawler crawl` and the items it examined; moved from HOT to COLD (a
 * worker's segment sealed onto the probation queue), into WARM (kept by an
 * eviction walk of a probation segment), within WARM (kept by one of a main
 * segment). */
#define STORE_CLASS_EVENTS(X)                                                   \
    X(evicted) X(evicted_nonzero) X(evicted_unfetched) X(reclaimed)             \
    X(expired_unfetched) X(crawler_reclaimed) X(crawler_items_checked)          \
    X(moves_to_cold) X(moves_to_warm) X(moves_within_lru)

/* One size class as `stats items` / `stats slabs` show it. Items live in
 * segments, not slabs: pages are the segments in use that hold the class's
 * items, live or dead and not yet reclaimed, age the age of the oldest
 * segment holding a live one (docs/store.md). */
struct store_class_stats {
    uint32_t chunk_size;
    uint64_t number;          /* live items */
    uint64_t number_lru[STORE_LRUS]; /* of them, in segments at each stand */
    uint32_t age_hot, age_warm; /* seconds since the oldest HOT / WARM segment opened */
    uint64_t mem_requested;   /* their memcached sizes */
    uint64_t pages;           /* segments in use holding its items' bytes */
    uint32_t age;             /* seconds since the oldest segment holding a live one opened */
#define STORE_CLASS_EVENT_FIELD(f) uint64_t f;
    STORE_CLASS_EVENTS(STORE_CLASS_EVENT_FIELD)
#undef STORE_CLASS_EVENT_FIELD
    uint32_t evicted_time;
};
/* Fills out[1..n] (STORE_CLASSES entries) and returns n, the largest class id.
 * Walks every segment: for `stats`, not for a request path. */
unsigned store_class_stats(struct store *store, struct store_class_stats *out);
/* memcached 1.6.45's extstore_memory_pressure from those classes and st's
 * segment counts: the percentage of the RAM pages (segments here) held by
 * classes whose chunks are under ext_item_size (items the flash cannot
 * take), out of those pages, the pages of the larger classes holding more
 * than two, and the free ones. 0 without a flash tier. */
struct store_stats;
double store_flash_memory_pressure(struct store *store, const struct store_class_stats *cls,
                                   unsigned n, const struct store_stats *st);

/* The size class memcached would give a new item of this key length, value
 * length and client flags (what it counts cmd_set in, per class). */
unsigned store_class_for(const struct store_ctx *ctx, size_t nkey, size_t nvalue, uint32_t flags);
/* ... of the item a reservation holds, committed with these flags. */
struct store_reservation;
unsigned store_reservation_class(const struct store_ctx *ctx, const struct store_reservation *res,
                                 uint32_t flags);

/* The bytes memcached 1.6 would spend on this item (its 48-byte header, key
 * and NUL, value and CRLF, the CAS unless -C, non-zero client flags): what
 * `me` and metadump report as size=, so tools comparing servers agree. */
size_t store_item_mc_size(const struct store *store, const struct store_item *it);

/* `lru_crawler crawl`: memcached's LRU crawler over the classes whose bits
 * are set in `classes` (bit k: class k). Every item of those classes is
 * examined (crawler_items_checked) and the expired and flushed ones
 * unlinked (crawler_reclaimed; expired_unfetched for an expired one never
 * fetched), on the housekeeper thread (lru_crawler_running meanwhile), or
 * here when the store has none. false: a crawl is still running (BUSY). */
bool store_crawl_classes(struct store_ctx *ctx, uint64_t classes);
/* A metadump or mgdump started: memcached runs them on its crawler too
 * (lru_crawler_starts). */
void store_note_crawler_start(struct store_ctx *ctx);

/* Walk live items for lru_crawler metadump/mgdump. Visits at most `max`
 * items from *cursor on and advances it (more only when a single index
 * bucket holds more than max); *cursor is 0 at the start and UINT64_MAX when
 * the walk is complete. The view passed to fn is valid only during the call
 * (no pin is taken; fn must not call the store). Returns how many were
 * visited; 0 only when the walk is complete. If the index grows between two
 * calls, a key may be visited twice; if a write moves a key's entry to its
 * other bucket between two calls (index.c), it may be missed. */
typedef void (*store_walk_fn)(const struct store_item *item, void *arg);
size_t store_walk(struct store *store, uint64_t *cursor, size_t max, store_walk_fn fn,
                  void *arg);

/* The flash half of such a walk: the flash tier's items, whose keys RAM
 * does not keep, read back from their segments a part at a time
 * (docs/store-flash.md "Dumps") with the session's flash reads, so no
 * worker waits on the disk (store_flash.h's contract: probe, and when it
 * says WAIT, stop until the wait set's wake, then probe again). Every item
 * passed to fn is live as it is judged: a slot still names it, its segment
 * still holds that write, not expired or flushed; class_id is the class of
 * the header memcached keeps in RAM for an item on flash (its key and
 * where the rest is), page and offset where the rest is here (a segment's
 * number, as `stats extstore` counts them, and the item's place in it). An
 * item moved between two parts (written, compacted, sent to flash) may be
 * visited twice or not at all; a segment dropped or rewritten under the
 * walk is left where it was read to. */
struct store_flash_scan;
struct store_flash_wait;
/* NULL without a flash tier (or out of memory: the walk lists RAM only). */
struct store_flash_scan *store_flash_scan_create(struct store_ctx *ctx,
                                                 struct store_flash_wait *w);
/* Safe with a read outstanding (it is freed once the read completes). */
void store_flash_scan_destroy(struct store_flash_scan *sc);
/* READY: a part is in (or the walk is over); WAIT: its read went out. */
enum store_probe store_flash_scan_probe(struct store_flash_scan *sc);
enum store_scan {
    STORE_SCAN_MORE, /* call again */
    STORE_SCAN_READ, /* the part is done: stop, and probe before the next call */
    STORE_SCAN_END,  /* every segment walked, or a read failed (counted, logged) */
};
typedef void (*store_flash_walk_fn)(const struct store_item *item, uint32_t page,
                                    uint32_t offset, void *arg);
/* Judges up to max items of the part that is in; fn sees the live ones,
 * with the same validity as store_walk's. */
enum store_scan store_flash_scan_walk(struct store_flash_scan *sc, size_t max,
                                      store_flash_walk_fn fn, void *arg);

/* How the store started (restore_mode). */
enum store_restore_mode {
    STORE_RESTORE_NONE = 0,   /* no -e */
    STORE_RESTORE_NEW,        /* -e, empty or new file */
    STORE_RESTORE_GRACEFUL,   /* restored after a graceful stop */
    STORE_RESTORE_CRASH,      /* restored after a crash */
    STORE_RESTORE_DISCARDED,  /* the -e file could not be used (the log says why): empty */
};

static inline const char *store_restore_mode_name(uint64_t mode)
{
    static const char *const names[] = {"none", "new", "graceful", "crash", "discarded"};
    return mode < sizeof(names) / sizeof(names[0]) ? names[mode] : "none";
}

#endif
