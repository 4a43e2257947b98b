/* SPDX-License-Identifier: BSD-3-Clause */
/* Who is connected, for `stats conns`, and how many descriptors ever held
 * a connection or listener (memcached's connection_structures). Every
 * listener and connection has an entry, indexed by fd. Entries change only
 * at accept and close (under one mutex); the per-request fields are relaxed
 * atomics written by the owning worker, so the request path never takes
 * the lock. */
#ifndef NODELAY_REGISTRY_H
#define NODELAY_REGISTRY_H

#include <pthread.h>
#include <stddef.h>

#include "base/clock.h"
#include "base/log.h"

struct stats_emit;

enum registry_state {
    REGISTRY_LISTENING,
    REGISTRY_NEW_CMD,   /* idle, waiting for a request */
    REGISTRY_READ,      /* part of a request line is buffered */
    REGISTRY_PARSE_CMD, /* running requests */
    REGISTRY_NREAD,     /* a value is arriving */
    REGISTRY_MWRITE,    /* the client is slow to take its replies */
    REGISTRY_CLOSING,
};

/* The fields a worker writes per request (state, last_cmd) come first, so
 * that they share a cache line with the connection's own (conn.h). */
struct registry_entry {
    int fd;
    int state;               /* enum registry_state, relaxed atomic */
    rel_time_t last_cmd;     /* relaxed atomic */
    const char *listen_addr; /* NULL for a listener */
    char addr[128];
};

struct registry {
    pthread_mutex_t lock;
    struct registry_entry **by_fd;
    unsigned char *used;     /* by fd: ever held an entry */
    size_t cap;
    size_t structures;       /* descriptors that ever held an entry */
};

int registry_init(struct registry *r);
void registry_release(struct registry *r);
int registry_add(struct registry *r, struct registry_entry *e);
void registry_remove(struct registry *r, struct registry_entry *e);

/* -vvv: memcached's "fd: going from conn_x to conn_y" (owning worker only). */
void registry_log_state(const struct registry_entry *e, enum registry_state st);

static inline void registry_set_state(struct registry_entry *e, enum registry_state st)
{
    if (LOG_ENABLED(LOG_LEVEL_DEBUG))
        registry_log_state(e, st);
    __atomic_store_n(&e->state, (int)st, __ATOMIC_RELAXED);
}
static inline void registry_touch(struct registry_entry *e, rel_time_t now)
{
    __atomic_store_n(&e->last_cmd, now, __ATOMIC_RELAXED);
}

/* memcached's state names ("conn_new_cmd", ...). */
const char *registry_state_name(int state);

/* `stats conns` rows, in fd order. Returns 0 or -1 (out of memory). */
int registry_compose(struct registry *r, rel_time_t now, const struct stats_emit *e);

/* How many descriptors ever held an entry: memcached's connection_structures
 * (it keeps one conn struct per descriptor it has used, listeners included). */
size_t registry_structures(struct registry *r);

#endif
