/* SPDX-License-Identifier: BSD-3-Clause */
/* The compactor's choice (flash_gc.c): which written segment to free next
 * and how, from the segment records alone, no device; docs/store-flash.md
 * "Compaction".
 *
 * A cache may lose items, so making room is a trade: rewriting a segment
 * whose live share is u costs u/(1-u) bytes per byte freed (9 at 90 %),
 * dropping it loses u of a segment. The rule: while fewer segments are
 * free than flash_gc_under's (ext_compact_under pages' worth, and a margin
 * above the room the writers keep), the written segment with the least
 * live share is rewritten if that share is under ext_max_frag and either
 * the rewrite budget (FLASH_GC_BUDGET_NUM/DEN of the bytes the other
 * writers gave the device) covers its live bytes or it is cheap enough
 * to keep to that ratio by itself (7/32 live at most); else, while
 * writers need room, it is dropped whole (the fewest items lost for a
 * segment freed). So device
 * bytes stay within (1 + the budget) of the bytes moved, whatever the
 * load, and no write waits for the room. */
#ifndef NODELAY_STORE_FLASH_GC_H
#define NODELAY_STORE_FLASH_GC_H

#include <stdbool.h>
#include <stdint.h>

#include "store/flash/flash_tier.h"

/* Rewrite bytes allowed per byte the other writers wrote: 0.28, so write
 * amplification stays within 1.28 (and the 1-2 % of item headers), under
 * the 1.3 this tier aims at with the most kept for it (bench/flash_churn.py:
 * at a quarter, a point less of the keys kept). */
#define FLASH_GC_BUDGET_NUM 7
#define FLASH_GC_BUDGET_DEN 25

enum flash_gc_act {
    FLASH_GC_NONE,   /* nothing to do now */
    FLASH_GC_RESCUE, /* read the victim, rewrite its live items, free it */
    FLASH_GC_DROP,   /* free the victim whole, its live items lost */
};

/* Free segments the compactor wants above the room it keeps by dropping
 * (flash_gc_under): time to rescue a victim or two while the writers fill
 * segments, before anyone must drop. */
#define FLASH_GC_MARGIN 2

struct flash_gc_rule {
    uint32_t free_segs;     /* free segments now */
    uint32_t compact_under; /* segments: flash_gc_under */
    uint32_t drop_under;    /* segments: ext_drop_under's pages' worth */
    double max_frag;        /* ext_max_frag */
    bool drop_unread;       /* ext_drop_unread */
    bool need_room;         /* writers are writing: room must come, now */
    int64_t credit;         /* rewrite bytes the budget allows now */
};

/* Free segments under which the compactor works: ext_compact_under pages'
 * worth, and at least `room` (the free segments it keeps under a write
 * load, dropping if it must) plus FLASH_GC_MARGIN. Else, on pages of a
 * segment or two, the default (one page) is at or under the point where
 * the writers drop, and compaction never gets to rescue. 0 pages (set at
 * run time; at start 0 is the default's) is none: no compaction. */
uint32_t flash_gc_under(uint32_t compact_under, uint32_t segs_per_page, uint32_t room);

/* The bytes of a record's live items, estimated from its item count (the
 * slot does not carry an item's length). */
uint64_t flash_gc_live_bytes(const struct flash_rec *r);

/* The written segment (FSEG_DISK, holding live items) with the least live
 * share, of any writer when any_bucket, else not of the low-TTL writer
 * (those expire whole), other than `skip` (-1: none); -1 when none. */
int32_t flash_gc_least_live(const struct flash_rec *recs, uint32_t n, bool any_bucket,
                            int32_t skip);

/* What to do next under rule g, and to which segment (*victim); *unread:
 * a rescue drops the items never read (ext_drop_unread under
 * ext_drop_under). Segments with no live items are the caller's to free
 * first: they cost nothing. */
enum flash_gc_act flash_gc_choose(const struct flash_rec *recs, uint32_t n,
                                  const struct flash_gc_rule *g, int32_t *victim, bool *unread);

#endif
