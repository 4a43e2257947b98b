/* SPDX-License-Identifier: BSD-3-Clause */
/* Set-up shared by the flash tier's store unit tests (test_store_flash.c,
 * test_store_flash_scan.c): a store with 4 MiB of RAM over the test's
 * flash file (test_flash_file.h), keys put in paced to the writer thread,
 * and the worker's flash completions run as a session's loop runs them,
 * every wait bounded by time. */
#ifndef TEST_STORE_FLASH_HELPERS_H
#define TEST_STORE_FLASH_HELPERS_H

#include <poll.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "test_store_helpers.h"
#include "test_flash_file.h"
#include "store/store_core.h"
#include "store/store_flash.h"
#include "store/store_lookup.h"

#define MB (1u << 20)
#define VLEN 1000

/* The reader of run-time values the next store opens with (none: 0). */
static struct flash_tuning_src open_tuning;

/* -m 4 MiB of RAM and `flash` bytes of flash in 64 KiB segments, 256 KiB
 * pages; items of item_size bytes and up go there; hashpower 0: the
 * default. */
static inline void open_flash_ex(struct tstore *t, uint64_t flash, uint32_t compact_under,
                                 uint32_t item_size, unsigned hashpower)
{
    clock_setup();
    unlink(flash_path);
    struct store_options o = {
        .mem_limit = 4 * MB,
        .item_size_max = 32 * 1024,
        .evictions = true,
        .cas_enabled = true,
        .hashpower = hashpower,
        .flash =
            {
                .nfiles = 1,
                .paths = {flash_path},
                .sizes = {flash},
                .page_size = 256 * 1024,
                .wbuf_size = 64 * 1024,
                .threads = 2,
                .item_size = item_size,
                .item_age = UINT32_MAX,
                .compact_under = compact_under,
                .max_frag = 0.8,
                .max_sleep = 1000000,
                .tuning = open_tuning,
            },
    };
    tstore_open_opts(t, &o);
    assert_non_null(t->s->flash);
}

/* Values of 512 bytes and up go to flash at eviction. */
static inline void open_flash(struct tstore *t, uint64_t flash, uint32_t compact_under)
{
    open_flash_ex(t, flash, compact_under, 512, 0);
}

static inline void value_of(int i, char *v)
{
    for (int j = 0; j < VLEN; j++)
        v[j] = (char)('a' + (i * 7 + j) % 26);
    v[VLEN] = 0;
}

static inline void key_of(int i, char *k)
{
    snprintf(k, 32, "key:%08d", i);
}

/* Key i with its value and flags i; its CAS in *cas, when given. */
static inline void put(struct tstore *t, int i, uint64_t *cas)
{
    char k[32], v[VLEN + 1];
    key_of(i, k);
    value_of(i, v);
    assert_int_equal(tset(t, k, v, STORE_MODE_SET, (uint32_t)i, 0, cas), STORE_OK);
}

/* A wait set's wake: counts in the int it was given. */
static inline void on_wake(void *arg)
{
    (*(int *)arg)++;
}

/* How long a test waits for flash reads, in ms of the monotonic clock. The
 * waits are bounded by time, not by turns of the loop: under load each turn
 * may find a single completion (6,000 reads took 2,725 turns, not 2, with
 * both CPUs busy), so a bound in turns fails a read that was only slow. */
#define DRAIN_MS 60000

static inline uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t drain_end(void)
{
    return ms_now() + DRAIN_MS;
}

/* One turn of the worker's loop: wait up to 10 ms for completions, run
 * them. False once the time from drain_end() is up. */
static inline bool drain_turn(struct tstore *t, uint64_t end)
{
    struct pollfd p = {.fd = store_flash_fd(t->c), .events = POLLIN};
    poll(&p, 1, 10);
    store_flash_drain(t->c);
    return ms_now() < end;
}

/* Drain until *woke moves past before (bounded): one wake, no more. */
static inline void wait_woken(struct tstore *t, int *woke, int before)
{
    uint64_t end = drain_end();
    while (*woke == before && drain_turn(t, end))
        ;
    assert_int_equal(*woke, before + 1);
}

/* Let the writer thread put every full buffer on the device. */
static inline void settle(struct tstore *t)
{
    /* bounded by time, as drain_turn: on a loaded machine 500 sleeps of
     * 10 ms may end before the writer does, and the next sets then find no
     * free buffer (skipped_full) */
    uint64_t end = drain_end();
    struct flash_tier_gauges g;
    for (flash_tier_gauges(t->s->flash, &g); g.io_queue && ms_now() < end;
         flash_tier_gauges(t->s->flash, &g))
        usleep(10000);
}

/* Keys 0..n-1 (put: each one's CAS in cas[], when given), paced to the
 * writer thread: a buffer free when eviction needs one (else items are
 * evicted as without flash, skipped_full). */
static inline void fill(struct tstore *t, int n, uint64_t *cas)
{
    for (int i = 0; i < n; i++) {
        put(t, i, cas ? &cas[i] : NULL);
        if (i % 64 == 63)
            settle(t);
    }
    settle(t);
}

/* Probe key i; on WAIT, drain until the wait set wakes (bounded). Returns
 * whether it waited. w stays attached, as a session's while it runs: the
 * lookups that follow put what it read back in RAM. */
static inline bool probe(struct tstore *t, struct store_flash_wait *w, int *woke, int i)
{
    char k[32];
    key_of(i, k);
    struct store_key key = store_key_of(k, strlen(k));
    int before = *woke;
    store_flash_attach(t->c, w);
    if (store_flash_probe(t->c, w, &key) == STORE_PROBE_READY)
        return false;
    assert_true(store_flash_pending(w) > 0);
    assert_true(store_flash_fd(t->c) >= 0);
    wait_woken(t, woke, before);
    assert_int_equal(store_flash_pending(w), 0);
    /* run again, as the session does: READY now */
    assert_int_equal(store_flash_probe(t->c, w, &key), STORE_PROBE_READY);
    return true;
}

#endif
