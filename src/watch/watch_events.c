/* SPDX-License-Identifier: BSD-3-Clause */
/* Watch events, recorded where they happen as compact binary records (the
 * fields and the raw key, no formatting) and handed to watch_emit; they are
 * turned into memcached 1.6.45's lines only on the watchers' side
 * (watch_format.c, called by watch_pump). */
#include <string.h>
#include <time.h>

#include "watch/watch.h"
#include "watch/watch_rec.h"

/* The event's time from the coarse real-time clock: the kernel's last
 * tick, read from the vDSO without touching the clock hardware (a
 * gettimeofday per event was ~6 % of the server's CPU under watchers).
 * Lines keep memcached's ts=<sec>.<usec> form; the microseconds then step
 * by the tick (1-4 ms), which orders lines as well as the gid does. */
#ifdef CLOCK_REALTIME_COARSE
#define WATCH_CLOCK CLOCK_REALTIME_COARSE
#else
#define WATCH_CLOCK CLOCK_REALTIME
#endif

static void rec_begin(struct watch_rec *r, enum watch_rec_type type)
{
    struct timespec ts;
    clock_gettime(WATCH_CLOCK, &ts);
    memset(r, 0, sizeof *r);
    r->sec = ts.tv_sec;
    r->usec = (int32_t)(ts.tv_nsec / 1000);
    r->type = (uint8_t)type;
}

void watch_item_get(const char *key, size_t nkey, enum watch_get_status st, unsigned clsid,
                    int cfd, uint32_t size)
{
    struct watch_rec r;
    rec_begin(&r, WATCH_REC_GET);
    r.status = (uint8_t)st;
    r.clsid = clsid;
    r.cfd = cfd;
    r.size = size;
    watch_emit(WATCH_FETCHERS, &r, key, nkey);
}

void watch_item_store(const char *key, size_t nkey, enum watch_store_status st, const char *cmd,
                      uint32_t ttl, unsigned clsid, int cfd, uint32_t size)
{
    struct watch_rec r;
    rec_begin(&r, WATCH_REC_STORE);
    r.status = (uint8_t)st;
    r.cmd = cmd;
    r.ttl = ttl;
    r.clsid = clsid;
    r.cfd = cfd;
    r.size = size;
    watch_emit(WATCH_MUTATIONS, &r, key, nkey);
}

void watch_deleted(const char *key, size_t nkey, const char *cmd, unsigned clsid, uint32_t size)
{
    struct watch_rec r;
    rec_begin(&r, WATCH_REC_DELETED);
    r.cmd = cmd;
    r.clsid = clsid;
    r.size = size;
    watch_emit(WATCH_DELETIONS, &r, key, nkey);
}

void watch_eviction(const char *key, size_t nkey, bool fetched, long long ttl, unsigned la,
                    unsigned clsid, uint32_t size)
{
    struct watch_rec r;
    rec_begin(&r, WATCH_REC_EVICTION);
    r.status = fetched;
    r.ttl = ttl;
    r.la = la;
    r.clsid = clsid;
    r.size = size;
    watch_emit(WATCH_EVICTIONS, &r, key, nkey);
}

void watch_conn_event(const char *addr, bool opened, const char *why, int cfd)
{
    struct watch_rec r;
    rec_begin(&r, opened ? WATCH_REC_CONN_NEW : WATCH_REC_CONN_CLOSE);
    /* memcached's close_reason: the client's own close is normal */
    r.status = !why                                 ? WATCH_CLOSE_NORMAL
               : strcmp(why, "idle timeout") == 0    ? WATCH_CLOSE_IDLE
               : strcmp(why, "server stopping") == 0 ? WATCH_CLOSE_SHUTDOWN
                                                     : WATCH_CLOSE_ERROR;
    r.cfd = cfd;
    size_t n = strlen(addr);
    watch_emit(WATCH_CONNEVENTS, &r, addr, n < WATCH_ADDR_MAX ? n : WATCH_ADDR_MAX);
}
