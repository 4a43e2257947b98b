/* SPDX-License-Identifier: BSD-3-Clause */
/* What an event's pointer refers to, for every kind of thing a worker's
 * loop watches. WATCH_LOG: a `watch` stream has lines for this connection
 * (obj), see watch/watch.h. */
#ifndef NODELAY_NET_WATCH_H
#define NODELAY_NET_WATCH_H

enum watch_kind { WATCH_CONN, WATCH_LISTENER, WATCH_UDP, WATCH_WAKE, WATCH_LOG };
struct watch {
    enum watch_kind kind;
    void *obj;
};

#endif
