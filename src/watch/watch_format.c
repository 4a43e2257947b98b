/* SPDX-License-Identifier: BSD-3-Clause */
/* The watchers' side of an event: its record (watch_rec.h) turned into
 * memcached 1.6.45's line (its logger.c), called by watch_pump. Keys are
 * URI-encoded as memcached encodes them, so a line is always one line. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch/watch_rec.h"

/* A 250-byte key encodes to 750 bytes; the rest of a line is short. */
#define WATCH_KEY_ENC_MAX (3 * 250 + 1)

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

/* "tcp:ip:port" or "tcp6:[ip]:port" (the connection registry's form):
 * memcached prints the bare ip, the port and "tcp"; anything else is a
 * unix socket ("unix", 0, "local"). */
static const char *conn_peer(const char *addr, size_t n, char *rip, size_t cap, unsigned *rport)
{
    char a[WATCH_ADDR_MAX + 1];
    memcpy(a, addr, n);
    a[n] = '\0';
    snprintf(rip, cap, "unix");
    *rport = 0;
    const char *colon = strrchr(a, ':');
    if (strncmp(a, "tcp", 3) != 0 || !colon)
        return "local";
    const char *ip = strchr(a, ':') + 1;
    size_t len = colon > ip ? (size_t)(colon - ip) : 0;
    if (len >= 2 && ip[0] == '[' && ip[len - 1] == ']') {
        ip++;
        len -= 2;
    }
    if (len >= cap)
        len = cap - 1;
    memcpy(rip, ip, len);
    rip[len] = '\0';
    *rport = (unsigned)strtoul(colon + 1, NULL, 10);
    return "tcp";
}

size_t watch_format(const struct watch_rec *r, const char *key, size_t nkey, uint64_t gid,
                    char *out, size_t cap)
{
    static const char *const get_status[] = {"not_found", "found", "flushed", "expired"};
    static const char *const store_status[] = {"not_stored", "stored",    "exists",
                                               "not_found",  "too_large", "no_memory"};
    static const char *const reasons[] = {"normal", "error", "idle_timeout", "shutdown"};
    char k[WATCH_KEY_ENC_MAX];
    char rip[128];
    unsigned rport;
    const char *transport;
    /* "ts=<sec>.<usec> gid=<n> ", usec unpadded as memcached prints it */
    int n = snprintf(out, cap, "ts=%lld.%d gid=%llu ", (long long)r->sec, (int)r->usec,
                     (unsigned long long)gid);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    char *p = out + n;
    size_t room = cap - (size_t)n - 1; /* and the "\n" */
    int m = -1;
    switch (r->type) {
    case WATCH_REC_GET:
        uriencode(key, nkey, k, sizeof k);
        m = snprintf(p, room, "type=item_get key=%s status=%s clsid=%u cfd=%d size=%u", k,
                     get_status[r->status & 3], r->clsid, r->cfd, r->size);
        break;
    case WATCH_REC_STORE:
        uriencode(key, nkey, k, sizeof k);
        m = snprintf(p, room,
                     "type=item_store key=%s status=%s cmd=%s ttl=%u clsid=%u cfd=%d size=%u", k,
                     store_status[r->status % 6], r->cmd, (uint32_t)r->ttl, r->clsid, r->cfd,
                     r->size);
        break;
    case WATCH_REC_DELETED:
        uriencode(key, nkey, k, sizeof k);
        m = snprintf(p, room, "type=deleted key=%s cmd=%s clsid=%u size=%u", k, r->cmd, r->clsid,
                     r->size);
        break;
    case WATCH_REC_EVICTION:
        uriencode(key, nkey, k, sizeof k);
        m = snprintf(p, room, "type=eviction key=%s fetch=%s ttl=%lld la=%u clsid=%u size=%u", k,
                     r->status ? "yes" : "no", (long long)r->ttl, r->la, r->clsid, r->size);
        break;
    case WATCH_REC_CONN_NEW:
        transport = conn_peer(key, nkey, rip, sizeof rip, &rport);
        m = snprintf(p, room, "type=conn_new rip=%s rport=%u transport=%s cfd=%d", rip, rport,
                     transport, r->cfd);
        break;
    case WATCH_REC_CONN_CLOSE:
        transport = conn_peer(key, nkey, rip, sizeof rip, &rport);
        m = snprintf(p, room, "type=conn_close rip=%s rport=%u transport=%s reason=%s cfd=%d", rip,
                     rport, transport, reasons[r->status & 3], r->cfd);
        break;
    }
    if (m < 0 || (size_t)m >= room)
        return 0; /* cannot happen with the formats above */
    p[m] = '\n';
    return (size_t)n + (size_t)m + 1;
}
