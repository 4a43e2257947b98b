/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash device (src/store/flash/flash_dev.c) on temporary files: pages
 * across several files, aligned writes read back synchronously and through
 * the read pool's completion queue or a worker's ring (faked), O_DIRECT refused (as tmpfs before
 * Linux 6.6 and some FUSE filesystems do), a file truncated underneath, a
 * failing write, bad ranges and paths. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/flash/flash_dev.h"

#define PAGE (64u * 1024)
#define TMPFS_MAGIC_ 0x01021994

static char dir[64];

/* The device's open(2), in this test binary: refuses O_DIRECT with EINVAL
 * while refuse_direct is set, as a filesystem without it does (tmpfs took
 * O_DIRECT in Linux 6.6, so /dev/shm no longer shows the refusal). */
static bool refuse_direct;
int open(const char *p, int flags, ...);
int open(const char *p, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = (flags & O_CREAT) ? va_arg(ap, int) : 0;
    va_end(ap);
    if (refuse_direct && (flags & O_DIRECT)) {
        errno = EINVAL;
        return -1;
    }
    return (int)syscall(SYS_openat, AT_FDCWD, p, flags, mode);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/nodelay-flash-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *path(const char *name)
{
    static char p[4][128];
    static unsigned i;
    char *out = p[i++ % 4];
    snprintf(out, sizeof p[0], "%s/%s", dir, name);
    return out;
}

static void *aligned(size_t len, int fill)
{
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, FLASH_DEV_ALIGN, len), 0);
    memset(p, fill, len);
    return p;
}

static void open_dev(struct flash_dev *dev, const char *p1, uint64_t s1, const char *p2,
                     uint64_t s2, int threads)
{
    struct flash_dev_options o = {.page_size = PAGE, .threads = threads, .nfiles = p2 ? 2 : 1};
    o.files[0] = (struct flash_dev_file_opt){p1, s1};
    if (p2)
        o.files[1] = (struct flash_dev_file_opt){p2, s2};
    char why[256] = "";
    int rc = flash_dev_open(dev, &o, why, sizeof why);
    if (rc)
        print_error("flash_dev_open: %s\n", why);
    assert_int_equal(rc, 0);
}

static void test_pages_across_files(void **state)
{
    (void)state;
    struct flash_dev dev;
    /* 3.5 pages: the half page is not used; 2 pages in the second file */
    open_dev(&dev, path("a"), 3 * PAGE + PAGE / 2, path("b"), 2 * PAGE, 0);
    assert_int_equal(dev.npages, 5);
    struct stat st;
    assert_int_equal(stat(path("a"), &st), 0);
    assert_int_equal(st.st_size, 3 * PAGE); /* preallocated */
    assert_true(st.st_blocks * 512 >= 3 * PAGE);
    assert_true(dev.files[0].direct); /* ext4 under /tmp here */

    char *w = aligned(PAGE, 0), *r = aligned(PAGE, 0);
    for (uint32_t page = 0; page < 5; page++) {
        memset(w, 'A' + (int)page, PAGE);
        assert_int_equal(flash_dev_write(&dev, page, 0, w, PAGE), 0);
    }
    for (uint32_t page = 0; page < 5; page++) {
        assert_int_equal(flash_dev_read(&dev, page, 4096, r, 8192), 8192);
        assert_int_equal(r[0], 'A' + (int)page);
        assert_int_equal(r[8191], 'A' + (int)page);
    }
    /* page 4 is the second file's page 1 */
    int fd = open(path("b"), O_RDONLY);
    char ch;
    assert_int_equal(pread(fd, &ch, 1, PAGE + 5), 1);
    assert_int_equal(ch, 'E');
    close(fd);

    /* out of range or unaligned: refused, nothing done */
    assert_int_equal(flash_dev_write(&dev, 5, 0, w, PAGE), -EINVAL);
    assert_int_equal(flash_dev_write(&dev, 0, 4096, w, PAGE), -EINVAL);
    assert_int_equal(flash_dev_read(&dev, 0, 100, r, 4096), -EINVAL);
    assert_int_equal(flash_dev_read(&dev, 0, 0, r, 100), -EINVAL);
    assert_int_equal(flash_dev_read(&dev, 0, 0, r + 1, 4096), -EINVAL); /* O_DIRECT buffer */
    struct flash_dev_counters c;
    flash_dev_counters(&dev, &c);
    assert_int_equal(c.writes, 5);
    assert_int_equal(c.bytes_written, 5 * PAGE);
    assert_int_equal(c.reads, 5);
    flash_dev_close(&dev);
    free(w);
    free(r);
}

/* A filesystem that refuses O_DIRECT: the device opens without it (one log
 * line) and works; and on /dev/shm, whichever this kernel does. */
static void test_no_direct_fallback(void **state)
{
    (void)state;
    char shm[64];
    snprintf(shm, sizeof shm, "/dev/shm/nodelay-flash-%d", (int)getpid());
    struct statfs sf;
    bool have_shm = statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC_;
    const char *paths[2] = {path("nodirect"), have_shm ? shm : NULL};
    for (int i = 0; i < 2 && paths[i]; i++) {
        refuse_direct = i == 0;
        struct flash_dev dev;
        open_dev(&dev, paths[i], 2 * PAGE, NULL, 0, 0);
        refuse_direct = false;
        if (i == 0)
            assert_false(dev.files[0].direct);
        char *w = aligned(PAGE, 'q'), *r = aligned(PAGE, 0);
        assert_int_equal(flash_dev_write(&dev, 1, 0, w, PAGE), 0);
        assert_int_equal(flash_dev_read(&dev, 1, 0, r, PAGE), PAGE);
        assert_memory_equal(r, w, PAGE);
        flash_dev_close(&dev);
        free(w);
        free(r);
    }
    if (have_shm)
        unlink(shm);
}

struct done_log {
    int n;
    int results[64];
};
static void on_done(struct flash_read *r)
{
    struct done_log *d = r->arg;
    d->results[d->n++] = r->result;
}

/* Waits (bounded) for n completions on cq. */
static void drain(struct flash_cq *cq, struct done_log *d, int n)
{
    for (int i = 0; i < 500 && d->n < n; i++) {
        struct pollfd pfd = {.fd = cq->fd, .events = POLLIN};
        poll(&pfd, 1, 20);
        flash_cq_drain(cq);
    }
    assert_int_equal(d->n, n);
}

/* Writes pages 0..n-1 whole, page p all of the byte first + p. */
static void write_pages(struct flash_dev *dev, uint32_t n, int first)
{
    char *w = aligned(PAGE, 0);
    for (uint32_t page = 0; page < n; page++) {
        memset(w, first + (int)page, PAGE);
        assert_int_equal(flash_dev_write(dev, page, 0, w, PAGE), 0);
    }
    free(w);
}

static void test_read_pool(void **state)
{
    (void)state;
    struct flash_dev dev;
    open_dev(&dev, path("pool"), 4 * PAGE, NULL, 0, 2);
    write_pages(&dev, 4, 'a');
    struct flash_cq cq;
    assert_int_equal(flash_cq_init(&cq), 0);
    struct done_log d = {0};
    struct flash_read reads[32];
    char *bufs = aligned(32 * 4096, 0);
    for (int i = 0; i < 32; i++) {
        reads[i] = (struct flash_read){.page = (uint32_t)i % 4, .off = (uint64_t)(i % 16) * 4096,
                                       .len = 4096, .buf = bufs + i * 4096, .done = on_done,
                                       .arg = &d};
        assert_int_equal(flash_dev_submit(&dev, &cq, &reads[i]), 0);
    }
    drain(&cq, &d, 32);
    for (int i = 0; i < 32; i++) {
        assert_int_equal(d.results[i], 4096);
        assert_int_equal(bufs[i * 4096], 'a' + i % 4);
        assert_int_equal(bufs[i * 4096 + 4095], 'a' + i % 4);
    }
    /* a bad range is refused at submit, and done() is not called */
    struct flash_read bad = {.page = 4, .len = 4096, .buf = bufs, .done = on_done, .arg = &d};
    assert_int_equal(flash_dev_submit(&dev, &cq, &bad), -EINVAL);
    assert_int_equal(flash_cq_drain(&cq), 0);
    flash_cq_destroy(&cq);
    flash_dev_close(&dev);

    /* without threads, nothing to submit to */
    open_dev(&dev, path("pool"), 4 * PAGE, NULL, 0, 0);
    assert_int_equal(flash_cq_init(&cq), 0);
    reads[0].page = 0;
    assert_int_equal(flash_dev_submit(&dev, &cq, &reads[0]), -ENOSYS);
    flash_cq_destroy(&cq);
    flash_dev_close(&dev);
    free(bufs);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ext_io_depth, as memcached's IO threads take their queue: a read thread
 * takes up to io_depth queued reads at once and reads them in turn. Two
 * threads, each busy with a slow read (the debug builds' delay, set by
 * hand) while two more are queued: at depth 2 the first thread free takes
 * both, so the last is done no sooner than three reads' time; at depth 1
 * each thread takes one. Seconds since the first submit. */
static double queued_pair(unsigned depth, unsigned delay_ms)
{
    struct flash_dev dev;
    struct flash_dev_options o = {.page_size = PAGE, .threads = 2, .io_depth = depth, .nfiles = 1};
    o.files[0] = (struct flash_dev_file_opt){path("depth"), PAGE};
    char why[256] = "";
    assert_int_equal(flash_dev_open(&dev, &o, why, sizeof why), 0);
    write_pages(&dev, 1, 'd');
    dev.delay_ms = delay_ms;
    struct flash_cq cq;
    assert_int_equal(flash_cq_init(&cq), 0);
    struct done_log d = {0};
    struct flash_read reads[4];
    char *bufs = aligned(4 * 4096, 0);
    for (int i = 0; i < 4; i++)
        reads[i] = (struct flash_read){.page = 0, .off = (uint64_t)i * 4096, .len = 4096,
                                       .buf = bufs + i * 4096, .done = on_done, .arg = &d};
    double t0 = now_s();
    /* one slow read for each thread: each taken alone (the queue empty
     * again) before the next goes, so no thread takes two. A machine too
     * busy to start a thread within half a read cannot set this up: the
     * caller skips rather than fails (took < 0). */
    bool set_up = true;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(flash_dev_submit(&dev, &cq, &reads[i]), 0);
        for (bool queued = true; queued;) {
            pthread_mutex_lock(&dev.lock);
            queued = dev.head != NULL;
            pthread_mutex_unlock(&dev.lock);
            if (queued)
                usleep(1000); /* leave the cores to the read threads */
        }
    }
    if (now_s() - t0 >= delay_ms / 2000.0)
        set_up = false;
    assert_int_equal(flash_dev_submit(&dev, &cq, &reads[2]), 0);
    assert_int_equal(flash_dev_submit(&dev, &cq, &reads[3]), 0);
    drain(&cq, &d, 4);
    double took = now_s() - t0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(d.results[i], 4096);
        assert_int_equal(bufs[i * 4096 + 4095], 'd');
    }
    flash_cq_destroy(&cq);
    flash_dev_close(&dev);
    free(bufs);
    return set_up ? took : -1;
}

static void test_io_depth(void **state)
{
    (void)state;
    unsigned delay_ms = 200;
    double one = queued_pair(1, delay_ms), two = queued_pair(2, delay_ms);
    if (one < 0 || two < 0) {
        print_message("the read threads took too long to start: not measured\n");
        skip();
    }
    print_message("io_depth 1: %.3f s, io_depth 2: %.3f s (reads of %u ms)\n", one, two,
                  delay_ms);
    assert_true(two >= 3 * delay_ms / 1000.0);
}

/* The file shrinks under the device: reads past its new end are short
 * reads, counted, synchronously and through the pool. */
static void test_truncated_underneath(void **state)
{
    (void)state;
    struct flash_dev dev;
    open_dev(&dev, path("trunc"), 4 * PAGE, NULL, 0, 1);
    char *w = aligned(PAGE, 'z'), *r = aligned(PAGE, 0);
    for (uint32_t page = 0; page < 4; page++)
        assert_int_equal(flash_dev_write(&dev, page, 0, w, PAGE), 0);
    assert_int_equal(truncate(path("trunc"), PAGE + PAGE / 2), 0);
    assert_int_equal(flash_dev_read(&dev, 0, 0, r, PAGE), PAGE);
    assert_int_equal(flash_dev_read(&dev, 1, 0, r, PAGE), -ENODATA); /* half there */
    assert_int_equal(flash_dev_read(&dev, 3, 0, r, 4096), -ENODATA); /* none */
    struct flash_cq cq;
    assert_int_equal(flash_cq_init(&cq), 0);
    struct done_log d = {0};
    struct flash_read rd = {.page = 2, .len = 4096, .buf = r, .done = on_done, .arg = &d};
    assert_int_equal(flash_dev_submit(&dev, &cq, &rd), 0);
    drain(&cq, &d, 1);
    assert_int_equal(d.results[0], -ENODATA);
    struct flash_dev_counters c;
    flash_dev_counters(&dev, &c);
    assert_int_equal(c.short_reads, 3);
    assert_int_equal(c.reads, 1);
    flash_cq_destroy(&cq);
    flash_dev_close(&dev);
    free(w);
    free(r);
}

/* A worker's ring, faked: it takes reads (or refuses them, which sends
 * them to the pool) and the test plays the kernel, reading at the fd and
 * position it was given. */
struct fake_ring {
    bool refuse;
    int n;
    struct {
        struct flash_read *r;
        int fd;
        void *buf;
        uint32_t len;
        uint64_t pos;
    } got[8];
};
static int fake_start(void *arg, struct flash_read *r, int fd, void *buf, uint32_t len,
                      uint64_t pos, unsigned delay_ms)
{
    struct fake_ring *f = arg;
    assert_int_equal(delay_ms, 0);
    if (f->refuse || f->n == 8)
        return -EBUSY;
    f->got[f->n].r = r;
    f->got[f->n].fd = fd;
    f->got[f->n].buf = buf;
    f->got[f->n].len = len;
    f->got[f->n].pos = pos;
    f->n++;
    return 0;
}

/* Reads started on the ring complete through flash_read_complete with the
 * pool's results and counts: whole, short (-ENODATA), failed; a read the
 * ring refuses goes to the pool. */
static void test_ring_reads(void **state)
{
    (void)state;
    struct flash_dev dev;
    open_dev(&dev, path("ring"), 2 * PAGE, path("ring2"), 2 * PAGE, 1);
    write_pages(&dev, 4, 'k');
    struct flash_cq cq;
    assert_int_equal(flash_cq_init(&cq), 0);
    struct fake_ring fr = {0};
    cq.ring = (struct store_flash_ring){fake_start, &fr};
    struct done_log d = {0};
    char *bufs = aligned(4 * 8192, 0);
    struct flash_read reads[4];
    for (int i = 0; i < 4; i++) {
        reads[i] = (struct flash_read){.page = (uint32_t)i, .off = 4096, .len = 8192,
                                       .buf = bufs + i * 8192, .done = on_done, .arg = &d};
        assert_int_equal(flash_dev_submit(&dev, &cq, &reads[i]), 0);
    }
    assert_int_equal(fr.n, 4);
    assert_int_equal(cq.ring_inflight, 4);
    assert_int_equal(flash_cq_drain(&cq), 0); /* nothing went to the pool */
    /* pages 2, 3 are the second file's 0, 1 */
    assert_int_not_equal(fr.got[1].fd, fr.got[2].fd);
    assert_int_equal(fr.got[3].pos, PAGE + 4096);
    for (int i = 0; i < 4; i++) {
        ssize_t n = pread(fr.got[i].fd, fr.got[i].buf, fr.got[i].len, (off_t)fr.got[i].pos);
        assert_int_equal(n, 8192);
    }
    flash_read_complete(fr.got[0].r, 8192);
    flash_read_complete(fr.got[1].r, 4096); /* the file ended */
    flash_read_complete(fr.got[2].r, -EIO);
    assert_int_equal(cq.ring_inflight, 1);
    flash_read_complete(fr.got[3].r, 8192);
    assert_int_equal(cq.ring_inflight, 0);
    assert_int_equal(d.n, 4);
    assert_int_equal(d.results[0], 8192);
    assert_int_equal(d.results[1], -ENODATA);
    assert_int_equal(d.results[2], -EIO);
    assert_int_equal(d.results[3], 8192);
    assert_int_equal(bufs[0], 'k');
    assert_int_equal(bufs[3 * 8192 + 8191], 'k' + 3);
    /* refused: the pool reads it */
    fr.refuse = true;
    memset(bufs, 0, 8192);
    assert_int_equal(flash_dev_submit(&dev, &cq, &reads[0]), 0);
    drain(&cq, &d, 5);
    assert_int_equal(d.results[4], 8192);
    assert_int_equal(bufs[8191], 'k');
    struct flash_dev_counters c;
    flash_dev_counters(&dev, &c);
    assert_int_equal(c.ring_reads, 4);
    assert_int_equal(c.pool_reads, 1);
    assert_int_equal(c.reads, 3);
    assert_int_equal(c.short_reads, 1);
    assert_int_equal(c.read_errors, 1);
    flash_cq_destroy(&cq);
    flash_dev_close(&dev);
    free(bufs);
}

/* A write the kernel refuses (here: past RLIMIT_FSIZE, EFBIG) is a code and
 * a count, and the device goes on. */
static void test_write_error(void **state)
{
    (void)state;
    struct flash_dev dev;
    open_dev(&dev, path("limit"), 4 * PAGE, NULL, 0, 0);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 2 * PAGE;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    char *w = aligned(PAGE, 'x');
    int rc3 = flash_dev_write(&dev, 3, 0, w, PAGE);
    int rc0 = flash_dev_write(&dev, 0, 0, w, PAGE);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, was);
    assert_int_equal(rc3, -EFBIG);
    assert_int_equal(rc0, 0);
    struct flash_dev_counters c;
    flash_dev_counters(&dev, &c);
    assert_int_equal(c.write_errors, 1);
    assert_int_equal(c.writes, 1);
    flash_dev_close(&dev);
    free(w);
}

static void test_open_errors(void **state)
{
    (void)state;
    struct flash_dev dev;
    char why[256] = "";
    struct flash_dev_options o = {.page_size = PAGE, .nfiles = 2};
    o.files[0] = (struct flash_dev_file_opt){path("ok"), 2 * PAGE};
    o.files[1] = (struct flash_dev_file_opt){"/nonexistent/dir/x", 2 * PAGE};
    assert_int_equal(flash_dev_open(&dev, &o, why, sizeof why), -ENOENT);
    assert_non_null(strstr(why, "/nonexistent/dir/x"));
    o.nfiles = 1;
    o.files[0].size = PAGE - 1; /* not one page */
    assert_int_equal(flash_dev_open(&dev, &o, why, sizeof why), -EINVAL);
    o.files[0].size = 2 * PAGE;
    o.page_size = 1000; /* not aligned */
    assert_int_equal(flash_dev_open(&dev, &o, why, sizeof why), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_across_files), cmocka_unit_test(test_no_direct_fallback),
        cmocka_unit_test(test_read_pool),          cmocka_unit_test(test_truncated_underneath),
        cmocka_unit_test(test_ring_reads),         cmocka_unit_test(test_io_depth),
        cmocka_unit_test(test_write_error),        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
