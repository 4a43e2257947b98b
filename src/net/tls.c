/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS with OpenSSL. Where the bytes go:
 *
 *   read:  socket -> OpenSSL's socket BIO (read-ahead: one read(2) takes all
 *          the records the kernel holds) -> SSL_read into the connection's
 *          read buffer, record after record while they are buffered.
 *   write: the reply queue's iovecs -> SSL_write, small replies gathered into
 *          one record of up to ssl_wbuf_size bytes, large values handed over
 *          whole -> a memory BIO of ours (tls_out_*) that appends every
 *          record to the connection's out buffer -> ONE send(2). A partial
 *          send keeps the rest there; the plaintext stays in the reply queue
 *          (not yet reported as written) until its records have all left.
 *
 * So everything produced from one read leaves as one run of records in one
 * write, never a record or a write per reply.
 *
 * Kernel TLS (-o ssl_kernel_tls, when the kernel has the "tls" ULP): the
 * handshake runs as above; when OpenSSL hands its send keys to the write
 * BIO (tls_out_ctrl), ours gives them to the socket (TLS_TX), and from then
 * on the reply queue's iovecs go to writev(2) as plaintext: one writev per
 * read still, the kernel building the records, large values leaving from
 * item memory as in plaintext. OpenSSL's own kTLS would write one record
 * per sendmsg. Receiving stays with OpenSSL (its socket BIO decides). */
#include "net/tls.h"

#include <errno.h>
#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "base/log.h"
#include "stats/stats.h"

/* Plaintext encrypted per call: with its records, what one send carries. */
#define TLS_WRITE_MAX (256u * 1024)
/* The largest TLS record's plaintext. */
#define TLS_RECORD_MAX 16384u
/* What a record adds to its plaintext, at most for the AEAD ciphers (TLS
 * 1.2 GCM: 5 header + 8 nonce + 16 tag); others make the buffer grow. */
#define TLS_RECORD_OVERHEAD 32u
/* An empty out buffer larger than this is given back (idle connections). */
#define TLS_OUT_KEEP (32u * 1024)
/* What libssl asks of its write BIO for kernel TLS: controls <openssl/bio.h>
 * reserves as "internal BIO" (72, 74, 75) and BIO_CTRL_GET_KTLS_SEND.
 * OpenSSL's socket BIO answers them; ours does, so that kTLS needs no
 * OpenSSL-owned socket. */
#define TLS_BIO_SET_KTLS 72            /* ptr: the kernel's crypto info, num: sending */
#define TLS_BIO_SET_KTLS_CTRL_MSG 74   /* num: the record type of the next write */
#define TLS_BIO_CLEAR_KTLS_CTRL_MSG 75

struct tls_conn {
    SSL *ssl;
    int fd;
    struct stats_thread *st;
    rel_time_t since; /* accepted at (the handshake timeout) */
    bool ready;       /* handshake done */
    bool failed;      /* a TLS error: no close_notify */
    bool ktls_tx;     /* the kernel encrypts what is sent (TLS_TX is set) */
    int ctrl_type;    /* kTLS: record type of OpenSSL's next write, 0 = none */
    char *out;        /* records not yet sent: out[off .. len) */
    size_t off, len, cap;
    size_t owed;      /* plaintext bytes those records carry, reported once sent */
};

static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *tls_ctx;                 /* new connections' context (tls_lock) */
static bool tls_on;                      /* set once at start-up, read anywhere */
static bool tls_ktls;                    /* ssl_kernel_tls and the kernel has it */
static const struct tls_options *tls_opt; /* for refresh_certs */
static BIO_METHOD *tls_out_method;
static _Atomic long long tls_loaded_at;  /* unix time of the last cert load */
static size_t tls_chunk = TLS_RECORD_MAX; /* plaintext gathered per record */

/* ---- the out BIO: records appended to the connection's buffer ---------- */

static int tls_out_reserve(struct tls_conn *t, size_t more)
{
    if (t->off > 0 && t->off == t->len)
        t->off = t->len = 0;
    if (t->len + more <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + more)
        cap *= 2;
    char *n = realloc(t->out, cap);
    if (!n)
        return -1;
    t->out = n;
    t->cap = cap;
    return 0;
}

static int tls_send(struct tls_conn *t);

/* Under kTLS, what OpenSSL still writes itself (alerts, session tickets):
 * plaintext, its record type in a control message, straight to the socket
 * (nothing of ours is queued by then). Application data never comes here. */
static int tls_ktls_write(BIO *b, struct tls_conn *t, const char *data, size_t len,
                          size_t *written)
{
    union {
        char buf[CMSG_SPACE(sizeof(unsigned char))];
        struct cmsghdr align;
    } cm;
    memset(&cm, 0, sizeof cm);
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (t->ctrl_type) {
        m.msg_control = cm.buf;
        m.msg_controllen = sizeof cm.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_TLS;
        c->cmsg_type = TLS_SET_RECORD_TYPE;
        c->cmsg_len = CMSG_LEN(sizeof(unsigned char));
        *CMSG_DATA(c) = (unsigned char)t->ctrl_type;
    }
    BIO_clear_retry_flags(b);
    ssize_t n = sendmsg(t->fd, &m, MSG_NOSIGNAL);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            BIO_set_retry_write(b);
        return 0;
    }
    t->ctrl_type = 0; /* one control message per record, as OpenSSL's socket BIO */
    *written = (size_t)n;
    return 1;
}

static int tls_out_write(BIO *b, const char *data, size_t len, size_t *written)
{
    struct tls_conn *t = BIO_get_data(b);
    if (t->ktls_tx)
        return tls_ktls_write(b, t, data, len, written);
    if (tls_out_reserve(t, len) < 0)
        return 0;
    memcpy(t->out + t->len, data, len);
    t->len += len;
    *written = len;
    return 1;
}

/* The kernel's crypto info is as long as its cipher's struct. */
static size_t tls_ktls_info_len(const struct tls_crypto_info *ci)
{
    switch (ci->cipher_type) {
    case TLS_CIPHER_AES_GCM_128:
        return sizeof(struct tls12_crypto_info_aes_gcm_128);
    case TLS_CIPHER_AES_GCM_256:
        return sizeof(struct tls12_crypto_info_aes_gcm_256);
    case TLS_CIPHER_AES_CCM_128:
        return sizeof(struct tls12_crypto_info_aes_ccm_128);
    case TLS_CIPHER_CHACHA20_POLY1305:
        return sizeof(struct tls12_crypto_info_chacha20_poly1305);
    default:
        return 0;
    }
}

/* OpenSSL offers its send keys: give them to the kernel. Refused (OpenSSL
 * then goes on building records here) while records of ours are still
 * queued, since the kernel would encrypt whatever is sent after. */
static int tls_ktls_start(struct tls_conn *t, const struct tls_crypto_info *ci)
{
    size_t len = tls_ktls_info_len(ci);
    if (t->off < t->len || len == 0)
        return 0;
    if (setsockopt(t->fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof "tls") < 0 ||
        setsockopt(t->fd, SOL_TLS, TLS_TX, ci, (socklen_t)len) < 0) {
        log_verbose("<%d kernel TLS refused (%s): records built in user space", t->fd,
                    strerror(errno));
        return 0;
    }
    t->ktls_tx = true;
    log_verbose("<%d kernel TLS: the kernel builds the records sent", t->fd);
    return 1;
}

static long tls_out_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    struct tls_conn *t = BIO_get_data(b);
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        /* libssl flushes before offering kTLS its keys: send what we hold
         * then, so the offer can be taken. Otherwise records wait for the
         * one send after the call into OpenSSL. */
        if (tls_ktls && !t->ktls_tx && t->off < t->len)
            (void)tls_send(t);
        return 1;
    case TLS_BIO_SET_KTLS:
        return num != 0 && tls_ktls && tls_ktls_start(t, ptr);
    case BIO_CTRL_GET_KTLS_SEND:
        return t->ktls_tx;
    case TLS_BIO_SET_KTLS_CTRL_MSG:
        t->ctrl_type = (int)num;
        return 1;
    case TLS_BIO_CLEAR_KTLS_CTRL_MSG:
        t->ctrl_type = 0;
        return 1;
    default:
        return 0;
    }
}

/* Send what the out buffer holds: 1 all sent, 0 some left (EAGAIN), -1 on
 * a socket error (errno). */
static int tls_send(struct tls_conn *t)
{
    while (t->off < t->len) {
        ssize_t n = send(t->fd, t->out + t->off, t->len - t->off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        t->off += (size_t)n;
        if (t->off < t->len)
            return 0; /* the socket is full: don't ask again until writable */
    }
    t->off = t->len = 0;
    if (t->cap > TLS_OUT_KEEP) {
        free(t->out);
        t->out = NULL;
        t->cap = 0;
    }
    return 1;
}

/* ---- the context ------------------------------------------------------- */

/* memcached's "<what>: <file> : <OpenSSL's first error>". */
static void tls_msg(char *msg, size_t n, const char *what, const char *path)
{
    char es[256];
    ERR_error_string_n(ERR_get_error(), es, sizeof es);
    snprintf(msg, n, "%s: %s : %s", what, path ? path : "(null)", es);
}

/* No file named: fail as memcached does (fopen(NULL) is EFAULT). */
static bool tls_have_path(const char *path)
{
    if (!path)
        ERR_raise(ERR_LIB_SYS, EFAULT);
    return path != NULL;
}

static int tls_new_session(SSL *ssl, SSL_SESSION *sess)
{
    (void)sess;
    struct tls_conn *t = SSL_get_app_data(ssl);
    if (t)
        STAT_INC(t->st, ssl_new_sessions);
    return 0; /* we keep no reference */
}

static int tls_verify_flags(int mode)
{
    switch (mode) {
    case 1:
        return SSL_VERIFY_PEER;
    case 2:
        return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    case 3:
        return SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE;
    default:
        return SSL_VERIFY_NONE;
    }
}

static SSL_CTX *tls_ctx_build(const struct tls_options *s, char *msg, size_t n)
{
    static const int versions[] = {TLS1_VERSION, TLS1_1_VERSION, TLS1_2_VERSION, TLS1_3_VERSION};
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        tls_msg(msg, n, "Unable to create the TLS context", NULL);
        return NULL;
    }
    int v = s->ssl_min_version >= 0 && s->ssl_min_version <= 3 ? s->ssl_min_version : 2;
    SSL_CTX_set_min_proto_version(ctx, versions[v]);
    /* No renegotiation (a client could make us redo handshakes at will); a
     * client closing without close_notify is an end of input, not an error. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                                 SSL_OP_NO_COMPRESSION);
    if (tls_ktls)
        SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
    /* One read(2) takes every record the kernel holds; idle connections give
     * their record buffers back. */
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (!tls_have_path(s->ssl_chain_cert) ||
        !SSL_CTX_use_certificate_chain_file(ctx, s->ssl_chain_cert)) {
        tls_msg(msg, n, "Error loading the certificate chain", s->ssl_chain_cert);
        goto fail;
    }
    if (!tls_have_path(s->ssl_key) ||
        !SSL_CTX_use_PrivateKey_file(ctx, s->ssl_key, s->ssl_keyformat)) {
        tls_msg(msg, n, "Error loading the key", s->ssl_key);
        goto fail;
    }
    SSL_CTX_set_verify(ctx, tls_verify_flags(s->ssl_verify_mode), NULL);
    if (s->ssl_ca_cert) {
        if (!SSL_CTX_load_verify_locations(ctx, s->ssl_ca_cert, NULL)) {
            tls_msg(msg, n, "Error loading the CA certificate", s->ssl_ca_cert);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, SSL_load_client_CA_file(s->ssl_ca_cert));
    }
    if (s->ssl_ciphers && !SSL_CTX_set_cipher_list(ctx, s->ssl_ciphers)) {
        snprintf(msg, n, "Error setting the provided cipher(s): %s", s->ssl_ciphers);
        goto fail;
    }
    /* Tickets as memcached: OpenSSL's defaults (stateless tickets, two per
     * TLS 1.3 handshake, one for TLS 1.2), so a client resumes without the
     * server cache; ssl_session_cache adds the server-side cache and counts
     * the sessions it takes in (ssl_new_sessions). */
    if (s->ssl_session_cache) {
        static const unsigned char id[] = "nodelay";
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_set_session_id_context(ctx, id, sizeof id - 1);
        SSL_CTX_sess_set_new_cb(ctx, tls_new_session);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

/* Can this kernel take TLS keys? Attach the "tls" ULP to a loopback
 * connection (the ULP needs an established socket): 0, or an errno. */
static int tls_ktls_probe(void)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int a = -1, e = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&sa, &sl) < 0 ||
        connect(c, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        (a = accept(l, NULL, NULL)) < 0 ||
        setsockopt(a, IPPROTO_TCP, TCP_ULP, "tls", sizeof "tls") < 0)
        e = errno ? errno : EINVAL;
    if (a >= 0)
        close(a);
    if (c >= 0)
        close(c);
    if (l >= 0)
        close(l);
    return e;
}

int tls_setup(const struct tls_options *s, FILE *err)
{
    if (s->ssl_kernel_tls) {
        int e = tls_ktls_probe();
        tls_ktls = e == 0;
        if (tls_ktls)
            log_info("ssl_kernel_tls: the kernel builds the records sent, for ciphers it has");
        else
            log_info("ssl_kernel_tls: no kernel TLS here (TCP_ULP \"tls\": %s); records are built "
                     "in user space", strerror(e));
    }
    if (!tls_out_method) {
        tls_out_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "nodelay-out");
        if (!tls_out_method || !BIO_meth_set_write_ex(tls_out_method, tls_out_write) ||
            !BIO_meth_set_ctrl(tls_out_method, tls_out_ctrl)) {
            fprintf(err, "Unable to set up TLS\n");
            return -1;
        }
    }
    char msg[512];
    SSL_CTX *ctx = tls_ctx_build(s, msg, sizeof msg);
    if (!ctx) {
        ERR_print_errors_fp(err);
        fprintf(err, "%s\n", msg);
        return -1;
    }
    tls_opt = s;
    tls_ctx = ctx;
    tls_on = true;
    size_t w = s->ssl_wbuf_size;
    tls_chunk = w < 512 ? 512 : w > TLS_RECORD_MAX ? TLS_RECORD_MAX : w;
    tls_loaded_at = (long long)time(NULL);
    return 0;
}

void tls_teardown(void)
{
    pthread_mutex_lock(&tls_lock);
    SSL_CTX_free(tls_ctx);
    tls_ctx = NULL;
    tls_on = false;
    tls_ktls = false;
    pthread_mutex_unlock(&tls_lock);
    BIO_meth_free(tls_out_method);
    tls_out_method = NULL;
    tls_opt = NULL;
}

bool tls_enabled(void)
{
    return tls_on;
}

int tls_refresh_certs(char *msg, size_t n)
{
    if (!tls_opt) {
        snprintf(msg, n, "Error TLS not enabled");
        return -1;
    }
    ERR_clear_error();
    SSL_CTX *ctx = tls_ctx_build(tls_opt, msg, n);
    ERR_clear_error();
    if (!ctx)
        return -1;
    pthread_mutex_lock(&tls_lock);
    SSL_CTX *old = tls_ctx;
    tls_ctx = ctx;
    pthread_mutex_unlock(&tls_lock);
    SSL_CTX_free(old); /* open connections hold their own reference */
    tls_loaded_at = (long long)time(NULL);
    return 0;
}

uint64_t tls_cert_age(void)
{
    long long d = (long long)time(NULL) - tls_loaded_at;
    return d > 0 ? (uint64_t)d : 0;
}

/* ---- per connection ---------------------------------------------------- */

struct tls_conn *tls_conn_new(int fd, enum tls_mode mode, struct stats_thread *st,
                              rel_time_t now)
{
    struct tls_conn *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->fd = fd;
    t->st = st;
    t->since = now;
    pthread_mutex_lock(&tls_lock);
    t->ssl = tls_ctx ? SSL_new(tls_ctx) : NULL;
    pthread_mutex_unlock(&tls_lock);
    BIO *rb = BIO_new_socket(fd, BIO_NOCLOSE);
    BIO *wb = BIO_new(tls_out_method);
    if (!t->ssl || !rb || !wb) {
        BIO_free(rb);
        BIO_free(wb);
        SSL_free(t->ssl);
        free(t);
        return NULL;
    }
    BIO_set_data(wb, t);
    BIO_set_init(wb, 1);
    SSL_set_bio(t->ssl, rb, wb);
    SSL_set_app_data(t->ssl, t);
    if (mode == TLS_MODE_MTLS)
        SSL_set_verify(t->ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    SSL_set_accept_state(t->ssl);
    return t;
}

void tls_conn_free(struct tls_conn *t)
{
    if (!t)
        return;
    if (t->ready && !t->failed) {
        ERR_clear_error();
        if (SSL_shutdown(t->ssl) >= 0)
            (void)tls_send(t); /* close_notify, best effort */
    }
    ERR_clear_error();
    SSL_free(t->ssl);
    free(t->out);
    free(t);
}

/* A TLS error: counted, logged only at -v, the alert sent if it can be. */
static ssize_t tls_fail(struct tls_conn *t, int e)
{
    int saved = errno;
    unsigned long err = ERR_peek_error();
    if (!t->ready)
        STAT_INC(t->st, ssl_handshake_errors);
    else if (e == SSL_ERROR_SSL)
        STAT_INC(t->st, ssl_proto_errors);
    char es[256] = "";
    if (err)
        ERR_error_string_n(err, es, sizeof es);
    else if (e == SSL_ERROR_SYSCALL)
        snprintf(es, sizeof es, "%s", saved ? strerror(saved) : "end of input");
    log_verbose("<%d TLS %s failed: %s", t->fd, t->ready ? "read" : "handshake", es);
    ERR_clear_error();
    t->failed = true;
    (void)tls_send(t);
    errno = e == SSL_ERROR_SYSCALL && saved ? saved : EPROTO;
    return -1;
}

ssize_t tls_conn_read(struct tls_conn *t, void *buf, size_t n)
{
    if (t->failed) {
        errno = EPROTO;
        return -1;
    }
    if (t->off < t->len && tls_send(t) < 0)
        return -1;
    if (!t->ready) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_do_handshake(t->ssl);
        int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
        if (e == SSL_ERROR_NONE || e == SSL_ERROR_WANT_READ) {
            if (tls_send(t) < 0)
                return -1;
        }
        if (e == SSL_ERROR_WANT_READ) {
            errno = EAGAIN;
            return -1;
        }
        if (e != SSL_ERROR_NONE) {
            if (e == SSL_ERROR_ZERO_RETURN ||
                (e == SSL_ERROR_SYSCALL && errno == 0 && ERR_peek_error() == 0)) {
                t->failed = true;
                return 0; /* gone during the handshake (a port probe): not an error */
            }
            return tls_fail(t, e);
        }
        t->ready = true;
    }
    size_t total = 0;
    while (total < n) {
        size_t got = 0;
        ERR_clear_error();
        errno = 0;
        int r = SSL_read_ex(t->ssl, (char *)buf + total, n - total, &got);
        if (r == 1 && t->ktls_tx && SSL_get_key_update_type(t->ssl) != SSL_KEY_UPDATE_NONE) {
            /* The peer wants our send keys changed before our next data,
             * and OpenSSL 3.0 cannot hand new ones to the kernel. */
            STAT_INC(t->st, ssl_proto_errors);
            log_verbose("<%d TLS key update asked for under kernel TLS: closed", t->fd);
            t->failed = true;
            errno = EPROTO;
            return -1;
        }
        if (r == 1) {
            total += got;
            if (!SSL_has_pending(t->ssl))
                break;
            continue;
        }
        int e = SSL_get_error(t->ssl, r);
        if (t->off < t->len)
            (void)tls_send(t); /* a key update's answer */
        if (total > 0)
            break; /* what we have now; the rest (or the error) next call */
        if (e == SSL_ERROR_WANT_READ) {
            errno = EAGAIN;
            return -1;
        }
        if (e == SSL_ERROR_ZERO_RETURN ||
            (e == SSL_ERROR_SYSCALL && errno == 0 && ERR_peek_error() == 0))
            return 0;
        return tls_fail(t, e);
    }
    return (ssize_t)total;
}

/* Encrypt len bytes: false when OpenSSL fails (out of memory). */
static bool tls_encrypt(struct tls_conn *t, const void *p, size_t len)
{
    size_t done = 0;
    ERR_clear_error();
    return SSL_write_ex(t->ssl, p, len, &done) == 1 && done == len;
}

ssize_t tls_conn_writev(struct tls_conn *t, const struct iovec *iov, int n)
{
    if (t->off < t->len) {
        int r = tls_send(t);
        if (r < 0)
            return -1;
        if (r == 0) {
            errno = EAGAIN;
            return -1;
        }
    }
    /* The records of an earlier call have all left, whoever sent their
     * end: a read sends what is queued too (tls_conn_read), so this call
     * may find the buffer empty. Their plaintext is what it reports; the
     * iovecs start with it, and encrypting them again would send it twice. */
    if (t->owed > 0) {
        size_t o = t->owed;
        t->owed = 0;
        return (ssize_t)o;
    }
    if (!t->ready || t->failed) {
        errno = t->failed ? EPROTO : EAGAIN;
        return -1;
    }
    if (t->ktls_tx)
        return writev(t->fd, iov, n); /* the plaintext path: the kernel encrypts */
    /* Room for all the records at once (a 100 KiB value would otherwise
     * grow the buffer by doubling, copying it five times). */
    size_t plain = 0;
    for (int i = 0; i < n && plain < TLS_WRITE_MAX; i++)
        plain += iov[i].iov_len;
    plain = plain < TLS_WRITE_MAX ? plain : TLS_WRITE_MAX;
    if (tls_out_reserve(t, plain + (plain / tls_chunk + 1) * TLS_RECORD_OVERHEAD) < 0)
        goto fail;
    static __thread char stage[TLS_RECORD_MAX];
    size_t staged = 0, used = 0;
    for (int i = 0; i < n && used < TLS_WRITE_MAX; i++) {
        const char *p = iov[i].iov_base;
        size_t left = iov[i].iov_len;
        while (left > 0 && used < TLS_WRITE_MAX) {
            size_t room = TLS_WRITE_MAX - used;
            if (staged == 0 && left >= tls_chunk) {
                /* A large value: straight in, no copy into the stage. */
                size_t take = left < room ? left : room;
                if (!tls_encrypt(t, p, take))
                    goto fail;
                p += take, left -= take, used += take;
                continue;
            }
            size_t take = tls_chunk - staged;
            if (take > left)
                take = left;
            if (take > room)
                take = room;
            memcpy(stage + staged, p, take);
            staged += take, p += take, left -= take, used += take;
            if (staged == tls_chunk) {
                if (!tls_encrypt(t, stage, staged))
                    goto fail;
                staged = 0;
            }
        }
    }
    if (staged > 0 && !tls_encrypt(t, stage, staged))
        goto fail;
    int r = tls_send(t);
    if (r < 0)
        return -1;
    if (r == 0) {
        t->owed = used; /* reported when the rest has left */
        errno = EAGAIN;
        return -1;
    }
    return (ssize_t)used;
fail:
    log_verbose("<%d TLS write failed", t->fd);
    ERR_clear_error();
    t->failed = true;
    errno = ENOMEM;
    return -1;
}

bool tls_conn_has_input(const struct tls_conn *t)
{
    return t->ready && !t->failed && SSL_has_pending(t->ssl);
}

bool tls_conn_record_incomplete(const struct tls_conn *t)
{
    return !t->failed && SSL_has_pending(t->ssl);
}

bool tls_conn_handshake_expired(struct tls_conn *t, rel_time_t now, int secs)
{
    if (t->ready || t->failed || now - t->since < (rel_time_t)secs)
        return false;
    STAT_INC(t->st, ssl_handshake_errors);
    log_verbose("<%d TLS handshake not done after %d s: cut off", t->fd, secs);
    t->failed = true;
    return true;
}
