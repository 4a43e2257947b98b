/* SPDX-License-Identifier: BSD-3-Clause */
#include "tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

/* Sessions by descriptor: each descriptor belongs to one thread at a time. */
#define LG_TLS_MAX_FD 65536
static SSL *lg_ssl[LG_TLS_MAX_FD];
static SSL_CTX *lg_ctx;
static pthread_once_t lg_once = PTHREAD_ONCE_INIT;

static void lg_tls_init(void)
{
    const char *on = getenv("LOADGEN_TLS");
    if (!on || !*on || *on == '0')
        return;
    lg_ctx = SSL_CTX_new(TLS_client_method());
    if (lg_ctx) {
        SSL_CTX_set_verify(lg_ctx, SSL_VERIFY_NONE, NULL);
        SSL_CTX_set_mode(lg_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                     SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        SSL_CTX_set_read_ahead(lg_ctx, 1);
    }
}

int lg_tls_start(int fd)
{
    pthread_once(&lg_once, lg_tls_init);
    if (!lg_ctx || fd < 0)
        return 0;
    if (fd >= LG_TLS_MAX_FD)
        return -1;
    SSL *ssl = SSL_new(lg_ctx);
    if (!ssl || !SSL_set_fd(ssl, fd) || SSL_connect(ssl) != 1) {
        ERR_clear_error();
        SSL_free(ssl);
        return -1;
    }
    lg_ssl[fd] = ssl;
    return 0;
}

static ssize_t lg_tls_error(SSL *ssl, int r)
{
    int e = SSL_get_error(ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    if (e != SSL_ERROR_SYSCALL || errno == 0)
        errno = EPROTO;
    return -1;
}

ssize_t lg_send(int fd, const void *p, size_t len)
{
    SSL *ssl = fd >= 0 && fd < LG_TLS_MAX_FD ? lg_ssl[fd] : NULL;
    if (!ssl)
        return send(fd, p, len, MSG_NOSIGNAL);
    size_t n = 0;
    int r = SSL_write_ex(ssl, p, len, &n);
    return r == 1 ? (ssize_t)n : lg_tls_error(ssl, r);
}

/* Every record already received is decrypted now: no socket event would
 * come for what OpenSSL holds. */
ssize_t lg_recv(int fd, void *p, size_t len)
{
    SSL *ssl = fd >= 0 && fd < LG_TLS_MAX_FD ? lg_ssl[fd] : NULL;
    if (!ssl)
        return recv(fd, p, len, 0);
    size_t total = 0;
    while (total < len) {
        size_t n = 0;
        int r = SSL_read_ex(ssl, (char *)p + total, len - total, &n);
        if (r != 1) {
            if (total > 0) {
                ERR_clear_error();
                break;
            }
            return lg_tls_error(ssl, r);
        }
        total += n;
        if (!SSL_has_pending(ssl))
            break;
    }
    return (ssize_t)total;
}

void lg_close(int fd)
{
    if (fd >= 0 && fd < LG_TLS_MAX_FD && lg_ssl[fd]) {
        SSL_free(lg_ssl[fd]);
        lg_ssl[fd] = NULL;
    }
    close(fd);
}
