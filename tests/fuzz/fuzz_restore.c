/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the -e restore scan (src/store/persist/restore.c): a real
 * memory file, written once by a store holding a few items, is patched by
 * the input and restored by store_create. Whatever the bytes, the store must
 * come up (restoring, dropping damaged items, or discarding the file)
 * without a crash, leak or undefined behaviour, and serve only items whose
 * key and value lie inside their segment.
 *
 * Input: byte 0 bit 0: restore as after a crash (state running) or as after
 * a graceful stop (checksums recomputed over the patched bytes, so the scan
 * runs on them instead of discarding the file); then records of 4 bytes:
 * region (header, segment table, journal, data), a 16-bit offset in it, and
 * the byte to write there.
 *
 *   scripts/fuzz.sh 20 fuzz_restore
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "clock.h"
#include "store/persist/persist.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_path[64];
static char *fuzz_image;
static size_t fuzz_len;
static struct store_options fuzz_opt;

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
    return 0;
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
    for (size_t i = 1; i + 4 <= size; i += 4) {
        size_t *r = regions[data[i] & 3];
        size_t off = ((size_t)data[i + 1] << 8 | data[i + 2]) % r[1];
        img[r[0] + off] = (char)data[i + 3];
    }
    bool crash = data[0] & 1;
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
    for (int i = 0; i < 200; i += 13) {
        char key[32];
        int n = snprintf(key, sizeof(key), "key:%d", i);
        if (store_get(c, key, (size_t)n, &want, &it) == STORE_OK)
            store_pin_release(it.pin);
    }
    struct store_set_req req = {.mode = STORE_MODE_SET};
    store_store(c, "after", 5, "x", 1, &req, NULL);
    store_ctx_destroy(&c);
    store_destroy(&s);
    return 0;
}
