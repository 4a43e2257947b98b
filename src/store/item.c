/* SPDX-License-Identifier: BSD-3-Clause */
/* One item's bytes in a segment:
 *
 *   layout(1) nkey(1) nvalue(varint 1-5) atime+status(2 | 4)
 *   [client flags(4)] [exptime(4)] [cas delta(2 | 4) | cas(8)] [sum(4)] key value
 *
 * Optional fields are present only when the layout byte says so: an item
 * with no flags, no expiry, CAS within 65,535 of its segment's base and
 * its access time in the segment's clock (ITEM_AT_*) costs 7 bytes of
 * header at values under 128 bytes. Multi-byte fields are
 * little-endian and unaligned (memcpy), so no padding is ever spent.
 */
#include "store/store_item.h"

#include <string.h>
#include <xxhash.h>

static uint32_t varint_len(uint32_t v)
{
    uint32_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}


uint32_t item_init(char *p, uint8_t layout, const char *key, uint8_t nkey, uint32_t nvalue)
{
    uint8_t *u = (uint8_t *)p;
    u[0] = item_layout_byte(layout & (uint8_t)~ITEM_L_STATE);
    u[1] = nkey;
    uint32_t i = 2, v = nvalue;
    while (v >= 0x80) {
        u[i++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    u[i++] = (uint8_t)v;
    uint32_t hlen = item_hdr_len(layout, nvalue);
    memset(p + i, 0, hlen - i);
    memcpy(p + hlen, key, nkey);
    return hlen;
}

uint32_t item_varint_long(const uint8_t *u, uint32_t *at)
{
    uint32_t i = 2, v = 0, shift = 0;
    for (;;) {
        uint8_t b = u[i++];
        v |= (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
        shift += 7;
    }
    *at = i;
    return v;
}

/* After the access time (2 bytes, 4 with ITEM_L_AT32): flags, expiry, CAS
 * (item_cas_bytes), checksum, in that order, each where its layout bit is
 * set. Indexed by item_offs_at: bit 5 stands for ITEM_L_AT32. IL's b is
 * where the access time is: 0 for item_offs (offsets from it), 3 for
 * item_offs3 (from the item's start, a one-byte length before it). */
#define IL_F(l) (((l) & ITEM_L_FLAGS) ? 4 : 0)
#define IL_E(l) (((l) & ITEM_L_EXP) ? 4 : 0)
#define IL_C(l)                                                                                   \
    ((((l) & ITEM_L_CASW) == ITEM_L_CAS16) ? 2                                                     \
     : ((l) & ITEM_L_CAS64)                ? 8                                                     \
     : ((l) & ITEM_L_CAS32)                ? 4                                                     \
                                           : 0)
#define IL_S(l) (((l) & ITEM_L_SUM) ? 4 : 0)
#define IL_A(l) (((l) & 0x20) ? 4 : 2)
#define IL(l, b)                                                                                  \
    {IL_F(l) ? (b) + IL_A(l) : 0, IL_E(l) ? (b) + IL_A(l) + IL_F(l) : 0,                          \
     IL_C(l) ? (b) + IL_A(l) + IL_F(l) + IL_E(l) : 0,                                             \
     IL_S(l) ? (b) + IL_A(l) + IL_F(l) + IL_E(l) + IL_C(l) : 0,                                   \
     (b) + IL_A(l) + IL_F(l) + IL_E(l) + IL_C(l) + IL_S(l)}
#define IL4(l, b) IL(l, b), IL(l + 1, b), IL(l + 2, b), IL(l + 3, b)
#define IL16(l, b) IL4(l, b), IL4(l + 4, b), IL4(l + 8, b), IL4(l + 12, b)
#define IL32(l, b) IL16(l, b), IL16(l + 16, b)
const struct item_offs item_offs[64] = {IL32(0, 0), IL32(32, 0)};
const struct item_offs item_offs3[64] = {IL32(0, 3), IL32(32, 3)};

/* The layout's fields from the same table item_decode reads them by. */
uint32_t item_hdr_len(uint8_t layout, uint32_t nvalue)
{
    return 2 + varint_len(nvalue) + item_offs[item_offs_at(item_layout_byte(layout))].end;
}

void item_put_u32(char *p, uint32_t off, uint32_t v)
{
    memcpy(p + off, &v, 4);
}

void item_put_cas(char *p, const struct item_hdr *h, uint64_t cas, uint64_t cas_base)
{
    if (!h->cas_off)
        return;
    uint8_t w = h->layout & ITEM_L_CASW;
    if (w == ITEM_L_CAS64) {
        memcpy(p + h->cas_off, &cas, 8);
    } else if (w == ITEM_L_CAS16) {
        uint16_t d = (uint16_t)(cas - cas_base);
        memcpy(p + h->cas_off, &d, 2);
    } else {
        item_put_u32(p, h->cas_off, (uint32_t)(cas - cas_base));
    }
}

uint8_t item_layout_for(uint32_t flags, rel_time_t exptime, bool cas_enabled, uint64_t cas,
                        uint64_t cas_base)
{
    uint8_t l = 0;
    if (flags)
        l |= ITEM_L_FLAGS;
    if (exptime != REL_TIME_NEVER)
        l |= ITEM_L_EXP;
    if (cas_enabled)
        l |= item_cas_layout(cas, cas_base);
    return l;
}

/* Key and value lie side by side, so one pass hashes both; nkey and the
 * flags seed it, so a value moved across the key boundary does not match. */
uint32_t item_sum_for(const char *p, const struct item_hdr *h, uint32_t flags)
{
    uint64_t seed = ((uint64_t)flags << 8) | h->nkey;
    return (uint32_t)XXH3_64bits_withSeed(p + h->hlen, (size_t)h->nkey + h->nvalue, seed);
}

uint32_t item_sum(const char *p, const struct item_hdr *h)
{
    return item_sum_for(p, h, item_get_u32(p, h->flags_off));
}

