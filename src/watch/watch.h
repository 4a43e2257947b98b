/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's `watch` log streams.
 *
 * A watcher is a client connection that asked for event lines (`watch
 * fetchers mutations ...`). Where an event happens, the thread appends a
 * compact binary record (fields and raw key) to its own bounded ring: no
 * lock, no formatting, no system call; a full ring drops the record and
 * counts it. A pump, run by the workers between their connections' events
 * under a CPU budget, formats each record once and copies the line into
 * the bounded buffer of every watcher of its class; a full buffer skips the
 * line and counts it. The watcher's own worker moves its buffer into that
 * connection's reply queue as its socket drains. So a watcher costs a
 * worker's clients one record per event, whatever the number of watchers
 * and whether they read; what they lose is reported in the stream as
 * memcached reports it ("skipped=N").
 *
 * When nobody watches, an event point costs one relaxed load and a branch
 * (watch_active). Line formats are memcached 1.6.45's (logger.c); see
 * docs/observability.md "`watch` log streams".
 */
#ifndef NODELAY_WATCH_H
#define NODELAY_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_loop;
struct watcher;

/* Event classes, as `watch` names them. */
enum watch_flag {
    WATCH_FETCHERS = 1u << 0,   /* item_get */
    WATCH_MUTATIONS = 1u << 1,  /* item_store */
    WATCH_EVICTIONS = 1u << 2,  /* eviction */
    WATCH_CONNEVENTS = 1u << 3, /* conn_new, conn_close */
    WATCH_DELETIONS = 1u << 4,  /* deleted */
    WATCH_SYSEVENTS = 1u << 5,  /* accepted; nodelay has no such events */
    WATCH_RAWCMDS = 1u << 6,    /* accepted; nodelay has no such events */
    WATCH_PROXY = 1u << 7,      /* proxyreqs/proxyevents/proxyuser: no proxy here */
    WATCH_STDERR = 1u << 8,     /* not a watcher: -vvv's "> FOUND KEY" lines */
};
/* The classes producers log records for. */
#define WATCH_LOGGED (WATCH_FETCHERS | WATCH_MUTATIONS | WATCH_EVICTIONS | WATCH_CONNEVENTS | WATCH_DELETIONS)
/* What a lookup point checks: a fetchers watcher or -vvv. */
#define WATCH_LOOKUPS (WATCH_FETCHERS | WATCH_STDERR)

/* memcached's WATCHER_LIMIT. */
#define WATCH_MAX_WATCHERS 20

/* The union of every watcher's flags; written under the registry lock. */
extern unsigned watch_mask;

static inline bool watch_active(unsigned flags)
{
    return __builtin_expect((__atomic_load_n(&watch_mask, __ATOMIC_RELAXED) & flags) != 0, 0);
}

/* Bytes of each producing thread's ring (-o worker_logbuf_size, for rings
 * made after) and the pump's share of one CPU in percent (-o
 * watch_cpu_percent). */
void watch_configure(size_t worker_ring_bytes, unsigned cpu_percent);

/* -vvv on or off (whoever sets the verbosity: main.c, server.c). */
void watch_set_stderr(bool on);

/* Parse one `watch` argument (memcached accepts a prefix of a name); 0 when
 * it names nothing. */
unsigned watch_flag_parse(const char *s, size_t len);

enum watch_add_result { WATCH_ADD_OK, WATCH_ADD_TOO_MANY, WATCH_ADD_FAILED };

/* Register a watcher for `flags` with a buffer of bufsize bytes. Its wake-up
 * pipe joins `loop` with event pointer `wake_ptr`, which the owner keeps
 * valid until the end of the loop turn that removes the watcher (a struct
 * loop_token of kind TOKEN_WATCH in the connection, net/loop_token.h): when
 * it fires, the worker takes it (watch_ack) and flushes the connection,
 * which calls watch_refill. Waits for a running pump to finish its slice. */
enum watch_add_result watch_add(unsigned flags, size_t bufsize, struct event_loop *loop,
                                void *wake_ptr, struct watcher **out);
/* Unregister and free (the owner's thread, before its loop goes away);
 * waits for a running pump to finish its slice. */
void watch_remove(struct watcher **w);

/* Turn the records waiting in the producers' rings into lines for the
 * watchers, within the pump's CPU budget; returns at once when another
 * thread is pumping or there is nothing to do. Workers call it every loop
 * turn while someone watches, and every WATCH_POLL_MS when idle. */
void watch_pump(void);
#define WATCH_POLL_MS 10

/* Lines in w's buffer not yet moved to the connection? (the owner) */
bool watch_has_lines(const struct watcher *w);
/* The wake-up pipe fired (the owner, before flushing): take it, even when
 * the socket is behind and nothing can be moved (then the connection
 * flushes again once it drains, while watch_has_lines). */
void watch_ack(struct watcher *w);

/* Pump, then move buffered lines to the connection while it owes
 * (`pending`) less than the watcher's buffer size, through copy(ctx, bytes,
 * n), which returns 0 or -1 (out of memory: the bytes stay for the next
 * call). The connection owns the reply queue, so watch/ needs nothing of
 * it. Returns the bytes moved (0: nothing to add now). */
typedef int (*watch_copy_fn)(void *ctx, const void *data, size_t n);
size_t watch_refill(struct watcher *w, size_t pending, watch_copy_fn copy, void *ctx);

/* ---- event records (watch_events.c); call only behind watch_active() ---- */

enum watch_get_status { WATCH_GET_NOT_FOUND, WATCH_GET_FOUND, WATCH_GET_FLUSHED, WATCH_GET_EXPIRED };
/* memcached's store_item_type order */
enum watch_store_status {
    WATCH_STORE_NOT_STORED, WATCH_STORE_STORED, WATCH_STORE_EXISTS, WATCH_STORE_NOT_FOUND,
    WATCH_STORE_TOO_LARGE, WATCH_STORE_NO_MEMORY,
};

void watch_item_get(const char *key, size_t nkey, enum watch_get_status st, unsigned clsid,
                    int cfd, uint32_t size);
/* cmd: "set", "add", ..., "cas"; ttl: seconds left, 0 = never (memcached
 * prints it unsigned, so a negative ttl reads as a large number). */
void watch_item_store(const char *key, size_t nkey, enum watch_store_status st, const char *cmd,
                      uint32_t ttl, unsigned clsid, int cfd, uint32_t size);
/* cmd: "delete", "md", ... */
void watch_deleted(const char *key, size_t nkey, const char *cmd, unsigned clsid, uint32_t size);
/* ttl: seconds left, -1 = never; la: seconds since last access. */
void watch_eviction(const char *key, size_t nkey, bool fetched, long long ttl, unsigned la,
                    unsigned clsid, uint32_t size);
/* A connection opened (why == NULL and opened) or closed. addr as the
 * connection registry keeps it: "tcp:1.2.3.4:5", "tcp6:[::1]:5", "unix:path".
 * why is the reason conn_close was given: NULL (the client left or quit),
 * "idle timeout", "server stopping", anything else an error. */
void watch_conn_event(const char *addr, bool opened, const char *why, int cfd);

/* Counters for `stats`, memcached's names. */
struct watch_counters {
    uint64_t log_worker_dropped;  /* records a full producer ring dropped */
    uint64_t log_worker_written;  /* records producers wrote */
    uint64_t log_watcher_skipped; /* lines a watcher lost (its buffer or a ring full) */
    uint64_t log_watcher_sent;    /* lines placed in a watcher buffer */
    uint64_t log_watchers;        /* watchers now */
};
void watch_counters_get(struct watch_counters *out);

/* For watch_events.c: append one record of class `flag` (and its key or
 * address, nkey bytes) to this thread's ring. */
struct watch_rec;
void watch_emit(unsigned flag, const struct watch_rec *r, const char *key, size_t nkey);

#endif
