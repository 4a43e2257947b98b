/* SPDX-License-Identifier: BSD-3-Clause */
/* A plaintext socket's read, readv and writev on the readiness path,
 * without glibc's cancellation point. In a process of more than one
 * thread, glibc's wrappers switch the calling thread to asynchronous
 * cancellation around the system call and back: about 60 instructions a
 * request at pipeline 1, a fortieth of the server's own. nodelay never
 * cancels a thread, so these make the call directly (same contract:
 * -1 and errno on failure). Sanitizer builds keep glibc's, which they
 * intercept to check the buffers. */
#ifndef NODELAY_SOCK_IO_H
#define NODELAY_SOCK_IO_H

#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(SYS_read) ||         \
    !defined(SYS_readv) || !defined(SYS_writev)
#define SOCK_IO_LIBC 1
#endif

static inline ssize_t sock_read(int fd, void *buf, size_t n)
{
#ifdef SOCK_IO_LIBC
    return read(fd, buf, n);
#else
    return (ssize_t)syscall(SYS_read, fd, buf, n);
#endif
}

static inline ssize_t sock_readv(int fd, const struct iovec *iov, int n)
{
#ifdef SOCK_IO_LIBC
    return readv(fd, iov, n);
#else
    return (ssize_t)syscall(SYS_readv, fd, iov, n);
#endif
}

static inline ssize_t sock_writev(int fd, const struct iovec *iov, int n)
{
#ifdef SOCK_IO_LIBC
    return writev(fd, iov, n);
#else
    return (ssize_t)syscall(SYS_writev, fd, iov, n);
#endif
}

#endif
