/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the -e restore scan (src/store/persist/restore.c): a real
 * memory file, written once by a store holding a few items (half of them
 * hidden by a flush_all, some overwritten or deleted), is patched by
 * the input and restored by store_create. Whatever the bytes, the store must
 * come up (restoring, dropping damaged items, or discarding the file)
 * without a crash, leak or undefined behaviour, serve only items whose key
 * and value lie inside their segment, resume a clock that leaves room in
 * the 29 bits an item's access time keeps, and go on with CAS values that
 * do not wrap. And after a crash, when the damage is one flipped bit
 * anywhere, no key reads a value older than its last acknowledged one
 * (docs/store.md "Restarts": a single damaged bit is always caught).
 *
 * Input: byte 0 bit 0: restore as after a crash (state running) or as after
 * a graceful stop (checksums recomputed over the patched bytes, so the scan
 * runs on them instead of discarding the file); then records of 4 bytes:
 * what to patch, a 16-bit offset in it, and a byte. What to patch (bits
 * 0-2): 0-3 a byte of the header, segment table, journal or data, written
 * (bit 3 clear) or XORed (bit 3 set); 4 an item's layout byte, 5 a byte of
 * an item's CAS (its version), 6 a byte of the header's run state
 * (heartbeat, epoch, CAS ceiling, flush state) or of the flush state's
 * two checksummed copies (offset bit 15), 7 a byte of a segment's
 * cas_base: these four XORed (the offset picks the item or byte).
 *
 *   scripts/fuzz.sh 20 fuzz_restore
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/clock.h"
#include "store/persist/persist.h"
#include "store/store_core.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_path[64];
static char *fuzz_image;
static size_t fuzz_len;
static struct store_options fuzz_opt;

/* Every key the setup wrote, with what it last acknowledged (NULL after a
 * delete), and the file offset of every item the image holds. */
#define FUZZ_KEYS 240
static struct {
    char key[16];
    char *value;
    size_t nvalue;
} fuzz_keys[FUZZ_KEYS];
static size_t fuzz_items[4096], fuzz_nitems;

static void fuzz_key(int i, char *key, size_t len)
{
    if (i < 200)
        snprintf(key, len, "key:%d", i);
    else
        snprintf(key, len, "ver:%d", i - 200);
}

static void fuzz_cleanup(void)
{
    unlink(fuzz_path); /* a 4 MiB file in tmpfs per run otherwise */
}

static int fuzz_setup(void)
{
    clock_setup();
    snprintf(fuzz_path, sizeof(fuzz_path), "/dev/shm/nodelay-fuzz-restore-%d", (int)getpid());
    unlink(fuzz_path);
    atexit(fuzz_cleanup);
    fuzz_opt = (struct store_options){
        .mem_limit = 2u << 20,
        .item_size_max = 64 * 1024,
        .evictions = true,
        .cas_enabled = true,
        .memory_file = fuzz_path,
    };
    struct store *s;
    if (store_create(&s, &fuzz_opt) != 0)
        return -1;
    struct store_ctx *c = store_ctx_create(s);
    char key[32], val[300];
    for (int i = 0; i < 200; i++) {
        if (i == 100) { /* a flush_all hides the first half, later */
            clock_resume(clock_epoch(), clock_now() + 10);
            store_flush(s, clock_now());
        }
        int n = snprintf(key, sizeof(key), "key:%d", i);
        memset(val, 'a' + i % 26, sizeof(val));
        struct store_set_req req = {.mode = STORE_MODE_SET, .flags = (uint32_t)i * 7,
                                    .exptime = i % 3 ? REL_TIME_NEVER : clock_now() + 1000};
        store_store(c, key, (size_t)n, val, (size_t)(i % 290), &req, NULL);
        if (i % 5 == 0)
            store_delete(c, key, (size_t)n, NULL);
        if (i % 7 == 0) {
            struct store_set_req app = {.mode = STORE_MODE_APPEND};
            store_store(c, key, (size_t)n, "tail", 4, &app, NULL);
        }
    }
    /* overwrites of one length, so that one could pass for the other */
    for (int i = 0; i < FUZZ_KEYS - 200; i++) {
        char v[32];
        fuzz_key(200 + i, key, sizeof(key));
        struct store_set_req req = {.mode = STORE_MODE_SET};
        snprintf(v, sizeof(v), "old-%03d", i);
        store_store(c, key, strlen(key), v, strlen(v), &req, NULL);
        snprintf(v, sizeof(v), "new-%03d", i);
        store_store(c, key, strlen(key), v, strlen(v), &req, NULL);
    }
    for (int i = 0; i < FUZZ_KEYS; i++) {
        fuzz_key(i, fuzz_keys[i].key, sizeof(fuzz_keys[i].key));
        struct store_item it;
        struct store_get_req want = {.want_value = true};
        if (store_get(c, fuzz_keys[i].key, strlen(fuzz_keys[i].key), &want, &it) == STORE_OK) {
            fuzz_keys[i].value = malloc(it.nvalue + 1);
            if (!fuzz_keys[i].value)
                return -1;
            memcpy(fuzz_keys[i].value, it.value, it.nvalue);
            fuzz_keys[i].nvalue = it.nvalue;
            store_pin_release(it.pin);
        }
    }
    if (fuzz_keys[1].value || !fuzz_keys[151].value || !fuzz_keys[FUZZ_KEYS - 1].value)
        return -1; /* the flush hid the first half; the rest is there */
    size_t align = (size_t)1 << s->pool.off_shift;
    store_ctx_destroy(&c);
    store_destroy(&s);
    int fd = open(fuzz_path, O_RDONLY);
    if (fd < 0)
        return -1;
    fuzz_len = (size_t)lseek(fd, 0, SEEK_END);
    fuzz_image = malloc(fuzz_len);
    if (!fuzz_image || pread(fd, fuzz_image, fuzz_len, 0) != (ssize_t)fuzz_len) {
        close(fd);
        return -1;
    }
    close(fd);
    /* the items, walked as the restore walks them */
    const struct pm_hdr *h = (const struct pm_hdr *)fuzz_image;
    const struct pm_seg *ps = (const struct pm_seg *)(fuzz_image + 4096);
    for (size_t g = 0; g < h->nsegs; g++) {
        if (!ps[g].seq)
            continue;
        size_t base = h->data_off + g * h->seg_size;
        for (size_t x = 0; x < ps[g].write_off && fuzz_nitems < 4096;) {
            if (!fuzz_image[base + x]) {
                x += align;
                continue;
            }
            struct item_hdr ih;
            item_decode(fuzz_image + base + x, &ih);
            fuzz_items[fuzz_nitems++] = base + x;
            x = (x + item_total(&ih) + align - 1) & ~(align - 1);
        }
    }
    return fuzz_nitems ? 0 : -1;
}

struct fuzz_seen {
    const char *lo, *hi;
    size_t n;
};

static void fuzz_visit(const struct store_item *it, void *arg)
{
    struct fuzz_seen *seen = arg;
    /* every byte served lies inside the mapping */
    if (it->key < seen->lo || it->value + it->nvalue > seen->hi || it->nkey == 0)
        abort();
    seen->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        if (fuzz_setup() != 0)
            abort();
        ready = 1;
    }
    if (size < 1)
        return 0;
    char *img = malloc(fuzz_len);
    if (!img)
        return 0;
    memcpy(img, fuzz_image, fuzz_len);
    struct pm_hdr *h = (struct pm_hdr *)img;
    size_t nsegs = h->nsegs, seg = h->seg_size, data_off = h->data_off; /* before patches */
    size_t regions[4][2] = {
        {0, sizeof(*h)},
        {4096, nsegs * sizeof(struct pm_seg)},
        {4096 + nsegs * sizeof(struct pm_seg), PM_JOURNAL_SLOTS * sizeof(struct pm_journal)},
        {data_off, nsegs * seg},
    };
    size_t run = offsetof(struct pm_hdr, hb_rel);
    size_t nrecs = 0;
    bool one_bit = false;
    for (size_t i = 1; i + 4 <= size; i += 4, nrecs++) {
        size_t off = (size_t)data[i + 1] << 8 | data[i + 2];
        uint8_t v = data[i + 3];
        size_t at;
        bool xor = true;
        switch (data[i] & 7) {
        case 4: /* an item's layout byte */
            at = fuzz_items[off % fuzz_nitems];
            break;
        case 5: { /* a byte of an item's CAS */
            struct item_hdr ih;
            at = fuzz_items[(off >> 3) % fuzz_nitems];
            item_decode(img + at, &ih);
            if (!ih.cas_off)
                continue;
            at += ih.cas_off + (off & ((ih.layout & ITEM_L_CAS64) ? 7 : 3));
            break;
        }
        case 6: /* the run state: heartbeat, epoch, CAS ceiling, flush */
            if (off & 0x8000)
                at = PM_FLUSH_OFF + off % (2 * sizeof(struct pm_flush));
            else
                at = run + off % (offsetof(struct pm_hdr, stop_sum) - run);
            break;
        case 7: /* a segment's cas_base */
            at = 4096 + (off >> 3) % nsegs * sizeof(struct pm_seg) +
                 offsetof(struct pm_seg, cas_base) + (off & 7);
            break;
        default: {
            size_t *r = regions[data[i] & 3];
            at = r[0] + off % r[1];
            xor = data[i] & 8;
        }
        }
        if (xor)
            img[at] ^= (char)v;
        else
            img[at] = (char)v;
        one_bit = xor && v && !(v & (v - 1));
    }
    bool crash = data[0] & 1;
    /* one flipped bit after a crash: the invariant below must hold */
    bool single = crash && nrecs == 1 && one_bit;
    struct pm_seg *ps = (struct pm_seg *)(img + 4096);
    if (crash) {
        h->state = PM_RUNNING;
    } else {
        struct persist pm = {.hdr = h, .segs = ps,
                             .journal = (struct pm_journal *)(ps + nsegs), .nsegs = (uint32_t)nsegs};
        for (size_t i = 0; i < nsegs; i++)
            if (ps[i].seq && ps[i].write_off <= seg)
                ps[i].sum = XXH3_64bits(img + data_off + i * seg, ps[i].write_off);
        h->stop_sum = persist_stop_sum(&pm);
    }
    int fd = open(fuzz_path, O_WRONLY | O_TRUNC);
    if (fd < 0 || pwrite(fd, img, fuzz_len, 0) != (ssize_t)fuzz_len)
        abort();
    close(fd);
    free(img);

    struct store *s;
    clock_setup(); /* a new process's clock, which a restore may resume */
    if (store_create(&s, &fuzz_opt) != 0)
        abort(); /* a file that can be opened always starts, restored or not */
    struct store_ctx *c = store_ctx_create(s);
    uint64_t cursor = 0;
    struct fuzz_seen seen = {0};
    /* the segment data's bounds in the store's own mapping */
    seen.lo = s->pm->data;
    seen.hi = s->pm->data + (size_t)s->pm->nsegs * s->pool.seg_size;
    while (cursor != UINT64_MAX && store_walk(s, &cursor, 64, fuzz_visit, &seen))
        ;
    struct store_item it;
    struct store_get_req want = {.want_value = true};
    for (int i = 0; i < FUZZ_KEYS; i += single ? 1 : 13) {
        const char *key = fuzz_keys[i].key;
        if (store_get(c, key, strlen(key), &want, &it) != STORE_OK)
            continue; /* lost to the damage: allowed */
        /* never a value older than the last one acknowledged */
        if (single && (!fuzz_keys[i].value || it.nvalue != fuzz_keys[i].nvalue ||
                       memcmp(it.value, fuzz_keys[i].value, it.nvalue) != 0))
            abort();
        store_pin_release(it.pin);
    }
    /* the clock leaves the 29 bits room, and CAS goes on without wrapping */
    if (clock_now() >= PM_REL_MAX)
        abort();
    struct store_set_req req = {.mode = STORE_MODE_SET};
    uint64_t c1 = 0, c2 = 0;
    rel_time_t t0 = clock_now();
    if (store_store(c, "after", 5, "x", 1, &req, &c1) != STORE_OK ||
        store_store(c, "after", 5, "y", 1, &req, &c2) != STORE_OK || c1 == 0 || c2 <= c1)
        abort();
    /* read back as written, unless a restored flush_all is due in this
     * very second (it hides what was written at or before it) */
    rel_time_t ol = __atomic_load_n(&s->life.oldest_live, __ATOMIC_RELAXED);
    enum store_status st = store_get(c, "after", 5, &want, &it);
    if (st != STORE_OK && (ol == 0 || ol < t0 || ol > clock_now()))
        abort();
    if (st == STORE_OK) {
        if (it.nvalue != 1 || it.value[0] != 'y' || it.stale || it.win_sent)
            abort();
        store_pin_release(it.pin);
    }
    store_ctx_destroy(&c);
    store_destroy(&s);
    return 0;
}
