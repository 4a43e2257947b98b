/* SPDX-License-Identifier: BSD-3-Clause */
/* One load thread: its own epoll loop over its connections, each keeping up
 * to `depth` requests in flight, writing all it has in one send and reading
 * all it can before parsing. */
#include "loadgen.h"
#include "tls.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <stddef.h>

#define MS (1000000ull)
/* slow requests traced per load thread; the counters hold the rest */
#define LG_TRACE_MAX 2000

uint64_t lg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int lg_connect(const char *host, int port, bool nonblocking)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res;
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    if (getaddrinfo(host, portstr, &hints, &res) != 0)
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return -1;
    }
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
        connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    if (lg_tls_start(fd) != 0) {
        close(fd);
        return -1;
    }
    if (nonblocking)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

struct req {
    uint64_t t_intended;
    /* for --trace-slow: when it was composed and when its last byte left in
     * a send, how many sends carried it, and where it lies in the
     * connection's byte stream */
    uint64_t t_issued, t_sent;
    uint64_t seq_start, seq_end;
    uint16_t nwrites, nagain;
    uint32_t unsent; /* bytes the kernel held unsent just after its last send */
    uint32_t ver;   /* set: version written; delete: newest version at send */
    uint8_t op;
    uint8_t nkeys;
    uint32_t *keys; /* into the connection's key slab */
};

struct conn {
    int fd;
    int gid; /* global connection number: owns keys gid, gid + conns, ... */
    enum lg_proto proto;
    bool want_out;
    struct lg_buf out, in;
    size_t in_off;
    uint64_t sent; /* bytes sent since the connection opened */
    struct req *ring;
    uint32_t *keyslab; /* depth * multi */
    unsigned head, count;
    uint64_t next_intended, interval;
    struct lg_rng rng;
};

struct worker {
    struct lg_shared *sh;
    const struct lg_config *cfg;
    int id, epfd, nconns;
    struct conn *conns;
    uint64_t quota, issued; /* quota 0: until deadline */
    uint64_t deadline;
    uint32_t prefill_next, prefill_end;
    bool stopping;
    bool failed;                /* the server could not be reached again */
    uint64_t connect_fail_since;
    struct lg_stats st;
    pthread_t thread;
};

static bool may_issue(struct worker *w, uint64_t now)
{
    if (w->stopping)
        return false;
    if (w->cfg->prefill)
        return w->prefill_next < w->prefill_end;
    if (w->quota)
        return w->issued < w->quota;
    return now < w->deadline;
}

static uint32_t pick_key(struct worker *w, struct conn *c)
{
    const struct lg_config *cfg = w->cfg;
    uint32_t k = lg_dist_pick(&w->sh->dist, &c->rng);
    if (cfg->strict) {
        /* move to the nearest key this connection owns */
        uint32_t n = (uint32_t)cfg->conns;
        k = k - k % n + (uint32_t)c->gid;
        if (k >= cfg->keys)
            k = (uint32_t)c->gid;
    }
    return k + cfg->key_base;
}

static int conn_open(struct worker *w, struct conn *c)
{
    c->fd = lg_connect(w->cfg->host, w->cfg->port, true);
    if (c->fd < 0)
        return -1;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
    c->want_out = false;
    return epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Forget in-flight requests. In strict mode their writes may still land, at
 * any later time (limbo.h): each is remembered as abandoned, and the keys
 * they touched also excuse misses for a while (an abandoned delete). */
static void conn_drop(struct worker *w, struct conn *c, uint64_t now)
{
    if (c->fd >= 0) {
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        lg_close(c->fd);
        c->fd = -1;
    }
    for (unsigned i = 0; i < c->count; i++) {
        struct req *r = &c->ring[(c->head + i) % (unsigned)w->cfg->depth];
        if (!w->cfg->strict || r->op == LG_OP_GET)
            continue;
        w->sh->taint_until[r->keys[0]] = now + 2000 * MS;
        uint32_t ver = r->op == LG_OP_SET ? r->ver : LG_LIMBO_DELETE;
        if (lg_limbo_add(&w->sh->limbo[r->keys[0]], ver, now) != 0) {
            fprintf(stderr, "loadgen: out of memory\n");
            exit(1);
        }
    }
    c->head = c->count = 0;
    c->out.len = 0;
    c->in.len = c->in_off = 0;
    c->sent = 0;
}

static void conn_set_out(struct worker *w, struct conn *c, bool want)
{
    if (c->want_out == want || c->fd < 0)
        return;
    struct epoll_event ev = { .events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c };
    epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want;
}

/* Which in-flight requests a send of stream bytes [a, b) carried. */
static void note_sent(struct worker *w, struct conn *c, uint64_t a, uint64_t b, uint64_t now)
{
    /* Unsent bytes left in the socket: the peer's window (or our
     * congestion window) held back what we wrote, and only its ACK lets the
     * rest go. */
    int unsent = -1;
    for (unsigned i = 0; i < c->count; i++) {
        struct req *r = &c->ring[(c->head + i) % (unsigned)w->cfg->depth];
        if (r->seq_start < b && r->seq_end > a) {
            r->nwrites++;
            if (r->seq_end <= b) {
                r->t_sent = now;
                if (unsent < 0 && ioctl(c->fd, SIOCOUTQNSD, &unsent) != 0)
                    unsent = 0;
                r->unsent = (uint32_t)unsent;
            }
        }
    }
}

/* Requests whose bytes a send could not take (EAGAIN) wait for EPOLLOUT. */
static void note_again(struct worker *w, struct conn *c)
{
    for (unsigned i = 0; i < c->count; i++) {
        struct req *r = &c->ring[(c->head + i) % (unsigned)w->cfg->depth];
        if (r->seq_end > c->sent)
            r->nagain++;
    }
}

static int conn_flush(struct worker *w, struct conn *c)
{
    size_t off = 0;
    uint64_t now = w->cfg->trace_slow ? lg_now_ns() : 0;
    while (off < c->out.len) {
        ssize_t n = lg_send(c->fd, c->out.p + off, c->out.len - off);
        if (n > 0) {
            if (w->cfg->trace_slow)
                note_sent(w, c, c->sent, c->sent + (uint64_t)n, now);
            off += (size_t)n;
            c->sent += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (w->cfg->trace_slow)
                note_again(w, c);
            break;
        }
        return -1;
    }
    memmove(c->out.p, c->out.p + off, c->out.len - off);
    c->out.len -= off;
    conn_set_out(w, c, c->out.len > 0);
    return 0;
}

/* Sends a set cut off in the middle of its value and closes: the server must
 * discard it. Its version is burnt (counted as sent, never acknowledged). */
static void conn_partial_and_drop(struct worker *w, struct conn *c, uint64_t now)
{
    uint32_t k = pick_key(w, c);
    uint32_t ver = w->cfg->strict ? ++w->sh->hi[k] : (uint32_t)lg_rng_next(&c->rng);
    uint32_t vlen = lg_value_len(&w->sh->values, k, ver);
    char key[LG_KEY_LEN];
    lg_key_format(key, k);
    char *v;
    size_t before = c->out.len;
    if (lg_wire_set(&c->out, c->proto, key, vlen, w->cfg->ttl, &v) == 0) {
        lg_value_write(&w->sh->values, v, k, ver);
        size_t cut = before + (c->out.len - before) / 2;
        c->out.len = cut;
        conn_flush(w, c);
        w->st.partial_sends++;
    }
    conn_drop(w, c, now);
    w->st.disconnects++;
}

static int issue_one(struct worker *w, struct conn *c, uint64_t t_intended)
{
    const struct lg_config *cfg = w->cfg;
    struct lg_shared *sh = w->sh;
    unsigned slot = (c->head + c->count) % (unsigned)cfg->depth;
    struct req *r = &c->ring[slot];
    r->t_intended = t_intended;
    r->t_issued = cfg->trace_slow ? lg_now_ns() : 0;
    r->t_sent = 0;
    r->nwrites = r->nagain = 0;
    r->unsent = 0;
    r->seq_start = c->sent + c->out.len;
    r->keys = c->keyslab + (size_t)slot * cfg->multi;
    double u = lg_rng_unit(&c->rng);
    char keybuf[LG_MAX_MULTI * LG_KEY_LEN];

    if (cfg->prefill) {
        r->op = LG_OP_SET;
        r->keys[0] = w->prefill_next++;
    } else if (u < cfg->get_ratio) {
        r->op = LG_OP_GET;
    } else if (u < cfg->get_ratio + cfg->del_ratio) {
        r->op = LG_OP_DELETE;
    } else {
        r->op = LG_OP_SET;
    }
    if (r->op == LG_OP_GET) {
        unsigned n = cfg->multi;
        if (cfg->multi_random)
            n = 1 + (unsigned)(lg_rng_next(&c->rng) % cfg->multi);
        r->nkeys = (uint8_t)n;
        for (unsigned i = 0; i < n; i++) {
            r->keys[i] = pick_key(w, c);
            lg_key_format(keybuf + (size_t)i * LG_KEY_LEN, r->keys[i]);
        }
        if (lg_wire_get(&c->out, c->proto, keybuf, n) != 0)
            return -1;
        w->st.gets++;
        w->st.keys_requested += n;
    } else {
        r->nkeys = 1;
        if (!cfg->prefill)
            r->keys[0] = pick_key(w, c);
        uint32_t k = r->keys[0];
        lg_key_format(keybuf, k);
        if (r->op == LG_OP_SET) {
            r->ver = cfg->strict ? ++sh->hi[k] : (uint32_t)lg_rng_next(&c->rng);
            char *v;
            if (lg_wire_set(&c->out, c->proto, keybuf, lg_value_len(&sh->values, k, r->ver),
                            cfg->ttl, &v) != 0)
                return -1;
            lg_value_write(&sh->values, v, k, r->ver);
            w->st.sets++;
        } else {
            r->ver = cfg->strict ? sh->hi[k] : 0;
            if (lg_wire_delete(&c->out, c->proto, keybuf) != 0)
                return -1;
            w->st.deletes++;
        }
    }
    r->seq_end = c->sent + c->out.len;
    c->count++;
    w->issued++;
    w->st.requests++;
    return 0;
}

/* Issues what the connection may send now, then writes it. */
static void conn_fill(struct worker *w, struct conn *c, uint64_t now)
{
    if (c->fd < 0) {
        if (w->stopping)
            return;
        if (conn_open(w, c) != 0) {
            if (c->fd >= 0) {
                lg_close(c->fd);
                c->fd = -1;
            }
            /* a server that stays unreachable ends the run instead of hanging it */
            if (!w->connect_fail_since)
                w->connect_fail_since = now;
            else if (now - w->connect_fail_since > 3000 * MS) {
                fprintf(stderr, "loadgen: cannot reconnect to %s:%d: %s\n", w->cfg->host,
                        w->cfg->port, strerror(errno));
                w->failed = true;
                w->stopping = true;
            }
            return;
        }
        w->connect_fail_since = 0;
    }
    const struct lg_config *cfg = w->cfg;
    while (c->count < (unsigned)cfg->depth && may_issue(w, now)) {
        uint64_t t = now;
        if (c->interval) {
            if (c->next_intended > now)
                break;
            t = c->next_intended;
            c->next_intended += c->interval;
            if (now - t > MS)
                w->st.late_sends++;
        }
        if (cfg->disconnect_ratio > 0 && lg_rng_unit(&c->rng) < cfg->disconnect_ratio) {
            if (lg_rng_next(&c->rng) & 1) {
                conn_partial_and_drop(w, c, now);
            } else {
                /* mid-reply: whatever is in flight is abandoned */
                conn_flush(w, c);
                conn_drop(w, c, now);
                w->st.disconnects++;
            }
            return;
        }
        if (issue_one(w, c, t) != 0)
            break;
    }
    if (c->out.len && !c->want_out && conn_flush(w, c) != 0) {
        w->st.conn_errors++;
        conn_drop(w, c, now);
    }
}

/* The first few violations are shown; the counters hold the rest. */
static bool worth_telling(struct worker *w)
{
    return w->st.stale + w->st.future + w->st.verify_failures <= 10;
}

static bool key_requested(const struct req *r, uint32_t k)
{
    for (unsigned i = 0; i < r->nkeys; i++)
        if (r->keys[i] == k)
            return true;
    return false;
}

/* Says exactly what is wrong with a value: where it first differs from what
 * its own header says it should be, so a server bug can be traced. */
static void tell_bad_value(struct worker *w, const struct conn *c, uint32_t k,
                           const struct lg_hit *h, enum lg_verify v)
{
    static const char *const what[] = { "ok", "belongs to another key", "has the wrong length",
                                        "is corrupt" };
    fprintf(stderr, "wrong value: key %u (proto %d, conn %d) %s: %zu bytes, starts %.18s\n", k,
            (int)c->proto, c->gid, what[v], h->len, h->data);
    if (v != LG_VERIFY_CORRUPT || h->len < LG_VALUE_HDR)
        return;
    uint32_t ver = 0;
    for (int i = 9; i < 17; i++)
        ver = ver << 4 | (uint32_t)(h->data[i] <= '9' ? h->data[i] - '0' : h->data[i] - 'a' + 10);
    char *want = malloc(h->len);
    if (!want || lg_value_len(&w->sh->values, k, ver) != h->len) {
        free(want);
        return;
    }
    lg_value_write(&w->sh->values, want, k, ver);
    size_t i = 0, bad = 0;
    while (i < h->len && want[i] == h->data[i])
        i++;
    for (size_t j = i; j < h->len; j++)
        bad += want[j] != h->data[j];
    fprintf(stderr, "  first difference at byte %zu of %zu (%zu bytes differ): got %.16s want %.16s\n",
            i, h->len, bad, h->data + i, want + i);
    free(want);
}

static void check_hit(struct worker *w, const struct conn *c, const struct req *r,
                      const struct lg_hit *h, uint64_t now)
{
    struct lg_shared *sh = w->sh;
    uint32_t k;
    if (h->pos >= 0 && h->pos < r->nkeys) {
        k = r->keys[h->pos];
    } else {
        int64_t pk = h->key ? lg_key_parse(h->key, h->keylen) : -1;
        if (pk < 0 || !key_requested(r, (uint32_t)pk)) {
            w->st.verify_failures++;
            return;
        }
        k = (uint32_t)pk;
    }
    if (w->cfg->no_verify)
        return;
    uint32_t ver;
    enum lg_verify v = lg_value_check(&sh->values, k, h->data, h->len, &ver);
    if (v != LG_VERIFY_OK) {
        w->st.verify_failures++;
        if (worth_telling(w))
            tell_bad_value(w, c, k, h, v);
        return;
    }
    /* A value too short for its version (lg_value_check) says nothing of
     * which write it was. */
    if (w->cfg->strict && h->len >= LG_VALUE_HDR) {
        if (ver > sh->hi[k]) {
            w->st.future++;
            if (worth_telling(w))
                fprintf(stderr, "key %u: version %u was never written (newest %u)\n", k,
                    ver, sh->hi[k]);
        } else if (ver < sh->lo[k]) {
            /* An old version is legal only if its write was abandoned by a
             * drop: that write was never acknowledged and may run after the
             * next connection's (limbo.h). Every other old version is stale,
             * however soon after a drop it is read. */
            const struct lg_abandoned *a = lg_limbo_find(&sh->limbo[k], ver);
            if (a) {
                w->st.abandoned_seen++;
                /* a 2 s window after the drop used to be all that was
                 * excused: these show why no window is long enough */
                if (now - a->dropped_ns >= 2000 * MS)
                    w->st.abandoned_late++;
                if (now - a->dropped_ns > w->st.abandoned_late_max)
                    w->st.abandoned_late_max = now - a->dropped_ns;
            } else {
                w->st.stale++;
                if (worth_telling(w))
                    fprintf(stderr, "key %u: stale version %u, acknowledged %u\n", k, ver,
                        sh->lo[k]);
            }
        }
    }
}

/* One line on stderr: "server error: set keys N: TEXT" (text and meta: the
 * reply's line; binary: its status). */
static void note_server_error(const struct conn *c, const struct req *r, const char *at,
                              size_t len)
{
    static const char *const ops[] = {"get", "set", "delete"};
    const char *op = r->op < 3 ? ops[r->op] : "?";
    if (c->proto == LG_BINARY) {
        unsigned st = len >= 8 ? ((unsigned)(unsigned char)at[6] << 8) | (unsigned char)at[7] : 0;
        fprintf(stderr, "server error: %s keys %u: binary status 0x%04x\n", op, r->nkeys, st);
        return;
    }
    size_t n = 0;
    while (n < len && n < 120 && at[n] != '\r' && at[n] != '\n')
        n++;
    fprintf(stderr, "server error: %s keys %u: %.*s\n", op, r->nkeys, (int)n, at);
}

/* One line per request of 40 ms or more, with what tells a delayed ACK on
 * one connection from a stall of everyone: monotonic times (ms since the
 * run started) of when it was due and when it completed, how long after it
 * was due it was composed and fully sent, in how many sends (and how often
 * the socket was full), and the connection's TCP state as the kernel sees
 * it. Requests that complete within a few ms of each other on many
 * connections were one stall (bench/soak counts them so). */
static void trace_slow(struct worker *w, const struct conn *c, const struct req *r,
                       uint64_t lat)
{
    uint64_t t0 = w->sh->start_ns;
    double due = r->t_intended > t0 ? (double)(r->t_intended - t0) / 1e6 : 0;
    double issued = (double)(r->t_issued - r->t_intended) / 1e6;
    double sent = r->t_sent ? (double)(r->t_sent - r->t_intended) / 1e6 : -1;
    struct tcp_info ti;
    socklen_t tl = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) != 0)
        memset(&ti, 0, sizeof ti);
    /* the newest request in flight behind it: a reply that waited for the
     * connection's next request comes just after that one was sent */
    const struct req *last = &c->ring[(c->head + c->count - 1) % (unsigned)w->cfg->depth];
    double next = c->count > 1 && last->t_sent ? (double)(last->t_sent - r->t_intended) / 1e6 : -1;
    /* the local port and the wall clock, to find it in a packet capture */
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    int port = 0;
    if (getsockname(c->fd, (struct sockaddr *)&sa, &sl) == 0)
        port = sa.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port)
                                        : ntohs(((struct sockaddr_in *)&sa)->sin_port);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    fprintf(stderr,
            "slow: %.1f ms conn %d proto %d op %d keys %u key %u bytes in %zu"
            " | due %.3f done %.3f issued +%.3f sent +%.3f req %lu B in %u sends (%u full)"
            " unsent after %u, behind it %u, newest sent +%.3f"
            " | tcp rtt %u us retrans %u unacked %u last_ack_recv %u ms cwnd %u rcv_space %u"
            " | port %d wall %ld.%06ld\n",
            (double)lat / 1e6, c->gid, (int)c->proto, r->op, r->nkeys, r->keys[0],
            c->in.len - c->in_off, due, due + (double)lat / 1e6, issued, sent,
            (unsigned long)(r->seq_end - r->seq_start), r->nwrites, r->nagain, r->unsent, c->count - 1, next,
            ti.tcpi_rtt,
            ti.tcpi_total_retrans, ti.tcpi_unacked, ti.tcpi_last_ack_recv, ti.tcpi_snd_cwnd,
            ti.tcpi_rcv_space, port, (long)wall.tv_sec, wall.tv_nsec / 1000);
}

static void complete(struct worker *w, struct conn *c, const struct req *r,
                     const struct lg_reply *rep, uint64_t now)
{
    struct lg_shared *sh = w->sh;
    uint64_t lat = now > r->t_intended ? now - r->t_intended : 0;
    lg_hist_add(&w->st.lat, lat);
    if (lat >= 40 * MS) {
        if (w->cfg->trace_slow && w->st.slow40 < LG_TRACE_MAX)
            trace_slow(w, c, r, lat);
        w->st.slow40++;
        if (lat < 50 * MS)
            w->st.slow40_50++;
    }
    switch (rep->status) {
    case LG_ST_SERVER_ERROR:
        /* the first few, with their text, so a run can say which error */
        if (w->st.server_errors < 10)
            note_server_error(c, r, c->in.p + c->in_off, c->in.len - c->in_off);
        w->st.server_errors++;
        return;
    case LG_ST_ERROR:
        w->st.errors++;
        return;
    case LG_ST_NOT_STORED:
        w->st.not_stored++;
        return;
    case LG_ST_MISS:
        w->st.del_missing++;
        break;
    case LG_ST_OK:
        break;
    }
    uint32_t k = r->keys[0];
    if (r->op == LG_OP_GET) {
        w->st.hits += rep->nhits;
        w->st.misses += r->nkeys - rep->nhits;
        for (unsigned i = 0; i < rep->nhits; i++)
            check_hit(w, c, r, &rep->hits[i], now);
        if (w->cfg->strict && rep->nhits < r->nkeys) {
            /* a miss on a key with an acknowledged, undeleted value needs a
             * cause (eviction, expiry): counted, judged by the caller */
            for (unsigned i = 0; i < r->nkeys; i++) {
                uint32_t kk = r->keys[i];
                bool hit = false;
                for (unsigned j = 0; j < rep->nhits && !hit; j++) {
                    const struct lg_hit *h = &rep->hits[j];
                    if (h->pos >= 0)
                        hit = r->keys[h->pos] == kk;
                    else
                        hit = lg_key_parse(h->key, h->keylen) == kk;
                }
                /* lo <= hi alone is not an acknowledged value: after an
                 * acknowledged delete, lo is the next version to be sent,
                 * which may be a half-sent set or an abandoned one */
                if (!hit && sh->lo[kk] > 0 && sh->lo[kk] <= sh->hi[kk] && !sh->deleted[kk] &&
                    now > sh->taint_until[kk] && !lg_limbo_has_delete(&sh->limbo[kk]))
                    w->st.miss_after_ack++;
            }
        }
    } else if (w->cfg->strict && r->op == LG_OP_SET) {
        if (r->ver > sh->lo[k]) {
            sh->lo[k] = r->ver;
            sh->deleted[k] = false;
        }
    } else if (w->cfg->strict && r->op == LG_OP_DELETE) {
        /* every version sent before the delete is gone */
        if (r->ver + 1 > sh->lo[k]) {
            sh->lo[k] = r->ver + 1;
            sh->deleted[k] = true;
        }
    }
}

static void conn_read(struct worker *w, struct conn *c, uint64_t now)
{
    for (;;) {
        if (lg_buf_reserve(&c->in, 65536) != 0)
            break;
        ssize_t n = lg_recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
        if (n > 0) {
            c->in.len += (size_t)n;
            if (c->in.len < c->in.cap)
                break;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* closed or failed: in-flight requests are lost */
        if (w->st.conn_errors < 10)
            fprintf(stderr, "server closed conn %d (proto %d) with %u requests in flight: %s\n",
                    c->gid, (int)c->proto, c->count, n == 0 ? "EOF" : strerror(errno));
        w->st.conn_errors++;
        w->st.errors += c->count;
        conn_drop(w, c, now);
        return;
    }
    struct lg_reply rep;
    unsigned depth = (unsigned)w->cfg->depth;
    while (c->count) {
        struct req *r = &c->ring[c->head];
        long used = lg_wire_parse(c->proto, (enum lg_op)r->op, r->nkeys, c->in.p + c->in_off,
                                  c->in.len - c->in_off, &rep);
        if (used == 0)
            break;
        if (used < 0) {
            if (w->st.conn_errors < 10)
                fprintf(stderr, "unparseable reply on conn %d (proto %d, op %d, %u keys): %.60s\n",
                        c->gid, (int)c->proto, r->op, r->nkeys, c->in.p + c->in_off);
            w->st.errors++;
            w->st.conn_errors++;
            conn_drop(w, c, now);
            return;
        }
        complete(w, c, r, &rep, now);
        c->in_off += (size_t)used;
        c->head = (c->head + 1) % depth;
        c->count--;
    }
    if (c->in_off == c->in.len) {
        c->in.len = c->in_off = 0;
    } else if (c->in_off > c->in.cap / 2) {
        memmove(c->in.p, c->in.p + c->in_off, c->in.len - c->in_off);
        c->in.len -= c->in_off;
        c->in_off = 0;
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    const struct lg_config *cfg = w->cfg;
    struct epoll_event evs[256];
    uint64_t now = lg_now_ns();
    uint64_t drain_until = 0;
    for (int i = 0; i < w->nconns; i++)
        conn_fill(w, &w->conns[i], now);
    for (;;) {
        now = lg_now_ns();
        bool busy = false;
        uint64_t next_due = UINT64_MAX;
        for (int i = 0; i < w->nconns; i++) {
            struct conn *c = &w->conns[i];
            if (c->fd < 0 || (c->interval && c->next_intended <= now))
                conn_fill(w, c, now);
            if (c->count)
                busy = true;
            if (c->interval && c->next_intended < next_due)
                next_due = c->next_intended;
        }
        if (!w->stopping && !may_issue(w, now)) {
            w->stopping = true;
            drain_until = now + 5000 * MS;
        }
        if (w->stopping && (!busy || now > drain_until))
            break;
        /* sleep to the nanosecond (epoll_pwait2): a millisecond timer would
         * add up to 1 ms to every open-loop latency, or spin */
        uint64_t wait_ns = 100 * MS;
        if (next_due != UINT64_MAX && !w->stopping)
            wait_ns = next_due <= now ? 0 : next_due - now;
        if (!w->stopping && !w->quota && !cfg->prefill) {
            uint64_t left = w->deadline > now ? w->deadline - now : 0;
            if (wait_ns > left)
                wait_ns = left;
        }
        struct timespec ts = { (time_t)(wait_ns / 1000000000ull), (long)(wait_ns % 1000000000ull) };
        uint64_t before = lg_now_ns();
        int n = epoll_pwait2(w->epfd, evs, 256, &ts, NULL);
        now = lg_now_ns();
        /* Our own oversleep: the machine, not the server, held us up. It
         * tells a busy machine from a slow server when latency spikes. */
        if (now > before + wait_ns + 10 * MS) {
            uint64_t late = now - before - wait_ns;
            w->st.self_stalls++;
            if (late > w->st.self_stall_max)
                w->st.self_stall_max = late;
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c->fd < 0)
                continue;
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                conn_read(w, c, now);
            if (c->fd >= 0 && (evs[i].events & EPOLLOUT) && conn_flush(w, c) != 0) {
                w->st.conn_errors++;
                conn_drop(w, c, now);
            }
            if (!c->interval)
                conn_fill(w, c, now);
        }
    }
    for (int i = 0; i < w->nconns; i++) {
        struct conn *c = &w->conns[i];
        w->st.errors += c->count; /* never answered */
        conn_drop(w, c, now);
    }
    return NULL;
}

void lg_stats_merge(struct lg_stats *into, const struct lg_stats *from)
{
    struct lg_hist h = into->lat;
    const uint64_t *a = (const uint64_t *)from;
    uint64_t *b = (uint64_t *)into;
    for (size_t i = 0; i < offsetof(struct lg_stats, self_stall_max) / sizeof(uint64_t); i++)
        b[i] += a[i];
    if (from->self_stall_max > into->self_stall_max)
        into->self_stall_max = from->self_stall_max;
    if (from->abandoned_late_max > into->abandoned_late_max)
        into->abandoned_late_max = from->abandoned_late_max;
    into->lat = h;
    lg_hist_merge(&into->lat, &from->lat);
}

int lg_run_load(struct lg_shared *sh, struct lg_stats *total, double *elapsed_s)
{
    const struct lg_config *cfg = sh->cfg;
    int T = cfg->threads;
    struct worker *ws = calloc((size_t)T, sizeof(*ws));
    if (!ws)
        return -1;
    int gid = 0;
    int rc = 0;
    for (int t = 0; t < T; t++) {
        struct worker *w = &ws[t];
        w->sh = sh;
        w->cfg = cfg;
        w->id = t;
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        w->nconns = cfg->conns / T + (t < cfg->conns % T);
        w->conns = calloc((size_t)w->nconns, sizeof(struct conn));
        lg_hist_init(&w->st.lat);
        if (cfg->requests)
            w->quota = cfg->requests / (uint64_t)T + ((uint64_t)t < cfg->requests % (uint64_t)T);
        w->prefill_next = cfg->key_base + (uint32_t)((uint64_t)cfg->keys * (uint64_t)t / (uint64_t)T);
        w->prefill_end = cfg->key_base + (uint32_t)((uint64_t)cfg->keys * (uint64_t)(t + 1) / (uint64_t)T);
        for (int i = 0; i < w->nconns; i++, gid++) {
            struct conn *c = &w->conns[i];
            c->fd = -1;
            c->gid = gid;
            c->proto = cfg->proto == LG_PROTO_MIXED ? (enum lg_proto)(gid % 3) : cfg->proto;
            c->ring = calloc((size_t)cfg->depth, sizeof(struct req));
            c->keyslab = calloc((size_t)cfg->depth * cfg->multi, sizeof(uint32_t));
            c->rng.s = cfg->seed * 1000003u + (uint64_t)gid;
            if (conn_open(w, c) != 0) {
                fprintf(stderr, "connect to %s:%d failed: %s\n", cfg->host, cfg->port,
                        strerror(errno));
                rc = -1;
            }
        }
    }
    /* the clock starts once every connection is up */
    uint64_t start = lg_now_ns();
    sh->start_ns = start;
    for (int t = 0; t < T; t++) {
        struct worker *w = &ws[t];
        w->deadline = start + (uint64_t)(cfg->duration * 1e9);
        for (int i = 0; i < w->nconns; i++) {
            struct conn *c = &w->conns[i];
            if (cfg->rate > 0) {
                c->interval = (uint64_t)(1e9 * cfg->conns / cfg->rate);
                c->next_intended = start + lg_rng_next(&c->rng) % (c->interval + 1);
            }
        }
    }
    if (rc == 0) {
        for (int t = 0; t < T; t++)
            pthread_create(&ws[t].thread, NULL, worker_main, &ws[t]);
        for (int t = 0; t < T; t++)
            pthread_join(ws[t].thread, NULL);
    }
    *elapsed_s = (double)(lg_now_ns() - start) / 1e9;
    memset(total, 0, sizeof(*total));
    lg_hist_init(&total->lat);
    for (int t = 0; t < T; t++) {
        struct worker *w = &ws[t];
        if (w->failed)
            rc = -1;
        lg_stats_merge(total, &w->st);
        for (int i = 0; i < w->nconns; i++) {
            struct conn *c = &w->conns[i];
            if (c->fd >= 0)
                lg_close(c->fd);
            lg_buf_release(&c->in);
            lg_buf_release(&c->out);
            free(c->ring);
            free(c->keyslab);
        }
        free(w->conns);
        close(w->epfd);
    }
    free(ws);
    return rc;
}
