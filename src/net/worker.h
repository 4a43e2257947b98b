/* SPDX-License-Identifier: BSD-3-Clause */
/* A worker thread: one event loop owning its connections end to end, its own
 * store context and counters. Listeners are watched by every worker. */
#ifndef NODELAY_WORKER_H
#define NODELAY_WORKER_H

#include <pthread.h>
#include <stddef.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "net/conn_env.h"
#include "net/rbuf_pool.h"
#include "net/loop_token.h"
#include "stats/stats.h"

struct worker_pool;
struct conn;
struct event_loop;
struct store_ctx;
struct flash_loop;

#define WORKER_IOV_MAX 1024
#define WORKER_UDP_BUF 65536 /* the largest datagram */

struct worker {
    struct worker_pool *pool;
    int id;
    pthread_t thread;
    bool started;
    struct event_loop *loop;
    struct store_ctx *store;
    struct flash_loop *flash;     /* its flash tier's waits, NULL: none */
    struct loop_token flash_watch; /* their completions' fds */
    struct stats_thread stats;
    int wake[2];                  /* pipe: worker_pool_stop writes, the loop reads */
    struct loop_token wake_watch;
    struct loop_token *listen_watch;   /* one per listener */
    bool listening;
    rel_time_t relisten_at;       /* after EMFILE: try accepting again then */

    struct conn_env env;          /* what its connections borrow; their lists */

    struct rbuf_pool rbufs;       /* read buffers, counted in rbuf_bytes */
    struct iovec iov[WORKER_IOV_MAX];
    char *udp_buf;                /* WORKER_UDP_BUF bytes when UDP is on */

    size_t reply_bytes;           /* memory reply queues hold (reply_held), relaxed atomic */
    size_t rbuf_bytes;            /* read buffer bytes held, relaxed atomic */
    size_t client_peak;           /* high point of the two since the last trim */
    uint64_t moved_mark;          /* bytes read + written at the last tick */
    bool busy;                    /* moved more than WORKER_QUIET_BYTES in its last
                                     second (relaxed atomic; the trimmer reads it) */
    bool clients_since_trim;      /* had connections since the last trim */
};

int worker_init(struct worker *w, struct worker_pool *pool, int id);
void worker_release(struct worker *w);
void *worker_main(void *arg);
/* From another thread: wake the loop so it notices pool->stopping. */
void worker_wake(struct worker *w);


#endif
