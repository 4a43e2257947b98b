/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash tier's record in the -e file (flash_keep.h has the format and
 * the rules). Every store that a restore relies on is a release store, in
 * the order the rules need: after a kill -9 the kernel keeps a prefix of
 * each thread's stores to the shared mapping. */
#include "store/flash/flash_keep.h"

#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

static size_t table_bytes(uint32_t nsegs)
{
    size_t n = (size_t)nsegs * sizeof(struct fk_seg);
    return (n + 63) / 64 * 64;
}

static uint32_t words_for(uint32_t seg_size)
{
    uint32_t units = (seg_size + FLASH_KEEP_UNIT - 1) / FLASH_KEEP_UNIT;
    return (units + 63) / 64;
}

size_t flash_keep_len(uint32_t nsegs, uint32_t seg_size)
{
    size_t n = FLASH_KEEP_HDR + table_bytes(nsegs) + (size_t)nsegs * words_for(seg_size) * 8;
    return (n + 4095) / 4096 * 4096;
}

static uint64_t hdr_sum(const struct fk_hdr *h)
{
    return XXH3_64bits(h, offsetof(struct fk_hdr, hdr_sum));
}

static uint64_t seg_sum(const struct fk_seg *e)
{
    return XXH3_64bits(e, offsetof(struct fk_seg, sum));
}

static uint64_t clean_sum(const struct flash_keep *k)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, &k->hdr->instance, sizeof k->hdr->instance);
    XXH3_64bits_update(&st, &k->hdr->seq_next, sizeof k->hdr->seq_next);
    XXH3_64bits_update(&st, k->segs, (size_t)k->nsegs * sizeof *k->segs);
    XXH3_64bits_update(&st, k->bits, (size_t)k->nsegs * k->words * 8);
    return XXH3_64bits_digest(&st);
}

static void bind(struct flash_keep *k, void *mem, uint32_t nsegs, uint32_t seg_size)
{
    k->hdr = mem;
    k->segs = (struct fk_seg *)((char *)mem + FLASH_KEEP_HDR);
    k->bits = (uint64_t *)((char *)mem + FLASH_KEEP_HDR + table_bytes(nsegs));
    k->words = words_for(seg_size);
    k->nsegs = nsegs;
    k->seg_size = seg_size;
}

static void layout(struct flash_keep *k, size_t len, uint64_t shape)
{
    memset(k->hdr, 0, len);
    struct fk_hdr *h = k->hdr;
    memcpy(h->magic, FLASH_KEEP_MAGIC, sizeof h->magic);
    h->version = FLASH_KEEP_VERSION;
    h->unit = FLASH_KEEP_UNIT;
    h->nsegs = k->nsegs;
    h->seg_size = k->seg_size;
    h->shape = shape;
    h->hdr_sum = hdr_sum(h);
    h->seq_next = 1;
    h->state = FK_RUNNING;
}

enum fk_attach flash_keep_attach(struct flash_keep *k, void *mem, size_t len, uint32_t nsegs,
                                 uint32_t seg_size, uint64_t shape, bool after_clean,
                                 const char **why)
{
    *why = NULL;
    bind(k, mem, nsegs, seg_size);
    const struct fk_hdr *h = k->hdr;
    static const char zero[sizeof(struct fk_hdr)];
    if (len < flash_keep_len(nsegs, seg_size)) {
        *why = "its flash record is too short";
    } else if (memcmp(h, zero, sizeof zero) == 0) {
        layout(k, len, shape);
        return FK_NEW;
    } else if (memcmp(h->magic, FLASH_KEEP_MAGIC, sizeof h->magic) != 0 ||
               h->version != FLASH_KEEP_VERSION || h->unit != FLASH_KEEP_UNIT ||
               h->hdr_sum != hdr_sum(h)) {
        *why = "its flash record is damaged or of another format";
    } else if (h->nsegs != nsegs || h->seg_size != seg_size || h->shape != shape) {
        *why = "the flash files or their sizes (ext_path, ext_page_size, ext_wbuf_size) changed";
    } else if (after_clean && (h->state != FK_CLEAN || h->clean_sum != clean_sum(k))) {
        *why = "its flash record fails its checksum after a graceful stop";
    } else if (h->instance == 0 || h->seq_next == 0) {
        *why = "its flash record has no instance";
    }
    if (*why) {
        if (len >= flash_keep_len(nsegs, seg_size))
            layout(k, len, shape);
        return FK_DISCARDED;
    }
    /* seq_next covers every sequence handed out (flash_keep_open writes
     * it first); an entry past it is damaged and flash_keep_get refuses
     * it. */
    __atomic_store_n(&k->hdr->state, FK_RUNNING, __ATOMIC_RELEASE);
    return FK_KEPT;
}

bool flash_keep_get(const struct flash_keep *k, uint32_t n, struct fk_seg *out)
{
    if (n >= k->nsegs)
        return false;
    *out = k->segs[n];
    return out->state == FK_DISK && out->sum == seg_sum(out) && out->seq != 0 &&
           out->seq < k->hdr->seq_next && out->nbytes <= k->seg_size;
}

static void clear_bits(struct flash_keep *k, uint32_t n)
{
    uint64_t *w = k->bits + (size_t)n * k->words;
    for (uint32_t i = 0; i < k->words; i++)
        if (w[i])
            __atomic_store_n(&w[i], 0, __ATOMIC_RELEASE);
}

void flash_keep_open(struct flash_keep *k, uint32_t n, uint64_t seq, uint64_t cas_base,
                     uint32_t bucket)
{
    struct fk_seg *e = &k->segs[n];
    if (seq >= k->hdr->seq_next)
        __atomic_store_n(&k->hdr->seq_next, seq + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&e->state, FK_FREE, __ATOMIC_RELEASE);
    clear_bits(k, n);
    e->seq = seq;
    e->cas_base = cas_base;
    e->nbytes = e->max_exptime = e->nitems = 0;
    e->bucket = bucket;
    e->sum = 0;
    __atomic_store_n(&e->state, FK_FILLING, __ATOMIC_RELEASE);
}

void flash_keep_disk(struct flash_keep *k, uint32_t n, uint32_t nbytes, uint32_t nitems,
                     uint32_t max_exptime)
{
    struct fk_seg *e = &k->segs[n];
    e->nbytes = nbytes;
    e->nitems = nitems;
    e->max_exptime = max_exptime;
    __atomic_store_n(&e->sum, seg_sum(e), __ATOMIC_RELEASE);
    __atomic_store_n(&e->state, FK_DISK, __ATOMIC_RELEASE);
}

void flash_keep_free(struct flash_keep *k, uint32_t n)
{
    __atomic_store_n(&k->segs[n].state, FK_FREE, __ATOMIC_RELEASE);
    clear_bits(k, n);
}

void flash_keep_set(struct flash_keep *k, uint32_t n, uint32_t off)
{
    uint32_t u = off / FLASH_KEEP_UNIT;
    __atomic_fetch_or(&k->bits[(size_t)n * k->words + u / 64], 1ull << (u % 64), __ATOMIC_RELEASE);
}

void flash_keep_clear(struct flash_keep *k, uint32_t n, uint32_t off)
{
    uint32_t u = off / FLASH_KEEP_UNIT;
    __atomic_fetch_and(&k->bits[(size_t)n * k->words + u / 64], ~(1ull << (u % 64)),
                       __ATOMIC_RELEASE);
}

bool flash_keep_test(const struct flash_keep *k, uint32_t n, uint32_t off)
{
    uint32_t u = off / FLASH_KEEP_UNIT;
    if (n >= k->nsegs || u / 64 >= k->words)
        return false;
    return __atomic_load_n(&k->bits[(size_t)n * k->words + u / 64], __ATOMIC_ACQUIRE) >> (u % 64) &
           1;
}

bool flash_keep_bit(const uint64_t *bits, uint32_t words, uint32_t off)
{
    uint32_t u = off / FLASH_KEEP_UNIT;
    return u / 64 < words && (bits[u / 64] >> (u % 64) & 1);
}

void flash_keep_take_bits(struct flash_keep *k, uint32_t n, uint64_t *out)
{
    memcpy(out, k->bits + (size_t)n * k->words, (size_t)k->words * 8);
    clear_bits(k, n);
}

bool flash_keep_any_in(const uint64_t *bits, uint32_t words)
{
    for (uint32_t i = 0; i < words; i++)
        if (bits[i])
            return true;
    return false;
}

void flash_keep_close_clean(struct flash_keep *k)
{
    __atomic_store_n(&k->hdr->clean_sum, clean_sum(k), __ATOMIC_RELEASE);
    __atomic_store_n(&k->hdr->state, FK_CLEAN, __ATOMIC_RELEASE);
}
