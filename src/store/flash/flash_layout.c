/* SPDX-License-Identifier: BSD-3-Clause */
/* A flash segment's bytes: the writer that lays one out in a buffer and the
 * parser that checks one read back (flash_layout.h has the format and why).
 * The parser takes any bytes: every length is checked against what was read
 * before it is used, and an error ends the walk. */
#include "store/flash/flash_layout.h"

#include <string.h>
#include <xxhash.h>

#define OFF_MAGIC 0
#define OFF_VERSION 8
#define OFF_HDRLEN 10
#define OFF_NITEMS 12
#define OFF_SEQ 16
#define OFF_INSTANCE 24
#define OFF_CASBASE 32
#define OFF_NBYTES 40
#define OFF_MAXEXP 44
#define OFF_HDRSUM 60

/* Every flash item has these; a parsed one must have exactly them among
 * the state bits. */
#define FLASH_L_REQUIRED (ITEM_L_AT32 | ITEM_L_SUM | ITEM_L_COMMIT)

const char *flash_err_str(int err)
{
    switch (err) {
    case FLASH_OK: return "ok";
    case FLASH_E_SHORT: return "short read";
    case FLASH_E_MAGIC: return "bad magic";
    case FLASH_E_VERSION: return "unknown format version";
    case FLASH_E_HDRSUM: return "header checksum mismatch";
    case FLASH_E_INSTANCE: return "written by another store";
    case FLASH_E_LENGTH: return "length out of range";
    case FLASH_E_ITEM: return "malformed item";
    case FLASH_E_ITEMSUM: return "item checksum mismatch";
    case FLASH_E_COUNT: return "item count mismatch";
    case FLASH_E_FULL: return "segment full";
    }
    return "unknown error";
}

static uint16_t get16(const char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static uint32_t get32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t get64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

uint64_t flash_seg_seed(uint64_t seq, uint64_t instance)
{
    uint64_t in[2] = {seq, instance};
    return XXH3_64bits(in, sizeof in);
}

static uint32_t hdr_sum(const char *p)
{
    return (uint32_t)XXH3_64bits(p, OFF_HDRSUM);
}

/* Everything but the sum field, in two runs chained by their seeds. */
static uint32_t item_flash_sum(const char *p, uint32_t sum_off, uint32_t len, uint64_t seed)
{
    uint64_t a = XXH3_64bits_withSeed(p, sum_off, seed);
    return (uint32_t)XXH3_64bits_withSeed(p + sum_off + 4, len - sum_off - 4, a);
}

int flash_writer_init(struct flash_writer *w, char *buf, uint32_t size, uint64_t seq,
                      uint64_t instance, uint64_t cas_base)
{
    if (size < FLASH_SEG_MIN || size > FLASH_SEG_MAX)
        return FLASH_E_LENGTH;
    memset(w, 0, sizeof *w);
    w->buf = buf;
    w->size = size;
    w->used = FLASH_HDR_LEN;
    w->seed = flash_seg_seed(seq, instance);
    w->hdr.seq = seq;
    w->hdr.instance = instance;
    w->hdr.cas_base = cas_base;
    return FLASH_OK;
}

int flash_writer_add(struct flash_writer *w, const struct flash_item_in *in, uint32_t *off)
{
    if (in->nkey == 0 || in->nkey > 255)
        return FLASH_E_ITEM;
    uint8_t layout = item_layout_for(in->flags, in->exptime, in->cas != 0, in->cas,
                                     w->hdr.cas_base) | ITEM_L_SUM | ITEM_L_AT32;
    uint32_t hlen = item_hdr_len(layout, in->nvalue);
    uint64_t len = (uint64_t)hlen + in->nkey + in->nvalue;
    if (len > w->size - w->used)
        return FLASH_E_FULL;
    char *p = w->buf + w->used;
    item_init(p, layout, in->key, (uint8_t)in->nkey, in->nvalue);
    struct item_hdr h;
    item_decode(p, &h);
    memcpy(p + h.hlen + h.nkey, in->value, in->nvalue);
    item_put_u32(p, h.atime_off, in->atime);
    if (h.flags_off)
        item_put_u32(p, h.flags_off, in->flags);
    if (h.exp_off)
        item_put_u32(p, h.exp_off, in->exptime);
    item_put_cas(p, &h, in->cas, w->hdr.cas_base);
    p[0] = (char)(layout | ITEM_L_COMMIT);
    item_put_u32(p, h.sum_off, item_flash_sum(p, h.sum_off, (uint32_t)len, w->seed));

    /* Latest expiry, where REL_TIME_NEVER (0) wins over any time. */
    if (w->hdr.nitems == 0 || in->exptime == REL_TIME_NEVER)
        w->hdr.max_exptime = in->exptime;
    else if (w->hdr.max_exptime != REL_TIME_NEVER && in->exptime > w->hdr.max_exptime)
        w->hdr.max_exptime = in->exptime;
    if (off)
        *off = w->used;
    w->used += (uint32_t)len;
    w->hdr.nitems++;
    return FLASH_OK;
}

int flash_writer_add_ram(struct flash_writer *w, const char *item, uint64_t ram_cas_base,
                         rel_time_t ram_tbase, uint32_t *off)
{
    struct item_hdr h;
    item_decode(item, &h);
    struct flash_item_in in = {
        .key = item + h.hlen,
        .nkey = h.nkey,
        .value = item + h.hlen + h.nkey,
        .nvalue = h.nvalue,
        .flags = item_get_u32(item, h.flags_off),
        .exptime = item_get_u32(item, h.exp_off),
        .atime = item_get_st(item, &h, ram_tbase),
        .cas = item_get_cas(item, &h, ram_cas_base),
    };
    return flash_writer_add(w, &in, off);
}

void flash_writer_finish(struct flash_writer *w)
{
    char *p = w->buf;
    memset(p + w->used, 0, w->size - w->used);
    memset(p, 0, FLASH_HDR_LEN);
    memcpy(p + OFF_MAGIC, FLASH_MAGIC, 8);
    uint16_t version = FLASH_VERSION, hlen = FLASH_HDR_LEN;
    memcpy(p + OFF_VERSION, &version, 2);
    memcpy(p + OFF_HDRLEN, &hlen, 2);
    memcpy(p + OFF_NITEMS, &w->hdr.nitems, 4);
    memcpy(p + OFF_SEQ, &w->hdr.seq, 8);
    memcpy(p + OFF_INSTANCE, &w->hdr.instance, 8);
    memcpy(p + OFF_CASBASE, &w->hdr.cas_base, 8);
    w->hdr.nbytes = w->used - FLASH_HDR_LEN;
    memcpy(p + OFF_NBYTES, &w->hdr.nbytes, 4);
    memcpy(p + OFF_MAXEXP, &w->hdr.max_exptime, 4);
    uint32_t sum = hdr_sum(p);
    memcpy(p + OFF_HDRSUM, &sum, 4);
}

int flash_seg_parse_hdr(const void *buf, size_t len, uint64_t instance,
                        struct flash_seg_hdr *out)
{
    const char *p = buf;
    if (len < FLASH_HDR_LEN)
        return FLASH_E_SHORT;
    if (memcmp(p + OFF_MAGIC, FLASH_MAGIC, 8) != 0)
        return FLASH_E_MAGIC;
    /* The sum before the fields: a damaged version or length is a damaged
     * header, not a format this build does not know. */
    if (get32(p + OFF_HDRSUM) != hdr_sum(p))
        return FLASH_E_HDRSUM;
    if (get16(p + OFF_VERSION) != FLASH_VERSION)
        return FLASH_E_VERSION;
    if (get16(p + OFF_HDRLEN) != FLASH_HDR_LEN)
        return FLASH_E_LENGTH;
    struct flash_seg_hdr h = {
        .seq = get64(p + OFF_SEQ),
        .instance = get64(p + OFF_INSTANCE),
        .cas_base = get64(p + OFF_CASBASE),
        .nitems = get32(p + OFF_NITEMS),
        .nbytes = get32(p + OFF_NBYTES),
        .max_exptime = get32(p + OFF_MAXEXP),
    };
    if (instance && h.instance != instance)
        return FLASH_E_INSTANCE;
    if (h.nbytes > FLASH_SEG_MAX - FLASH_HDR_LEN)
        return FLASH_E_LENGTH;
    /* the smallest item: 3 bytes, atime, sum, one key byte */
    if ((uint64_t)h.nitems * 12 > h.nbytes)
        return FLASH_E_LENGTH;
    if (len < FLASH_HDR_LEN + (size_t)h.nbytes)
        return FLASH_E_SHORT;
    *out = h;
    return FLASH_OK;
}

int flash_item_span(const char *p, size_t avail, uint32_t *len)
{
    const uint8_t *u = (const uint8_t *)p;
    if (avail < 3)
        return FLASH_E_SHORT;
    if ((u[0] & (ITEM_L_AT32 | ITEM_L_STATE | ITEM_L_SUM)) != FLASH_L_REQUIRED)
        return FLASH_E_ITEM;
    if (u[1] == 0)
        return FLASH_E_ITEM;
    /* The value's varint: at most 5 bytes, inside what was read, and
     * canonical (item_init writes no padding bytes), before item_decode
     * reads it unbounded. */
    uint32_t i = 2, v = 0;
    for (uint32_t shift = 0;; shift += 7) {
        if (i >= 7)
            return FLASH_E_ITEM;
        if (i >= avail)
            return FLASH_E_SHORT;
        uint8_t b = u[i++];
        if (shift == 28 && b > 0x0f)
            return FLASH_E_ITEM;
        v |= (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (b == 0 && shift)
                return FLASH_E_ITEM;
            break;
        }
    }
    struct item_hdr h;
    item_decode(p, &h);
    if (h.atime_off != i || h.nvalue != v || !h.sum_off)
        return FLASH_E_ITEM;
    uint64_t total = (uint64_t)h.hlen + h.nkey + h.nvalue;
    if (total > FLASH_SEG_MAX)
        return FLASH_E_ITEM;
    *len = (uint32_t)total;
    return FLASH_OK;
}

int flash_item_parse(const char *p, size_t avail, uint64_t seed, uint64_t cas_base,
                     struct flash_item *out)
{
    uint32_t len;
    if (flash_item_span(p, avail, &len) != FLASH_OK || len > avail)
        return FLASH_E_ITEM;
    struct item_hdr h;
    item_decode(p, &h);
    if (item_get_u32(p, h.sum_off) != item_flash_sum(p, h.sum_off, (uint32_t)len, seed))
        return FLASH_E_ITEMSUM;
    *out = (struct flash_item){
        .h = h,
        .p = p,
        .key = p + h.hlen,
        .value = p + h.hlen + h.nkey,
        .len = (uint32_t)len,
        .flags = item_get_u32(p, h.flags_off),
        .exptime = item_get_u32(p, h.exp_off),
        .atime = item_get_u32(p, h.atime_off),
        .cas = item_get_cas(p, &h, cas_base),
    };
    return FLASH_OK;
}

void flash_iter_init(struct flash_iter *it, const void *buf, const struct flash_seg_hdr *hdr)
{
    *it = (struct flash_iter){
        .buf = buf,
        .end = FLASH_HDR_LEN + hdr->nbytes,
        .off = FLASH_HDR_LEN,
        .seed = flash_seg_seed(hdr->seq, hdr->instance),
        .hdr = hdr,
    };
}

int flash_iter_next(struct flash_iter *it, struct flash_item *out)
{
    for (;;) {
        if (it->seen == it->hdr->nitems)
            return it->off == it->end ? 0 : FLASH_E_COUNT;
        if (it->off >= it->end)
            return FLASH_E_COUNT;
        uint32_t len;
        int rc = flash_item_parse(it->buf + it->off, it->end - it->off, it->seed,
                                  it->hdr->cas_base, out);
        if (rc == FLASH_E_ITEMSUM &&
            flash_item_span(it->buf + it->off, it->end - it->off, &len) == FLASH_OK) {
            /* A damaged value (bit rot, a stray write) costs its item, not
             * the rest of the segment: its header's span is taken on trust
             * and the next item must pass its own sum, as every read's
             * must. Lengths that lie land amid other bytes, which fail a
             * sum in turn, or the count at the end. */
            it->damaged++;
            it->off += len;
            it->seen++;
            continue;
        }
        if (rc != FLASH_OK) {
            it->end = it->off; /* no more: its length cannot be trusted */
            it->seen = it->hdr->nitems;
            return rc;
        }
        out->off = it->off;
        it->off += out->len;
        it->seen++;
        return 1;
    }
}
