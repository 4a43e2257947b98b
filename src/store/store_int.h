/* The store's insides, shared by its files and by nothing else.
 *
 * Layering: item.c knows the byte layout of one item; index.c the hash index
 * of 8-byte slots; seg.c the segments (allocation, FIFO, eviction, expiry);
 * store.c, store_write.c and store_arith.c the operations of store.h on top.
 * docs/store.md says why it is shaped this way.
 */
#ifndef NODELAY_STORE_INT_H
#define NODELAY_STORE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* ---- items (item.c) ---------------------------------------------------- */

/* Layout byte: which optional fields an item carries. Fixed when its space is
 * reserved, never changed afterwards, so a segment can be walked without
 * locks. */
#define ITEM_L_MARK 0x80    /* always set */
#define ITEM_L_FLAGS 0x01   /* 4 bytes of client flags */
#define ITEM_L_EXP 0x02     /* 4 bytes of expiry */
#define ITEM_L_CAS32 0x04   /* CAS as a 4-byte delta from the segment's cas_base */
#define ITEM_L_CAS64 0x08   /* CAS in full */
#define ITEM_L_SUM 0x10     /* 4-byte checksum of nkey, flags, key and value (-e only) */
/* State bits (-e only), set after the item is laid out and never cleared:
 * COMMIT when it is linked (its value complete), DEAD when it is unlinked
 * (overwritten, deleted, evicted, expired). The restore scan serves an item
 * only when it is COMMIT and not DEAD (docs/store.md "Restarts"). They do
 * not change where fields lie; item_decode leaves them out of h->layout. */
#define ITEM_L_COMMIT 0x20
#define ITEM_L_DEAD 0x40
#define ITEM_L_STATE (ITEM_L_COMMIT | ITEM_L_DEAD)

/* Status bits live in the top of the access-time word (mutable under the
 * bucket lock). rel_time_t keeps 29 bits: 17 years of uptime. */
#define ITEM_S_FETCHED 0x80000000u
#define ITEM_S_STALE 0x40000000u
#define ITEM_S_TOKEN 0x20000000u
#define ITEM_S_MASK 0xe0000000u

#define ITEM_HDR_MAX (1 + 1 + 5 + 4 + 4 + 4 + 8 + 4)

/* A decoded item header. */
struct item_hdr {
    uint8_t layout;
    uint8_t nkey;
    uint32_t nvalue;
    uint32_t hlen;    /* bytes before the key */
    uint32_t atime_off, flags_off, exp_off, cas_off, sum_off; /* 0 = absent (atime always present) */
};

/* Bytes of header an item with this layout and value length needs. */
uint32_t item_hdr_len(uint8_t layout, uint32_t nvalue);
/* Write a header (fields zeroed) and the key; returns the header length. */
uint32_t item_init(char *p, uint8_t layout, const char *key, uint8_t nkey, uint32_t nvalue);
void item_decode(const char *p, struct item_hdr *h);
static inline uint32_t item_total(const struct item_hdr *h)
{
    return h->hlen + h->nkey + h->nvalue;
}

uint32_t item_get_u32(const char *p, uint32_t off);
void item_put_u32(char *p, uint32_t off, uint32_t v);
uint64_t item_get_cas(const char *p, const struct item_hdr *h, uint64_t cas_base);
/* false when the CAS does not fit the item's layout */
bool item_cas_fits(uint8_t layout, uint64_t cas, uint64_t cas_base);
void item_put_cas(char *p, const struct item_hdr *h, uint64_t cas, uint64_t cas_base);
/* The checksum of an item's immutable part (nkey, flags, key, value). */
uint32_t item_sum(const char *p, const struct item_hdr *h);
/* The state bits of an item (ITEM_L_COMMIT, ITEM_L_DEAD). */
static inline uint8_t item_state(const char *p)
{
    return __atomic_load_n((const uint8_t *)p, __ATOMIC_ACQUIRE) & ITEM_L_STATE;
}
/* Set state bits with release ordering: every byte of the item written
 * before is in memory before the bit is (what a restore after a kill -9
 * relies on). */
static inline void item_set_state(char *p, uint8_t bits)
{
    __atomic_fetch_or((uint8_t *)p, bits, __ATOMIC_RELEASE);
}
/* The layout needed to hold these field values. */
uint8_t item_layout_for(uint32_t flags, rel_time_t exptime, bool cas_enabled, uint64_t cas,
                        uint64_t cas_base);

/* memcached's own item size for this item (its -I check and slab class). */
size_t item_mc_size(size_t nkey, size_t nvalue, uint32_t flags, bool cas_enabled);

/* ---- index (index.c) --------------------------------------------------- */

/* A bucket is one cache line: word 0 is the header (bit 0 the lock, bits
 * 32..63 the overflow bucket chained after it, 0 = none), words 1..7 slots.
 * A slot: tag(11) | segment id(24) | offset(27) | frequency(2); 0 = empty.
 * The frequency counts reads since the item was written or last kept at an
 * eviction, saturating at 3 (S3-FIFO's counter). */
#define INDEX_SLOTS 7
#define SLOT_FREQ 3ull
#define SLOT_OFF_BITS 27
#define SLOT_SEG_BITS 24
#define SLOT_MAX_SEGS (1u << SLOT_SEG_BITS)
#define SLOT_MAX_OFF (1u << SLOT_OFF_BITS)

static inline uint64_t slot_make(uint32_t tag, uint32_t seg, uint32_t off)
{
    return ((uint64_t)tag << 53) | ((uint64_t)seg << 29) | ((uint64_t)off << 2);
}
static inline uint32_t slot_tag(uint64_t s) { return (uint32_t)(s >> 53); }
static inline uint32_t slot_seg(uint64_t s) { return (uint32_t)(s >> 29) & (SLOT_MAX_SEGS - 1); }
static inline uint32_t slot_off(uint64_t s) { return (uint32_t)(s >> 2) & (SLOT_MAX_OFF - 1); }
static inline unsigned slot_freq(uint64_t s) { return (unsigned)(s & SLOT_FREQ); }
static inline uint64_t slot_hit(uint64_t s) { return (s & SLOT_FREQ) == SLOT_FREQ ? s : s + 1; }
/* Same item, whatever the frequency says. */
static inline bool slot_same(uint64_t a, uint64_t b) { return (a | SLOT_FREQ) == (b | SLOT_FREQ); }

/* One generation of the bucket array. */
struct index_table {
    uint64_t *b;       /* (mask + 1) * 8 words, 64-byte aligned */
    uint64_t mask;
    unsigned power;
    bool tomb;         /* retired: its pages map the MOVED pattern */
    struct index_table *retired_next;
};

/* Rehash the item a slot points to (the index stores no full hashes). */
typedef uint64_t (*index_rehash_fn)(void *arg, uint64_t slot);

struct index {
    struct index_table *cur;
    struct index_table *old; /* being migrated into cur, or NULL */
    uint64_t migrate_next;     /* next old bucket to migrate */
    uint64_t migrated;         /* old buckets done */
    uint64_t items;            /* occupied slots */
    pthread_mutex_t grow_lock;
    struct index_table *retired;       /* old generations, unmapped at release */
    int tomb_fd;                       /* the MOVED pattern (table_tombstone) */
    index_rehash_fn rehash;
    void *rehash_arg;
    pthread_mutex_t pool_lock; /* overflow bucket pool */
    uint64_t **chunks;         /* overflow buckets, INDEX_CHUNK_BUCKETS each */
    uint32_t nchunks;
    uint32_t pool_next;        /* next never-used overflow id (1-based) */
    uint32_t pool_free;        /* free list head, linked through the header */
    uint64_t overflow_used;
};

/* memcached's hash power (-o hashpower, `hash_power_level`) counts chains,
 * and its table doubles past 1.5 items a chain. A bucket of ours stands for
 * 2^INDEX_LEVEL_SHIFT of those chains and takes 1.5 of them each, six items
 * of its seven slots, before the table doubles: so the level reported, the
 * level asked for and the item counts at which the table grows are all
 * memcached's (2^16 chains, 2^14 buckets, grown at 98,305 items). */
#define INDEX_LEVEL_SHIFT 2
#define INDEX_GROW_LOAD 6

/* A table of memcached's level `level` (2^(level - 2) buckets). */
int index_init(struct index *ix, unsigned level, index_rehash_fn rehash, void *arg);
void index_release(struct index *ix);
size_t index_bytes(struct index *ix);
/* memcached's hash power of the current table. */
unsigned index_level(struct index *ix);
/* The level the table reaches by growth as it takes `items` items (from
 * `level`): what a restore sizes the table at before inserting them. */
unsigned index_level_for(unsigned level, uint64_t items);
bool index_expanding(struct index *ix);

static inline uint32_t index_tag(uint64_t h)
{
    uint32_t t = (uint32_t)(h >> 53);
    return t ? t : 1;
}
/* Lock and return the primary bucket that holds hash h now (growth may
 * have moved it since a previous look). */
uint64_t *index_lock_hash(struct index *ix, uint64_t h);
/* Start loading the bucket of hash h (a pipelined read looks up many:
 * issuing the loads ahead hides their latency). Returns that bucket, unlocked: a hint to read, never to trust. */
const uint64_t *index_prefetch(struct index *ix, uint64_t h);
void index_lock(uint64_t *bucket);
void index_unlock(uint64_t *bucket);
/* The bucket chained after b, or NULL (bucket lock held). */
uint64_t *index_next(struct index *ix, uint64_t *b);
/* An empty slot in the chain of primary bucket b, chaining a new overflow
 * bucket when all are full; NULL when out of memory. The caller fills it. */
uint64_t *index_free_slot(struct index *ix, uint64_t *b);
/* With no bucket lock held: grow the table when it is loaded, and move a
 * few buckets of a growth in progress (every insert pays a little). */
void index_maintain(struct index *ix);
/* Finish any growth in progress (before a walk). */
void index_finish_growth(struct index *ix);
/* Lock bucket i of the current table for a walk; NULL past the end. The
 * walk position is in buckets of the table whose size *nbuckets reports. */
uint64_t *index_lock_nth(struct index *ix, uint64_t i, uint64_t *nbuckets);
/* Empty a slot and drop overflow buckets left empty. */
void index_clear_slot(struct index *ix, uint64_t *b, uint64_t *slot);

/* Bulk loading, for a restore before any other thread uses the index: a
 * caller owns the buckets it touches and takes no bucket lock. */
/* An empty index takes a new table of `level`; the old one is the
 * caller's (its memory may hold anything), to give back with
 * index_table_release. NULL when out of memory or not empty. */
struct index_table *index_swap_table(struct index *ix, unsigned level);
void index_table_release(struct index_table *t);
/* Empty every bucket of an index that holds no item (its memory held
 * something else). */
void index_wipe(struct index *ix);
/* log2 of the current table's bucket count. */
unsigned index_bucket_bits(struct index *ix);
/* The primary bucket of hash h in the current table (no lock, no growth). */
uint64_t *index_bucket_of(struct index *ix, uint64_t h);
/* Chain an empty overflow bucket after `last`; NULL when out of memory. */
uint64_t *index_chain_grow(struct index *ix, uint64_t *last);
/* n slots were filled by hand. */
void index_count(struct index *ix, uint64_t n);

/* ---- segments (seg.c) -------------------------------------------------- */

enum seg_state { SEG_UNUSED, SEG_FREE, SEG_OPEN, SEG_SEALED, SEG_COMPACTING, SEG_DRAINING };

#define STORE_TTL_GROUPS 8
/* With -o temporary_ttl, items that expire within it (memcached's TEMP LRU)
 * get segments of their own, which eviction takes only as a last resort. */
#define STORE_GROUP_TEMP STORE_TTL_GROUPS
#define STORE_GROUPS (STORE_TTL_GROUPS + 1)
#define SEG_CHUNK 1024u
#define SEG_Q_MAIN 0
#define SEG_Q_SMALL 1
#define SEG_Q_TEMP 2
#define SEG_EXP_NEVER UINT32_MAX

/* An item's memcached size class and memcached size (store_item_class). */
struct store_cls_of {
    uint8_t cls;
    uint32_t mc_size;
};
struct store;
struct store_cls_of store_item_class(const struct store *s, const char *p, const struct item_hdr *h);

struct seg {
    char *data;                   /* seg_size bytes, NULL while SEG_UNUSED */
    uint32_t id;
    uint32_t write_off;           /* bytes used: written by the owner only */
    uint32_t refcount;    /* pins and pending reservations */
    uint32_t gen;         /* bumped when eviction of it starts */
    uint32_t live_items;
    uint64_t live_bytes;
    uint32_t max_exptime; /* latest expiry of its items, SEG_EXP_NEVER */
    uint32_t min_exptime; /* earliest expiry of its items that expire, or SEG_EXP_NEVER */
    uint64_t max_cas;
    uint64_t cas_base;
    rel_time_t created;
    /* Live items per memcached size class and their memcached sizes (stats
     * items/slabs). Updated where live_items is, on write, unlink and
     * eviction only: a read touches neither. Signed: see seg_counts. */
    int32_t cls_items[STORE_CLASSES];
    int32_t cls_bytes[STORE_CLASSES];
    uint8_t state;                /* enum seg_state: set under the pool lock, read atomically */
    uint8_t group;
    uint8_t queue;                /* SEG_Q_SMALL, SEG_Q_MAIN or SEG_Q_TEMP while sealed */
    struct seg *prev, *next;      /* in free / fifo / draining lists */
};

struct seg_list {
    struct seg *head, *tail;
    uint32_t n;
};

/* Per-ctx event counters (STORE_COUNTERS, store.h): single writer (the
 * ctx's thread), read by stats. */
struct store_ctx_counters {
#define STORE_CTX_FIELD(n) uint64_t n;
    STORE_COUNTERS(STORE_CTX_FIELD)
#undef STORE_CTX_FIELD
};

#define CTR_ADD(ctx, f, n)                                                     \
    __atomic_store_n(&(ctx)->cnt.f, __atomic_load_n(&(ctx)->cnt.f, __ATOMIC_RELAXED) + (n), \
                     __ATOMIC_RELAXED)
#define CTR_INC(ctx, f) CTR_ADD(ctx, f, 1)
/* The same single-writer update on a struct store_cls_ctr. */
#define CLS_SET(c, f, v) __atomic_store_n(&(c)->f, (v), __ATOMIC_RELAXED)
#define CLS_INC(c, f) CLS_SET(c, f, __atomic_load_n(&(c)->f, __ATOMIC_RELAXED) + 1)

/* Per-class event counters of one ctx (single writer, like cnt). */
struct store_cls_ctr {
    uint64_t evicted, evicted_nonzero, evicted_unfetched, reclaimed, expired_unfetched;
    uint32_t evicted_time; /* age of the last item this ctx evicted from the class */
};

struct store_ctx {
    struct store *store;
    struct seg *open[STORE_GROUPS];     /* this worker's open segments */
    uint8_t last_group;                 /* guess for store_reserve */
    struct store_ctx_counters cnt;
    struct store_cls_ctr cls[STORE_CLASSES];
    struct store_ctx *prev, *next;      /* store->ctxs, under ctx_lock */
};

struct store {
    struct store_options opt;
    size_t seg_size;
    unsigned off_shift;       /* item offsets are stored >> off_shift */
    struct index index;

    pthread_mutex_t pool_lock; /* segment lists, allocation, eviction */
    struct seg **seg_chunks;   /* SEG_CHUNK headers each, see seg_grow_cap */
    uint32_t seg_cap;          /* ids 0..seg_cap-1 have headers (pool lock) */
    uint32_t seg_limit;        /* segments -m allows */
    uint32_t seg_alloc;        /* segments holding memory */
    struct seg_list unused, free, fifo, small, draining; /* fifo: the main queue */
    struct seg_list temp;      /* sealed segments of the temporary_ttl group */
    struct seg *mopen;         /* main open segment: where kept items go (pool lock) */
    uint32_t open_segs; /* workers' open segments, all groups */
    uint32_t open_max;          /* budget for them: an eighth of -m */
    size_t mem_limit;

    uint64_t cas_next;     /* last CAS handed out */
    uint32_t oldest_live;  /* flush_all, memcached's settings.oldest_live */
    uint64_t oldest_cas;

    pthread_mutex_t ctx_lock;
    struct store_ctx *ctxs;
    struct store_ctx_counters gone; /* counters of destroyed ctxs */
    struct store_cls_ctr gone_cls[STORE_CLASSES];
    struct store_ctx *house;        /* the housekeeper's own ctx */
    uint64_t crawl_cursor;          /* next bucket for store_crawl (housekeeper) */

    pthread_t house_thread;
    bool house_running;
    pthread_mutex_t house_lock;
    pthread_cond_t house_cond;
    bool house_stop;
    bool house_kick;                /* run a pass now (an immediate flush_all) */

    int64_t temp_ttl;          /* temporary_ttl, -1 = off (store_set_temporary_ttl) */
    uint64_t upload_bytes;     /* staged by incomplete uploads (store_upload.c) */
    uint64_t upload_limit;     /* bound on the large ones */
    pthread_mutex_t upload_lock;
    struct { struct store_upload *head, *tail; } uploads; /* oldest first */
    uint64_t upload_live;      /* large ones not cut off (upload_lock) */
    uint64_t upload_held;      /* large ones still allocated (upload_lock) */

    struct persist *pm;        /* the -e memory file, or NULL (persist.h) */

    uint32_t *ghost;           /* see store_ghost_add */
    uint64_t ghost_mask;
    uint32_t class_size[STORE_CLASSES]; /* memcached's class sizes (store_init_classes) */
    unsigned nclasses;
};

static inline struct seg *seg_of(struct store *s, uint32_t id)
{
    return &s->seg_chunks[id / SEG_CHUNK][id % SEG_CHUNK];
}
static inline char *seg_item(struct store *s, uint64_t slot)
{
    return seg_of(s, slot_seg(slot))->data + ((size_t)slot_off(slot) << s->off_shift);
}

int seg_pool_init(struct store *s);
void seg_pool_release(struct store *s);
/* A fresh, empty open segment for ctx in TTL group g, evicting when needed;
 * NULL when no room can be made. Seals the ctx's previous open segment of g. */
struct seg *seg_open(struct store_ctx *ctx, unsigned g);
/* Give a ctx's open segment back (ctx destroy). */
void seg_close(struct store_ctx *ctx, struct seg *seg);
void seg_unpin(struct seg *seg);
/* Take a pin on the segment of an item found under its bucket lock; false
 * while eviction is compacting it: unlock, seg_wait_compacted, look again. */
bool seg_try_pin(struct seg *seg);
void seg_wait_compacted(struct seg *seg);
/* cls and mc_size: the item's memcached size class and size (store_item_class). */
void seg_note_item(struct seg *seg, uint32_t size, rel_time_t exptime, uint64_t cas,
                   const struct store_cls_of *c);
void seg_note_gone(struct seg *seg, uint32_t size, const struct store_cls_of *c);
/* Per-class live counts and pages, summed over segments (pool lock). */
void seg_class_counts(struct store *s, struct store_class_stats *out, unsigned n, rel_time_t now);
void seg_note_exptime(struct seg *seg, rel_time_t exptime);
void seg_note_cas(struct seg *seg, uint64_t cas);
/* Segment-side stats: curr_items, bytes, seg_*, dead_bytes; adds the
 * segment table to hash_bytes. */
void seg_counts(struct store *s, struct store_stats *out);
/* True when some open or sealed segment may hold an item expired at `now`
 * (the housekeeper crawls the index only then). */
bool seg_any_expiring(struct store *s, rel_time_t now);
/* Housekeeping pass: reclaim segments whose items all expired or were
 * flushed. Returns segments reclaimed. */
unsigned seg_reclaim_expired(struct store_ctx *ctx);
int seg_set_limit(struct store *s, size_t bytes);

/* ---- shared helpers (store.c) ------------------------------------------ */

/* Expired or flushed, by memcached's rules; counts nothing. */
enum item_life { ITEM_LIVE, ITEM_EXPIRED, ITEM_FLUSHED };
enum item_life store_item_life(struct store *s, const char *p, const struct item_hdr *h,
                               uint64_t cas_base, rel_time_t now);
uint64_t store_next_cas(struct store *s);
/* The TTL group for an item of this expiry (STORE_GROUP_TEMP included). */
unsigned store_ttl_group(struct store *s, rel_time_t exptime, rel_time_t now);
uint8_t store_class_id(const struct store *s, size_t mc_size);
/* Adds from's counters to into's (evicted_time: the larger). */
void store_cls_fold(struct store_cls_ctr *into, const struct store_cls_ctr *from);

/* ---- lookups (store_lookup.c) ------------------------------------------ */

/* A key and its hash, computed once per operation. */
struct store_key {
    const char *key;
    size_t nkey;
    uint64_t hv;
    uint32_t tag; /* index_tag(hv) */
};
struct store_key store_key_of(const char *key, size_t nkey);

struct store_found {
    uint64_t *bucket;   /* the key's primary bucket, locked */
    uint64_t *slot;     /* the rest is set only when the item was found */
    char *p;            /* the item */
    struct seg *seg;
    struct item_hdr h;
    rel_time_t now;     /* the time its life was judged by */
};

enum store_look {
    STORE_LOOK_FIND, /* under the bucket lock only */
    STORE_LOOK_PIN,  /* and pin the item's segment, to read it after unlocking */
};

/* The one lookup every operation makes: lock the key's bucket (wherever a
 * growth of the index has put it) and find the key's live item, unlinking
 * it if it has expired or been flushed (counted as get_expired /
 * get_flushed). With STORE_LOOK_PIN the item's segment is pinned too; while
 * eviction is compacting that segment the lookup waits and looks again, so
 * a pin that is taken never lets the item move.
 * Returns true when found (f filled; pinned with STORE_LOOK_PIN), false on
 * a miss (f->bucket and f->now only: a caller may link a new item into the
 * bucket). Either way f->bucket is locked on return: the caller releases it
 * (index_unlock) and, after a pinned find, the pin (seg_unpin(f->seg)). */
bool store_lookup(struct store_ctx *ctx, const struct store_key *k, enum store_look how,
                  struct store_found *f);
/* Unlink a found item (bucket lock held). */
void store_unlink(struct store *s, struct store_found *f);
/* Reserve raw space for an item with this layout in TTL group g. */
enum store_status store_reserve_raw(struct store_ctx *ctx, const char *key, size_t nkey,
                                    size_t nvalue, uint8_t layout, unsigned g,
                                    struct store_reservation *res);
/* Copy a linked item to a new place with at least `layout` fields (so a
 * touch or CAS change fits), keeping everything else. */
enum store_status store_widen(struct store_ctx *ctx, const struct store_key *k, uint8_t layout);
/* Link reservation res (filled, header fields set) in place of f->slot or
 * in a free slot; false when the index is out of memory. Bucket lock held. */
bool store_link(struct store *s, struct store_found *f, bool have_old,
                struct store_reservation *res, uint32_t tag, uint64_t hv);
/* Remember a key that left the small queue unread (the ghost queue). */
void store_ghost_add(struct store *s, uint64_t hv);
/* The layout bits item fields need beyond what `have` has; 0 if it fits. */
uint8_t store_missing_layout(uint8_t have, uint32_t flags, rel_time_t exptime, bool cas_on,
                             uint64_t cas, uint64_t cas_base);

/* ---- writes (store_write.c) -------------------------------------------- */

/* Commit for set/add/replace/cas (not append/prepend). `status` bits are
 * given to the new item; with expect_slot non-zero the commit happens only
 * if that exact item is still the key's (else STORE_EXISTS). Consumes res. */
enum store_status store_commit_ex(struct store_ctx *ctx, struct store_reservation *res,
                                  const struct store_set_req *req, uint32_t status,
                                  uint64_t expect_slot, uint64_t *cas_out);
void store_housekeep(struct store *s);
/* Unlink expired and flushed items from up to max buckets of the index,
 * reading only items whose segment may hold some (housekeeper). */
size_t store_crawl(struct store_ctx *ctx, uint64_t max);
/* memcached's item size check for -I and the key length (store_write.c). */
enum store_status store_check_size(struct store *s, size_t nkey, size_t nvalue, uint32_t flags);

/* ---- uploads (store_upload.c) ------------------------------------------ */

struct store_upload;
void store_upload_init(struct store *s);
void store_upload_release(struct store *s);
/* The default bound on large incomplete uploads for this -m and -I. */
uint64_t store_upload_default_limit(size_t mem_limit, size_t item_size_max);
/* Move a staged upload's value into segment memory (a plain reservation),
 * freeing the stage; on failure the reservation is consumed, and with
 * delete_on_fail the key's old value is deleted (memcached's rule for a
 * `set` that cannot be stored, which the protocols apply when the
 * reservation fails up front). */
enum store_status store_upload_place(struct store_ctx *ctx, struct store_reservation *res,
                                     bool delete_on_fail);
/* Free a staged upload's memory. */
void store_upload_free(struct store_ctx *ctx, struct store_reservation *res);

#endif
