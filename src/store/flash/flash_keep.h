/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier's record in the -e file (flash_keep.c): what a restart
 * needs to link flash items again after a graceful stop or a kill -9, in a
 * range of the shared mapping that, as RAM segments do, outlives the
 * process. Plain memory: no device, no index; docs/store-flash.md
 * "Restarts".
 *
 *   header (4096 bytes) | table: one fk_seg per flash segment |
 *   bitmaps: per flash segment, one bit per FLASH_KEEP_UNIT bytes
 *
 * A segment's entry is DISK only once its bytes are on the device; its bit
 * for an item is set before the item's slot is made reachable and cleared
 * before any drop of that slot (delete, overwrite, recache, compaction,
 * index growth) is acknowledged: "dead before gone", as W3 for RAM items.
 * A restore links an item only from a DISK segment, with its bit set, and
 * whose checksum (seeded with the segment's sequence and instance) holds. */
#ifndef NODELAY_STORE_FLASH_KEEP_H
#define NODELAY_STORE_FLASH_KEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FLASH_KEEP_MAGIC "NDFKEEP" /* 8 bytes with its NUL */
#define FLASH_KEEP_VERSION 1
/* Bytes of a flash segment per liveness bit: no two items start in one
 * unit, so items smaller than this stay off flash while it is kept. */
#define FLASH_KEEP_UNIT 64u
#define FLASH_KEEP_HDR 4096u

/* Entry states: far apart in bits, so one damaged bit never makes an
 * entry DISK. */
#define FK_FREE 0u
#define FK_FILLING 0x4c4c4946u /* "FILL": a writer's buffer, not on disk */
#define FK_DISK 0x4b534944u    /* "DISK" */

#define FK_RUNNING 1u
#define FK_CLEAN 2u

struct fk_hdr {
    char magic[8];
    uint32_t version;
    uint32_t unit;
    uint32_t nsegs;
    uint32_t seg_size;
    uint64_t shape;   /* the caller's hash of the device: files, sizes, page size */
    uint64_t hdr_sum; /* XXH3 of the fields above */
    /* run state */
    uint64_t instance; /* the flash segments' instance id; 0: none yet */
    uint64_t seq_next; /* no segment's sequence is at or above this */
    uint32_t state;    /* FK_RUNNING, FK_CLEAN */
    uint32_t pad;
    uint64_t clean_sum; /* FK_CLEAN: XXH3 of the run state above, table and bitmaps */
};

/* One flash segment (the device's place n), 48 bytes. */
struct fk_seg {
    uint64_t seq;
    uint64_t cas_base;
    uint32_t nbytes; /* header and items, once DISK */
    uint32_t max_exptime;
    uint32_t nitems;
    uint32_t bucket; /* the writer it came from */
    uint64_t sum;    /* DISK: XXH3 of the fields above */
    uint32_t state;  /* FK_FREE, FK_FILLING, FK_DISK: written last */
    uint32_t pad;
};

_Static_assert(sizeof(struct fk_seg) == 48, "a table entry is 48 bytes");

struct flash_keep {
    struct fk_hdr *hdr;
    struct fk_seg *segs;
    uint64_t *bits; /* words per segment each */
    uint32_t words;
    uint32_t nsegs, seg_size;
};

/* Bytes of the range for a device of nsegs segments of seg_size. */
size_t flash_keep_len(uint32_t nsegs, uint32_t seg_size);

/* What flash_keep_attach found. */
enum fk_attach {
    FK_NEW,       /* nothing was kept (a zero range): laid out */
    FK_KEPT,      /* restorable */
    FK_DISCARDED, /* something was there that cannot be used (*why): laid out afresh */
};
/* Use the range [mem, mem + len) (flash_keep_len bytes, zero when new) for
 * a device of this shape. after_clean: the -e file says the last stop was
 * graceful, so the range must have been closed clean too (its checksum
 * holding); after a crash each DISK entry is checked alone. On FK_KEPT the
 * state is set to running at once (a kill during the restore is a crash). */
enum fk_attach flash_keep_attach(struct flash_keep *k, void *mem, size_t len, uint32_t nsegs,
                                 uint32_t seg_size, uint64_t shape, bool after_clean,
                                 const char **why);
/* Segment n's entry if it holds a whole written segment; its sequence
 * under seq_next and its checksum holding. */
bool flash_keep_get(const struct flash_keep *k, uint32_t n, struct fk_seg *out);

/* The tier's hooks (its lock held). A writer opens segment n: bits
 * cleared, then the entry, then FK_FILLING; seq_next covers seq first. */
void flash_keep_open(struct flash_keep *k, uint32_t n, uint64_t seq, uint64_t cas_base,
                     uint32_t bucket);
/* Segment n is on the device: the entry whole, then FK_DISK. */
void flash_keep_disk(struct flash_keep *k, uint32_t n, uint32_t nbytes, uint32_t nitems,
                     uint32_t max_exptime);
/* Segment n holds nothing any more: FK_FREE, then its bits cleared. */
void flash_keep_free(struct flash_keep *k, uint32_t n);
/* An item at byte off of segment n is reachable / is gone. */
void flash_keep_set(struct flash_keep *k, uint32_t n, uint32_t off);
void flash_keep_clear(struct flash_keep *k, uint32_t n, uint32_t off);
bool flash_keep_test(const struct flash_keep *k, uint32_t n, uint32_t off);
/* The bit for off in a copy of a segment's bits (flash_keep_take_bits). */
bool flash_keep_bit(const uint64_t *bits, uint32_t words, uint32_t off);
/* A restore: copy segment n's bits into out (k->words words) and clear
 * them; the items it links get theirs again (set before linked), so an
 * item it does not link (damaged, superseded, expired) has none. */
void flash_keep_take_bits(struct flash_keep *k, uint32_t n, uint64_t *out);
/* Whether a copy of a segment's bits has any set. */
bool flash_keep_any_in(const uint64_t *bits, uint32_t words);
/* A graceful stop (every segment written, the tier stopped): the
 * checksum, then FK_CLEAN. */
void flash_keep_close_clean(struct flash_keep *k);

#endif
