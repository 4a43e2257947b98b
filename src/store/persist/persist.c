/* SPDX-License-Identifier: BSD-3-Clause */
/* The -e memory file: opening and checking it, the hooks that keep it
 * restorable while the server runs, and the clean mark of a graceful stop.
 * The restore scan itself is restore.c; the format is persist.h; the design
 * and what each write must do is docs/store.md "Restarts". */
#define _GNU_SOURCE /* MADV_REMOVE */
#include "store/persist/persist.h"
#include "store/persist/split.h"
#include "store/seg_counts.h"
#include "store/store_index.h"
#include "store/store_life.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/clock.h"
#include "base/file_lock.h"
#include "base/log.h"

#define PM_TMPFS_MAGIC 0x01021994
#define PM_RAMFS_MAGIC 0x858458f6
#define PM_HUGETLBFS_MAGIC 0x958458f6

#define PM_ABI ((uint32_t)(sizeof(struct pm_hdr) << 20 | sizeof(struct pm_seg) << 8 | \
                           sizeof(void *)))

static size_t pm_align(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

static uint64_t pm_hdr_sum(const struct pm_hdr *h)
{
    return XXH3_64bits(h, offsetof(struct pm_hdr, hdr_sum));
}

static size_t pm_data_off(uint32_t nsegs)
{
    size_t meta = 4096 + (size_t)nsegs * sizeof(struct pm_seg) +
                  PM_JOURNAL_SLOTS * sizeof(struct pm_journal);
    return pm_align(meta, PM_DATA_ALIGN);
}

uint64_t persist_flush_sum(const struct pm_flush *f)
{
    return XXH3_64bits(f, offsetof(struct pm_flush, sum));
}

/* The flush state: the first copy whose checksum holds (the first is
 * written first: a kill between leaves it the newer), or the header's
 * fields in a file without copies; false when both fail (damage). */
static bool pm_flush_state(const struct pm_hdr *h, struct pm_resume *out)
{
    const struct pm_flush *f = (const struct pm_flush *)((const char *)h + PM_FLUSH_OFF);
    static const struct pm_flush none;
    if (memcmp(&f[0], &none, sizeof(none)) == 0 && memcmp(&f[1], &none, sizeof(none)) == 0) {
        out->oldest_live = h->oldest_live;
        out->oldest_cas = h->oldest_cas;
        return true;
    }
    for (int i = 0; i < 2; i++)
        if (f[i].sum == persist_flush_sum(&f[i])) {
            out->oldest_live = f[i].oldest_live;
            out->oldest_cas = f[i].oldest_cas;
            return true;
        }
    return false;
}

/* The run state is written while the server runs, and after a crash no
 * checksum covers it: each field is checked against what the server can
 * have written, and a file that fails is damaged (discarded), since its
 * items' fates (expiry, flush, CAS) are judged by these fields.
 *  - The clock resumes at the heartbeat's time plus the wall-clock time
 *    since, plus one (restore.c says why): it must stay under PM_REL_MAX,
 *    or items written afterwards would overflow the 29 bits of their
 *    access time. A heartbeat far in the past, or in the future, or
 *    before the clock's start means a wrong wall clock or damage: the
 *    time spent down is unknown, and so is which TTLs have run out.
 *  - The CAS ceiling and the flush's CAS floor are at most PM_CAS_MAX, and
 *    the floor under the ceiling (store_next_cas raises the ceiling before
 *    it hands out the CAS the floor takes). */
const char *persist_run_check(const struct pm_hdr *h, int64_t now, struct pm_resume *out)
{
    if (!pm_flush_state(h, out))
        return "its flush_all state is damaged (both copies fail their checksum)";
    if (h->cas_ceiling > PM_CAS_MAX || out->oldest_cas > PM_CAS_MAX ||
        (out->oldest_cas && out->oldest_cas >= h->cas_ceiling))
        return "its CAS ceiling cannot be right (damaged header)";
    if (h->epoch <= 0 || h->epoch > now + PM_CLOCK_BACK_MAX ||
        h->hb_unix < h->epoch - PM_CLOCK_BACK_MAX || h->hb_unix > now + PM_CLOCK_BACK_MAX ||
        h->hb_rel > PM_REL_MAX)
        return "its clock cannot be right (a wall clock that was wrong, or a damaged header)";
    /* hb_unix >= epoch - PM_CLOCK_BACK_MAX > -PM_CLOCK_BACK_MAX: no overflow */
    uint64_t r = (uint64_t)h->hb_rel + 1;
    if (now > h->hb_unix)
        r += (uint64_t)(now - h->hb_unix);
    if (r > PM_REL_MAX)
        return "its clock cannot be right (the heartbeat is too old for the clock to carry)";
    out->rel = (uint32_t)r;
    return NULL;
}

/* Why a file cannot be restored, or NULL when it can. */
static const char *pm_check(const struct pm_settings *s, const struct pm_hdr *h, off_t size,
                            size_t want_len, char *buf, size_t len, struct pm_resume *out)
{
    if (memcmp(h->magic, PM_MAGIC, sizeof(h->magic)) != 0)
        return "it is not a nodelay memory file";
    if (h->version != PM_VERSION) {
        snprintf(buf, len, "it has format version %u, this build reads %u", h->version,
                 PM_VERSION);
        return buf;
    }
    if (h->abi != PM_ABI || h->endian != PM_ENDIAN)
        return "it was written by an incompatible build";
    if (h->hdr_sum != pm_hdr_sum(h))
        return "its header is damaged";
    if (h->mem_limit != s->mem_limit || h->item_size_max != s->item_size_max ||
        h->seg_size != s->seg_size || h->nsegs != s->nsegs ||
        h->cas_enabled != (uint32_t)s->cas_enabled ||
        h->journal_slots != PM_JOURNAL_SLOTS) {
        snprintf(buf, len,
                 "it was made with other settings (-m %llu -I %llu%s; now -m %llu -I %llu%s)",
                 (unsigned long long)(h->mem_limit >> 20), (unsigned long long)h->item_size_max,
                 h->cas_enabled ? "" : " -C", (unsigned long long)(s->mem_limit >> 20),
                 (unsigned long long)s->item_size_max, s->cas_enabled ? "" : " -C");
        return buf;
    }
    if (h->off_shift != s->off_shift) {
        snprintf(buf, len, "its items are %u-byte aligned, this build's %u-byte (-I %llu)",
                 1u << (h->off_shift & 31), 1u << s->off_shift,
                 (unsigned long long)s->item_size_max);
        return buf;
    }
    if ((size_t)size < want_len) {
        snprintf(buf, len, "it is %lld bytes, not the %zu its header needs (truncated?)",
                 (long long)size, want_len);
        return buf;
    }
    if (h->state != PM_CLEAN && h->state != PM_RUNNING)
        return NULL; /* laid out, never used: nothing to restore, not damaged */
    return persist_run_check(h, (int64_t)time(NULL), out);
}

/* The flush state, in both copies and the header's fields. */
static void pm_flush_write(struct persist *pm, rel_time_t oldest_live, uint64_t oldest_cas)
{
    /* Each copy whole before the next is begun (pm_flush_state): a kill
     * leaves at most one copy failing its checksum, and the other is the
     * state before or after this flush, which was not yet acknowledged. */
    struct pm_flush f = {.oldest_cas = oldest_cas, .oldest_live = oldest_live};
    f.sum = persist_flush_sum(&f);
    for (int i = 0; i < 2; i++) {
        pm_store64(&pm->flush[i].oldest_cas, f.oldest_cas);
        pm_store32(&pm->flush[i].oldest_live, f.oldest_live);
        pm_store64(&pm->flush[i].sum, f.sum);
    }
    /* The header's fields too, in store_flush's order (oldest_cas first:
     * a kill between leaves the flush half done, hiding only items it
     * would have hidden), for a build that reads only them. */
    pm_store64(&pm->hdr->oldest_cas, oldest_cas);
    pm_store32(&pm->hdr->oldest_live, oldest_live);
}

static void pm_layout(const struct pm_settings *s, struct persist *pm)
{
    struct pm_hdr *h = pm->hdr;
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, PM_MAGIC, sizeof(h->magic));
    h->version = PM_VERSION;
    h->abi = PM_ABI;
    h->endian = PM_ENDIAN;
    h->mem_limit = s->mem_limit;
    h->item_size_max = s->item_size_max;
    h->seg_size = s->seg_size;
    h->nsegs = pm->nsegs;
    h->data_off = (uint64_t)(pm->data - pm->map);
    h->cas_enabled = s->cas_enabled;
    h->journal_slots = PM_JOURNAL_SLOTS;
    h->hdr_sum = pm_hdr_sum(h);
    h->off_shift = s->off_shift;
    h->seq_next = 1;
    pm_flush_write(pm, 0, 0);
}

/* One server per file: a second one would restore from (or lay out
 * afresh) the memory the first is writing, and both would serve what the
 * other overwrites (file_lock waits a moment for a server just killed). */
static int pm_lock(int fd, const char *path)
{
    int rc = file_lock(fd);
    if (rc == -EWOULDBLOCK)
        log_error("-e %s: in use by another server (the file is locked): refusing to use it",
                  path);
    else if (rc < 0)
        log_error("-e %s: cannot lock the memory file: %s", path, strerror(-rc));
    return rc < 0 ? -1 : 0;
}

int persist_open(const struct pm_settings *s, const char *path, struct persist **out)
{
    *out = NULL;
    /* memcached -e keeps its metadata in FILE.meta; nodelay keeps its own
     * inside FILE. A .meta file means the file is memcached's (or another
     * tool's): refuse, as memcached refuses a .meta it cannot read, rather
     * than guess. */
    char meta[4096];
    struct stat mst;
    if (snprintf(meta, sizeof(meta), "%s.meta", path) < (int)sizeof(meta) &&
        stat(meta, &mst) == 0) {
        log_error("-e %s: %s exists: that is memcached's restart metadata, and nodelay does not "
                  "read memcached's memory file; remove both (or use another file) to start",
                  path, meta);
        return -1;
    }
    uint32_t nsegs = s->nsegs;
    size_t data_off = pm_data_off(nsegs);
    size_t base = data_off + (size_t)nsegs * s->seg_size;
    size_t len = base + s->flash_len;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        log_error("-e %s: cannot open the memory file: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        log_error("-e %s: not a regular file", path);
        close(fd);
        return -1;
    }
    /* Items come back from this file as they are: one someone else could
     * have written is not ours to serve. */
    if (st.st_uid != geteuid()) {
        log_error("-e %s: owned by uid %u, not by this user (uid %u): refusing to use it", path,
                  (unsigned)st.st_uid, (unsigned)geteuid());
        close(fd);
        return -1;
    }
    if (pm_lock(fd, path) != 0) {
        close(fd);
        return -1;
    }
    struct statfs sf;
    if (fstatfs(fd, &sf) == 0 && sf.f_type != PM_TMPFS_MAGIC && sf.f_type != PM_RAMFS_MAGIC &&
        sf.f_type != PM_HUGETLBFS_MAGIC)
        log_error("warning: -e %s is not on tmpfs or ramfs: the kernel will write item memory "
                  "to disk (use a file under /dev/shm)",
                  path);

    struct persist *pm = calloc(1, sizeof(*pm));
    if (!pm) {
        close(fd);
        return -1;
    }
    pm->fd = fd;
    pm->nsegs = nsegs;
    pm->seg_size = s->seg_size;
    pthread_mutex_init(&pm->jlock, NULL);
    pthread_mutex_init(&pm->flush_lock, NULL);
    pm->jnext = 1;

    /* the header page: the header and the flush copies */
    union {
        struct pm_hdr h;
        char page[4096];
    } u;
    memset(&u, 0, sizeof(u));
    ssize_t got = st.st_size > 0 ? pread(fd, u.page, sizeof(u.page), 0) : 0;
    struct pm_hdr h = u.h;
    char buf[256];
    const char *why = NULL;
    if (st.st_size == 0)
        pm->start = PM_START_NEW;
    else if (got < (ssize_t)sizeof(h))
        why = "it is too short to hold a header";
    else
        why = pm_check(s, &u.h, st.st_size, base, buf, sizeof(buf), &pm->resume);
    if (!why && st.st_size > 0)
        pm->start = h.state == PM_CLEAN     ? PM_START_CLEAN
                    : h.state == PM_RUNNING ? PM_START_CRASH
                                            : PM_START_NEW;
    if (why) {
        log_error("-e %s: %s; discarding it and starting empty", path, why);
        pm->start = PM_START_DISCARDED;
    }
    bool fresh = pm->start == PM_START_NEW || pm->start == PM_START_DISCARDED;
    /* A fresh file is zeros: truncating first drops every old page. */
    void *map = MAP_FAILED;
    if (fresh && (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)len) < 0))
        log_error("-e %s: cannot size the memory file to %zu bytes: %s", path, len,
                  strerror(errno));
    else if (!fresh && (size_t)st.st_size != len && ftruncate(fd, (off_t)len) < 0)
        log_error("-e %s: cannot size the memory file to %zu bytes: %s", path, len,
                  strerror(errno));
    else if ((map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        log_error("-e %s: cannot map %zu bytes: %s", path, len, strerror(errno));
    if (map == MAP_FAILED) {
        pthread_mutex_destroy(&pm->jlock);
        pthread_mutex_destroy(&pm->flush_lock);
        free(pm);
        close(fd);
        return -1;
    }
    pm->map = map;
    pm->map_len = len;
    pm->hdr = map;
    pm->flush = (struct pm_flush *)(pm->map + PM_FLUSH_OFF);
    pm->segs = (struct pm_seg *)(pm->map + 4096);
    pm->journal = (struct pm_journal *)(pm->segs + nsegs);
    pm->data = pm->map + data_off;
    pm->flash_mem = s->flash_len ? pm->map + base : NULL;
    pm->flash_len = s->flash_len;
    if (fresh)
        pm_layout(s, pm);
    *out = pm;
    return 0;
}

void persist_heartbeat(struct persist *pm)
{
    struct pm_hdr *h = pm->hdr;
    /* unix time first: a restore adds the time since hb_unix to hb_rel, and
     * a pair caught between the two writes then errs by a second. */
    __atomic_store_n(&h->hb_unix, (int64_t)time(NULL), __ATOMIC_RELEASE);
    pm_store32(&h->hb_rel, clock_now());
    pm_store64(&h->items, __atomic_load_n(&pm->index->items, __ATOMIC_RELAXED));
    pm_store32(&h->index_level, index_level(pm->index));
}

void persist_cas(struct persist *pm, uint64_t cas)
{
    uint64_t *c = &pm->hdr->cas_ceiling;
    uint64_t want = cas + PM_CAS_STEP;
    uint64_t cur = __atomic_load_n(c, __ATOMIC_RELAXED);
    while (cur <= cas && !__atomic_compare_exchange_n(c, &cur, want, false, __ATOMIC_RELEASE,
                                                      __ATOMIC_RELAXED))
        ;
}

void persist_flush(struct persist *pm, rel_time_t oldest_live, uint64_t oldest_cas)
{
    pthread_mutex_lock(&pm->flush_lock);
    pm_flush_write(pm, oldest_live, oldest_cas);
    pthread_mutex_unlock(&pm->flush_lock);
}

void persist_seg_open(struct persist *pm, struct seg *seg)
{
    struct pm_seg *ps = pm_seg(pm, seg->id);
    /* Empty first, then in use: a kill between leaves nothing to walk. */
    pm_store32(&ps->write_off, 0);
    pm_store32(&ps->flags, 0);
    ps->cas_base = seg->cas_base;
    ps->group = seg->group;
    ps->tbase = seg->tbase;
    uint64_t seq = __atomic_fetch_add(&pm->hdr->seq_next, 1, __ATOMIC_RELAXED);
    pm_store64(&ps->seq, seq ? seq : 1);
}

void persist_seg_free(struct persist *pm, struct seg *seg)
{
    struct pm_seg *ps = pm_seg(pm, seg->id);
    pm_store64(&ps->seq, 0);
    pm_store32(&ps->flags, 0);
}

/* Each thread keeps one journal slot for the store it last wrote to;
 * threads beyond PM_JOURNAL_SLOTS share slot 0 under a lock. */
static __thread struct persist *pm_tls_pm;
static __thread uint32_t pm_tls_slot;

struct pm_journal *persist_journal_begin(struct persist *pm, uint64_t old_loc, uint64_t new_loc)
{
    if (pm_tls_pm != pm) {
        uint32_t n = __atomic_fetch_add(&pm->jnext, 1, __ATOMIC_RELAXED);
        pm_tls_slot = n < PM_JOURNAL_SLOTS ? n : 0;
        pm_tls_pm = pm;
    }
    if (pm_tls_slot == 0)
        pthread_mutex_lock(&pm->jlock);
    struct pm_journal *j = &pm->journal[pm_tls_slot];
    pm_store64(&j->old_loc, old_loc);
    pm_store64(&j->new_loc, new_loc);
    return j;
}

void persist_journal_end(struct persist *pm, struct pm_journal *j)
{
    pm_store64(&j->new_loc, 0);
    if (j == &pm->journal[0])
        pthread_mutex_unlock(&pm->jlock);
}

/* The graceful stop's checksum: the run state, the segment table (sums
 * included) and the journal, so a damaged table is caught as well. */
uint64_t persist_stop_sum(struct persist *pm)
{
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return 0;
    XXH3_64bits_reset(st);
    const char *h = (const char *)pm->hdr;
    XXH3_64bits_update(st, h + offsetof(struct pm_hdr, hb_rel),
                       offsetof(struct pm_hdr, stop_sum) - offsetof(struct pm_hdr, hb_rel));
    XXH3_64bits_update(st, pm->segs, (size_t)pm->nsegs * sizeof(struct pm_seg));
    XXH3_64bits_update(st, pm->journal, PM_JOURNAL_SLOTS * sizeof(struct pm_journal));
    uint64_t v = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return v;
}

/* A graceful stop's segment checksums, split over one thread per core:
 * segments first, first + step, ... */
struct persist_sums {
    struct persist *pm;
    uint32_t first, step;
};

static void *persist_sum_thread(void *arg)
{
    struct persist_sums *j = arg;
    struct persist *pm = j->pm;
    for (uint32_t i = j->first; i < pm->nsegs; i += j->step) {
        struct pm_seg *ps = pm_seg(pm, i);
        ps->sum = ps->seq ? XXH3_64bits(pm_seg_data(pm, pm->seg_size, i), ps->write_off) : 0;
    }
    return NULL;
}

void persist_close(struct persist *pm, bool clean)
{
    if (!pm)
        return;
    if (clean && pm->hdr) {
        struct pm_hdr *h = pm->hdr;
        struct persist_sums jobs[SPLIT_THREADS];
        uint32_t t = split_threads(pm->nsegs);
        for (uint32_t i = 0; i < t; i++)
            jobs[i] = (struct persist_sums){pm, i, t};
        split_run(persist_sum_thread, (char *)jobs, sizeof(jobs[0]), t);
        persist_heartbeat(pm);
        persist_cas(pm, __atomic_load_n(pm->cas_next, __ATOMIC_RELAXED));
        persist_flush(pm, pm->life->oldest_live, pm->life->oldest_cas);
        h->epoch = (int64_t)clock_epoch();
        h->stop_sum = persist_stop_sum(pm);
        pm_store32(&h->state, PM_CLEAN);
    }
    if (pm->map)
        munmap(pm->map, pm->map_len);
    close(pm->fd);
    pthread_mutex_destroy(&pm->jlock);
    pthread_mutex_destroy(&pm->flush_lock);
    free(pm);
}
