/* SPDX-License-Identifier: BSD-3-Clause */
/* What a watch event records where it happens (watch_events.c) and what
 * the watchers' side formats from it: fixed fields, then the key (or the
 * connection's address) as it was, not encoded. */
#ifndef NODELAY_WATCH_REC_H
#define NODELAY_WATCH_REC_H

#include <stddef.h>
#include <stdint.h>

enum watch_rec_type {
    WATCH_REC_GET, WATCH_REC_STORE, WATCH_REC_DELETED, WATCH_REC_EVICTION,
    WATCH_REC_CONN_NEW, WATCH_REC_CONN_CLOSE,
};
/* conn_close reasons, memcached's names in this order (watch_format) */
enum { WATCH_CLOSE_NORMAL, WATCH_CLOSE_ERROR, WATCH_CLOSE_IDLE, WATCH_CLOSE_SHUTDOWN };

/* The longest connection address kept (the registry's are shorter). */
#define WATCH_ADDR_MAX 200

struct watch_rec {
    int64_t sec;     /* when it happened (the coarse real-time clock) */
    int64_t ttl;     /* store: seconds left (printed unsigned); eviction: -1 = never */
    const char *cmd; /* store/deleted: a string literal ("set", "md" ...) */
    int32_t usec;
    int32_t cfd;
    uint32_t clsid;
    uint32_t size;
    uint32_t la;     /* eviction: seconds since last access */
    uint8_t type;    /* enum watch_rec_type */
    uint8_t status;  /* get/store status, eviction's fetched, close reason */
};

/* The line for r (its key or address: nkey bytes) with this gid, ending
 * "\n", into out; returns its length (0: it did not fit in cap).
 * (watch_format.c) */
size_t watch_format(const struct watch_rec *r, const char *key, size_t nkey, uint64_t gid,
                    char *out, size_t cap);

#endif
