/* SPDX-License-Identifier: BSD-3-Clause */
/* The server clock: whole seconds since start-up, as memcached keeps it.
 *
 * Every time the store and protocols compare is a rel_time_t: seconds on the
 * server's own clock. Relative time makes expiry independent of wall-clock
 * jumps and lets a 32-bit field hold any expiry. Debug builds can move the
 * clock (memcached's `debugtime`) so tests exercise expiry without sleeping.
 */
#ifndef NODELAY_CLOCK_H
#define NODELAY_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

typedef uint32_t rel_time_t;

/* Expiry value meaning "never expires". */
#define REL_TIME_NEVER ((rel_time_t)0)
/* Expiry value meaning "already expired" (memcached's realtime() returns 1). */
#define REL_TIME_EXPIRED ((rel_time_t)1)
/* Relative exptimes up to this many seconds; larger values are unix times. */
#define CLOCK_MAX_RELATIVE (60 * 60 * 24 * 30)

/* Start the clock; call once before any other clock_ function. */
void clock_setup(void);

/* Continue a previous run's clock (a cache restored from -e): rel_time_t 0
 * is `epoch` again and the clock reads `now` from here on, so the times
 * items carry keep their meaning and the time spent down counts against
 * their TTLs, as memcached's restart does. Call before any thread reads it. */
void clock_resume(time_t epoch, rel_time_t now);

/* The clock itself: seconds since start-up (plus any debug offset). Never
 * returns 0 or 1, so those stay free for REL_TIME_NEVER and
 * REL_TIME_EXPIRED. Thread-safe. */
rel_time_t clock_read(void);

/* What this thread's clock is held at (clock_hold), 0 when it is not. */
extern __thread rel_time_t clock_held;

/* The server's time: clock_read(), or the time this thread's clock is held
 * at while it runs the requests of one read (clock_hold). */
static inline rel_time_t clock_now(void)
{
    rel_time_t held = clock_held;
    return held ? held : clock_read();
}

/* Hold this thread's clock for a batch of requests that arrived together
 * (one read's): clock_now() reads it once, here, instead of once a lookup.
 * They were all received before this read of the clock, so each may be
 * served at the time it gives, as if the batch ran in an instant; expiry,
 * flush and the times written are judged on the one clock inside it. Runs
 * no longer than the batch (memcached's own clock lags by up to a second).
 * Returns whether this call took the hold (a nested one does not), which
 * clock_release wants back. */
static inline bool clock_hold(void)
{
    if (clock_held)
        return false;
    clock_held = clock_read();
    return true;
}

static inline void clock_release(bool took)
{
    if (took)
        clock_held = 0;
}

/* Unix time corresponding to rel_time_t 0. */
time_t clock_epoch(void);

/* Unix time now, on the same (possibly debug-shifted) clock. */
time_t clock_unix_now(void);

/* memcached's exptime rules: 0 never; negative already expired; up to 30
 * days relative to now; larger is an absolute unix time, expired if it is
 * at or before start-up. */
rel_time_t clock_exptime(int64_t exptime);

/* True when an item with this expiry has expired at `now`. */
static inline bool clock_expired(rel_time_t exptime, rel_time_t now)
{
    return exptime != REL_TIME_NEVER && exptime <= now;
}

/* Debug builds only (memcached's debugtime): move the clock forward by
 * `seconds`, or pause/resume it. Release builds compile these out. */
#ifdef NODELAY_DEBUG
void clock_debug_advance(uint32_t seconds);
void clock_debug_pause(bool paused);
#endif

#endif
