/* SPDX-License-Identifier: BSD-3-Clause */
/* The -e memory file: segment memory in a shared mapping of a file, laid
 * out so that a restart — after a graceful stop or a kill -9 — can rebuild
 * the index from it (restore.c). docs/store.md "Restarts" has the design and
 * the rules every write follows; this header is the file's format and the
 * hooks the store calls. Shared by the store's files only.
 *
 * File: [header page][segment table][journal][pad][segment data ...]
 *       [the flash tier's record, with ext_path (flash/flash_keep.h)]
 */
#ifndef NODELAY_PERSIST_H
#define NODELAY_PERSIST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "store/store.h"
#include "store/store_compat.h"

struct index;
struct seg;
struct store_life;

#define PM_MAGIC "NDLYMEM"  /* 8 bytes with its NUL */
#define PM_VERSION 4        /* bump when the file or item layout changes */
#define PM_ENDIAN 0x0102030405060708ull
#define PM_JOURNAL_SLOTS 1024u
#define PM_DATA_ALIGN ((size_t)2 << 20)  /* segment data on a huge-page boundary */

enum pm_state { PM_EMPTY = 0, PM_RUNNING = 1, PM_CLEAN = 2 };

/* Bounds on the run state past which a file is damaged (persist_run_check;
 * docs/store.md "Restarts"). No CAS the counter hands out reaches
 * PM_CAS_MAX: 2^62 at a billion writes a second is 146 years. */
#define PM_CAS_MAX ((uint64_t)1 << 62)
/* The CAS ceiling moves in steps this large: one header write per step. */
#define PM_CAS_STEP ((uint64_t)1 << 20)
/* The restored clock at most: half of the 29 bits an item's access time
 * keeps (8.5 years), so the clock can run as long again. */
#define PM_REL_MAX ((uint32_t)1 << 28)
/* The wall clock may have been stepped back this far (seconds) between the
 * last heartbeat and the restart; further, one of the two is wrong. */
#define PM_CLOCK_BACK_MAX 3600

/* The first page. Fields up to `state` are the settings that must match,
 * written once when the file is laid out and covered by hdr_sum; the rest
 * is run state. */
struct pm_hdr {
    char magic[8];
    uint32_t version;
    uint32_t abi;           /* sizes of the structs below and of a pointer */
    uint64_t endian;
    uint64_t mem_limit;     /* -m, bytes */
    uint64_t item_size_max; /* -I */
    uint64_t seg_size;
    uint64_t nsegs;
    uint64_t data_off;      /* where segment 0 starts */
    uint32_t cas_enabled;   /* !-C */
    uint32_t journal_slots;
    uint64_t hdr_sum;       /* XXH3 of the bytes above */

    uint32_t state;         /* enum pm_state */
    uint32_t hb_rel;        /* heartbeat: the server clock (rel_time_t) ... */
    int64_t hb_unix;        /* ... and unix time when it was written */
    int64_t epoch;          /* unix time of rel_time_t 0 (clock_epoch) */
    uint64_t cas_ceiling;   /* no CAS at or above this was handed out */
    uint64_t oldest_cas;    /* flush_all state (store.oldest_*) */
    uint32_t oldest_live;
    /* log2 of the items' alignment in a segment (the store's off_shift,
     * written when the file is laid out): 0 in every file whose index
     * offsets addressed 128 MiB segments in bytes, 1 in a 128 MiB one
     * now. A file of another alignment cannot be walked. */
    uint32_t off_shift;
    uint64_t items;         /* live items at the last heartbeat: index size hint */
    uint64_t seq_next;      /* next segment sequence */
    uint32_t index_level;   /* the index's size at the last heartbeat (hash_power_level) */
    uint32_t pad2;
    uint64_t stop_sum;      /* PM_CLEAN: XXH3 of the run state above and the table */
};

/* The flush_all state again, in two copies each with its checksum, in the
 * header page after struct pm_hdr (persist_flush): a copy that one damaged
 * bit, or a kill in the middle of writing it, leaves failing its checksum
 * gives way to the other. A file without them (all zero: written before
 * they were) has only the header's fields. */
#define PM_FLUSH_OFF 2048
struct pm_flush {
    uint64_t oldest_cas;
    uint32_t oldest_live;
    uint32_t pad;
    uint64_t sum; /* XXH3 of the fields above */
};
_Static_assert(sizeof(struct pm_hdr) <= PM_FLUSH_OFF, "the flush copies follow the header");

/* What a restore resumes with (persist_run_check). */
struct pm_resume {
    uint32_t rel;         /* the clock */
    uint32_t oldest_live; /* the flush_all state */
    uint64_t oldest_cas;
};

#define PM_SEG_COMPACTING 1u

/* One segment's persistent header, 64 bytes. A segment holds items only
 * while seq != 0; the restore scan reads [0, write_off), or, while it is
 * being compacted in place, [0, compact_w) and [compact_off, write_off). */
struct pm_seg {
    uint64_t seq;        /* when it was opened; 0 = holds nothing */
    uint64_t cas_base;
    union { /* pairs that change together are one 8-byte store (pm_store_pair) */
        struct {
            uint32_t write_off;
            uint32_t flags; /* PM_SEG_COMPACTING */
        };
        uint64_t end_pair;
    };
    union {
        struct {
            uint32_t compact_w;   /* compacted bytes at the front */
            uint32_t compact_off; /* first byte not yet walked by the compaction */
        };
        uint64_t compact_pair;
    };
    uint64_t sum;        /* PM_CLEAN: XXH3 of data[0, write_off) */
    uint8_t group;
    uint8_t pad[3];
    uint32_t tbase;      /* its items' access-time clock (struct seg) */
    uint8_t pad2[16];
};
_Static_assert(sizeof(struct pm_seg) == 64 && offsetof(struct pm_seg, end_pair) % 8 == 0 &&
                   offsetof(struct pm_seg, compact_pair) % 8 == 0,
               "a segment's pairs are aligned words");

/* An overwrite in progress (store_link): old and new item, each as
 * (segment id + 1) << 32 | byte offset. A restore finishes it: the old one
 * is dead if the new one was committed. */
struct pm_journal {
    uint64_t old_loc, new_loc;
};

/* How the store started: store.h's enum store_restore_mode. */
#define PM_START_COLD STORE_RESTORE_NONE
#define PM_START_NEW STORE_RESTORE_NEW
#define PM_START_CLEAN STORE_RESTORE_GRACEFUL
#define PM_START_CRASH STORE_RESTORE_CRASH
#define PM_START_DISCARDED STORE_RESTORE_DISCARDED

/* The settings a file must have been laid out with to be restored
 * (persist_open): -m, -I, -C and the segments they make. */
struct pm_settings {
    uint64_t mem_limit;
    uint64_t item_size_max;
    size_t seg_size;
    uint32_t nsegs;
    bool cas_enabled;
    unsigned off_shift; /* the items' alignment in a segment, log2 */
    /* bytes after the segment data for the flash tier's record (0: none);
     * not checked here (the record checks itself): a file of another
     * length is cut or zero-extended to it */
    size_t flash_len;
};

struct persist {
    int fd;
    char *map;
    size_t map_len;
    struct pm_hdr *hdr;
    struct pm_flush *flush;  /* [2], in the header page */
    struct pm_seg *segs;
    struct pm_journal *journal;
    char *data;
    char *flash_mem;         /* the flash tier's record (flash_len bytes), or NULL */
    size_t flash_len;
    uint32_t nsegs;
    size_t seg_size;
    /* What a heartbeat and a clean stop record, read from the parts below
     * it: the store sets these once the file is open. */
    struct index *index;
    const struct store_life *life;
    const uint64_t *cas_next; /* atomic */
    pthread_mutex_t jlock;   /* slot 0, for threads beyond the journal */
    pthread_mutex_t flush_lock; /* one flush_all writes its state at a time */
    uint32_t jnext;          /* next journal slot to hand out (atomic) */
    enum store_restore_mode start; /* what the header said at open */
    struct pm_resume resume; /* what to resume with (persist_run_check) */
    /* restore results (stats nodelay) */
    uint64_t restored_items;
    uint64_t discarded_expired;   /* expired or flushed while down */
    uint64_t discarded_corrupt;   /* checksum or header damage */
    uint64_t restore_us;
    uint64_t restore_cpu_us;
};

static inline struct pm_seg *pm_seg(struct persist *pm, uint32_t id)
{
    return &pm->segs[id];
}
static inline char *pm_seg_data(struct persist *pm, size_t seg_size, uint32_t id)
{
    return pm->data + (size_t)id * seg_size;
}
static inline uint64_t pm_loc(uint32_t seg, uint32_t off)
{
    return ((uint64_t)seg + 1) << 32 | off;
}
static inline void pm_store32(uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline void pm_store64(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
/* Two adjacent 32-bit fields (first, second) in one release store: a kill
 * leaves both old or both new. */
static inline void pm_store_pair(uint64_t *pair, uint32_t first, uint32_t second)
{
    union {
        uint32_t f[2];
        uint64_t w;
    } u = {{first, second}};
    pm_store64(pair, u.w);
}

/* Open or lay out the file for settings s: checks the header and decides
 * how to start (pm->start); a file that cannot be used is discarded with a
 * log line. -1 only when the file cannot be opened or mapped at all (the
 * caller stops start-up). */
int persist_open(const struct pm_settings *s, const char *path, struct persist **out);
/* Why the header page's run state (clock, CAS ceiling, flush state; h,
 * with the flush copies at PM_FLUSH_OFF) cannot be right at unix time now,
 * or NULL; *out: what to resume with. */
const char *persist_run_check(const struct pm_hdr *h, int64_t now, struct pm_resume *out);
/* A flush copy's checksum. */
uint64_t persist_flush_sum(const struct pm_flush *f);
/* Graceful stop: record the state and a checksum of every segment, mark
 * the file clean; then unmap and close. */
void persist_close(struct persist *pm, bool clean);
/* The graceful stop's checksum of the header's run state and the table. */
uint64_t persist_stop_sum(struct persist *pm);
/* Once a second (housekeeper): clock, item count, CAS ceiling. */
void persist_heartbeat(struct persist *pm);
/* Make the CAS ceiling cover cas (store_next_cas, when it reaches it). */
void persist_cas(struct persist *pm, uint64_t cas);
/* flush_all state, before store_flush publishes it. */
void persist_flush(struct persist *pm, rel_time_t oldest_live, uint64_t oldest_cas);
/* A segment is (re)opened: empty, new sequence (pool lock). */
void persist_seg_open(struct persist *pm, struct seg *seg);
/* A segment holds nothing any more (pool lock). */
void persist_seg_free(struct persist *pm, struct seg *seg);
/* Overwrite journal around store_link: begin before the new item is
 * committed, end after the old one is marked dead. */
struct pm_journal *persist_journal_begin(struct persist *pm, uint64_t old_loc, uint64_t new_loc);
void persist_journal_end(struct persist *pm, struct pm_journal *j);

#endif
