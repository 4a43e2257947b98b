/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier's state (flash_tier.c): the device, one record per flash
 * segment, the writers that items leaving RAM are copied into, the thread
 * that writes full writers out, and the compactor. Knows the index (it
 * switches and clears flash slots under their bucket locks) and the flash
 * layout; nothing of RAM segments or of sessions; docs/store-flash.md.
 *
 * A flash segment is ext_wbuf_size bytes (flash_layout.h's format), a page
 * (ext_page_size) holds several, and an index slot names it by
 * FLASH_SEG_BASE plus a virtual id (flash_slot_vid, below): slot_is_flash
 * tells the two kinds apart. The id's record says where it is and which
 * write is there now (the sequence whose seed every item's sum carries),
 * so a slot left naming a dropped or rewritten segment reads as a miss. */
#ifndef NODELAY_STORE_FLASH_TIER_H
#define NODELAY_STORE_FLASH_TIER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/flash_tuning.h"
#include "store/flash/flash_dev.h"
#include "store/flash/flash_keep.h"
#include "store/flash/flash_layout.h"
#include "store/store_classes.h"
#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_life.h"

struct flash_tier_options {
    struct flash_dev_options dev;   /* files, page size, read threads */
    uint32_t seg_size;              /* ext_wbuf_size: one flash segment */
    uint32_t item_size;             /* ext_item_size: smallest value (+2) moved */
    uint32_t item_age;              /* ext_item_age: idle seconds first */
    uint32_t low_ttl;               /* ext_low_ttl: shorter TTLs get their own segments */
    uint32_t recache_rate;          /* ext_recache_rate: 0 = never */
    uint32_t compact_under;         /* ext_compact_under: free pages; 0 = 1 % */
    uint32_t drop_under;            /* ext_drop_under: free pages; 0 = as compact_under */
    double max_frag;                /* ext_max_frag */
    bool drop_unread;               /* ext_drop_unread */
    uint32_t max_sleep;             /* ext_max_sleep, us: longest idle pause */
    struct flash_tuning_src tuning; /* the run-time values of the above, if read */
    /* -e: the tier's record in the memory file (flash_keep.h), attached
     * already, or NULL. Its instance id and sequence continue. */
    struct flash_keep *keep;
    /* memcached's size classes, to count items by the class of the RAM
     * header memcached keeps for them (flash_tier_class_counts); NULL: not
     * counted. */
    const struct store_classes *classes;
};

enum flash_seg_state {
    FSEG_FREE,    /* nothing there a slot may name */
    FSEG_FILLING, /* a writer's buffer, items still going in */
    FSEG_WRITING, /* full, queued for the writer thread; bytes still in RAM */
    FSEG_DISK,    /* written: reads go to the device */
};

/* One flash segment: what RAM keeps of it (its items' RAM is their slots). */
struct flash_rec {
    uint32_t vid;      /* its id in slots now (less FLASH_SEG_BASE) */
    uint32_t max_item; /* its largest item's bytes (restored: linked item's) */
    uint64_t seq;      /* the write there now; its items' seed */
    uint64_t cas_base;
    uint32_t max_exptime; /* REL_TIME_NEVER: some item never expires */
    uint32_t nitems;      /* items written */
    uint32_t live_items;  /* of them, whose slots still name it */
    uint32_t nbytes;      /* header and items written */
    uint32_t reads;       /* items read back since written (ext_drop_unread) */
    uint32_t moved;       /* value bytes of its items moved from RAM (not rewrites) */
    uint8_t state;        /* enum flash_seg_state */
    uint8_t bucket;       /* writer it came from: 0 normal, 1 low TTL, 2 compaction */
    char *buf;            /* FILLING / WRITING: its bytes */
    uint32_t qnext;       /* write queue link (+1; 0 = none) */
};

#define FLASH_WRITERS 3
#define FLASH_W_NORMAL 0
#define FLASH_W_LOWTTL 1
#define FLASH_W_COMPACT 2

/* The tier's counters, memcached's extstore names (docs/store-flash.md). */
#define FLASH_TIER_COUNTERS(X)                                                                     \
    X(objects_written)   /* items copied to flash */                                               \
    X(bytes_written)     /* their bytes (items, not the device's) */                               \
    X(value_bytes_moved) /* value bytes moved from RAM, once on the device */                      \
    X(objects_read)      /* items read back */                                                     \
    X(bytes_read)                                                                                  \
    X(objects_evicted) /* items lost with a dropped segment */                                     \
    X(bytes_evicted)                                                                               \
    X(page_allocs)           /* segments opened for writing */                                     \
    X(page_evictions)        /* segments dropped for room with items live */                       \
    X(page_reclaims)         /* segments freed with nothing live */                                \
    X(compact_rescues)       /* items compaction rewrote */                                        \
    X(compact_lost)          /* items it could not keep */                                         \
    X(compact_skipped)       /* items it dropped (ext_drop_unread, under drop_under) */            \
    X(write_errors)          /* segment writes that failed (items lost) */                         \
    X(read_errors)           /* reads that failed or came back short */                            \
    X(badcrc_from_extstore)  /* items read whose sum did not match */                              \
    X(get_extstore)          /* reads served from flash (recached into RAM) */                     \
    X(miss_from_extstore)    /* flash reads that found the item gone */                            \
    X(recache_from_extstore) /* items copied back into RAM */                                      \
    X(get_oom_extstore)      /* ... that found no room in RAM */                                   \
    X(get_aborted_extstore)  /* reads whose session went first */                                  \
    X(skipped_full)          /* items evicted because no writer buffer was free */                 \
    X(slots_dropped)         /* slots cleared naming a dropped segment or a bad item */            \
    X(index_dropped)         /* slots an index growth could not rehash */                          \
    X(tag_dropped)           /* live slots dropped under a written key's tag */

struct flash_tier_counters {
#define FLASH_TIER_FIELD(n) uint64_t n;
    FLASH_TIER_COUNTERS(FLASH_TIER_FIELD)
#undef FLASH_TIER_FIELD
};

#define FLASH_CNT(ft, f, n) __atomic_fetch_add(&(ft)->c.f, (uint64_t)(n), __ATOMIC_RELAXED)

/* Compaction's recent moves, in sets of FLASH_MOVE_WAYS by a hash of the
 * slot moved: a read that began before its item was moved finds the copy
 * through it (flash_tier_moved). A set keeps its newest moves; a read
 * whose move was pushed out is a counted miss. 128 KiB. */
#define FLASH_MOVES 8192u
#define FLASH_MOVE_WAYS 4u
struct flash_move {
    uint64_t from, to; /* slots as slot_id has them */
};

/* Of one flash segment, the items written whose memcached RAM header
 * (classes_ext_hdr_size) falls in one class, and those headers' bytes. */
struct flash_cls_count {
    uint32_t items, bytes;
};

struct flash_tier {
    struct flash_tier_options opt;
    struct flash_dev dev;
    struct index *index;
    const struct store_life *life;
    uint64_t instance;
    uint32_t nsegs; /* flash segments on the device */
    uint32_t segs_per_page;
    struct flash_rec *recs; /* [nsegs] */
    uint32_t *vmap;         /* [nvids]: record + 1, 0 = none */
    uint32_t nvids;
    pthread_mutex_t lock;         /* records, writers, queue, buffers */
    pthread_mutex_t compact_lock; /* one compaction at a time; before lock */
    uint64_t seq_next;
    uint32_t nfree;    /* FSEG_FREE records */
    int64_t gc_credit; /* rewrite bytes compaction may still write (flash_gc.h) */
    int32_t gc_victim; /* the segment compaction is emptying, -1 = none */
    struct flash_writer w[FLASH_WRITERS];
    int32_t w_seg[FLASH_WRITERS];   /* its segment number, -1 = none */
    char *spare[FLASH_WRITERS + 2]; /* buffers not in use */
    uint32_t nspare, nbufs;
    uint32_t ncold;          /* spare[0..ncold) have no pages (spares_release) */
    uint32_t q_head, q_tail; /* FSEG_WRITING segments to write (+1) */
    pthread_t thread;
    bool thread_on, stopping;
    pthread_cond_t cond;
    pthread_t gc_thread;          /* the compactor: its reads never hold up writes */
    bool gc_on, gc_kick;          /* gc_kick: writes went on with free pages short */
    uint64_t wrote_ns;            /* when the writer thread last wrote a segment */
    pthread_cond_t gc_cond;       /* under lock */
    struct flash_move *moves;     /* [FLASH_MOVES], under lock */
    struct flash_tier_counters c; /* atomic adds */
    /* [nsegs][cls_n], under lock: a segment's items written by header
     * class, classes cls_lo.. (flash_tier_stats.c); NULL: not counted */
    struct flash_cls_count *cls;
    uint8_t cls_lo, cls_n;
};

/* A slot names a flash segment by a virtual id (FLASH_SEG_BASE + v, under
 * the slot's place bits: SLOT_FLASH_IDS of them), v the write's sequence
 * modulo nvids: vmap[v] says which record holds that write now, 0 when
 * none. So a slot left naming a dropped segment is known stale at once,
 * without reading, until its id comes round again after nvids more
 * segment writes (64 rewrites of the whole device, fewer past
 * SLOT_FLASH_IDS / 64 segments); and even then the seed and the key make
 * it a miss. */
#define FLASH_VIDS_PER_SEG 64u
static inline uint32_t flash_slot_vid(uint64_t slot)
{
    return slot_seg(slot) & (SLOT_FLASH_IDS - 1);
}

/* A flash segment's size for a device of `pages` pages: ext_wbuf_size, or
 * where the device holds more segments of it than a slot can name
 * (SLOT_FLASH_IDS), the least multiple of it that divides ext_page_size and
 * brings them under, at most FLASH_SEG_MAX. Every device memcached takes
 * (under 65,536 pages) whose pages are at most FLASH_SEG_MAX (memcached's
 * default 64 MiB) fits at one segment a page; larger pages fit up to
 * SLOT_FLASH_IDS segments of FLASH_SEG_MAX (32 TiB), past which, or with
 * a wbuf over FLASH_SEG_MAX, the shape is refused (flash offsets are
 * bytes, not units). 0 when the shape is refused. */
static inline uint32_t flash_tier_seg_size(uint64_t page_size, uint32_t wbuf, uint64_t pages)
{
    if (!wbuf || page_size < wbuf || page_size % wbuf)
        return 0;
    for (uint64_t seg = wbuf; seg <= page_size && seg <= FLASH_SEG_MAX; seg += wbuf)
        if (page_size % seg == 0 && pages * (page_size / seg) <= SLOT_FLASH_IDS)
            return (uint32_t)seg;
    return 0;
}

/* Opens the device and starts the writer thread. 0, or -errno with *why. */
int flash_tier_open(struct flash_tier *ft, const struct flash_tier_options *opt, struct index *ix,
                    const struct store_life *life, char *why, size_t n);
/* Writes out what is queued, stops the thread, closes the device. With a
 * keep, stop comes first: it stops the writer and compactor threads,
 * writes the writers' buffers out (a graceful stop keeps them) and closes
 * the keep clean when `clean`, once nothing else can change it. */
void flash_tier_close(struct flash_tier *ft);
void flash_tier_stop(struct flash_tier *ft, bool clean);

/* A restart (persist/restore_flash.c): between begin and end no
 * compaction runs. adopt takes segment n as its keep entry e says, with
 * nitems items (false: its id is taken by a newer one); adopt_item counts
 * one item of it, len bytes at off, linked under its key's flash tag
 * ftag (index_flash_tag) and returns the slot naming it.
 * The segment's largest item is that of its linked items, the ones a
 * read may ask for, so a first read takes them whole. */
void flash_tier_restore_begin(struct flash_tier *ft);
void flash_tier_restore_end(struct flash_tier *ft);
bool flash_tier_adopt(struct flash_tier *ft, uint32_t n, const struct fk_seg *e, uint32_t nitems);
uint64_t flash_tier_adopt_item(struct flash_tier *ft, uint32_t n, uint64_t ftag,
                               const struct flash_item *fi);

/* Why an item is offered to flash (flash_tier_take). */
enum flash_take_why {
    /* Eviction would drop it: any age goes, as memcached writes items of
     * any age once a class runs short of free memory. */
    FLASH_TAKE_EVICT,
    /* The idle flush while RAM is still free: only items idle at least
     * ext_item_age seconds (never, at its UINT32_MAX default). */
    FLASH_TAKE_IDLE,
    /* A flash item lent to a request that touched it goes back: any age,
     * as memcached's touch changes only the header it keeps in RAM. */
    FLASH_TAKE_BACK,
};

/* An item leaving RAM (its bucket lock held, the slot naming it): whether
 * it qualifies (ext_item_size, not expired, and idle ext_item_age for
 * FLASH_TAKE_IDLE); if so, copied into a writer and the slot to put in its
 * place returned (ftag, its key's index_flash_tag; the flash segment and
 * offset), else 0 (then it
 * stays, or is evicted as usual). *full (may be NULL) is set when it
 * qualified but no writer buffer was free: the disk is behind. */
uint64_t flash_tier_take(struct flash_tier *ft, const char *p, const struct item_hdr *h,
                         uint64_t ram_cas_base, rel_time_t ram_tbase, uint64_t ftag, rel_time_t now,
                         enum flash_take_why why, bool *full);
/* The rules an idle flush picks items by, as `extstore` set them now:
 * the smallest value (with its "\r\n") and the idle seconds
 * (UINT32_MAX: no idle flush). */
void flash_tier_idle_rules(struct flash_tier *ft, uint32_t *item_size, uint32_t *item_age);
/* An idle pause of the tier's background work (the writer thread's wait
 * before a compaction pass, the housekeeper's before an idle flush): its
 * own pace own_ns, shortened to ext_max_sleep as `extstore` set it now
 * (memcached's longest sleep of its storage threads), but never under
 * FLASH_PAUSE_MIN_NS: at 0 memcached's threads spin. */
#define FLASH_PAUSE_MIN_NS 1000000ull
uint64_t flash_tier_pause_ns(struct flash_tier *ft, uint64_t own_ns);
/* The key's buckets in p locked (b[1] NULL: its first alone, or both
 * one bucket): clear the flash slots of flash tag ftag (a key's
 * index_flash_tag) in their chains but `keep` (a write of a key: its older
 * flash copy, or another key's that the flash tag cannot tell apart, must
 * never answer for it again). Returns how many. */
unsigned flash_tier_drop_tag(struct flash_tier *ft, const struct index_pair *p, uint64_t ftag,
                             const uint64_t *keep);
/* Bucket lock held: clear one flash slot, its segment's live count down. */
void flash_tier_clear(struct flash_tier *ft, uint64_t *b, uint64_t *slot);
/* A flash slot's segment no longer holds that item (counts it). */
void flash_tier_forget(struct flash_tier *ft, uint64_t slot);
/* Whether a flash slot names a segment dropped since (counted as a slot
 * dropped, for its caller to clear). */
bool flash_tier_stale(struct flash_tier *ft, uint64_t slot);

/* Where a flash slot's item is now. */
enum flash_where {
    FLASH_AT_NONE, /* its segment is gone: a miss */
    FLASH_AT_BUF,  /* in a writer's buffer: copied to take's memory */
    FLASH_AT_DISK, /* on the device: read page/off (*seed, *cas_base for the check) */
};
struct flash_loc {
    uint32_t page;
    uint64_t page_off; /* of the flash segment in its page */
    uint32_t seg_len;  /* bytes of the segment written (header and items) */
    uint32_t max_item; /* its largest item's bytes; 0: not known */
    uint64_t seq, seed, cas_base;
};
/* For a buffered item, copies its bytes (the item alone) into the memory
 * take(arg, len) returns, under the tier's lock: the buffer may go to the
 * device and be reused once it is dropped. take returning NULL (out of
 * memory) copies nothing. */
enum flash_where flash_tier_locate(struct flash_tier *ft, uint64_t slot, struct flash_loc *loc,
                                   char *(*take)(void *arg, uint32_t len), void *arg);
/* ext_recache_rate as `extstore` set it now (0: never recache). */
uint32_t flash_tier_recache_rate(struct flash_tier *ft);
/* A flash item served from a RAM copy goes back to flash (store_flash.c):
 * whether seq is still the write in slot's segment and compaction is not
 * emptying it; if so it counts the item live there again. */
bool flash_tier_relive(struct flash_tier *ft, uint64_t slot, uint64_t seq);
/* Whether seq is still the write in slot's segment (a read finished after
 * a drop reads as a miss). Counts a read of it. */
bool flash_tier_still(struct flash_tier *ft, uint64_t slot, uint64_t seq);

/* Where compaction put the item a flash slot named (a slot, its own
 * moves followed), or 0 when it knows of no such move. */
uint64_t flash_tier_moved(struct flash_tier *ft, uint64_t slot);

/* Whether an item read back from segment vid is live, the judgment
 * compaction and a dump share (flash_scan.c): the slot that names item fi
 * (its key's two buckets are locked in *keys, for the caller to unlock;
 * *chain: the slot's bucket), and *life, whether it expired or was
 * flushed. NULL when no slot names it: the item is dead (deleted,
 * overwritten, moved). */
uint64_t *flash_tier_item_slot(struct flash_tier *ft, uint32_t vid, const struct flash_item *fi,
                               uint64_t cas_base, struct index_pair *keys, uint64_t **chain,
                               enum item_life *life);

/* One compaction / drop pass (the writer thread runs it; tests call it):
 * segments to rewrite or drop by the ext_* rules. Returns segments freed. */
unsigned flash_tier_maintain(struct flash_tier *ft);

/* A copy of the counters, each read atomically: other threads add to
 * them while it is taken. */
void flash_tier_counters_read(const struct flash_tier *ft, struct flash_tier_counters *out);

/* Gauges for stats. */
struct flash_tier_gauges {
    uint64_t pages_free, pages_used, objects_used, bytes_used, bytes_fragmented, limit_maxbytes,
        io_queue;
};
void flash_tier_gauges(struct flash_tier *ft, struct flash_tier_gauges *g);

/* Items on flash by memcached size class, as memcached counts the header
 * item it keeps in RAM for each (its class by key length and client flags,
 * its memcached size). RAM keeps nothing per item but its slot, so a
 * segment counts its items written by header class, and its live items
 * are shared out in that proportion: exact when a segment's items share
 * one header class (with the default classes, keys up to 27 bytes and
 * flags 0 all take class 1), never off in the sum (the live items,
 * extstore_objects_used). Adds into items[k] and bytes[k] (STORE_CLASSES
 * entries). */
void flash_tier_class_counts(struct flash_tier *ft, uint64_t *items, uint64_t *bytes);
/* For flash_tier.c, under the tier's lock: the count's room (0 or
 * -ENOMEM; none without opt.classes), segment n begun, an item of it
 * written, the room freed. */
int flash_tier_cls_init(struct flash_tier *ft);
void flash_tier_cls_reset(struct flash_tier *ft, uint32_t n);
void flash_tier_cls_note(struct flash_tier *ft, uint32_t n, size_t nkey, uint32_t flags);
void flash_tier_cls_free(struct flash_tier *ft);

/* One segment's row of `stats extstore` (store_flash_page's fields). */
struct flash_tier_page {
    uint64_t version, bytes, size;
    uint32_t bucket;
};
/* Up to n rows into out; returns the segments there are. */
uint32_t flash_tier_pages(struct flash_tier *ft, struct flash_tier_page *out, uint32_t n);

#endif
