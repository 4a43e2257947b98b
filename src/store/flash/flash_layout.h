/* SPDX-License-Identifier: BSD-3-Clause */
/* The bytes of one flash segment (flash_layout.c): written once, whole and
 * aligned, read back whole (the restore scan, compaction) or one item at a
 * time (a lookup). Knows items (store_item.h) and nothing of devices, the
 * index or segments in RAM; docs/store-flash.md.
 *
 *   header (FLASH_HDR_LEN bytes) | item | item | ... | zeroes to the end
 *
 * Header, little-endian at fixed offsets:
 *   0 magic "NDFLASH\0"(8)  8 version(2)  10 header length(2)  12 item count(4)
 *   16 segment sequence(8)  24 instance id(8)  32 cas_base(8)
 *   40 bytes of items(4)  44 latest expiry(4)  48 reserved, zero(12)
 *   60 checksum of bytes 0..59(4)
 *
 * Items are the RAM format (store_item.h) with ITEM_L_SUM and ITEM_L_COMMIT
 * always set; the flash variant is only what the 4-byte sum covers: the
 * whole item (every header field, key and value) but the sum itself, seeded
 * with the segment's sequence and instance id. Per item rather than per
 * segment because a lookup reads one item's range and must check it alone;
 * the seed makes an item left from an older write of the same place (a torn
 * write, half old and half new) or from another store fail its sum. */
#ifndef NODELAY_STORE_FLASH_LAYOUT_H
#define NODELAY_STORE_FLASH_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "store/store_item.h"

#define FLASH_MAGIC "NDFLASH"       /* with its NUL: 8 bytes */
#define FLASH_VERSION 1
#define FLASH_HDR_LEN 64u
/* Item bytes start here; a segment is at least a header and one 4 KiB block
 * and at most what the index's 26-bit offset addresses (SLOT_OFF_BITS,
 * checked in flash_tier.c). */
#define FLASH_SEG_MIN 4096u
#define FLASH_SEG_MAX (1u << 26)

/* What a parser can find wrong, each its own code so a test (and a counter)
 * can tell them apart. */
enum flash_err {
    FLASH_OK = 0,
    FLASH_E_SHORT = -1,     /* fewer bytes than the header or its lengths say */
    FLASH_E_MAGIC = -2,     /* not a flash segment (or never written: zeroes) */
    FLASH_E_VERSION = -3,   /* a format this build does not read */
    FLASH_E_HDRSUM = -4,    /* the header's checksum does not match */
    FLASH_E_INSTANCE = -5,  /* written by another store */
    FLASH_E_LENGTH = -6,    /* header lengths or counts out of range */
    FLASH_E_ITEM = -7,      /* an item's header is malformed or overruns */
    FLASH_E_ITEMSUM = -8,   /* an item's checksum does not match */
    FLASH_E_COUNT = -9,     /* items end before or after where the header says */
    FLASH_E_FULL = -10,     /* writer: the item does not fit */
};
const char *flash_err_str(int err);

/* A segment's header, decoded. */
struct flash_seg_hdr {
    uint64_t seq;        /* increases with every segment written; never reused */
    uint64_t instance;   /* the store's id: a file from another store is refused */
    uint64_t cas_base;   /* CAS deltas of the items are from this */
    uint32_t nitems;
    uint32_t nbytes;     /* of items, after the header */
    uint32_t max_exptime;/* latest expiry of its items (REL_TIME_NEVER: some never) */
};

/* One item found in a segment: pointers into the segment's bytes. */
struct flash_item {
    struct item_hdr h;
    const char *p;       /* the item's first byte */
    const char *key;
    const char *value;
    uint32_t off;        /* from the segment's start: what the index keeps */
    uint32_t len;        /* whole item */
    uint32_t flags;
    rel_time_t exptime;  /* REL_TIME_NEVER when it has none */
    uint32_t atime;      /* access time and status bits */
    uint64_t cas;
};

/* The seed of every item checksum in a segment (its sequence and instance):
 * the one thing a single-item read must know of the segment. */
uint64_t flash_seg_seed(uint64_t seq, uint64_t instance);

/* --- writing: fill a segment-sized buffer, then finish it --- */
struct flash_writer {
    char *buf;
    uint32_t size;       /* the whole segment */
    uint32_t used;       /* header and items so far */
    uint64_t seed;
    struct flash_seg_hdr hdr;
};
/* size: FLASH_SEG_MIN..FLASH_SEG_MAX. Returns FLASH_OK or FLASH_E_LENGTH. */
int flash_writer_init(struct flash_writer *w, char *buf, uint32_t size, uint64_t seq,
                      uint64_t instance, uint64_t cas_base);
/* Append one item from its fields; *off (may be NULL): where it went.
 * FLASH_E_FULL when it does not fit, FLASH_E_ITEM for a key of 0 or over
 * 255 bytes. */
struct flash_item_in {
    const char *key;
    uint32_t nkey;
    const char *value;
    uint32_t nvalue;
    uint32_t flags;
    rel_time_t exptime;  /* REL_TIME_NEVER: none */
    uint32_t atime;
    uint64_t cas;        /* 0: none (-C) */
};
int flash_writer_add(struct flash_writer *w, const struct flash_item_in *in, uint32_t *off);
/* Append an item in the RAM format, from a segment whose cas_base and
 * tbase (the clock of its 2-byte access times) are given. */
int flash_writer_add_ram(struct flash_writer *w, const char *item, uint64_t ram_cas_base,
                         rel_time_t ram_tbase, uint32_t *off);
/* Zero the tail and write the header: the buffer is ready to go out. */
void flash_writer_finish(struct flash_writer *w);

/* --- reading: any bytes, lengths never trusted --- */
/* The header of a segment read back (len: bytes read, at least the
 * segment's size to check its lengths). instance 0 accepts any. */
int flash_seg_parse_hdr(const void *buf, size_t len, uint64_t instance,
                        struct flash_seg_hdr *out);
/* The whole length of the item at p (*len), from its header alone, checked
 * as flash_item_parse checks it (not its sum, nor whether the rest is
 * there): FLASH_OK, FLASH_E_SHORT when `avail` ends inside the header (read
 * more from p to tell), or FLASH_E_ITEM. A walk of a segment read a part at
 * a time learns from it where the next part must begin. */
int flash_item_span(const char *p, size_t avail, uint32_t *len);
/* One item at p with `avail` bytes after it: its header within bounds,
 * the layout flash writes, its checksum against `seed`. */
int flash_item_parse(const char *p, size_t avail, uint64_t seed, uint64_t cas_base,
                     struct flash_item *out);

/* Walks a parsed segment's items in order. */
struct flash_iter {
    const char *buf;
    uint32_t end;        /* FLASH_HDR_LEN + nbytes */
    uint32_t off;
    uint32_t seen;
    uint32_t damaged;    /* items skipped: their sum failed, their span held */
    uint64_t seed;
    const struct flash_seg_hdr *hdr;
};
void flash_iter_init(struct flash_iter *it, const void *buf, const struct flash_seg_hdr *hdr);
/* 1: *out is the next item; 0: the end, where the header said; < 0 an
 * error (enum flash_err) and no more items: those before it stay good.
 * An item whose sum fails but whose header is whole is skipped (counted
 * in `damaged`), the walk going on past it. */
int flash_iter_next(struct flash_iter *it, struct flash_item *out);

#endif
