/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's `watch` log streams.
 *
 * A watcher is a client connection that asked for event lines (`watch
 * fetchers mutations ...`). Workers format a line where the event happens
 * and copy it into every interested watcher's bounded buffer; the watcher's
 * own worker moves the buffer into that connection's reply queue as its
 * socket drains. A full buffer drops the line and counts it, so a slow
 * watcher costs the workers nothing but the copy it skipped: no worker ever
 * waits for a watcher's socket. The dropped lines are reported in the stream
 * as memcached reports them ("skipped=N") once there is room again.
 *
 * When nobody watches, an event point costs one relaxed load and a branch
 * (watch_active). Line formats are memcached 1.6.45's (logger.c); see
 * docs/server.md "watch".
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

/* -vvv on or off (whoever sets the verbosity: main.c, server.c). */
void watch_set_stderr(bool on);

/* Parse one `watch` argument (memcached accepts a prefix of a name); 0 when
 * it names nothing. */
unsigned watch_flag_parse(const char *s, size_t len);

enum watch_add_result { WATCH_ADD_OK, WATCH_ADD_TOO_MANY, WATCH_ADD_FAILED };

/* Register a watcher for `flags` with a buffer of bufsize bytes. Its wake-up
 * pipe joins `loop` with event pointer `wake_ptr`, which the owner keeps
 * valid until the end of the loop turn that removes the watcher (a struct
 * watch of kind WATCH_LOG in the connection, net/watch.h): when it fires,
 * the worker flushes the connection, which calls watch_refill. */
enum watch_add_result watch_add(unsigned flags, size_t bufsize, struct event_loop *loop,
                                void *wake_ptr, struct watcher **out);
/* Unregister and free (the owner's thread, before its loop goes away). */
void watch_remove(struct watcher **w);

/* Move buffered lines to the connection while it owes (`pending`) less than
 * the watcher's buffer size, through copy(ctx, bytes, n), which returns 0 or
 * -1 (out of memory: the bytes stay for the next call). The connection owns
 * the reply queue, so watch/ needs nothing of it. Returns the bytes moved
 * (0: nothing to add now). */
typedef int (*watch_copy_fn)(void *ctx, const void *data, size_t n);
size_t watch_refill(struct watcher *w, size_t pending, watch_copy_fn copy, void *ctx);

/* ---- event lines (watch_events.c); call only behind watch_active() ---- */

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

/* Counters for `stats`, memcached's names. log_worker_dropped stays 0 by
 * construction: workers write straight into watcher buffers (no per-worker
 * buffer to overflow); what a full watcher buffer drops is log_watcher_skipped. */
struct watch_counters {
    uint64_t log_worker_dropped;
    uint64_t log_worker_written;  /* event lines workers produced */
    uint64_t log_watcher_skipped; /* lines a full watcher buffer dropped */
    uint64_t log_watcher_sent;    /* lines placed in a watcher buffer */
    uint64_t log_watchers;        /* watchers now */
};
void watch_counters_get(struct watch_counters *out);

/* For watch_events.c: offer one finished line (ending "\n") to every
 * watcher of `flag`. */
void watch_offer(unsigned flag, const char *line, size_t len);

#endif
