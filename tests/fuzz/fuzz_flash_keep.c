/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the flash tier's record in the -e file
 * (src/store/flash/flash_keep.c), what a restart reads before it reads any
 * flash segment: the header's checks, each entry's checksum, the liveness
 * bits. Whatever the bytes, attaching must not read or write outside the
 * range, an entry it hands out must be whole (FK_DISK, its sequence under
 * seq_next, its length within a segment), a range it discards must come
 * back laid out afresh (no entry, no bit), and a restore's taking of the
 * bits must leave none set.
 *
 * Input: byte 0 bit 0: as after a graceful stop (else a crash); bit 1:
 * the rest of the input is the range's first bytes (zero after), else a
 * valid record (segments written, bits set, closed clean) patched by
 * records of 3 bytes: a 16-bit offset into the range, a byte XORed there.
 *
 *   scripts/fuzz.sh 20 fuzz_flash_keep
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/flash/flash_keep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSEGS 4u
#define SEG (64u * 1024)
#define SHAPE 99u

static void valid(char *m, size_t len)
{
    struct flash_keep k;
    const char *why;
    memset(m, 0, len);
    flash_keep_attach(&k, m, len, NSEGS, SEG, SHAPE, false, &why);
    k.hdr->instance = 7;
    for (uint32_t n = 0; n < NSEGS; n++) {
        flash_keep_open(&k, n, n + 1, 100 * n, n % 3);
        for (uint32_t off = 64; off < SEG; off += 64 * (n + 3))
            flash_keep_set(&k, n, off);
        if (n != 2)
            flash_keep_disk(&k, n, SEG - n * 4096, 10 + n, n ? 5000 : 0);
    }
    flash_keep_clear(&k, 1, 64);
    flash_keep_close_clean(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t len = flash_keep_len(NSEGS, SEG);
    /* an exact-size copy, so ASan sees any access past it */
    char *m = malloc(len);
    bool clean = data[0] & 1;
    if (data[0] & 2) {
        memset(m, 0, len);
        memcpy(m, data + 1, size - 1 < len ? size - 1 : len);
    } else {
        valid(m, len);
        for (size_t i = 1; i + 3 <= size; i += 3) {
            size_t off = ((size_t)data[i] | (size_t)data[i + 1] << 8) % len;
            m[off] ^= (char)data[i + 2];
        }
    }
    /* a short range too: the record of a file cut in its flash part */
    size_t use = data[0] & 4 ? len - 4096 : len;
    struct flash_keep k;
    const char *why = NULL;
    enum fk_attach at = flash_keep_attach(&k, m, use, NSEGS, SEG, SHAPE, clean, &why);
    if ((at == FK_DISCARDED) != (why != NULL))
        abort();
    uint64_t *bits = calloc(k.words ? k.words : 1, 8);
    for (uint32_t n = 0; n < NSEGS && use == len; n++) {
        struct fk_seg e;
        bool got = flash_keep_get(&k, n, &e);
        if (got && (at != FK_KEPT || e.state != FK_DISK || !e.seq || e.seq >= k.hdr->seq_next ||
                    e.nbytes > SEG))
            abort();
        if (at != FK_KEPT && (flash_keep_test(&k, n, 64) || got))
            abort();
        flash_keep_take_bits(&k, n, bits);
        for (uint32_t off = 0; off < SEG; off += 64)
            if (flash_keep_test(&k, n, off))
                abort();
        if (at == FK_NEW && flash_keep_any_in(bits, k.words))
            abort();
    }
    free(bits);
    free(m);
    return 0;
}
