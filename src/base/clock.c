/* SPDX-License-Identifier: BSD-3-Clause */
#include "base/clock.h"

#include <stdatomic.h>

/* Start-up is placed this many seconds in the past so that rel_time_t values
 * are never 0 or 1 (reserved), as memcached does with process_started. */
#define CLOCK_START_SLACK 2

/* Whole seconds are all we need: the coarse clock is read from the vDSO
 * without touching the hardware counter, so reading it per request is cheap. */
#ifdef CLOCK_MONOTONIC_COARSE
#define CLOCK_SOURCE CLOCK_MONOTONIC_COARSE
#else
#define CLOCK_SOURCE CLOCK_MONOTONIC
#endif

static struct timespec clock_mono_start;
static time_t clock_unix_start;
static rel_time_t clock_rel_base = CLOCK_START_SLACK; /* what the clock read at clock_mono_start */
static _Atomic uint32_t clock_debug_offset;
static _Atomic uint32_t clock_paused_at; /* 0 = running */

__thread rel_time_t clock_held;

void clock_setup(void)
{
    clock_gettime(CLOCK_SOURCE, &clock_mono_start);
    clock_unix_start = time(NULL) - CLOCK_START_SLACK;
    clock_rel_base = CLOCK_START_SLACK;
    atomic_store(&clock_debug_offset, 0);
    atomic_store(&clock_paused_at, 0);
}

void clock_resume(time_t epoch, rel_time_t now)
{
    clock_gettime(CLOCK_SOURCE, &clock_mono_start);
    clock_unix_start = epoch;
    clock_rel_base = now > CLOCK_START_SLACK ? now : CLOCK_START_SLACK;
    atomic_store(&clock_debug_offset, 0);
    atomic_store(&clock_paused_at, 0);
}

static rel_time_t clock_running_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_SOURCE, &ts);
    time_t elapsed = ts.tv_sec - clock_mono_start.tv_sec;
    if (ts.tv_nsec < clock_mono_start.tv_nsec)
        elapsed--;
    return (rel_time_t)elapsed + clock_rel_base +
           atomic_load_explicit(&clock_debug_offset, memory_order_relaxed);
}

rel_time_t clock_read(void)
{
    uint32_t paused = atomic_load_explicit(&clock_paused_at, memory_order_relaxed);
    return paused ? paused : clock_running_now();
}

time_t clock_epoch(void)
{
    return clock_unix_start;
}

time_t clock_unix_now(void)
{
    return clock_unix_start + (time_t)clock_now();
}

rel_time_t clock_exptime(int64_t exptime)
{
    if (exptime == 0)
        return REL_TIME_NEVER;
    if (exptime < 0)
        return REL_TIME_EXPIRED;
    if (exptime > CLOCK_MAX_RELATIVE) {
        if (exptime <= (int64_t)clock_unix_start)
            return REL_TIME_EXPIRED;
        int64_t rel = exptime - (int64_t)clock_unix_start;
        return rel > UINT32_MAX ? UINT32_MAX : (rel_time_t)rel;
    }
    uint64_t rel = (uint64_t)exptime + clock_now();
    return rel > UINT32_MAX ? UINT32_MAX : (rel_time_t)rel;
}

#ifdef NODELAY_DEBUG
/* The clock moved under a held batch (debugtime in it): the requests after
 * the command see the moved clock, as they did before holds. Other threads'
 * batches began before the move and keep the time they began at. */
static void clock_rehold(void)
{
    if (clock_held)
        clock_held = clock_read();
}

void clock_debug_advance(uint32_t seconds)
{
    atomic_fetch_add(&clock_debug_offset, seconds);
    uint32_t paused = atomic_load(&clock_paused_at);
    if (paused)
        atomic_store(&clock_paused_at, paused + seconds);
    clock_rehold();
}

void clock_debug_pause(bool paused)
{
    if (paused) {
        atomic_store(&clock_paused_at, clock_running_now());
    } else {
        /* Resume where the paused clock stood: fold the paused span into the offset. */
        uint32_t at = atomic_load(&clock_paused_at);
        if (!at)
            return;
        rel_time_t running = clock_running_now();
        if (at > running)
            atomic_fetch_add(&clock_debug_offset, at - running);
        else
            atomic_fetch_sub(&clock_debug_offset,
                             (running - at) > atomic_load(&clock_debug_offset)
                                 ? atomic_load(&clock_debug_offset)
                                 : (running - at));
        atomic_store(&clock_paused_at, 0);
    }
    clock_rehold();
}
#endif
