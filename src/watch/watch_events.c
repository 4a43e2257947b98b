/* SPDX-License-Identifier: BSD-3-Clause */
/* Event lines in memcached 1.6.45's formats (its logger.c), formatted on the
 * worker where the event happens, then offered to the watchers. Keys are
 * URI-encoded as memcached encodes them, so a line is always one line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "watch/watch.h"

/* A 250-byte key encodes to 750 bytes; the rest of a line is short. */
#define WATCH_LINE_MAX 2048
#define WATCH_KEY_ENC_MAX (3 * 250 + 1)

static uint64_t watch_gid; /* memcached's logger gid: orders lines across workers */

static void uriencode(const char *src, size_t n, char *dst, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t d = 0;
    for (size_t i = 0; i < n && d + 3 < cap; i++) {
        unsigned char c = (unsigned char)src[i];
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~';
        if (plain) {
            dst[d++] = (char)c;
        } else {
            dst[d++] = '%';
            dst[d++] = hex[c >> 4];
            dst[d++] = hex[c & 15];
        }
    }
    dst[d] = '\0';
}

static void watch_line(unsigned flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "ts=<sec>.<usec> gid=<n> " + fmt + "\n", usec unpadded as memcached prints it. */
static void watch_line(unsigned flag, const char *fmt, ...)
{
    char line[WATCH_LINE_MAX];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    uint64_t gid = __atomic_add_fetch(&watch_gid, 1, __ATOMIC_RELAXED);
    int n = snprintf(line, sizeof line, "ts=%lld.%d gid=%llu ", (long long)tv.tv_sec,
                     (int)tv.tv_usec, (unsigned long long)gid);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(n + m) >= sizeof line - 1)
        return; /* cannot happen with the formats below */
    line[n + m] = '\n';
    watch_offer(flag, line, (size_t)(n + m + 1));
}

void watch_item_get(const char *key, size_t nkey, enum watch_get_status st, unsigned clsid,
                    int cfd, uint32_t size)
{
    static const char *const status[] = {"not_found", "found", "flushed", "expired"};
    char k[WATCH_KEY_ENC_MAX];
    uriencode(key, nkey, k, sizeof k);
    watch_line(WATCH_FETCHERS, "type=item_get key=%s status=%s clsid=%u cfd=%d size=%u", k,
               status[st], clsid, cfd, size);
}

void watch_item_store(const char *key, size_t nkey, enum watch_store_status st, const char *cmd,
                      uint32_t ttl, unsigned clsid, int cfd, uint32_t size)
{
    static const char *const status[] = {"not_stored", "stored",    "exists",
                                         "not_found",  "too_large", "no_memory"};
    char k[WATCH_KEY_ENC_MAX];
    uriencode(key, nkey, k, sizeof k);
    watch_line(WATCH_MUTATIONS, "type=item_store key=%s status=%s cmd=%s ttl=%u clsid=%u cfd=%d size=%u",
               k, status[st], cmd, ttl, clsid, cfd, size);
}

void watch_deleted(const char *key, size_t nkey, const char *cmd, unsigned clsid, uint32_t size)
{
    char k[WATCH_KEY_ENC_MAX];
    uriencode(key, nkey, k, sizeof k);
    watch_line(WATCH_DELETIONS, "type=deleted key=%s cmd=%s clsid=%u size=%u", k, cmd, clsid, size);
}

void watch_eviction(const char *key, size_t nkey, bool fetched, long long ttl, unsigned la,
                    unsigned clsid, uint32_t size)
{
    char k[WATCH_KEY_ENC_MAX];
    uriencode(key, nkey, k, sizeof k);
    watch_line(WATCH_EVICTIONS, "type=eviction key=%s fetch=%s ttl=%lld la=%u clsid=%u size=%u", k,
               fetched ? "yes" : "no", ttl, la, clsid, size);
}

void watch_conn_event(const char *addr, bool opened, const char *why, int cfd)
{
    char rip[128] = "unix";
    unsigned rport = 0;
    const char *transport = "local";
    const char *colon = strrchr(addr, ':');
    if (strncmp(addr, "tcp", 3) == 0 && colon) {
        /* "tcp:ip:port" or "tcp6:[ip]:port": memcached prints the bare ip */
        const char *ip = strchr(addr, ':') + 1;
        size_t n = (size_t)(colon - ip);
        if (n >= 2 && ip[0] == '[' && ip[n - 1] == ']') {
            ip++;
            n -= 2;
        }
        if (n >= sizeof rip)
            n = sizeof rip - 1;
        memcpy(rip, ip, n);
        rip[n] = '\0';
        rport = (unsigned)strtoul(colon + 1, NULL, 10);
        transport = "tcp";
    }
    if (opened) {
        watch_line(WATCH_CONNEVENTS, "type=conn_new rip=%s rport=%u transport=%s cfd=%d", rip,
                   rport, transport, cfd);
        return;
    }
    const char *reason = !why                                 ? "normal"
                         : strcmp(why, "idle timeout") == 0    ? "idle_timeout"
                         : strcmp(why, "server stopping") == 0 ? "shutdown"
                                                               : "error";
    watch_line(WATCH_CONNEVENTS, "type=conn_close rip=%s rport=%u transport=%s reason=%s cfd=%d",
               rip, rport, transport, reason, cfd);
}
