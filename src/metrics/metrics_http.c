/* SPDX-License-Identifier: BSD-3-Clause */
/* The endpoint's HTTP side: libmicrohttpd (Debian's libmicrohttpd-dev, a
 * maintained HTTP library, rather than a hand-written HTTP parser), running
 * its own polling thread (epoll, so descriptors past FD_SETSIZE are served
 * too), so a scrape never runs on a worker. Its connections are watched by
 * metrics_guard.h: a deadline per request, and a new connection always
 * admitted. Built only when the Makefile found the library
 * (NODELAY_HAVE_MHD); otherwise metrics_start refuses with a message and
 * the rest of the server is the same. */
#include "metrics/metrics.h"

#include <stdio.h>
#include <string.h>

#ifdef NODELAY_HAVE_MHD

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "log.h"
#include "metrics/metrics_guard.h"
#include "stats/stats_hist.h"
#include "reply/reply.h"

static struct MHD_Daemon *metrics_daemon;
static struct server *metrics_srv;
static struct metrics_guard metrics_guard;

bool metrics_available(void)
{
    return true;
}

static enum MHD_Result metrics_reply(struct MHD_Connection *conn, unsigned status,
                                     const char *type, char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static char *metrics_strdup(const char *s, size_t *len)
{
    *len = strlen(s);
    char *p = malloc(*len + 1);
    if (p)
        memcpy(p, s, *len + 1);
    return p;
}

static enum MHD_Result metrics_handle(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    (void)cls;
    (void)version;
    (void)upload_data;
    (void)con_cls;
    size_t len;
    if (*upload_data_size != 0) {
        *upload_data_size = 0; /* a body is never wanted: discard it */
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        char *b = metrics_strdup("only GET /metrics\n", &len);
        return b ? metrics_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", b, len) : MHD_NO;
    }
    if (strcmp(url, "/metrics") != 0) {
        char *b = metrics_strdup("nodelay serves /metrics\n", &len);
        return b ? metrics_reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", b, len) : MHD_NO;
    }
    struct reply_queue q;
    reply_init(&q);
    if (metrics_compose(metrics_srv, &q) != 0) {
        reply_release(&q);
        char *b = metrics_strdup("out of memory\n", &len);
        return b ? metrics_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", b, len) : MHD_NO;
    }
    len = reply_pending(&q);
    char *body = malloc(len ? len : 1);
    if (!body) {
        reply_release(&q);
        return MHD_NO;
    }
    size_t off = 0;
    struct iovec iov[64];
    while (reply_pending(&q) > 0) {
        int n = reply_iov(&q, iov, 64);
        size_t got = 0;
        for (int i = 0; i < n; i++) {
            memcpy(body + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
            got += iov[i].iov_len;
        }
        reply_consume(&q, got);
    }
    reply_release(&q);
    return metrics_reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

/* The library's messages (a connection that left mid-request, one the guard
 * cut off) are problems on connections, -v's, as the server's own: never a
 * line on stderr per connection unasked, which a flood would make a flood. */
static void metrics_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (!LOG_ENABLED(LOG_LEVEL_INFO))
        return;
    char line[256];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    log_write(LOG_LEVEL_INFO, "metrics: %s", line);
}

/* The library's word on each connection, passed to the guard; every call
 * is on the library's polling thread. */
static void metrics_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? metrics_guard_open(&metrics_guard, ci->connect_fd) : NULL;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        metrics_guard_close(&metrics_guard, *socket_context);
        *socket_context = NULL;
    }
}

/* A request is done (its reply sent, or given up): the next one on this
 * connection has a deadline of its own. */
static void metrics_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)con_cls;
    (void)toe;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci && ci->socket_context)
        metrics_guard_ready(&metrics_guard, ci->socket_context);
}

/* "PORT", "ADDR:PORT" or "[ADDR6]:PORT" into a socket address. */
static int metrics_parse(const char *listen, struct sockaddr_storage *ss, bool *v6)
{
    char host[128] = "127.0.0.1";
    const char *port = listen;
    const char *colon = strrchr(listen, ':');
    if (colon) {
        const char *h = listen;
        size_t n = (size_t)(colon - listen);
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
            h++;
            n -= 2;
        }
        if (n >= sizeof host)
            return -1;
        if (n > 0) {
            memcpy(host, h, n);
            host[n] = '\0';
        }
        port = colon + 1;
    }
    char *end;
    long p = strtol(port, &end, 10);
    if (*port == '\0' || *end != '\0' || p < 0 || p > 65535)
        return -1;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)p);
        *v6 = false;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)p);
        *v6 = true;
        return 0;
    }
    return -1;
}

int metrics_start(const char *listen, struct server *srv, char *err, size_t errlen)
{
    metrics_srv = srv;
    struct sockaddr_storage ss;
    bool v6 = false;
    if (metrics_parse(listen, &ss, &v6) < 0) {
        snprintf(err, errlen, "metrics_listen: %s is not PORT, ADDR:PORT or [ADDR6]:PORT", listen);
        return -1;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (v6)
        flags |= MHD_USE_IPv6;
    uint16_t port = v6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (metrics_guard_setup(&metrics_guard, METRICS_CONNECTIONS, 2 * METRICS_CONNECTIONS,
                            (uint64_t)METRICS_DEADLINE_S * 1000000000u) < 0) {
        snprintf(err, errlen, "metrics_listen: out of memory or threads");
        return -1;
    }
    /* The library's own limit is the guard's slots: connections it shut
     * (pushed out, late) hold one until the library has closed them. The
     * inactivity timeout is the deadline too, a second line behind it. */
    metrics_daemon = MHD_start_daemon(flags, port, NULL, NULL, metrics_handle, NULL,
                                      MHD_OPTION_EXTERNAL_LOGGER, metrics_log, NULL,
                                      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                      MHD_OPTION_CONNECTION_LIMIT, (unsigned)(2 * METRICS_CONNECTIONS),
                                      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_DEADLINE_S,
                                      MHD_OPTION_NOTIFY_CONNECTION, metrics_notify, NULL,
                                      MHD_OPTION_NOTIFY_COMPLETED, metrics_completed, NULL,
                                      MHD_OPTION_END);
    if (!metrics_daemon) {
        metrics_guard_teardown(&metrics_guard);
        snprintf(err, errlen, "metrics_listen: cannot listen on %s", listen);
        return -1;
    }
    __atomic_store_n(&metrics_hist_on, true, __ATOMIC_RELAXED);
    return 0;
}

void metrics_stop(void)
{
    if (metrics_daemon)
        MHD_stop_daemon(metrics_daemon); /* closes every connection, telling the guard */
    metrics_daemon = NULL;
    metrics_guard_teardown(&metrics_guard);
}

#else /* !NODELAY_HAVE_MHD */

bool metrics_available(void)
{
    return false;
}

int metrics_start(const char *listen, struct server *srv, char *err, size_t errlen)
{
    (void)srv;
    snprintf(err, errlen,
             "metrics_listen=%s: this nodelay was built without libmicrohttpd "
             "(install libmicrohttpd-dev and rebuild)",
             listen);
    return -1;
}

void metrics_stop(void)
{
}

#endif
