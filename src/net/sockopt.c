/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/sockopt.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static int sockopt_int(int fd, int level, int name, int value)
{
    return setsockopt(fd, level, name, &value, sizeof value);
}

int sockopt_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int sockopt_nodelay(int fd)
{
    return sockopt_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
}

int sockopt_quickack(int fd)
{
#ifdef TCP_QUICKACK
    return sockopt_int(fd, IPPROTO_TCP, TCP_QUICKACK, 1);
#else
    (void)fd;
    return 0;
#endif
}

int sockopt_notsent_lowat(int fd, int bytes)
{
#ifdef TCP_NOTSENT_LOWAT
    return sockopt_int(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, bytes);
#else
    (void)fd;
    (void)bytes;
    return 0;
#endif
}

int sockopt_reuseaddr(int fd)
{
    return sockopt_int(fd, SOL_SOCKET, SO_REUSEADDR, 1);
}

int sockopt_v6only(int fd)
{
    return sockopt_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
}

int sockopt_get_nodelay(int fd, bool *on)
{
    int v = 0;
    socklen_t len = sizeof v;
    if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) < 0)
        return -1;
    *on = v != 0;
    return 0;
}

long sockopt_queued(int fd)
{
    int n = 0;
    if (ioctl(fd, FIONREAD, &n) != 0)
        return -1;
    return n < 0 ? -1 : n;
}
