/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash device (flash_dev.c): the -o ext_path files, preallocated, cut
 * into pages of ext_page_size, each page a place for one flash segment.
 * Writes are whole aligned segments (pwrite). Reads are submitted and
 * completed: a worker hands a struct flash_read to flash_dev_submit and goes
 * on. Where the worker has a ring of its own (io_uring: struct
 * store_flash_ring, installed on its completion queue), the read is started
 * there and the worker's loop hands its result to flash_read_complete.
 * Else, or when the ring refuses it, a small pool of threads (ext_threads)
 * runs the pread and posts the request to the worker's completion queue
 * (a thread takes up to ext_io_depth queued requests at once and reads
 * them in turn, as memcached's IO threads do),
 * whose eventfd the worker's loop watches; the worker then runs
 * flash_cq_drain. Either way each request's done() runs on the worker's own
 * thread, with the same result and counters. Knows nothing of the flash
 * format; docs/store-flash.md. */
#ifndef NODELAY_STORE_FLASH_DEV_H
#define NODELAY_STORE_FLASH_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_flash.h" /* struct store_flash_ring */

#define FLASH_DEV_FILES_MAX 16
/* O_DIRECT wants buffers, offsets and lengths in multiples of the logical
 * block; 4096 covers every device in use. */
#define FLASH_DEV_ALIGN 4096u

struct flash_dev_file_opt {
    const char *path;
    uint64_t size;       /* bytes; whole pages of it are used */
};
struct flash_dev_options {
    struct flash_dev_file_opt files[FLASH_DEV_FILES_MAX];
    int nfiles;
    uint64_t page_size;  /* bytes: a multiple of FLASH_DEV_ALIGN */
    int threads;         /* read threads; 0 = no pool (flash_dev_submit refused) */
    unsigned io_depth;   /* ext_io_depth: queued reads a thread takes at once; 0 = 1 */
};

/* The device's counters: every error a code for the caller and a count
 * here (they join the counters table when the tier is wired in). */
struct flash_dev_counters {
    uint64_t reads, bytes_read, writes, bytes_written;
    uint64_t read_errors;    /* EIO and other failed preads */
    uint64_t short_reads;    /* fewer bytes than asked: the file shrank */
    uint64_t write_errors;   /* failed pwrites but ENOSPC */
    uint64_t nospace;        /* ENOSPC on a write */
    uint64_t ring_reads;     /* reads started on a worker's ring */
    uint64_t pool_reads;     /* reads handed to the pool */
};

struct flash_dev_file {
    int fd;
    bool direct;         /* opened O_DIRECT */
    uint64_t size;
    uint32_t first_page; /* the device's page number of its page 0 */
    uint32_t npages;
};

/* A read in flight. The caller fills page..done, keeps it (and buf) alive
 * until done() runs, and reads result there. */
struct flash_cq;
struct flash_dev;
struct flash_read {
    uint32_t page;
    uint64_t off;        /* within the page */
    uint32_t len;
    void *buf;           /* FLASH_DEV_ALIGN-aligned for an O_DIRECT file */
    void (*done)(struct flash_read *r);
    void *arg;
    int result;          /* bytes read (== len), or -errno; -ENODATA: short */
    struct flash_cq *cq;
    struct flash_dev *dev;
    struct flash_read *next;
};

/* A completion queue: one per worker. Its fd (an eventfd) turns readable
 * when the pool's completions wait; the worker then calls flash_cq_drain.
 * Reads started on its ring complete through flash_read_complete. */
struct flash_cq {
    int fd;
    pthread_mutex_t lock;
    struct flash_read *head, *tail;
    struct store_flash_ring ring; /* the worker's (store_flash.h), or start NULL */
    unsigned ring_inflight;       /* started there, not yet completed */
};
int flash_cq_init(struct flash_cq *cq);
void flash_cq_destroy(struct flash_cq *cq);
/* Calls done() for every completed read, in completion order; returns how
 * many. Never blocks. */
int flash_cq_drain(struct flash_cq *cq);
/* A read started on cq's ring ended (store_flash_ring_done): res is the
 * bytes read or -errno, as the ring reports it. Counted as the pool counts
 * its reads (a short read is -ENODATA), then done() runs. On the worker's
 * thread. */
void flash_read_complete(struct flash_read *r, int res);

struct flash_dev {
    struct flash_dev_file files[FLASH_DEV_FILES_MAX];
    int nfiles;
    uint64_t page_size;
    uint32_t npages;
    struct flash_dev_counters c;  /* updated with __atomic adds */
    /* the read pool */
    pthread_t *threads;
    int nthreads;
    unsigned io_depth;   /* at least 1 */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct flash_read *head, *tail;
    bool stopping;
    unsigned delay_ms;   /* debug builds: NODELAY_DEBUG_FLASH_DEV (flash_dev_open) */
    unsigned write_delay_ms; /* debug builds: NODELAY_DEBUG_FLASH_WRITE */
};

/* Open (creating) and preallocate every file, O_DIRECT where the
 * filesystem takes it (else one log line and the page cache), and start
 * the read threads. Returns 0, or -errno with *why (at most n bytes) naming
 * the file and what failed; nothing is left open then. Debug builds:
 * NODELAY_DEBUG_FLASH_DEV=MS in the environment makes every read take MS
 * milliseconds more, on the pool and on the rings alike (a slow device,
 * for tests); NODELAY_DEBUG_FLASH_WRITE=MS, every segment write. */
int flash_dev_open(struct flash_dev *dev, const struct flash_dev_options *opt, char *why,
                   size_t n);
/* Opens (creating, mode 0600) one file and takes the lock flash_dev_open
 * takes: the start-up check memcached makes of every ext_path. The locked
 * descriptor (the caller closes it once every file is probed, so a file
 * named twice fails its second probe) or -errno (-EWOULDBLOCK: another
 * server, or another ext_path of this one, holds the file; -EINVAL: not a
 * regular file). */
int flash_dev_probe(const char *path);
/* Stops the threads (reads still queued complete with -ECANCELED) and
 * closes the files. */
void flash_dev_close(struct flash_dev *dev);

/* Writes len bytes at off in page (all FLASH_DEV_ALIGN multiples, inside
 * the page). Synchronous. 0 or -errno (-ENOSPC: the disk is full). */
int flash_dev_write(struct flash_dev *dev, uint32_t page, uint64_t off, const void *buf,
                    uint32_t len);
/* Reads synchronously (the restore scan, the read threads): len bytes, or
 * -errno; -ENODATA when the file ends first. */
int flash_dev_read(struct flash_dev *dev, uint32_t page, uint64_t off, void *buf, uint32_t len);
/* Starts a read on cq's ring, else queues it on the pool; r->done runs
 * later on cq's side. 0, or -EINVAL (out of range: done is not called) or
 * -ENOSYS (no ring took it and there is no pool). */
int flash_dev_submit(struct flash_dev *dev, struct flash_cq *cq, struct flash_read *r);
/* A consistent-enough copy of the counters. */
void flash_dev_counters(const struct flash_dev *dev, struct flash_dev_counters *out);

#endif
