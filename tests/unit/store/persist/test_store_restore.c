/* SPDX-License-Identifier: BSD-3-Clause */
/* The -e restore's crash rules on states a kill -9 can leave, made by hand
 * in the file of a cleanly stopped store (docs/store.md "Restarts"):
 *  - W4: an overwrite cut between the new item's commit and the old one's
 *    death is finished by the journal: the new value wins;
 *  - the same cut before the new commit: the old value stays;
 *  - W2: an item laid out but never committed is not served;
 *  - W3: a dead item is not served;
 *  - P5: CAS goes on above every restored one;
 *  - the index build (restore_index.c): every item comes back when the
 *    header's item count, which sizes the table, is far short (the keys'
 *    buckets found again) or short enough that parts spill; two copies of
 *    one key (W5) come back as one, and the other stays dead;
 *  - after a graceful stop, damage in the last segment walked discards
 *    everything, even what earlier segments had filed;
 *  - every header layout the walk decodes (client flags or not, expiry or
 *    not, CAS or not) at value lengths of one to three varint bytes comes
 *    back whole, after a graceful stop and after a crash (the walk reads
 *    one-byte lengths from a table, the rest through item_decode);
 *  - damage after a crash ("Damage" in docs/restarts.md): one bad bit in a
 *    dead item's layout byte or in the flush_all state never serves what
 *    was overwritten, deleted or flushed; two live copies of a key are
 *    decided by CAS (under -C, dropped when they differ); a heartbeat,
 *    clock or CAS ceiling that cannot be right discards the file; a
 *    segment's cas_base past the ceiling drops the segment; a client's CAS
 *    near 2^64 does not wrap the counter; W4 holds for an item in the last
 *    bytes of its segment.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../test_store_helpers.h"
#include "store/persist/persist.h"
#include "store/store_core.h"

#include <pthread.h>

static char path[64];

static void open_pm_mb(struct tstore *t, size_t mb)
{
    clock_setup();
    struct store_options o = {
        .mem_limit = mb << 20,
        .item_size_max = 64 * 1024,
        .evictions = true,
        .cas_enabled = true,
        .memory_file = path,
    };
    tstore_open_opts(t, &o);
}

static void open_pm(struct tstore *t)
{
    open_pm_mb(t, 2);
}

/* The whole file, to edit as a kill would have left it. */
static char *load(size_t *len)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    *len = (size_t)lseek(fd, 0, SEEK_END);
    char *img = malloc(*len);
    assert_non_null(img);
    assert_int_equal(pread(fd, img, *len, 0), (ssize_t)*len);
    close(fd);
    return img;
}

static void save(char *img, size_t len)
{
    struct pm_hdr *h = (struct pm_hdr *)img;
    h->state = PM_RUNNING; /* as after a kill */
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, img, len, 0), (ssize_t)len);
    close(fd);
    free(img);
}

/* The n-th item (0-based) holding this value, as a file offset. */
static size_t find_value(const char *img, size_t len, const char *value, int n)
{
    const struct pm_hdr *h = (const struct pm_hdr *)img;
    size_t vl = strlen(value);
    for (size_t off = h->data_off; off + vl <= len; off++)
        if (memcmp(img + off, value, vl) == 0 && n-- == 0)
            return off;
    fail_msg("value %s not found", value);
    return 0;
}

static size_t item_start(const char *img, size_t voff, const char *key)
{
    size_t k = strlen(key);
    size_t koff = voff - k;
    assert_memory_equal(img + koff, key, k);
    /* the header ends at the key: try each header length */
    for (size_t hl = 7; hl <= ITEM_HDR_MAX; hl++) {
        const char *p = img + koff - hl;
        struct item_hdr ih;
        if (!((uint8_t)p[0] & ITEM_L_SUM)) /* every -e item has one */
            continue;
        item_decode(p, &ih);
        if (ih.hlen == hl && ih.nkey == k)
            return koff - hl;
    }
    fail_msg("no header before key %s", key);
    return 0;
}

static uint64_t loc_of(const char *img, size_t off)
{
    const struct pm_hdr *h = (const struct pm_hdr *)img;
    size_t rel = off - h->data_off;
    return pm_loc((uint32_t)(rel / h->seg_size), (uint32_t)(rel % h->seg_size));
}

static void setup_two_versions(uint64_t *cas2)
{
    struct tstore t;
    unlink(path);
    open_pm(&t);
    assert_int_equal(tset(&t, "k", "version-one", STORE_MODE_SET, 1, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "k", "version-two", STORE_MODE_SET, 2, 0, cas2), STORE_OK);
    assert_int_equal(tset(&t, "gone", "deleted-value", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(store_delete(t.c, "gone", 4, NULL), STORE_OK);
    tstore_close(&t);
}

static void expect(const char *key, const char *want)
{
    struct tstore t;
    open_pm(&t);
    char buf[64];
    struct store_item it;
    enum store_status st = tget(&t, key, buf, sizeof(buf), &it);
    if (want) {
        assert_int_equal(st, STORE_OK);
        assert_string_equal(buf, want);
    } else {
        assert_int_equal(st, STORE_MISS);
    }
    tstore_close(&t);
}

static void test_journal_finishes_overwrite(void **state)
{
    (void)state;
    uint64_t cas2;
    setup_two_versions(&cas2);
    size_t len;
    char *img = load(&len);
    size_t o1 = item_start(img, find_value(img, len, "version-one", 0), "k");
    size_t o2 = item_start(img, find_value(img, len, "version-two", 0), "k");
    /* the kill came after the new commit, before the old one's death */
    img[o1] = (char)((img[o1] & ~ITEM_L_STATE) | ITEM_L_COMMIT);
    struct pm_journal *j = (struct pm_journal *)(img + 4096 +
                                                 ((struct pm_hdr *)img)->nsegs * sizeof(struct pm_seg));
    j[5].old_loc = loc_of(img, o1);
    j[5].new_loc = loc_of(img, o2);
    save(img, len);
    expect("k", "version-two");
    expect("gone", NULL);
}

static void test_uncommitted_overwrite_keeps_old(void **state)
{
    (void)state;
    uint64_t cas2;
    setup_two_versions(&cas2);
    size_t len;
    char *img = load(&len);
    size_t o1 = item_start(img, find_value(img, len, "version-one", 0), "k");
    size_t o2 = item_start(img, find_value(img, len, "version-two", 0), "k");
    /* the kill came before the new commit: journal written, old alive */
    img[o1] = (char)((img[o1] & ~ITEM_L_STATE) | ITEM_L_COMMIT);
    img[o2] &= (char)~ITEM_L_COMMIT;
    struct pm_journal *j = (struct pm_journal *)(img + 4096 +
                                                 ((struct pm_hdr *)img)->nsegs * sizeof(struct pm_seg));
    j[0].old_loc = loc_of(img, o1);
    j[0].new_loc = loc_of(img, o2);
    save(img, len);
    expect("k", "version-one");
}

static void test_cas_continues_above_restored(void **state)
{
    (void)state;
    uint64_t cas2;
    setup_two_versions(&cas2);
    struct tstore t;
    open_pm(&t);
    uint64_t cas3;
    assert_int_equal(tset(&t, "new", "x", STORE_MODE_SET, 0, 0, &cas3), STORE_OK);
    assert_true(cas3 > cas2);
    char buf[64];
    struct store_item it;
    assert_int_equal(tget(&t, "k", buf, sizeof(buf), &it), STORE_OK);
    assert_int_equal(it.cas, cas2);
    assert_int_equal(it.flags, 2);
    tstore_close(&t);
}

static uint64_t stat_of(struct tstore *t, uint64_t *restored)
{
    struct store_stats st;
    store_stats(t->s, &st);
    if (restored)
        *restored = st.restored_items;
    return st.curr_items;
}

/* Store n keys, stop cleanly, then leave the file as a kill would with
 * the header's item count set to `count`. */
static void fill_and_miscount(int n, uint64_t count)
{
    struct tstore t;
    unlink(path);
    open_pm_mb(&t, 16);
    char k[32], v[32];
    for (int i = 0; i < n; i++) {
        snprintf(k, sizeof(k), "key:%d", i);
        snprintf(v, sizeof(v), "v%d", i * 7);
        assert_int_equal(tset(&t, k, v, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    assert_int_equal(stat_of(&t, NULL), n);
    tstore_close(&t);
    size_t len;
    char *img = load(&len);
    assert_int_equal(((struct pm_hdr *)img)->items, n);
    ((struct pm_hdr *)img)->items = count;
    save(img, len);
}

static void expect_all(int n)
{
    struct tstore t;
    open_pm_mb(&t, 16);
    uint64_t restored;
    assert_int_equal(stat_of(&t, &restored), n);
    assert_int_equal(restored, n);
    char k[32], v[32], buf[64];
    for (int i = 0; i < n; i++) {
        snprintf(k, sizeof(k), "key:%d", i);
        snprintf(v, sizeof(v), "v%d", i * 7);
        assert_int_equal(tget(&t, k, buf, sizeof(buf), NULL), STORE_OK);
        assert_string_equal(buf, v);
    }
    tstore_close(&t);
}

static void test_count_far_short_rebuckets_every_key(void **state)
{
    (void)state;
    /* the table at -o hashpower's size: 250 K items in 16 K buckets, more
     * than twice what it takes before growing */
    fill_and_miscount(250000, 0);
    expect_all(250000);
}

static void test_count_short_spills_and_restores_all(void **state)
{
    (void)state;
    /* sized for 90 K: 16 K buckets again, now 11.6 items a bucket, under
     * twice the growth point; every part outgrows its share of its memory */
    fill_and_miscount(190000, 90000);
    expect_all(190000);
}

static void test_two_copies_of_a_key_come_back_as_one(void **state)
{
    (void)state;
    struct tstore t;
    unlink(path);
    open_pm(&t);
    assert_int_equal(tset(&t, "twin", "same-version", STORE_MODE_SET, 9, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "other", "x", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    tstore_close(&t);
    /* a copy of the item at the end of its segment, as eviction's carry
     * leaves it when killed between the copy and the source's death */
    size_t len;
    char *img = load(&len);
    struct pm_hdr *h = (struct pm_hdr *)img;
    size_t o = item_start(img, find_value(img, len, "same-version", 0), "twin");
    struct item_hdr ih;
    item_decode(img + o, &ih);
    size_t rel = o - h->data_off;
    struct pm_seg *ps = (struct pm_seg *)(img + 4096) + rel / h->seg_size;
    char *end = img + h->data_off + (rel / h->seg_size) * h->seg_size + ps->write_off;
    memcpy(end, img + o, item_total(&ih));
    ps->write_off += item_total(&ih);
    save(img, len);

    open_pm(&t);
    char buf[64];
    struct store_item it;
    assert_int_equal(tget(&t, "twin", buf, sizeof(buf), &it), STORE_OK);
    assert_string_equal(buf, "same-version");
    assert_int_equal(it.flags, 9);
    assert_int_equal(stat_of(&t, NULL), 2);
    assert_int_equal(store_delete(t.c, "twin", 4, NULL), STORE_OK);
    tstore_close(&t);
    img = load(&len);
    save(img, len); /* and killed: neither copy may come back */
    expect("twin", NULL);
    expect("other", "x");
}

static void test_damage_late_in_a_clean_file_discards_all(void **state)
{
    (void)state;
    struct tstore t;
    unlink(path);
    open_pm_mb(&t, 16);
    char k[32], v[32], buf[64];
    for (int i = 0; i < 190000; i++) {
        snprintf(k, sizeof(k), "key:%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        assert_int_equal(tset(&t, k, v, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    tstore_close(&t);
    size_t len;
    char *img = load(&len);
    struct pm_hdr *h = (struct pm_hdr *)img;
    struct pm_seg *ps = (struct pm_seg *)(img + 4096);
    uint32_t last = 0, used = 0;
    for (uint32_t i = 0; i < h->nsegs; i++)
        if (ps[i].seq) {
            used++;
            if (ps[i].seq > ps[last].seq || !ps[last].seq)
                last = i;
        }
    assert_true(used >= 3);
    img[h->data_off + (size_t)last * h->seg_size + ps[last].write_off / 2] ^= 0x20;
    int fd = open(path, O_WRONLY); /* as it is: still marked clean */
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, img, len, 0), (ssize_t)len);
    close(fd);
    free(img);

    open_pm_mb(&t, 16);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.restore_mode, STORE_RESTORE_DISCARDED);
    assert_int_equal(st.curr_items, 0);
    assert_int_equal(st.restored_items, 0);
    assert_int_equal(tget(&t, "key:0", buf, sizeof(buf), NULL), STORE_MISS);
    for (int i = 0; i < 1000; i++) { /* and the index works as an empty one */
        snprintf(k, sizeof(k), "new:%d", i);
        assert_int_equal(tset(&t, k, "n", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    assert_int_equal(tget(&t, "new:999", buf, sizeof(buf), NULL), STORE_OK);
    store_stats(t.s, &st);
    assert_int_equal(st.curr_items, 1000);
    tstore_close(&t);
}

/* One damaged bit anywhere in the layout byte of an overwritten or a
 * deleted item, after a crash: the old value never comes back (a dead
 * item's state differs from a live one's in two bits; the other bits move
 * the checksum or end the walk). */
static void test_one_bad_bit_in_a_dead_header_never_resurrects(void **state)
{
    (void)state;
    for (int victim = 0; victim < 2; victim++)
        for (int bit = 0; bit < 8; bit++) {
            uint64_t cas2;
            setup_two_versions(&cas2);
            size_t len;
            char *img = load(&len);
            size_t o = victim ? item_start(img, find_value(img, len, "deleted-value", 0), "gone")
                              : item_start(img, find_value(img, len, "version-one", 0), "k");
            img[o] ^= (char)(1u << bit);
            save(img, len);
            struct tstore t;
            open_pm(&t);
            char buf[64];
            struct store_item it;
            if (tget(&t, "k", buf, sizeof(buf), &it) == STORE_OK) {
                assert_string_equal(buf, "version-two");
                assert_int_equal(it.cas, cas2);
            }
            assert_int_equal(tget(&t, "gone", buf, sizeof(buf), NULL), STORE_MISS);
            tstore_close(&t);
        }
}

static size_t old_and_new_live(char **img, size_t *len, size_t *o2)
{
    *img = load(len);
    size_t o1 = item_start(*img, find_value(*img, *len, "version-one", 0), "k");
    *o2 = item_start(*img, find_value(*img, *len, "version-two", 0), "k");
    /* both live, as two damaged bits (or a lost journal entry) leave them */
    (*img)[o1] = (char)(((*img)[o1] & ~ITEM_L_STATE) | ITEM_L_COMMIT);
    return o1;
}

/* Two live copies of a key are decided by their CAS, wherever they lie. */
static void test_two_live_versions_the_higher_cas_wins(void **state)
{
    (void)state;
    uint64_t cas2;
    setup_two_versions(&cas2);
    size_t len, o2;
    char *img;
    old_and_new_live(&img, &len, &o2);
    save(img, len);
    expect("k", "version-two"); /* the newer is the later in the file */

    setup_two_versions(&cas2);
    size_t o1 = old_and_new_live(&img, &len, &o2);
    struct item_hdr h1, h2;
    item_decode(img + o1, &h1);
    item_decode(img + o2, &h2);
    /* the older one with the higher CAS instead: it wins */
    /* (deltas of one width from one segment's base, little-endian) */
    unsigned w = item_cas_bytes(h2.layout);
    assert_int_equal(item_cas_bytes(h1.layout), w);
    assert_true(w == 2 || w == 4);
    uint32_t d = 0;
    memcpy(&d, img + o2 + h2.cas_off, w);
    d++;
    memcpy(img + o1 + h1.cas_off, &d, w);
    /* (its checksum does not cover the CAS) */
    save(img, len);
    expect("k", "version-one");
}

/* Under -C there is no version: two live copies that differ are both
 * dropped, never a guess; two alike (eviction's copy) come back as one. */
static void test_without_cas_differing_live_copies_are_dropped(void **state)
{
    (void)state;
    struct tstore t;
    unlink(path);
    clock_setup();
    struct store_options o = {.mem_limit = 2 << 20, .item_size_max = 64 * 1024,
                              .evictions = true, .cas_enabled = false, .memory_file = path};
    tstore_open_opts(&t, &o);
    assert_int_equal(tset(&t, "k", "version-one", STORE_MODE_SET, 1, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "k", "version-two", STORE_MODE_SET, 2, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "k2", "same", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "k2", "same", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "other", "x", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    tstore_close(&t);
    size_t len, o2;
    char *img;
    old_and_new_live(&img, &len, &o2);
    size_t s1 = item_start(img, find_value(img, len, "same", 0), "k2");
    img[s1] = (char)((img[s1] & ~ITEM_L_STATE) | ITEM_L_COMMIT);
    save(img, len);
    tstore_open_opts(&t, &o);
    char buf[64];
    assert_int_equal(tget(&t, "k", buf, sizeof(buf), NULL), STORE_MISS);
    assert_int_equal(tget(&t, "k2", buf, sizeof(buf), NULL), STORE_OK);
    assert_string_equal(buf, "same");
    assert_int_equal(tget(&t, "other", buf, sizeof(buf), NULL), STORE_OK);
    assert_int_equal(stat_of(&t, NULL), 2);
    tstore_close(&t);
    tstore_open_opts(&t, &o); /* and neither comes back at the next start */
    assert_int_equal(tget(&t, "k", buf, sizeof(buf), NULL), STORE_MISS);
    tstore_close(&t);
}

/* A crash's file with its run state patched; the restore mode it gets. */
static enum store_restore_mode restore_patched(void (*patch)(struct pm_hdr *))
{
    uint64_t cas2;
    setup_two_versions(&cas2);
    size_t len;
    char *img = load(&len);
    patch((struct pm_hdr *)img);
    save(img, len);
    struct tstore t;
    open_pm(&t);
    struct store_stats st;
    store_stats(t.s, &st);
    /* whatever was restored, the clock leaves room for the items written
     * from now on, and they read back as written */
    assert_true(clock_now() < PM_REL_MAX);
    uint64_t c1, c2;
    assert_int_equal(tset(&t, "new", "n1", STORE_MODE_SET, 0, clock_now() + 100, &c1), STORE_OK);
    assert_int_equal(tset(&t, "new", "n2", STORE_MODE_SET, 0, 0, &c2), STORE_OK);
    assert_true(c1 > 0 && c2 > c1 && c2 < PM_CAS_MAX);
    char buf[64];
    struct store_item it;
    assert_int_equal(tget(&t, "new", buf, sizeof(buf), &it), STORE_OK);
    assert_string_equal(buf, "n2");
    assert_false(it.stale);
    assert_false(it.win_sent);
    if (st.restore_mode == STORE_RESTORE_CRASH) {
        assert_int_equal(tget(&t, "k", buf, sizeof(buf), &it), STORE_OK);
        assert_string_equal(buf, "version-two");
    } else {
        assert_int_equal(tget(&t, "k", buf, sizeof(buf), NULL), STORE_MISS);
    }
    tstore_close(&t);
    return st.restore_mode;
}

static void hb_20_years_ago(struct pm_hdr *h) { h->hb_unix = (int64_t)time(NULL) - 20 * 365 * 86400ll; }
static void hb_int64_min(struct pm_hdr *h) { h->hb_unix = INT64_MIN; }
static void hb_2_days_ahead(struct pm_hdr *h) { h->hb_unix = (int64_t)time(NULL) + 2 * 86400; }
static void hb_rel_huge(struct pm_hdr *h) { h->hb_rel = 0xfffffff0u; }
static void epoch_int64_min(struct pm_hdr *h) { h->epoch = INT64_MIN; }
static void epoch_ahead(struct pm_hdr *h) { h->epoch = (int64_t)time(NULL) + 86400; }
static void hb_1_year_ago(struct pm_hdr *h)
{
    h->hb_unix -= 365 * 86400ll; /* a run that ended a year ago */
    h->epoch -= 365 * 86400ll;
}
static void ceiling_near_2_64(struct pm_hdr *h) { h->cas_ceiling = UINT64_MAX - 2; }
static void floor_at_ceiling(struct pm_hdr *h)
{
    struct pm_flush *f = (struct pm_flush *)((char *)h + PM_FLUSH_OFF);
    for (int i = 0; i < 2; i++) {
        f[i].oldest_cas = h->cas_ceiling;
        f[i].sum = persist_flush_sum(&f[i]);
    }
}
static void no_patch(struct pm_hdr *h) { (void)h; }
static void aligned_2(struct pm_hdr *h) { h->off_shift = 1; }

/* W4 for an item in the last bytes of its segment (less than a whole
 * header's worth before the end): the journal still finishes the
 * overwrite. Under -C, where no CAS could decide instead. */
static void test_journal_finishes_overwrite_at_a_segment_end(void **state)
{
    (void)state;
    struct tstore t;
    unlink(path);
    clock_setup();
    struct store_options o = {.mem_limit = 2 << 20, .item_size_max = 64 * 1024,
                              .evictions = true, .cas_enabled = false, .memory_file = path};
    tstore_open_opts(&t, &o);
    assert_int_equal(tset(&t, "k", "1", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    assert_int_equal(tset(&t, "k", "2", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    size_t align = (size_t)1 << t.s->pool.off_shift;
    tstore_close(&t);
    size_t len;
    char *img = load(&len);
    struct pm_hdr *h = (struct pm_hdr *)img;
    size_t o1 = item_start(img, find_value(img, len, "k1", 0) + 1, "k");
    size_t o2 = item_start(img, find_value(img, len, "k2", 0) + 1, "k");
    struct item_hdr ih;
    item_decode(img + o2, &ih);
    size_t rel = o2 - h->data_off, seg = rel / h->seg_size;
    struct pm_seg *ps = (struct pm_seg *)(img + 4096) + seg;
    /* the new item's bytes at the segment's very end, committed there; the
     * kill came before the old one's death */
    size_t tail = (h->seg_size - item_total(&ih)) & ~(align - 1);
    assert_true(h->seg_size - tail < ITEM_HDR_MAX);
    char *end = img + h->data_off + seg * h->seg_size + tail;
    memcpy(end, img + o2, item_total(&ih));
    img[o2] = (char)((img[o2] & ~ITEM_L_STATE) | ITEM_L_DEAD);
    img[o1] = (char)((img[o1] & ~ITEM_L_STATE) | ITEM_L_COMMIT);
    ps->write_off = (uint32_t)h->seg_size;
    struct pm_journal *j = (struct pm_journal *)(img + 4096 + h->nsegs * sizeof(struct pm_seg));
    j[3].old_loc = loc_of(img, o1);
    j[3].new_loc = pm_loc((uint32_t)seg, (uint32_t)tail);
    save(img, len);
    tstore_open_opts(&t, &o);
    char buf[64];
    assert_int_equal(tget(&t, "k", buf, sizeof(buf), NULL), STORE_OK);
    assert_string_equal(buf, "2");
    tstore_close(&t);
}

/* A heartbeat or clock that cannot be right discards the file; one that
 * can (down a year) restores with the year counted. */
static void test_impossible_clock_discards_the_file(void **state)
{
    (void)state;
    assert_int_equal(restore_patched(hb_20_years_ago), STORE_RESTORE_DISCARDED);
    assert_int_equal(restore_patched(hb_int64_min), STORE_RESTORE_DISCARDED);
    assert_int_equal(restore_patched(hb_2_days_ahead), STORE_RESTORE_DISCARDED);
    assert_int_equal(restore_patched(hb_rel_huge), STORE_RESTORE_DISCARDED);
    assert_int_equal(restore_patched(epoch_int64_min), STORE_RESTORE_DISCARDED);
    assert_int_equal(restore_patched(epoch_ahead), STORE_RESTORE_DISCARDED);
    assert_int_equal(restore_patched(no_patch), STORE_RESTORE_CRASH);
    assert_int_equal(restore_patched(hb_1_year_ago), STORE_RESTORE_CRASH);
}

/* A file whose items are aligned other than the store aligns them (with
 * -I above 64 MiB, 128 MiB segments, items are 2-byte aligned, as the
 * index's 26-bit offset counts 2-byte units; a file of byte-aligned ones
 * was laid out by a build whose offsets were wider) cannot be walked:
 * discarded. */
static void test_other_item_alignment_discards_the_file(void **state)
{
    (void)state;
    assert_int_equal(restore_patched(aligned_2), STORE_RESTORE_DISCARDED);
}

/* A CAS ceiling (or flush floor) the counter cannot have reached is
 * damage: the file is discarded, and CAS never wraps. */
static void test_impossible_cas_ceiling_discards_the_file(void **state)
{
    (void)state;
    assert_int_equal(restore_patched(ceiling_near_2_64), STORE_RESTORE_DISCARDED);
    assert_int_equal(restore_patched(floor_at_ceiling), STORE_RESTORE_DISCARDED);
}

/* A flush_all in the file, and what a damaged bit of its state does: the
 * flushed item never comes back. where: 0 none, 1 the header's
 * oldest_live, 2 the first copy's, 3 both copies'. */
static enum store_restore_mode flush_then_damage(int where)
{
    struct tstore t;
    unlink(path);
    open_pm(&t);
    assert_int_equal(tset(&t, "flushed", "before", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    clock_resume(clock_epoch(), clock_now() + 10); /* the flush comes later */
    store_flush(t.s, clock_now());
    assert_int_equal(tset(&t, "kept", "after", STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    tstore_close(&t);
    size_t len;
    char *img = load(&len);
    struct pm_hdr *h = (struct pm_hdr *)img;
    struct pm_flush *f = (struct pm_flush *)(img + PM_FLUSH_OFF);
    if (where == 1)
        h->oldest_live ^= 1u << 20; /* a flush far ahead: not yet in force */
    if (where >= 2)
        f[0].oldest_live ^= 1u << 20;
    if (where == 3)
        f[1].oldest_live ^= 1u << 20;
    save(img, len);
    open_pm(&t);
    char buf[64];
    assert_int_equal(tget(&t, "flushed", buf, sizeof(buf), NULL), STORE_MISS);
    struct store_stats st;
    store_stats(t.s, &st);
    if (st.restore_mode == STORE_RESTORE_CRASH) {
        assert_int_equal(tget(&t, "kept", buf, sizeof(buf), NULL), STORE_OK);
        assert_string_equal(buf, "after");
    }
    tstore_close(&t);
    return st.restore_mode;
}

/* The flush_all state is kept twice with checksums: one damaged bit in it
 * never brings back what the flush hid; both copies damaged discard. */
static void test_one_bad_bit_in_the_flush_state_never_unflushes(void **state)
{
    (void)state;
    assert_int_equal(flush_then_damage(0), STORE_RESTORE_CRASH);
    assert_int_equal(flush_then_damage(1), STORE_RESTORE_CRASH);
    assert_int_equal(flush_then_damage(2), STORE_RESTORE_CRASH);
    assert_int_equal(flush_then_damage(3), STORE_RESTORE_DISCARDED);
}

/* Two flush_all at once: the -e file's flush state and memory's end
 * holding the same flush, whichever came last (they once could end with
 * different ones, and a kill then brought back what memory had hidden).
 * The race's window is a few instructions: this guards the invariant, and
 * seldom catches the unlocked code (0 of 3 runs did). */
struct flusher {
    struct store *s;
    rel_time_t when;
    pthread_barrier_t *go;
};

static void *flush_once(void *arg)
{
    struct flusher *f = arg;
    pthread_barrier_wait(f->go);
    store_flush(f->s, f->when);
    return NULL;
}

static void test_concurrent_flushes_leave_file_and_memory_alike(void **state)
{
    (void)state;
    struct tstore t;
    unlink(path);
    open_pm(&t);
    const struct pm_flush *f =
        (const struct pm_flush *)((const char *)t.s->pm->hdr + PM_FLUSH_OFF);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    for (int round = 0; round < 1000; round++) {
        rel_time_t now = clock_now();
        struct flusher a = {t.s, now + 1000 + (rel_time_t)round, &go};
        struct flusher b = {t.s, now + 100000 + (rel_time_t)round, &go};
        pthread_t ta, tb;
        pthread_create(&ta, NULL, flush_once, &a);
        pthread_create(&tb, NULL, flush_once, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        rel_time_t mem = __atomic_load_n(&t.s->life.oldest_live, __ATOMIC_ACQUIRE);
        assert_int_equal(f[0].oldest_live, mem);
        assert_int_equal(f[1].oldest_live, mem);
    }
    pthread_barrier_destroy(&go);
    tstore_close(&t);
}

/* A client's own CAS near 2^64 (ms E) comes back as it is, and the
 * counter does not wrap to reach past it. */
static void test_client_cas_near_2_64_does_not_wrap_the_counter(void **state)
{
    (void)state;
    struct tstore t;
    unlink(path);
    open_pm(&t);
    struct store_set_req r = {.mode = STORE_MODE_SET, .cas_new = UINT64_MAX - 1};
    assert_int_equal(store_store(t.c, "e", 1, "chosen", 6, &r, NULL), STORE_OK);
    tstore_close(&t);
    size_t len;
    char *img = load(&len);
    save(img, len);
    open_pm(&t);
    char buf[64];
    struct store_item it;
    assert_int_equal(tget(&t, "e", buf, sizeof(buf), &it), STORE_OK);
    assert_int_equal(it.cas, UINT64_MAX - 1);
    uint64_t c1, c2;
    assert_int_equal(tset(&t, "a", "1", STORE_MODE_SET, 0, 0, &c1), STORE_OK);
    assert_int_equal(tset(&t, "b", "2", STORE_MODE_SET, 0, 0, &c2), STORE_OK);
    assert_true(c1 > 0 && c2 > c1 && c2 < PM_CAS_MAX);
    tstore_close(&t);
}

/* A segment whose cas_base lies past the CAS ceiling was damaged: its
 * items would come back with CAS values never handed out (and decide
 * between copies by them). */
static void test_segment_cas_base_past_the_ceiling_is_dropped(void **state)
{
    (void)state;
    uint64_t cas2;
    setup_two_versions(&cas2);
    size_t len;
    char *img = load(&len);
    struct pm_hdr *h = (struct pm_hdr *)img;
    size_t rel = find_value(img, len, "version-two", 0) - h->data_off;
    struct pm_seg *ps = (struct pm_seg *)(img + 4096) + rel / h->seg_size;
    ps->cas_base ^= (uint64_t)1 << 40;
    save(img, len);
    struct tstore t;
    open_pm(&t);
    char buf[64];
    struct store_item it;
    if (tget(&t, "k", buf, sizeof(buf), &it) == STORE_OK)
        assert_int_equal(it.cas, cas2);
    struct store_stats st;
    store_stats(t.s, &st);
    assert_true(st.restore_discarded_corrupt >= 1);
    tstore_close(&t);
}

/* Value lengths around the varint's byte boundaries (127 | 128, 16383 |
 * 16384), and a value of n bytes that says which key it is. */
static const uint32_t layout_lens[] = {0, 1, 100, 127, 128, 300, 16383, 16384, 20000};
#define NLAYOUT_LENS (sizeof(layout_lens) / sizeof(layout_lens[0]))

static void layout_value(char *v, uint32_t n, unsigned i)
{
    for (uint32_t k = 0; k < n; k++)
        v[k] = (char)('a' + (k * 7 + i) % 26);
    v[n] = 0;
}

static void layouts_round_trip(bool cas, bool crash)
{
    static char v[20001], buf[20001];
    struct tstore t;
    unlink(path);
    clock_setup();
    struct store_options o = {.mem_limit = (size_t)4 << 20, .item_size_max = 64 * 1024,
                              .evictions = true, .cas_enabled = cas, .memory_file = path};
    tstore_open_opts(&t, &o);
    rel_time_t exp = clock_now() + 100000;
    uint64_t cas_of[2][2][NLAYOUT_LENS];
    char k[32];
    for (unsigned f = 0; f < 2; f++)
        for (unsigned e = 0; e < 2; e++)
            for (unsigned i = 0; i < NLAYOUT_LENS; i++) {
                snprintf(k, sizeof(k), "lay:%u:%u:%u", f, e, i);
                layout_value(v, layout_lens[i], i);
                assert_int_equal(tset(&t, k, v, STORE_MODE_SET, f ? 0xfeed0001u : 0,
                                      e ? exp : REL_TIME_NEVER, &cas_of[f][e][i]),
                                 STORE_OK);
            }
    tstore_close(&t);
    if (crash) {
        size_t len;
        char *img = load(&len); /* saved as a kill leaves it */
        save(img, len);
    }
    tstore_open_opts(&t, &o);
    uint64_t restored;
    assert_int_equal(stat_of(&t, &restored), 2 * 2 * NLAYOUT_LENS);
    assert_int_equal(restored, 2 * 2 * NLAYOUT_LENS);
    for (unsigned f = 0; f < 2; f++)
        for (unsigned e = 0; e < 2; e++)
            for (unsigned i = 0; i < NLAYOUT_LENS; i++) {
                struct store_item it;
                snprintf(k, sizeof(k), "lay:%u:%u:%u", f, e, i);
                layout_value(v, layout_lens[i], i);
                assert_int_equal(tget(&t, k, buf, sizeof(buf), &it), STORE_OK);
                assert_int_equal(it.nvalue, layout_lens[i]);
                assert_string_equal(buf, v);
                assert_int_equal(it.flags, f ? 0xfeed0001u : 0);
                assert_int_equal(it.exptime, e ? exp : REL_TIME_NEVER);
                assert_int_equal(it.cas, cas_of[f][e][i]);
                if (cas)
                    assert_true(it.cas != 0);
            }
    tstore_close(&t);
}

static void test_every_layout_comes_back_after_a_graceful_stop(void **state)
{
    (void)state;
    layouts_round_trip(true, false);
    layouts_round_trip(false, false);
}

static void test_every_layout_comes_back_after_a_crash(void **state)
{
    (void)state;
    layouts_round_trip(true, true);
    layouts_round_trip(false, true);
}

/* A spent open segment recycled by the next write (seg_spent: its items
 * all deleted) keeps W3 and W7: after a graceful stop and after a crash,
 * exactly the items written after the recycle come back. */
static void recycled_open_segment(bool crash)
{
    struct tstore t;
    unlink(path);
    open_pm_mb(&t, 4);
    static char val[60001];
    char key[32];
    memset(val, 'o', sizeof val - 1);
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "old%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "old%d", i);
        assert_int_equal(store_delete(t.c, key, strlen(key), NULL), STORE_OK);
    }
    memset(val, 'n', sizeof val - 1);
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "new%d", i);
        assert_int_equal(tset(&t, key, val, STORE_MODE_SET, 0, 0, NULL), STORE_OK);
    }
    struct store_stats st;
    store_stats(t.s, &st);
    assert_int_equal(st.seg_used, 1); /* the new items took the old ones' room */
    tstore_close(&t);
    if (crash) {
        size_t len;
        char *img = load(&len);
        save(img, len); /* the same bytes, marked as a kill leaves them */
    }
    open_pm_mb(&t, 4);
    store_stats(t.s, &st);
    assert_int_equal(st.restore_mode, crash ? STORE_RESTORE_CRASH : STORE_RESTORE_GRACEFUL);
    assert_int_equal(st.curr_items, 10);
    static char buf[60001];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "old%d", i);
        assert_int_equal(tget(&t, key, buf, sizeof buf, NULL), STORE_MISS);
    }
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "new%d", i);
        assert_int_equal(tget(&t, key, buf, sizeof buf, NULL), STORE_OK);
        assert_string_equal(buf, val);
    }
    tstore_close(&t);
}

static void test_recycled_open_segment_after_a_graceful_stop(void **state)
{
    (void)state;
    recycled_open_segment(false);
}

static void test_recycled_open_segment_after_a_crash(void **state)
{
    (void)state;
    recycled_open_segment(true);
}

int main(void)
{
    snprintf(path, sizeof(path), "/dev/shm/nodelay-unit-restore-%d", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_journal_finishes_overwrite),
        cmocka_unit_test(test_uncommitted_overwrite_keeps_old),
        cmocka_unit_test(test_cas_continues_above_restored),
        cmocka_unit_test(test_count_far_short_rebuckets_every_key),
        cmocka_unit_test(test_count_short_spills_and_restores_all),
        cmocka_unit_test(test_two_copies_of_a_key_come_back_as_one),
        cmocka_unit_test(test_damage_late_in_a_clean_file_discards_all),
        cmocka_unit_test(test_every_layout_comes_back_after_a_graceful_stop),
        cmocka_unit_test(test_every_layout_comes_back_after_a_crash),
        cmocka_unit_test(test_concurrent_flushes_leave_file_and_memory_alike),
        cmocka_unit_test(test_one_bad_bit_in_a_dead_header_never_resurrects),
        cmocka_unit_test(test_two_live_versions_the_higher_cas_wins),
        cmocka_unit_test(test_without_cas_differing_live_copies_are_dropped),
        cmocka_unit_test(test_impossible_clock_discards_the_file),
        cmocka_unit_test(test_other_item_alignment_discards_the_file),
        cmocka_unit_test(test_impossible_cas_ceiling_discards_the_file),
        cmocka_unit_test(test_client_cas_near_2_64_does_not_wrap_the_counter),
        cmocka_unit_test(test_segment_cas_base_past_the_ceiling_is_dropped),
        cmocka_unit_test(test_one_bad_bit_in_the_flush_state_never_unflushes),
        cmocka_unit_test(test_journal_finishes_overwrite_at_a_segment_end),
        cmocka_unit_test(test_recycled_open_segment_after_a_graceful_stop),
        cmocka_unit_test(test_recycled_open_segment_after_a_crash),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    return rc;
}
