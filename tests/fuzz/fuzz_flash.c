/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the flash segment parser (src/store/flash/
 * flash_layout.c), what a restart and every flash read run on bytes from
 * the device. Whatever the bytes, parsing and walking must stay inside
 * them, and every item it returns must lie inside the header's item bytes
 * and parse again alone at its offset (as a lookup reads it), its length
 * told by its header alone (as a dump's part walk reads it).
 *
 * Input: byte 0 bit 0: take the input as the segment itself; else a valid
 * segment of a few items is written and the input patches it (records of 3
 * bytes: a 16-bit offset and a byte XORed in), so the fuzzer reaches past
 * the checksums; byte 0 bit 1 then seals the patched header with a good
 * checksum, so lengths and counts that lie are read as true.
 *
 *   scripts/fuzz.sh 20 fuzz_flash
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "store/flash/flash_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEG 8192u
#define INSTANCE 42u

static void walk(const char *buf, size_t len)
{
    struct flash_seg_hdr h;
    if (flash_seg_parse_hdr(buf, len, INSTANCE, &h) != FLASH_OK)
        return;
    if (FLASH_HDR_LEN + (size_t)h.nbytes > len)
        abort();
    struct flash_iter it;
    flash_iter_init(&it, buf, &h);
    struct flash_item f;
    uint32_t n = 0;
    while (flash_iter_next(&it, &f) == 1) {
        if (f.off < FLASH_HDR_LEN || (size_t)f.off + f.len > FLASH_HDR_LEN + (size_t)h.nbytes)
            abort();
        if (f.key != buf + f.off + f.h.hlen || f.value != f.key + f.h.nkey)
            abort();
        struct flash_item g;
        if (flash_item_parse(buf + f.off, f.len, flash_seg_seed(h.seq, h.instance), h.cas_base,
                             &g) != FLASH_OK || g.len != f.len)
            abort();
        uint32_t len;
        if (flash_item_span(buf + f.off, f.len, &len) != FLASH_OK || len != f.len)
            abort();
        if (++n > h.nitems)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1) {
        /* an exact-size copy, so ASan sees any read past it */
        char *buf = malloc(size - 1 ? size - 1 : 1);
        memcpy(buf, data + 1, size - 1);
        walk(buf, size - 1);
        for (size_t i = 0; i < size - 1; i++) {
            struct flash_item f;
            flash_item_parse(buf + i, size - 1 - i, 1, 0, &f);
            /* a dump's part walk: the length from the header alone, and
             * never a read past what is there */
            uint32_t len;
            int rc = flash_item_span(buf + i, size - 1 - i, &len);
            if (rc != FLASH_OK && rc != FLASH_E_SHORT && rc != FLASH_E_ITEM)
                abort();
            if (rc == FLASH_OK && len > FLASH_SEG_MAX)
                abort();
        }
        free(buf);
        return 0;
    }
    char *buf = malloc(SEG);
    struct flash_writer w;
    flash_writer_init(&w, buf, SEG, 3, INSTANCE, 100);
    static const char val[300] = {'v'};
    for (uint32_t i = 0; i < 12; i++) {
        char key[8] = {'k', (char)('a' + i)};
        struct flash_item_in in = {.key = key, .nkey = 2 + i % 3, .value = val,
                                   .nvalue = (i * 37) % 300, .flags = i & 1 ? i : 0,
                                   .exptime = i & 2 ? 50 + i : 0, .atime = i,
                                   .cas = i & 4 ? 100 + i : (i & 8 ? 1ull << 40 : 0)};
        flash_writer_add(&w, &in, NULL);
    }
    flash_writer_finish(&w);
    for (size_t i = 1; i + 3 <= size; i += 3) {
        uint16_t off;
        memcpy(&off, data + i, 2);
        buf[off % SEG] ^= (char)data[i + 2];
    }
    if (data[0] & 2) {
        uint32_t sum = (uint32_t)XXH3_64bits(buf, 60); /* flash_layout.h: bytes 0..59 */
        memcpy(buf + 60, &sum, 4);
    }
    walk(buf, SEG);
    free(buf);
    return 0;
}
