/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "net/sockopt.h"
#include "net/tls.h"
#include "net/net_options.h"

#ifndef SOCK_CLOEXEC
#define SOCK_CLOEXEC 0 /* macOS: listeners are few and never exec'd across */
#endif

void listener_format_addr(const struct sockaddr *sa, const char *proto, const char *unix_path,
                          char *out, size_t outsz)
{
    char ip[INET6_ADDRSTRLEN] = "";
    if (!proto) {
        snprintf(out, outsz, "unix:%s", unix_path ? unix_path : "");
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        snprintf(out, outsz, "%s6:[%s]:%u", proto, ip, ntohs(a->sin6_port));
    } else if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        snprintf(out, outsz, "%s:%s:%u", proto, ip, ntohs(a->sin_port));
    } else {
        snprintf(out, outsz, "unknown");
    }
}

int listener_parse_addr(const char *entry, char *host, size_t hostsz, int default_port,
                        int *port)
{
    /* memcached's per-listener prefixes: notls:, btls:, mtls:, proto[x]:
     * and tag[x]: */
    for (;;) {
        if (strncmp(entry, "notls:", 6) == 0 || strncmp(entry, "btls:", 5) == 0 ||
            strncmp(entry, "mtls:", 5) == 0) {
            entry = strchr(entry, ':') + 1;
            continue;
        }
        if (strncmp(entry, "proto[", 6) != 0 && strncmp(entry, "tag[", 4) != 0)
            break;
        const char *close = strstr(entry, "]:");
        if (!close)
            return -1;
        entry = close + 2;
    }
    *port = default_port;
    const char *port_str = NULL;
    size_t hlen;
    if (entry[0] == '[') {
        const char *end = strchr(entry, ']');
        if (!end)
            return -1;
        entry++;
        hlen = (size_t)(end - entry);
        if (end[1] == ':')
            port_str = end + 2;
        else if (end[1] != '\0')
            return -1;
    } else {
        const char *colon = strchr(entry, ':');
        if (colon && strchr(colon + 1, ':')) {
            hlen = strlen(entry); /* bare IPv6 address */
        } else if (colon) {
            hlen = (size_t)(colon - entry);
            port_str = colon + 1;
        } else {
            hlen = strlen(entry);
        }
    }
    if (hlen >= hostsz)
        return -1;
    memcpy(host, entry, hlen);
    host[hlen] = '\0';
    if (strcmp(host, "*") == 0)
        host[0] = '\0'; /* every address, v4 and v6 */
    if (port_str) {
        char *end;
        errno = 0;
        long p = strtol(port_str, &end, 10);
        if (errno || *end || end == port_str || p < 0 || p > 65535)
            return -1;
        *port = (int)p;
    }
    return 0;
}

int listener_tls_mode(const char *entry, bool tls_on)
{
    if (!tls_on || strncmp(entry, "notls:", 6) == 0)
        return TLS_MODE_NONE;
    return strncmp(entry, "mtls:", 5) == 0 ? TLS_MODE_MTLS : TLS_MODE_TLS;
}

static int listener_push(struct listener_set *set, const struct listener *l)
{
    struct listener *n = realloc(set->l, (set->n + 1) * sizeof *n);
    if (!n)
        return -1;
    set->l = n;
    set->l[set->n++] = *l;
    return 0;
}

static int listener_open_inet(const struct net_options *s, const char *host, int port, bool udp,
                              int tls, struct listener_set *set)
{
    const char *proto = udp ? "udp" : "tcp";
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = udp ? SOCK_DGRAM : SOCK_STREAM,
                             .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%d", port < 0 ? 0 : port);
    int rc = getaddrinfo(host[0] ? host : NULL, portbuf, &hints, &res);
    if (rc != 0) {
        log_error("getaddrinfo(%s): %s", host[0] ? host : "*", gai_strerror(rc));
        return -1;
    }
    int opened = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            if (errno == EAFNOSUPPORT)
                continue; /* no IPv6 on this host: fine, as memcached */
            log_error("socket(): %s", strerror(errno));
            freeaddrinfo(res);
            return -1;
        }
        if (sockopt_reuseaddr(fd) < 0)
            log_info("setsockopt(SO_REUSEADDR): %s", strerror(errno));
        if (ai->ai_family == AF_INET6 && sockopt_v6only(fd) < 0)
            log_info("setsockopt(IPV6_V6ONLY): %s", strerror(errno));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
            int e = errno;
            close(fd);
            log_error("failed to listen on %s port %d: %s", udp ? "UDP" : "TCP", port,
                      strerror(e));
            freeaddrinfo(res);
            return -1;
        }
        if ((!udp && listen(fd, s->tcp_backlog) < 0) || sockopt_nonblock(fd) < 0) {
            log_error("listen(): %s", strerror(errno));
            close(fd);
            freeaddrinfo(res);
            return -1;
        }
        struct listener l = {.fd = fd, .tcp = !udp, .udp = udp, .tls = udp ? TLS_MODE_NONE : tls};
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
            listener_format_addr((struct sockaddr *)&ss, proto, NULL, l.name, sizeof l.name);
            l.port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                    : ((struct sockaddr_in *)&ss)->sin_port);
        }
        if (listener_push(set, &l) < 0) {
            close(fd);
            freeaddrinfo(res);
            return -1;
        }
        /* With an ephemeral port, bind the other families to the same one. */
        if (port <= 0 && l.port > 0)
            snprintf(portbuf, sizeof portbuf, "%d", l.port);
        opened++;
    }
    freeaddrinfo(res);
    if (opened == 0) {
        log_error("failed to listen on %s port %d: no usable address", udp ? "UDP" : "TCP", port);
        return -1;
    }
    return 0;
}

static int listener_open_unix(const struct net_options *s, struct listener_set *set)
{
    const char *path = s->domain_socket;
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sun.sun_path) {
        log_error("unix socket path too long: %s", path);
        return -1;
    }
    strcpy(sun.sun_path, path);
    /* A stale socket from an earlier run is removed; any other file is not. */
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        log_error("socket(AF_UNIX): %s", strerror(errno));
        return -1;
    }
    mode_t old = umask((mode_t)(~s->umask & 0777));
    int rc = bind(fd, (struct sockaddr *)&sun, sizeof sun);
    umask(old);
    if (rc < 0 || listen(fd, s->tcp_backlog) < 0 || sockopt_nonblock(fd) < 0) {
        log_error("failed to listen on unix socket %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    struct listener l = {.fd = fd, .tcp = false};
    listener_format_addr(NULL, NULL, path, l.name, sizeof l.name);
    if (listener_push(set, &l) < 0) {
        close(fd);
        return -1;
    }
    set->unix_path = strdup(path);
    return 0;
}

int listener_open_all(const struct net_options *s, struct listener_set *out)
{
    memset(out, 0, sizeof *out);
    if (s->domain_socket) {
        if (listener_open_unix(s, out) < 0)
            goto fail;
        return 0;
    }
    if (s->port == 0 && s->udpport == 0)
        return 0; /* TCP and UDP off */
    char *list = strdup(s->inter ? s->inter : "");
    if (!list)
        goto fail;
    int rc = 0;
    for (char *save = NULL, *e = strtok_r(list, ",;", &save); e && rc == 0;
         e = strtok_r(NULL, ",;", &save)) {
        char host[256];
        int port;
        if (listener_parse_addr(e, host, sizeof host, s->port, &port) < 0) {
            log_error("bad listen address: %s", e);
            rc = -1;
        } else {
            int tls = listener_tls_mode(e, s->ssl_enabled);
            if (port != 0 || s->port < 0)
                rc = listener_open_inet(s, host, port, false, tls, out);
            if (rc == 0 && s->udpport != 0)
                rc = listener_open_inet(s, host, s->udpport, true, tls, out);
        }
    }
    free(list);
    if (rc < 0)
        goto fail;
    return 0;
fail:
    listener_close_all(out);
    return -1;
}

void listener_close_all(struct listener_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        close(set->l[i].fd);
    if (set->unix_path)
        unlink(set->unix_path);
    free(set->unix_path);
    free(set->l);
    memset(set, 0, sizeof *set);
}

int listener_write_port_file(const struct listener_set *set, const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.lck", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    for (size_t i = 0; i < set->n; i++)
        if (set->l[i].tcp || set->l[i].udp)
            fprintf(f, "%s INET: %d\n", set->l[i].tcp ? "TCP" : "UDP", set->l[i].port);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}
