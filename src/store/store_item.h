/* SPDX-License-Identifier: BSD-3-Clause */
/* One item's bytes (item.c): its layout byte, header fields and checksum.
 * Knows nothing of segments or the index; docs/store.md "Items". */
#ifndef NODELAY_STORE_ITEM_H
#define NODELAY_STORE_ITEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/clock.h"

/* Layout byte: which optional fields an item carries. Fixed when its space is
 * reserved, never changed afterwards, so a segment can be walked without
 * locks. */
/* The access time in full, 4 bytes (status | rel_time_t), instead of 2
 * bytes relative to the segment's tbase (ITEM_AT_*). Set when the
 * segment's clock cannot hold an item's time (an item moved into a newer
 * segment), for items on flash, and for an item that has no other bit:
 * the layout byte is never 0, which the segment walks read as padding. */
#define ITEM_L_AT32 0x80
#define ITEM_L_FLAGS 0x01   /* 4 bytes of client flags */
#define ITEM_L_EXP 0x02     /* 4 bytes of expiry */
#define ITEM_L_CAS32 0x04   /* CAS as a 4-byte delta from the segment's cas_base */
#define ITEM_L_CAS64 0x08   /* CAS in full */
/* Both CAS bits: a 2-byte delta from cas_base. The two bits name the CAS
 * field's width (none, 2, 4 or 8 bytes), so combine layouts with
 * item_layout_merge, never with |. */
#define ITEM_L_CAS16 (ITEM_L_CAS32 | ITEM_L_CAS64)
#define ITEM_L_CASW ITEM_L_CAS16
#define ITEM_L_SUM 0x10     /* 4-byte checksum of nkey, flags, key and value (-e only) */
/* State bits (-e only), set after the item is laid out: COMMIT when it is
 * linked (its value complete); when it is unlinked (overwritten, deleted,
 * evicted, expired) DEAD is set and COMMIT cleared in one store, so that a
 * dead item's state differs from a live one's in both bits and one damaged
 * bit cannot bring it back. The restore scan serves an item only when it
 * is COMMIT and not DEAD (docs/store.md "Restarts"). They do not change
 * where fields lie; item_decode leaves them out of h->layout. */
#define ITEM_L_COMMIT 0x20
#define ITEM_L_DEAD 0x40
#define ITEM_L_STATE (ITEM_L_COMMIT | ITEM_L_DEAD)

/* Status bits live in the top of the access-time word (mutable under the
 * bucket lock). rel_time_t keeps 29 bits: 17 years of uptime.
 * item_get_st and item_put_st read and write that word whatever the
 * item's width. */
#define ITEM_S_FETCHED 0x80000000u
#define ITEM_S_STALE 0x40000000u
#define ITEM_S_TOKEN 0x20000000u
#define ITEM_S_MASK 0xe0000000u

/* The 2-byte access time: the three status bits, a unit bit and 12 bits
 * of time since the segment's tbase: seconds below 4096, else 64-second
 * steps, saturating at 0xfff steps (72 hours). A time is rounded down:
 * an item may look read earlier than it was, never later. */
#define ITEM_AT_UNIT 0x1000u
#define ITEM_AT_SECS 4096u
#define ITEM_AT_SPAN ((uint32_t)0xfff << 6)

#define ITEM_HDR_MAX (1 + 1 + 5 + 4 + 4 + 4 + 8 + 4)

/* A decoded item header. */
struct item_hdr {
    uint8_t layout;
    uint8_t nkey;
    uint32_t nvalue;
    uint32_t hlen;    /* bytes before the key */
    uint32_t atime_off, flags_off, exp_off, cas_off, sum_off; /* 0 = absent (atime always present) */
    /* 2 or 4 bytes of access time at atime_off: layout & ITEM_L_AT32 */
};

/* Bytes of header an item with this layout and value length needs. */
uint32_t item_hdr_len(uint8_t layout, uint32_t nvalue);
/* Write a header (fields zeroed) and the key; returns the header length. */
uint32_t item_init(char *p, uint8_t layout, const char *key, uint8_t nkey, uint32_t nvalue);
/* Where a layout's fields lie, from the access time's offset: 0 = absent
 * (item_decode). */
struct item_offs {
    uint8_t flags, exp, cas, sum, end;
};
extern const struct item_offs item_offs[64];
/* The same from the item's start for a value shorter than 128 bytes (its
 * length one byte, the access time at 3): item_decode's common case, with
 * no test for each absent field. */
extern const struct item_offs item_offs3[64];
/* item_offs' index of a layout: its field bits and ITEM_L_AT32 */
static inline unsigned item_offs_at(uint8_t layout)
{
    return (layout & 0x1fu) | ((layout & ITEM_L_AT32) >> 2);
}
/* The layout byte an item with these fields is given: never 0. */
static inline uint8_t item_layout_byte(uint8_t layout)
{
    return layout & (uint8_t)~ITEM_L_STATE ? layout : ITEM_L_AT32;
}
/* An nvalue of 128 or more (its varint from p[2] on); *at: past it. */
uint32_t item_varint_long(const uint8_t *u, uint32_t *at);

/* Inline, and the fields' offsets from a table by layout rather than a
 * test for each: every lookup decodes the items its tag matches. */
static inline void item_decode(const char *p, struct item_hdr *h)
{
    const uint8_t *u = (const uint8_t *)p;
    /* -e's state bits may be set meanwhile by a thread holding the item's
     * bucket lock (eviction reads headers before taking it): read the byte
     * atomically; the bits read here never change. */
    uint8_t layout = __atomic_load_n(&u[0], __ATOMIC_RELAXED) & (uint8_t)~ITEM_L_STATE;
    h->layout = layout;
    h->nkey = u[1];
    uint32_t i = 3, v = u[2];
    if (!(v & 0x80)) {
        const struct item_offs *o = &item_offs3[item_offs_at(layout)];
        h->nvalue = v;
        h->atime_off = 3;
        h->flags_off = o->flags;
        h->exp_off = o->exp;
        h->cas_off = o->cas;
        h->sum_off = o->sum;
        h->hlen = o->end;
        return;
    }
    v = item_varint_long(u, &i);
    h->nvalue = v;
    h->atime_off = i;
    const struct item_offs *o = &item_offs[item_offs_at(layout)];
    h->flags_off = o->flags ? i + o->flags : 0;
    h->exp_off = o->exp ? i + o->exp : 0;
    h->cas_off = o->cas ? i + o->cas : 0;
    h->sum_off = o->sum ? i + o->sum : 0;
    h->hlen = i + o->end;
}
static inline uint32_t item_total(const struct item_hdr *h)
{
    return h->hlen + h->nkey + h->nvalue;
}

/* The accessors below are inline: the restore scan calls them for every
 * item of the file (docs/store.md "The restore scan"). */
static inline uint32_t item_get_u32(const char *p, uint32_t off)
{
    uint32_t v;
    if (!off)
        return 0;
    memcpy(&v, p + off, 4);
    return v;
}
void item_put_u32(char *p, uint32_t off, uint32_t v);

/* The 2-byte form's 13 time bits for d seconds past tbase, and back. */
static inline uint32_t item_at_code(uint32_t d)
{
    if (d < ITEM_AT_SECS)
        return d;
    return ITEM_AT_UNIT | (d >= ITEM_AT_SPAN ? 0xfffu : d >> 6);
}
static inline uint32_t item_at_secs(uint32_t code)
{
    return code & ITEM_AT_UNIT ? (code & 0xfffu) << 6 : code;
}
/* The time t reads back as from the 2-byte form relative to tbase (a t
 * before tbase cannot be held at all: tbase). */
static inline rel_time_t item_at_held(rel_time_t t, rel_time_t tbase)
{
    return t < tbase ? tbase : tbase + item_at_secs(item_at_code(t - tbase));
}
/* The access-time word (status bits | time) of an item in a segment whose
 * clock starts at tbase. Inline: every hit asks. */
static inline uint32_t item_get_st(const char *p, const struct item_hdr *h, rel_time_t tbase)
{
    if (h->layout & ITEM_L_AT32)
        return item_get_u32(p, h->atime_off);
    uint16_t w;
    memcpy(&w, p + h->atime_off, 2);
    return ((uint32_t)(w & 0xe000u) << 16) | (tbase + item_at_secs(w & 0x1fffu));
}
/* Its status bits alone (ITEM_S_*), which need no clock. */
static inline uint32_t item_get_status(const char *p, const struct item_hdr *h)
{
    if (h->layout & ITEM_L_AT32)
        return item_get_u32(p, h->atime_off) & ITEM_S_MASK;
    uint8_t hi = (uint8_t)p[h->atime_off + 1];
    return ((uint32_t)(hi & 0xe0u) << 24);
}
/* Write the word; in the 2-byte form its time rounded down (a time
 * before tbase is never given one: the layout must be ITEM_L_AT32). */
static inline void item_put_st(char *p, const struct item_hdr *h, rel_time_t tbase, uint32_t st)
{
    if (h->layout & ITEM_L_AT32) {
        memcpy(p + h->atime_off, &st, 4);
        return;
    }
    rel_time_t t = st & ~ITEM_S_MASK;
    uint16_t w = (uint16_t)(((st >> 16) & 0xe000u) | item_at_code(t > tbase ? t - tbase : 0));
    memcpy(p + h->atime_off, &w, 2);
}
/* The word st as item_get_st would read it back once written. */
static inline uint32_t item_st_held(uint8_t layout, uint32_t st, rel_time_t tbase)
{
    if (layout & ITEM_L_AT32)
        return st;
    return (st & ITEM_S_MASK) | item_at_held(st & ~ITEM_S_MASK, tbase);
}
/* Whether an item moved with the access time t (eviction's carry) may
 * take the 2-byte form relative to tbase: unsaturated, and not rounded to
 * or below the flush in force ol that t is after (memcached keeps it). */
static inline bool item_at_moves(rel_time_t t, rel_time_t tbase, rel_time_t ol)
{
    if (t < tbase || t - tbase >= ITEM_AT_SPAN)
        return false;
    rel_time_t held = item_at_held(t, tbase);
    return held == t || !(held <= ol && ol < t);
}
/* Whether a layout holds the access time t exactly: ITEM_L_AT32 or
 * within the 2-byte form's seconds. */
static inline bool item_at_fits(uint8_t layout, rel_time_t t, rel_time_t tbase)
{
    return (layout & ITEM_L_AT32) || (t >= tbase && t - tbase < ITEM_AT_SECS);
}
static inline uint64_t item_get_cas(const char *p, const struct item_hdr *h, uint64_t cas_base)
{
    /* by the layout's width (cas_off is set whenever it is not 0), the
     * common case first: every hit asks */
    uint8_t w = h->layout & ITEM_L_CASW;
    if (w == ITEM_L_CAS16) {
        uint16_t d;
        memcpy(&d, p + h->cas_off, 2);
        return cas_base + d;
    }
    if (w == ITEM_L_CAS32) {
        uint32_t d;
        memcpy(&d, p + h->cas_off, 4);
        return cas_base + d;
    }
    if (w == ITEM_L_CAS64) {
        uint64_t v;
        memcpy(&v, p + h->cas_off, 8);
        return v;
    }
    return 0;
}
/* Bytes of the CAS field a layout has: 0, 2, 4 or 8. */
static inline unsigned item_cas_bytes(uint8_t layout)
{
    static const uint8_t w[4] = {0, 4, 8, 2};
    return w[(layout & ITEM_L_CASW) >> 2];
}
/* The narrowest CAS field (its layout bits) that holds cas. */
static inline uint8_t item_cas_layout(uint64_t cas, uint64_t cas_base)
{
    if (cas < cas_base || cas - cas_base > UINT32_MAX)
        return ITEM_L_CAS64;
    return cas - cas_base <= UINT16_MAX ? ITEM_L_CAS16 : ITEM_L_CAS32;
}
/* Layout a with b's fields added: the other bits or'ed (ITEM_L_AT32
 * among them: the full time holds any), the wider CAS. */
static inline uint8_t item_layout_merge(uint8_t a, uint8_t b)
{
    uint8_t cas = item_cas_bytes(a) >= item_cas_bytes(b) ? a : b;
    return (uint8_t)(((a | b) & ~ITEM_L_CASW) | (cas & ITEM_L_CASW));
}
/* false when the CAS does not fit the item's layout (inline: every
 * commit asks) */
static inline bool item_cas_fits(uint8_t layout, uint64_t cas, uint64_t cas_base)
{
    uint8_t w = layout & ITEM_L_CASW;
    if (w == ITEM_L_CAS64)
        return true;
    if (!w)
        return cas == 0;
    return cas >= cas_base && cas - cas_base <= (w == ITEM_L_CAS16 ? UINT16_MAX : UINT32_MAX);
}
void item_put_cas(char *p, const struct item_hdr *h, uint64_t cas, uint64_t cas_base);
/* The checksum of an item's immutable part (nkey, flags, key, value). */
uint32_t item_sum(const char *p, const struct item_hdr *h);
/* The checksum item p will have once its client flags are `flags`. */
uint32_t item_sum_for(const char *p, const struct item_hdr *h, uint32_t flags);
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
/* Unlinked (-e): DEAD set and COMMIT cleared in one release store, after
 * every byte written before. The other bits of the byte never change, but
 * a compare-and-swap keeps this safe beside item_set_state. */
static inline void item_set_dead(char *p)
{
    uint8_t *u = (uint8_t *)p;
    uint8_t o = __atomic_load_n(u, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(u, &o, (uint8_t)((o | ITEM_L_DEAD) & ~ITEM_L_COMMIT),
                                        true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}
/* A state that may be served: committed and not dead. */
static inline bool item_state_live(uint8_t state)
{
    return (state & ITEM_L_STATE) == ITEM_L_COMMIT;
}
/* The layout needed to hold these field values. */
uint8_t item_layout_for(uint32_t flags, rel_time_t exptime, bool cas_enabled, uint64_t cas,
                        uint64_t cas_base);

/* memcached's own item size for this item (its -I check and slab class):
 * in 1.6, sizeof(item) 48, key + NUL, value + "\r\n", 8 bytes of CAS when
 * enabled, 4 of client flags when non-zero. */
static inline size_t item_mc_size(size_t nkey, size_t nvalue, uint32_t flags, bool cas_enabled)
{
    return 48 + nkey + 1 + nvalue + 2 + (cas_enabled ? 8 : 0) + (flags ? 4 : 0);
}

#endif
