/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash device: files, pages, aligned writes, reads started on the
 * submitter's ring or submitted to a thread pool, and completed on the
 * submitter's side (flash_dev.h). */
#define _GNU_SOURCE /* O_DIRECT, fallocate */
#include "store/flash/flash_dev.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file_lock.h"
#include "base/log.h"

static void count(uint64_t *c, uint64_t n)
{
    __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* --- completion queue --- */

int flash_cq_init(struct flash_cq *cq)
{
    cq->head = cq->tail = NULL;
    cq->ring = (struct store_flash_ring){0};
    cq->ring_inflight = 0;
    cq->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (cq->fd < 0)
        return -errno;
    pthread_mutex_init(&cq->lock, NULL);
    return 0;
}

void flash_cq_destroy(struct flash_cq *cq)
{
    if (cq->fd >= 0)
        close(cq->fd);
    cq->fd = -1;
    pthread_mutex_destroy(&cq->lock);
}

static void cq_post(struct flash_cq *cq, struct flash_read *r)
{
    r->next = NULL;
    pthread_mutex_lock(&cq->lock);
    bool was_empty = cq->head == NULL;
    if (cq->tail)
        cq->tail->next = r;
    else
        cq->head = r;
    cq->tail = r;
    pthread_mutex_unlock(&cq->lock);
    /* one wake-up per batch: the drain takes everything queued */
    if (was_empty) {
        uint64_t one = 1;
        ssize_t rc = write(cq->fd, &one, sizeof one);
        (void)rc; /* a counter at its limit is still readable */
    }
}

int flash_cq_drain(struct flash_cq *cq)
{
    uint64_t v;
    ssize_t rc = read(cq->fd, &v, sizeof v);
    (void)rc; /* EAGAIN: nothing signalled, but look anyway */
    pthread_mutex_lock(&cq->lock);
    struct flash_read *r = cq->head;
    cq->head = cq->tail = NULL;
    pthread_mutex_unlock(&cq->lock);
    int n = 0;
    while (r) {
        struct flash_read *next = r->next; /* done() may reuse r */
        r->done(r);
        r = next;
        n++;
    }
    return n;
}

/* --- files and pages --- */

static int file_open(struct flash_dev_file *f, const struct flash_dev_file_opt *o,
                     uint64_t page_size, char *why, size_t n)
{
    f->fd = open(o->path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
    f->direct = f->fd >= 0;
    if (f->fd < 0 && errno == EINVAL) {
        /* tmpfs and some others refuse O_DIRECT: the page cache then */
        f->fd = open(o->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (f->fd >= 0)
            log_error("nodelay: %s: no O_DIRECT on this filesystem, using the page cache",
                      o->path);
    }
    if (f->fd < 0) {
        int err = errno;
        snprintf(why, n, "%s: %s", o->path, strerror(err));
        return -err;
    }
    /* One server a file: a second one on it would overwrite the first's
     * segments under its index. flock, not lockf, so the lock stays with
     * the descriptor across -d's fork; it goes when the server exits. */
    int locked = file_lock(f->fd);
    if (locked < 0) {
        int err = -locked;
        snprintf(why, n, "%s: %s", o->path,
                 err == EWOULDBLOCK ? "in use by another server (locked)" : strerror(err));
        return -err;
    }
    f->size = o->size - o->size % page_size;
    f->npages = (uint32_t)(f->size / page_size);
    if (f->npages == 0) {
        snprintf(why, n, "%s: smaller than one page", o->path);
        return -EINVAL;
    }
    /* Reserve the blocks now, so a full disk shows at start-up and not as
     * a failed segment write later; where fallocate is not supported, a
     * sparse file of the size. */
    if (fallocate(f->fd, 0, 0, (off_t)f->size) < 0) {
        int err = errno;
        if ((err != EOPNOTSUPP && err != ENOSYS) || ftruncate(f->fd, (off_t)f->size) < 0) {
            snprintf(why, n, "%s: preallocating %llu bytes: %s", o->path,
                     (unsigned long long)f->size, strerror(err));
            return -err;
        }
    }
    return 0;
}

static void *pool_main(void *arg);

int flash_dev_probe(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    /* Segments live at offsets of a file sized at start: a device, a fifo
     * cannot be one. memcached's O_DIRECT open of those fails EINVAL. */
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    /* file_open's lock: a file another server holds fails here with
     * memcached's words (EAGAIN); held until the caller closes fd, it
     * fails a second probe of the same file too (flock locks an open
     * file, not a process), whose two devices would overwrite each other */
    int locked = file_lock(fd);
    if (locked < 0) {
        close(fd);
        return locked;
    }
    return fd;
}

int flash_dev_open(struct flash_dev *dev, const struct flash_dev_options *opt, char *why,
                   size_t n)
{
    memset(dev, 0, sizeof *dev);
    for (int i = 0; i < FLASH_DEV_FILES_MAX; i++)
        dev->files[i].fd = -1;
    if (opt->nfiles < 1 || opt->nfiles > FLASH_DEV_FILES_MAX || opt->threads < 0 ||
        opt->page_size < FLASH_DEV_ALIGN || opt->page_size % FLASH_DEV_ALIGN) {
        snprintf(why, n, "bad device options");
        return -EINVAL;
    }
    dev->page_size = opt->page_size;
    dev->io_depth = opt->io_depth ? opt->io_depth : 1;
#ifdef NODELAY_DEBUG
    const char *delay = getenv("NODELAY_DEBUG_FLASH_DEV");
    if (delay && *delay)
        dev->delay_ms = (unsigned)strtoul(delay, NULL, 10);
    const char *wdelay = getenv("NODELAY_DEBUG_FLASH_WRITE");
    if (wdelay && *wdelay)
        dev->write_delay_ms = (unsigned)strtoul(wdelay, NULL, 10);
#endif
    pthread_mutex_init(&dev->lock, NULL);
    pthread_cond_init(&dev->wake, NULL);
    int rc = 0;
    for (int i = 0; i < opt->nfiles; i++) {
        struct flash_dev_file *f = &dev->files[i];
        dev->nfiles = i + 1;
        if ((rc = file_open(f, &opt->files[i], opt->page_size, why, n)) < 0)
            goto fail;
        if ((uint64_t)dev->npages + f->npages > UINT32_MAX) {
            snprintf(why, n, "%s: too many pages", opt->files[i].path);
            rc = -EINVAL;
            goto fail;
        }
        f->first_page = dev->npages;
        dev->npages += f->npages;
    }
    if (opt->threads) {
        dev->threads = calloc((size_t)opt->threads, sizeof *dev->threads);
        if (!dev->threads) {
            rc = -ENOMEM;
            snprintf(why, n, "read threads: %s", strerror(ENOMEM));
            goto fail;
        }
        for (int i = 0; i < opt->threads; i++) {
            int err = pthread_create(&dev->threads[i], NULL, pool_main, dev);
            if (err) {
                snprintf(why, n, "read thread: %s", strerror(err));
                rc = -err;
                goto fail;
            }
            dev->nthreads = i + 1;
        }
    }
    return 0;
fail:
    flash_dev_close(dev);
    return rc;
}

void flash_dev_close(struct flash_dev *dev)
{
    pthread_mutex_lock(&dev->lock);
    dev->stopping = true;
    pthread_cond_broadcast(&dev->wake);
    pthread_mutex_unlock(&dev->lock);
    for (int i = 0; i < dev->nthreads; i++)
        pthread_join(dev->threads[i], NULL);
    free(dev->threads);
    dev->threads = NULL;
    dev->nthreads = 0;
    /* what the threads left queued: each caller still hears of it */
    for (struct flash_read *r = dev->head, *next; r; r = next) {
        next = r->next;
        r->result = -ECANCELED;
        cq_post(r->cq, r);
    }
    dev->head = dev->tail = NULL;
    for (int i = 0; i < dev->nfiles; i++)
        if (dev->files[i].fd >= 0)
            close(dev->files[i].fd);
    dev->nfiles = 0;
    pthread_cond_destroy(&dev->wake);
    pthread_mutex_destroy(&dev->lock);
}

/* The file holding page and the byte offset there, or NULL when the range
 * is not inside one page. */
static struct flash_dev_file *locate(struct flash_dev *dev, uint32_t page, uint64_t off,
                                     uint32_t len, off_t *pos)
{
    if (page >= dev->npages || len == 0 || off > dev->page_size || len > dev->page_size - off)
        return NULL;
    if (off % FLASH_DEV_ALIGN || len % FLASH_DEV_ALIGN)
        return NULL;
    for (int i = 0; i < dev->nfiles; i++) {
        struct flash_dev_file *f = &dev->files[i];
        if (page < f->first_page + f->npages) {
            *pos = (off_t)((uint64_t)(page - f->first_page) * dev->page_size + off);
            return f;
        }
    }
    return NULL;
}

static bool buf_ok(const struct flash_dev_file *f, const void *buf)
{
    return !f->direct || (uintptr_t)buf % FLASH_DEV_ALIGN == 0;
}

/* A debug build's slow device (NODELAY_DEBUG_FLASH_*): 0 = none. */
static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (ms && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int flash_dev_write(struct flash_dev *dev, uint32_t page, uint64_t off, const void *buf,
                    uint32_t len)
{
    sleep_ms(dev->write_delay_ms);
    off_t pos;
    struct flash_dev_file *f = locate(dev, page, off, len, &pos);
    if (!f || !buf_ok(f, buf))
        return -EINVAL;
    uint32_t done = 0;
    while (done < len) {
        ssize_t rc = pwrite(f->fd, (const char *)buf + done, len - done, pos + done);
        if (rc < 0 && errno == EINTR)
            continue;
        int err = rc < 0 ? errno : ENOSPC; /* 0 bytes written: no room */
        if (rc <= 0) {
            count(err == ENOSPC ? &dev->c.nospace : &dev->c.write_errors, 1);
            return -err;
        }
        done += (uint32_t)rc;
    }
    count(&dev->c.writes, 1);
    count(&dev->c.bytes_written, len);
    return 0;
}

int flash_dev_read(struct flash_dev *dev, uint32_t page, uint64_t off, void *buf, uint32_t len)
{
    off_t pos;
    struct flash_dev_file *f = locate(dev, page, off, len, &pos);
    if (!f || !buf_ok(f, buf) || len > INT32_MAX) /* the result is an int */
        return -EINVAL;
    uint32_t done = 0;
    while (done < len) {
        ssize_t rc = pread(f->fd, (char *)buf + done, len - done, pos + done);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0) {
            int err = errno;
            count(&dev->c.read_errors, 1);
            return -err;
        }
        if (rc == 0) {
            /* the file ends inside its own pages: truncated underneath */
            count(&dev->c.short_reads, 1);
            return -ENODATA;
        }
        done += (uint32_t)rc;
    }
    count(&dev->c.reads, 1);
    count(&dev->c.bytes_read, len);
    return (int)len;
}

int flash_dev_submit(struct flash_dev *dev, struct flash_cq *cq, struct flash_read *r)
{
    off_t pos;
    struct flash_dev_file *f = locate(dev, r->page, r->off, r->len, &pos);
    if (!f || !buf_ok(f, r->buf) || r->len > INT32_MAX)
        return -EINVAL; /* as flash_dev_read would, but before done() is owed */
    r->cq = cq;
    r->dev = dev;
    r->next = NULL;
    if (cq->ring.start &&
        cq->ring.start(cq->ring.arg, r, f->fd, r->buf, r->len, (uint64_t)pos, dev->delay_ms) == 0) {
        cq->ring_inflight++;
        count(&dev->c.ring_reads, 1);
        return 0;
    }
    if (!dev->nthreads)
        return -ENOSYS;
    count(&dev->c.pool_reads, 1);
    pthread_mutex_lock(&dev->lock);
    if (dev->tail)
        dev->tail->next = r;
    else
        dev->head = r;
    dev->tail = r;
    pthread_cond_signal(&dev->wake);
    pthread_mutex_unlock(&dev->lock);
    return 0;
}

void flash_read_complete(struct flash_read *r, int res)
{
    struct flash_dev *dev = r->dev;
    r->cq->ring_inflight--;
    if (res >= 0 && (uint32_t)res < r->len) {
        /* a regular file's read ends short only at its end: truncated */
        count(&dev->c.short_reads, 1);
        res = -ENODATA;
    } else if (res < 0) {
        count(&dev->c.read_errors, 1);
    } else {
        count(&dev->c.reads, 1);
        count(&dev->c.bytes_read, r->len);
    }
    r->result = res;
    r->done(r);
}

static void *pool_main(void *arg)
{
    struct flash_dev *dev = arg;
    pthread_mutex_lock(&dev->lock);
    for (;;) {
        while (!dev->head && !dev->stopping)
            pthread_cond_wait(&dev->wake, &dev->lock);
        if (dev->stopping)
            break;
        /* Up to io_depth reads for one trip through the lock, then read
         * in turn, as memcached's IO thread takes the first io_depth of
         * its queue; the rest stay for the other threads. */
        struct flash_read *batch = dev->head, *last = batch;
        for (unsigned i = 1; i < dev->io_depth && last->next; i++)
            last = last->next;
        dev->head = last->next;
        if (!dev->head)
            dev->tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&dev->lock);
        while (batch) {
            struct flash_read *r = batch;
            batch = r->next; /* cq_post reuses it */
            sleep_ms(dev->delay_ms);
            r->result = flash_dev_read(dev, r->page, r->off, r->buf, r->len);
            cq_post(r->cq, r);
        }
        pthread_mutex_lock(&dev->lock);
    }
    pthread_mutex_unlock(&dev->lock);
    return NULL;
}

void flash_dev_counters(const struct flash_dev *dev, struct flash_dev_counters *out)
{
    const uint64_t *in = (const uint64_t *)&dev->c;
    uint64_t *o = (uint64_t *)out;
    for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
        o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}
