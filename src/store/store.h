/* SPDX-License-Identifier: BSD-3-Clause */
/* The store: nodelay's cache, and the one interface every protocol uses.
 *
 * It knows nothing of sockets or wire formats. Items live in fixed-size
 * segments (see docs/design.md "The store"); this header is the contract:
 *
 *  - A worker thread owns one `struct store_ctx` and passes it to every call;
 *    it holds the worker's open segment and counters, so writers on different
 *    workers never share an allocation point and counters are never contended.
 *  - Reads return a `struct store_item` view pointing into segment memory, with
 *    a `store_pin` that keeps that memory valid (no copy) until the caller
 *    releases it, typically when the reply bytes have been written to the
 *    socket. An overwrite, delete or eviction meanwhile never changes bytes a
 *    pinned view points at.
 *  - Writes are reserve -> fill -> commit, so a value is received straight into
 *    its final place; store_store() is the copying shortcut.
 *  - All times are rel_time_t on the server clock (clock.h); callers convert
 *    wire exptimes with clock_exptime().
 *  - Functions return a status; the protocol decides what to say.
 */
#ifndef NODELAY_STORE_H
#define NODELAY_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/flash_tuning.h"

#define STORE_KEY_MAX 250

struct store;     /* the cache, shared by all workers */
struct store_ctx; /* one per worker thread */
struct store_pin; /* a held reference keeping an item's bytes valid */

/* The flash tier (memcached's extstore, -o ext_*; docs/store.md "Flash
 * tier"): off while nfiles is 0. */
#define STORE_FLASH_FILES_MAX 16
struct store_flash_options {
    int nfiles;
    const char *paths[STORE_FLASH_FILES_MAX];
    uint64_t sizes[STORE_FLASH_FILES_MAX];
    uint64_t page_size;     /* ext_page_size, bytes */
    uint32_t wbuf_size;     /* ext_wbuf_size, bytes: one flash segment */
    int threads;            /* ext_threads */
    unsigned io_depth;      /* ext_io_depth: queued reads a read thread takes at once */
    uint32_t item_size;     /* ext_item_size */
    uint32_t item_age;      /* ext_item_age; UINT32_MAX: any */
    uint32_t low_ttl;       /* ext_low_ttl */
    uint32_t recache_rate;  /* ext_recache_rate */
    uint32_t compact_under; /* ext_compact_under, pages; 0: a hundredth of them */
    uint32_t drop_under;    /* ext_drop_under, pages; 0: as compact_under */
    double max_frag;        /* ext_max_frag */
    bool drop_unread;       /* ext_drop_unread */
    uint32_t max_sleep;     /* ext_max_sleep, us: longest idle pause of the tier's threads */
    /* where `extstore` changes item_size..max_sleep at run time (read
     * at each decision); no reader: the values above stay */
    struct flash_tuning_src tuning;
};

struct store_options {
    size_t mem_limit;     /* -m in bytes: exact cap on item memory */
    size_t item_size_max; /* -I in bytes: largest key + value + header */
    bool evictions;       /* false with -M: refuse with STORE_NO_MEMORY instead */
    bool cas_enabled;     /* false with -C: every CAS reads as 0 */
    unsigned hashpower;   /* -o hashpower: initial index size 2^n, 0 = default */
    bool background;      /* run the housekeeping thread (expiry sweep, early eviction) */
    const char *memory_file; /* -e: segments in a shared mapping of this file, restored at start */
    size_t upload_limit;  /* bytes all incomplete large uploads may hold; 0 = default
                             (docs/store.md "Uploads") */
    bool temp_lru;          /* -o temporary_ttl given (memcached's TEMP LRU): */
    unsigned temporary_ttl; /* items with a TTL up to this are not evicted for others */
    /* memcached's size classes (docs/store.md "Size classes"); 0 = its defaults */
    double growth_factor;   /* -f */
    size_t chunk_size;      /* -n */
    size_t slab_chunk_max;  /* -o slab_chunk_max in bytes; 0 = -I / 2 */
    /* -o no_lru_maintainer (or no_modern): memcached has no LRU maintainer
     * then, nothing reaps expired and flushed items in the background and
     * they go when read, written over, crawled (`lru_crawler crawl`) or
     * evicted; so the housekeeper does not unlink them one by one either
     * (it still reclaims segments whose items are all dead). */
    bool no_lru_maintainer;
    /* memcached's test hook T_MEMD_INITIAL_MALLOC (its slabs_init): bytes
     * counted as already taken from -m, so segments get only the rest (at
     * least one) and `stats slabs` total_malloced starts there; 0 = none.
     * docs/store.md "Run-time limit, -M, sizes". */
    size_t initial_malloced;
    /* memcached without its segmented LRU (-o no_modern, no_lru_maintainer,
     * `lru mode flat`; store_set_lru_segmented): a storage command reclaims
     * its key's expired or flushed item (docs/store-expiry.md "flush_all"). */
    bool lru_flat;
    /* Worker threads that will write (-t), for how many open segments
     * the pool can spare them (store_seg.h "seg_open_set"); 0: unknown,
     * each worker has its own. */
    unsigned writers;
    struct store_flash_options flash;
};

enum store_status {
    STORE_OK,          /* done; for get, a hit */
    STORE_MISS,        /* no live item under that key */
    STORE_NOT_STORED,  /* add on a live key; replace/append/prepend on a missing one */
    STORE_EXISTS,      /* CAS given and it did not match */
    STORE_TOO_LARGE,   /* larger than item_size_max */
    STORE_NO_MEMORY,   /* cannot make room (-M, or everything pinned) */
    STORE_NON_NUMERIC, /* incr/decr on a value that is not a decimal u64 */
};

int store_create(struct store **out, const struct store_options *opt);
void store_destroy(struct store **store);

struct store_ctx *store_ctx_create(struct store *store);
void store_ctx_destroy(struct store_ctx **ctx);
/* The store a worker context belongs to (flush_all and lru_crawler metadump
 * act on the whole store, and protocols hold only their worker's ctx). */
struct store *store_ctx_store(struct store_ctx *ctx);
/* Why a read missed: what `watch` prints as item_get's status. */
enum store_miss {
    STORE_MISS_ABSENT,  /* no item under the key */
    STORE_MISS_EXPIRED, /* this read found it expired (and unlinked it) */
    STORE_MISS_FLUSHED, /* this read found it flushed (and unlinked it) */
};

/* A view of one item. Every pointer stays valid until store_pin_release(pin);
 * without a pin (want_value false) only the scalar fields are meaningful. */

struct store_item {
    const char *key;
    const char *value;
    uint32_t nvalue;
    uint8_t nkey;
    uint8_t class_id;       /* pseudo slab class for tools (me, metadump, stats items) */
    uint8_t lru;            /* enum store_lru of its segment (stats items hits_to_*) */
    uint32_t flags;         /* client flags */
    uint64_t cas;           /* 0 when CAS is disabled */
    rel_time_t exptime;     /* REL_TIME_NEVER or when it expires */
    rel_time_t exptime_before; /* exptime before this request's touch (mg t before T) */
    rel_time_t last_access; /* as it was before this request */
    bool fetched;           /* had been fetched before this request (mg h) */
    bool stale;             /* invalidated by md I / ms I (mg X) */
    bool won;               /* this request won the recache token (mg W) */
    bool win_sent;          /* another request already holds the token (mg Z) */
    enum store_miss miss;   /* on STORE_MISS: why (STORE_MISS_ABSENT otherwise) */
    struct store_pin *pin;  /* NULL unless a value was pinned */
};

void store_pin_release(struct store_pin *pin);
/* A reply queue asks to hold pin until its bytes are written, which may be
 * never for a client that stops reading. false once reply queues pin a
 * quarter of the segments: the caller then copies the value and releases
 * pin, so eviction always has segments to take. A kept pin goes back with
 * store_pin_release_kept, not store_pin_release. With must it is kept (and
 * counted) past the share too: true. */
bool store_pin_keep(struct store_pin *pin, bool must);
void store_pin_release_kept(struct store_pin *pin);

/* Options for a read. Zero-initialised means a plain `get`. */
struct store_get_req {
    bool want_value;          /* pin and return the value */
    bool no_update;           /* mg u: leave access time, access bit and fetched alone */
    bool touch;               /* gat / touch / mg T: set a new expiry */
    rel_time_t exptime;       /* the new expiry when touch */
    bool vivify;              /* mg N: on a miss create an empty item and win it */
    rel_time_t vivify_exptime;
    bool recache;             /* mg R: win if the remaining TTL is below recache_below */
    bool stale_wins;          /* mg: a stale item's first read wins its token (not get, me) */
    rel_time_t recache_below; /* seconds */
    bool recache_before_touch; /* mg R before T: R judges the expiry T replaces */
    uint64_t cas_new;         /* mg E: CAS to give the item if this request modifies it */
    bool cas_given;           /* E was sent: cas_new is the CAS even when 0 */
    /* With want_value: a hit's value of at most copy_max bytes is handed
     * to copy(copy_arg, out) under the item's bucket lock instead of being
     * pinned (out filled, its pointers valid only during the call, which
     * must not call the store; out->key, value and pin are NULL after).
     * A short value is copied anyway (reply_value): this way the hit
     * writes nothing to the segment's pin count, a line every worker
     * reading that segment shares, and takes no atomic operation but the
     * bucket lock. */
    void (*copy)(void *copy_arg, const struct store_item *it);
    void *copy_arg;
    uint32_t copy_max;
    /* The key's hash is hv, as a prefetch of it gave it (store_keyref.hv):
     * not hashed again. */
    bool hashed;
    uint64_t hv;
};

/* Look a key up. STORE_OK fills *out (a hit); STORE_MISS on a miss, in which
 * case with req->vivify an empty item was created and out->won is set.
 * Expired and flushed items read as misses and are counted (get_expired,
 * get_flushed). */
enum store_status store_get(struct store_ctx *ctx, const char *key, size_t nkey,
                            const struct store_get_req *req, struct store_item *out);

/* Keys about to be looked up one after another (a read's pipelined gets, a
 * multiget): hashes them and starts loading their index buckets, then their
 * items, so the lookups that follow overlap their cache misses instead of
 * taking them one at a time. A hint only: it changes nothing, and keys past
 * STORE_PREFETCH_MAX are ignored. */
#define STORE_PREFETCH_MAX 32
struct store_keyref {
    const char *key;
    size_t nkey;
    uint64_t *hv; /* where to put the key's hash (store_get_req.hashed), or NULL */
};
void store_prefetch(struct store_ctx *ctx, struct store_keyref *keys, size_t n);
/* The same as a pipeline over lookups that have other work between them
 * (a read's pipelined requests, each parsed and answered in turn): start
 * loads every bucket and the first STORE_PREFETCH_LEAD items; each call of
 * next, made before the lookup of key i, loads the item of key
 * i + STORE_PREFETCH_LEAD, whose bucket has arrived by then. A hint only,
 * like store_prefetch. */
#define STORE_PREFETCH_LEAD 2
struct store_prefetch_run {
    uint32_t n, next;
    uint32_t tag[STORE_PREFETCH_MAX];
    const uint64_t *bucket[STORE_PREFETCH_MAX][2]; /* the key's two */
};
void store_prefetch_start(struct store_ctx *ctx, struct store_prefetch_run *r,
                          struct store_keyref *keys, size_t n);
/* start's first half: the buckets only, for a caller with other work to do
 * before the lookups (a worker's next read): every item then waits for its
 * own call of next. */
void store_prefetch_buckets(struct store_ctx *ctx, struct store_prefetch_run *r,
                            struct store_keyref *keys, size_t n);
void store_prefetch_next(struct store_ctx *ctx, struct store_prefetch_run *r);

/* touch: new expiry, no value. STORE_OK or STORE_MISS. */
enum store_status store_touch(struct store_ctx *ctx, const char *key, size_t nkey,
                              rel_time_t exptime);

enum store_mode {
    STORE_MODE_SET,
    STORE_MODE_ADD,
    STORE_MODE_REPLACE,
    STORE_MODE_APPEND, /* flags and exptime of the request are ignored */
    STORE_MODE_PREPEND,
    STORE_MODE_CAS,    /* set only if cas_compare matches: EXISTS / MISS otherwise */
};

struct store_set_req {
    enum store_mode mode;
    uint32_t flags;
    rel_time_t exptime;
    uint64_t cas_compare;   /* STORE_MODE_CAS, or ms C with another mode; 0 = none */
    uint64_t cas_new;       /* ms E: client-chosen CAS, 0 = next from the counter */
    bool cas_given;         /* cas_new is the CAS even when 0: memcached 1.6.45 takes
                               mg N's, ma's and md's E0 so, ms's as no E */
    bool invalidate;        /* ms I: with cas_compare, an older CAS is accepted and the item is marked stale */
    bool vivify;            /* ms N with append/prepend: create when missing */
    rel_time_t vivify_exptime;
    /* The key's old value is deleted when this value cannot be stored for
     * memory (an upload not placed, or cut off), so that a failed write
     * never leaves an older value readable: memcached's rule, which the
     * protocols apply when a reservation fails up front too (text `set`,
     * binary SET, every meta `ms`). */
    bool fail_deletes;
};

/* Space for one value, reserved in segment memory and filled by the caller.
 * The fields under "private" belong to the store. */
struct store_reservation {
    char *value;     /* write nvalue bytes here */
    uint32_t nvalue;
    /* Set by store_commit when it compared a CAS (cas, ms C): the memcached
     * size class of the item it compared against, 0 when none was found.
     * memcached counts cas_hits and cas_badval in that class. */
    uint8_t cas_cls;
    /* Set by store_commit, whatever the outcome: the memcached size class
     * of the new item (its key and value lengths with the request's
     * flags), 0 when nothing was reserved. memcached counts cmd_set in it.
     * The commit says it so that a set calls the store once for its end. */
    uint8_t cls;
    /* private */
    void *seg;
    void *item;
    uint32_t gen;   /* the segment's generation when reserved */
    uint8_t group;  /* TTL group it was reserved in */
    /* an upload (store_reserve_upload): key and value outside the segments */
    void *stage;
    bool cut;       /* cut off to make room for others: the value is dropped */
    uint8_t nkey;
    bool known;     /* flags and exptime below are the ones to commit */
    uint32_t flags;
    rel_time_t exptime;
};

/* Reserve room for an item of this key and value size. STORE_TOO_LARGE when
 * it can never fit (-I), STORE_NO_MEMORY when no room can be made. The caller
 * must end every successful reservation with store_commit or store_abort.
 * Note: for `set`, memcached deletes the old value when the new one is too
 * large or cannot be stored; that is the caller's decision (store_delete). */
enum store_status store_reserve(struct store_ctx *ctx, const char *key, size_t nkey,
                                size_t nvalue, struct store_reservation *res);

/* store_reserve with the flags and expiry the caller will commit, when it
 * knows them (classic set, binary set, ms): the item is laid out for them,
 * so fewer header bytes, and placed with items of similar expiry. They are
 * hints: a commit with other values still works (at the cost of a copy). */
enum store_status store_reserve_for(struct store_ctx *ctx, const char *key, size_t nkey,
                                    size_t nvalue, uint32_t flags, rel_time_t exptime,
                                    struct store_reservation *res);

/* Uploads never hold segment memory: store_reserve_upload is the call for a
 * value that is not all here yet and will arrive over later reads. The value
 * is received outside the segments (a client that stops halfway pins
 * nothing, so it can never stop eviction or other writers) and copied into
 * place by store_commit. Values up to STORE_UPLOAD_SMALL bytes are always
 * accepted (one per connection at most); larger ones only while all
 * incomplete large uploads together stay within the upload limit (cutting
 * off stalled ones, see store_upload_alive), else STORE_NO_MEMORY
 * (memcached's answer when its memory is full). With
 * fields_known, flags and exptime are what will be committed (as
 * store_reserve_for); else as store_reserve. */
#define STORE_UPLOAD_SMALL (16u * 1024)
enum store_status store_reserve_upload(struct store_ctx *ctx, const char *key, size_t nkey,
                                       size_t nvalue, bool fields_known, uint32_t flags,
                                       rel_time_t exptime, struct store_reservation *res);
/* The same, but with here (its client is sending the rest: more of it is
 * queued to be read, session_value_coming) a large upload is admitted past
 * the limit when nothing can be cut off for it: it is arriving, not held
 * back (docs/store.md "Uploads"). Cut and live uploads together still never
 * pass twice the limit. */
enum store_status store_reserve_upload_here(struct store_ctx *ctx, const char *key, size_t nkey,
                                            size_t nvalue, bool fields_known, uint32_t flags,
                                            rel_time_t exptime, bool here,
                                            struct store_reservation *res);
/* Would an upload of nvalue bytes fit the limit as things stand? Advisory
 * (it may change before the reservation): whether to look at the socket
 * for `here`. */
bool store_upload_fits(const struct store_ctx *ctx, size_t nvalue);

/* Bytes staged by incomplete small uploads (up to STORE_UPLOAD_SMALL each,
 * one per connection): memory owed to clients, which the server counts
 * against -o client_mem_limit (the large ones have their own bound). */
size_t store_upload_small_bytes(const struct store *s);

/* Past the bound, a new large upload cuts off the oldest one that has
 * received nothing for STORE_UPLOAD_STALL seconds. The receiving side calls
 * this whenever bytes arrive (got_bytes: noted as progress) and now and
 * then meanwhile (a connection tick): true while the value is still wanted; false
 * once it was cut off, its value's memory is then freed at once: write no
 * more into res->value (NULL now), drop the rest of the value, and
 * store_commit answers STORE_NO_MEMORY (a set deleting the key's old value,
 * as when an upload cannot be placed). Plain reservations are always
 * alive. */
#define STORE_UPLOAD_STALL 2
bool store_upload_alive(struct store_ctx *ctx, struct store_reservation *res, bool got_bytes);

/* Link a filled reservation under its key by req's rules (an upload that
 * cannot be placed, or was cut off, then fails as store_reserve would, and
 * a set deletes the key's old value, as memcached). On STORE_OK,
 * *cas_out (if not NULL) is the item's CAS and *size_out (if not NULL) its
 * final value length (after append/prepend). The reservation is consumed
 * whatever the outcome. */
enum store_status store_commit(struct store_ctx *ctx, struct store_reservation *res,
                               const struct store_set_req *req, uint64_t *cas_out,
                               uint32_t *size_out);

/* The key a reservation was made for (`watch` lines name it at commit);
 * empty for an upload cut off for others (its staged key is freed). */
const char *store_reservation_key(const struct store_reservation *res, size_t *nkey);

/* Give up a reservation (client vanished, bad data chunk). */
void store_abort(struct store_ctx *ctx, struct store_reservation *res);

/* reserve + memcpy + commit. */
enum store_status store_store(struct store_ctx *ctx, const char *key, size_t nkey,
                              const void *value, size_t nvalue,
                              const struct store_set_req *req, uint64_t *cas_out);

struct store_delete_req {
    uint64_t cas_compare; /* md C: 0 = any */
    uint64_t cas_new;     /* md E */
    bool cas_given;       /* E was sent: cas_new is the CAS even when 0 */
    bool invalidate;      /* md I: mark stale and bump CAS instead of removing */
    bool touch;           /* md T (with I): new expiry */
    rel_time_t exptime;
    bool drop_value;      /* md x: keep the item, empty its value, flags set to flags */
    uint32_t flags;       /* md x: the emptied item's client flags (md F; else 0) */
    uint8_t *class_out;   /* out, optional: the class of the item found (stats slabs) */
    uint32_t *size_out;   /* out, optional: its value length (`watch` lines) */
    uint8_t *miss_out;    /* out, optional: on STORE_MISS, why (enum store_miss) */
};

/* STORE_OK (deleted), STORE_MISS, STORE_EXISTS (CAS mismatch). req may be NULL. */
enum store_status store_delete(struct store_ctx *ctx, const char *key, size_t nkey,
                               const struct store_delete_req *req);

struct store_arith_req {
    bool incr;              /* false = decr */
    uint64_t delta;
    bool create;            /* ma N / binary with exptime != 0xffffffff: create on miss */
    uint64_t initial;       /* value when created */
    rel_time_t create_exptime;
    uint64_t cas_compare;   /* 0 = none */
    uint64_t cas_new;       /* ma E */
    bool cas_given;         /* E was sent: cas_new is the CAS even when 0, else next */
    bool touch;             /* ma T */
    rel_time_t exptime;
};

struct store_arith_res {
    uint64_t value;      /* the new value */
    uint64_t cas;
    rel_time_t exptime;
    rel_time_t exptime_before; /* the item's expiry before a T moved it */
    bool created;
    uint8_t class_id;    /* of the item before the change (stats slabs' incr_hits) */
};

/* memcached's rules: the value must be a decimal u64; incr wraps at 2^64,
 * decr stops at 0; a shorter result keeps the old length, padded with
 * spaces. STORE_OK, STORE_MISS, STORE_NON_NUMERIC, STORE_EXISTS,
 * STORE_NO_MEMORY. */
enum store_status store_arith(struct store_ctx *ctx, const char *key, size_t nkey,
                              const struct store_arith_req *req, struct store_arith_res *res);

/* flush_all: items stored at or before `when` become invisible once `when`
 * has come (when = clock_now() for an immediate flush). */
void store_flush(struct store *store, rel_time_t when);

/* `lru temp_ttl N`: change temporary_ttl at run time; negative turns it off
 * (memcached's rule). Items already stored keep their place. */
void store_set_temporary_ttl(struct store *store, int ttl);

/* `lru mode flat|segmented`: memcached's lru_segmented at run time
 * (store_options.lru_flat is its opposite). */
void store_set_lru_segmented(struct store *store, bool segmented);

/* cache_memlimit: change -m at run time. Returns 0, or -1 if too small.
 * Every ctx seals its open segments and takes the open set the new limit
 * gives it at its next write or store_ctx_follow_limit, which a worker
 * calls each turn so that an idle one's open segments are let go too. */
int store_set_mem_limit(struct store *store, size_t bytes);
void store_ctx_follow_limit(struct store_ctx *ctx);

/* The store's counters, memcached's names where memcached has them, declared
 * once: STORE_COUNTERS only grow (each store_ctx keeps its own, summed by
 * store_stats; `stats reset` subtracts a baseline), STORE_GAUGES are levels
 * read when asked. */
#define STORE_COUNTERS(X)                                                       \
    X(total_items)         /* items ever stored */                               \
    X(evictions)           /* live items dropped to make room */                 \
    X(evicted_unfetched)   /* ... that were never fetched */                     \
    X(evicted_active)      /* ... that were accessed recently */                 \
    X(expired_unfetched)   /* expired items reclaimed that were never fetched */ \
    X(reclaimed)           /* expired or dead space reused */                    \
    X(get_expired)         /* reads that found an expired item */                \
    X(get_flushed)         /* reads that found a flushed item */                 \
    X(seg_evicted)         /* segments reclaimed by eviction */                  \
    X(seg_expired)         /* segments reclaimed whole because all expired */    \
    X(items_reinserted)    /* live, accessed items carried forward at eviction */\
    X(uploads_refused)     /* large uploads refused at that bound (upload_limit) */\
    X(uploads_cut)         /* stalled ones cut off to make room */                \
    X(crawler_reclaimed)   /* expired or flushed items `lru_crawler crawl` unlinked */\
    X(crawler_items_checked) /* items it examined */                             \
    X(lru_crawler_starts)  /* crawls, metadumps and mgdumps started */           \
    X(moves_to_cold)       /* items whose segment was sealed onto probation */   \
    X(moves_to_warm)       /* ... kept from a probation segment into main */     \
    X(moves_within_lru)    /* ... kept from a main segment, carried forward */

#define STORE_GAUGES(X)                                                         \
    X(curr_items)          /* live items */                                      \
    X(bytes)               /* bytes used by live items */                        \
    X(limit_maxbytes)      /* -m */                                              \
    X(hash_power_level)                                                          \
    X(hash_bytes)          /* index memory, outside -m */                        \
    X(hash_is_expanding)                                                         \
    X(seg_size)            /* bytes per segment */                               \
    X(seg_total)           /* segments that fit in -m */                         \
    X(seg_used)            /* segments holding items */                          \
    X(lru_crawler_running) /* 1 while a `lru_crawler crawl` runs */             \
    X(initial_malloced)    /* T_MEMD_INITIAL_MALLOC: counted as taken from -m */ \
    X(dead_bytes)          /* overwritten/deleted bytes awaiting reclaim */      \
    X(upload_bytes)        /* bytes held by values still arriving (outside -m) */\
    X(upload_limit)        /* the bound on large ones among them */              \
    X(restore_mode)        /* how it started: enum store_restore_mode */         \
    X(restored_items)      /* items restored from the -e file */                 \
    X(restore_discarded_expired) /* ... found expired or flushed */              \
    X(restore_discarded_corrupt) /* ... failing their checksum or damaged */     \
    X(restore_ms)          /* time the restore took */                           \
    X(restore_cpu_ms)      /* CPU time in it, all threads (the rest: waiting for a core) */

/* The flash tier's (memcached's extstore names and meanings; 0 without
 * one): reads served from flash and what came of them, then its segments
 * (memcached's pages) and the items and bytes in them. */
#define STORE_FLASH_STATS(X)                                                    \
    X(get_extstore)        /* reads served from flash */                         \
    X(get_aborted_extstore) /* reads given up (the session went) */             \
    X(get_oom_extstore)    /* ... read, but no room to copy back into RAM */     \
    X(recache_from_extstore) /* items copied back into RAM */                   \
    X(miss_from_extstore)  /* flash reads that found the item gone or bad */     \
    X(badcrc_from_extstore) /* ... whose checksum failed */                      \
    X(extstore_compact_lost) /* live items compaction could not keep */          \
    X(extstore_compact_rescues) /* items compaction rewrote */                   \
    X(extstore_compact_skipped) /* unread items it dropped (ext_drop_unread) */  \
    X(extstore_page_allocs)   /* flash segments opened */                        \
    X(extstore_page_evictions) /* ... dropped for room with items live */        \
    X(extstore_page_reclaims) /* ... freed with nothing live */                  \
    X(extstore_pages_free)                                                      \
    X(extstore_pages_used)                                                      \
    X(extstore_objects_evicted) /* items lost with a dropped segment */          \
    X(extstore_objects_read)                                                    \
    X(extstore_objects_written)                                                 \
    X(extstore_objects_used)  /* items on flash whose slots name them */         \
    X(extstore_bytes_evicted)                                                   \
    X(extstore_bytes_written) /* item bytes copied to flash */                   \
    X(extstore_bytes_read)                                                      \
    X(extstore_bytes_used)                                                      \
    X(extstore_bytes_fragmented)                                                \
    X(extstore_limit_maxbytes)                                                  \
    X(extstore_io_queue)     /* segments waiting for their write */              \
    X(extstore_device_bytes_written) /* bytes the device was given (aligned) */ \
    X(extstore_value_bytes_moved) /* value bytes moved there from RAM */         \
    X(extstore_device_bytes_read) /* bytes read from the device (aligned) */    \
    X(extstore_write_errors)                                                    \
    X(extstore_read_errors)  /* reads failed or short (a miss each) */           \
    X(extstore_ring_reads)   /* device reads started on a worker's io_uring */   \
    X(extstore_pool_reads)   /* ... handed to the read threads instead */        \
    X(extstore_skipped_full) /* items evicted: no write buffer free */           \
    X(extstore_slots_dropped) /* slots found naming a gone or bad item */        \
    X(extstore_index_dropped) /* flash slots an index growth could not keep */ \
    X(extstore_tag_dropped)   /* flash slots dropped under a written key's tag */

#define STORE_STATS(X) STORE_COUNTERS(X) STORE_GAUGES(X) STORE_FLASH_STATS(X)

struct store_stats {
#define STORE_STATS_FIELD(name) uint64_t name;
    STORE_STATS(STORE_STATS_FIELD)
#undef STORE_STATS_FIELD
};

void store_stats(struct store *store, struct store_stats *out);

/* `stats extstore`: one row per flash page, memcached 1.6.45's page data
 * (its extstore_get_page_data); nodelay's flash pages are its flash
 * segments (docs/store-flash.md). */
struct store_flash_page {
    uint64_t version;     /* the write there (its sequence, from 1); 0: free */
    uint64_t bytes;       /* live bytes (from its live items' share) */
    uint32_t bucket;      /* memcached's write bucket: 0 default, 1 compaction, 3 low TTL */
    uint32_t free_bucket; /* the bucket it goes back to when freed: always 0 */
    uint64_t size;        /* bytes it holds when full (ext_wbuf_size); no row */
};
/* Copies up to n rows into out and returns how many pages there are (0
 * without a flash tier). */
size_t store_flash_pages(struct store *store, struct store_flash_page *out, size_t n);

#endif
