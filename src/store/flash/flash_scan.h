/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading the tier's segments back (flash_scan.c): which items of a
 * segment are live now, the judgment compaction and a dump share, and
 * where a walk of every segment (lru_crawler metadump, mgdump) reads
 * next. Knows the tier's records and the index; no device, no sessions;
 * docs/store-flash.md "Dumps". */
#ifndef NODELAY_STORE_FLASH_SCAN_H
#define NODELAY_STORE_FLASH_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "store/flash/flash_tier.h"

/* A segment as a walk reads it: which write of which record, where. */
struct flash_scan_seg {
    uint32_t n; /* its record */
    uint32_t vid;
    uint64_t seq, seed, cas_base;
    uint32_t nbytes; /* header and items written, when it was found */
    uint32_t max_item;
    uint32_t page; /* on the device: page and the segment's place in it */
    uint64_t page_off;
};

/* Where a walk is: record n, the write it reads there (0: any, a record
 * not begun), and the next item's offset in it. */
struct flash_scan_pos {
    uint32_t n;
    uint64_t seq;
    uint32_t off;
};

/* The segment a walk reads next, from *pos: record n if it still holds
 * the write seq, has live items and bytes from off on, else the next
 * record that does (from its first item; *pos moves there). FLASH_AT_NONE:
 * no more. FLASH_AT_DISK: read it (*sg says where). FLASH_AT_BUF: not on
 * the device yet, and up to cap bytes from off on are copied into buf
 * under the tier's lock (*copied: how many; whole items, as a writer
 * adds them). */
enum flash_where flash_scan_next(struct flash_tier *ft, struct flash_scan_pos *pos,
                                 struct flash_scan_seg *sg, char *buf, uint32_t cap,
                                 uint32_t *copied);

/* Whether item fi, read from the write sg, is live now: a slot still
 * names it, its segment still holds that write, and it is not expired or
 * flushed. *freq: the slot's count of reads from flash. */
bool flash_scan_live(struct flash_tier *ft, const struct flash_scan_seg *sg,
                     const struct flash_item *fi, unsigned *freq);

#endif
