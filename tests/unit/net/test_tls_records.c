/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS record gathering (net/tls.c) without a network: the server's side on
 * one end of an AF_UNIX SOCK_SEQPACKET pair, a client (OpenSSL over memory
 * BIOs) on the other. A seqpacket socket keeps each send(2) a message of
 * its own, so the test sees how many sends a writev became: the replies of
 * one writev must leave in ONE send, small ones gathered into one record,
 * large ones in records of at most TLS's maximum, and decrypt to exactly
 * the bytes given. A self-signed certificate is made at start. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net/tls.h"
#include "stats/stats.h"

#define RECORD_MAX 16384u
#define MSG_MAX (512u * 1024)

static char cert_path[] = "/tmp/nodelay-tls-cert-XXXXXX";
static char key_path[] = "/tmp/nodelay-tls-key-XXXXXX";
static struct tls_options opts;

/* A P-256 key and a self-signed certificate for it, in PEM files. */
static int make_cert(void)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!pk || !x)
        return -1;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pk);
    X509_NAME *nm = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1,
                               0);
    X509_set_issuer_name(x, nm);
    int ok = X509_sign(x, pk, EVP_sha256()) > 0;
    int cfd = mkstemp(cert_path), kfd = mkstemp(key_path);
    FILE *cf = cfd >= 0 ? fdopen(cfd, "w") : NULL;
    FILE *kf = kfd >= 0 ? fdopen(kfd, "w") : NULL;
    ok = ok && cf && kf && PEM_write_X509(cf, x) &&
         PEM_write_PrivateKey(kf, pk, NULL, NULL, 0, NULL, NULL);
    if (cf)
        fclose(cf);
    if (kf)
        fclose(kf);
    X509_free(x);
    EVP_PKEY_free(pk);
    return ok ? 0 : -1;
}

static int setup_all(void **state)
{
    (void)state;
    if (make_cert() < 0)
        return -1;
    opts.ssl_chain_cert = cert_path;
    opts.ssl_key = key_path;
    opts.ssl_keyformat = SSL_FILETYPE_PEM;
    opts.ssl_min_version = 2;
    opts.ssl_wbuf_size = RECORD_MAX;
    return tls_setup(&opts, stderr);
}

static int teardown_all(void **state)
{
    (void)state;
    tls_teardown();
    unlink(cert_path);
    unlink(key_path);
    return 0;
}

struct pair {
    int fd[2]; /* [0] the server's, [1] the client's raw end */
    struct tls_conn *srv;
    struct stats_thread st;
    SSL_CTX *cctx;
    SSL *cli;
    BIO *cin, *cout; /* the client's memory BIOs: what it reads, writes */
};

/* Every message waiting on the client's end into the client's read BIO;
 * returns how many there were. */
static int to_client(struct pair *p)
{
    static char msg[MSG_MAX];
    int n = 0;
    for (int guard = 0; guard < 1000; guard++) {
        ssize_t r = recv(p->fd[1], msg, sizeof msg, MSG_DONTWAIT);
        if (r < 0) {
            assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            return n;
        }
        assert_int_equal(BIO_write(p->cin, msg, (int)r), (int)r);
        n++;
    }
    fail_msg("no end to the server's messages");
    return n;
}

/* What the client wrote, as one message to the server. */
static void to_server(struct pair *p)
{
    char buf[65536];
    int n = BIO_read(p->cout, buf, sizeof buf);
    if (n > 0)
        assert_int_equal(send(p->fd[1], buf, (size_t)n, 0), n);
}

static void pair_open(struct pair *p)
{
    memset(p, 0, sizeof *p);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, p->fd), 0);
    /* room for a whole writev's records in one message */
    int sz = 1 << 20;
    setsockopt(p->fd[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(p->fd[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    fcntl(p->fd[0], F_SETFL, O_NONBLOCK);
    p->srv = tls_conn_new(p->fd[0], TLS_MODE_TLS, &p->st, 0);
    assert_non_null(p->srv);
    p->cctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(p->cctx);
    SSL_CTX_set_verify(p->cctx, SSL_VERIFY_NONE, NULL);
    p->cli = SSL_new(p->cctx);
    p->cin = BIO_new(BIO_s_mem());
    p->cout = BIO_new(BIO_s_mem());
    assert_non_null(p->cli);
    SSL_set_bio(p->cli, p->cin, p->cout);
    SSL_set_connect_state(p->cli);
    /* The handshake, in bounded rounds: the client speaks, the server
     * answers from its socket, until both are done. */
    char buf[64];
    bool server_done = false;
    for (int round = 0; round < 20 && !server_done; round++) {
        int r = SSL_do_handshake(p->cli);
        if (r != 1)
            assert_int_equal(SSL_get_error(p->cli, r), SSL_ERROR_WANT_READ);
        to_server(p);
        ssize_t n = tls_conn_read(p->srv, buf, sizeof buf);
        assert_int_equal(n, -1);
        assert_int_equal(errno, EAGAIN);
        to_client(p);
        /* the server is done once it took the client's Finished */
        server_done = r == 1 && SSL_is_init_finished(p->cli) && round > 0;
    }
    assert_true(server_done);
    /* what followed the handshake (TLS 1.3 tickets) is read and dropped */
    assert_int_equal(SSL_read(p->cli, buf, sizeof buf), -1);
    assert_int_equal(SSL_get_error(p->cli, -1), SSL_ERROR_WANT_READ);
}

static void pair_close(struct pair *p)
{
    tls_conn_free(p->srv);
    SSL_free(p->cli);
    SSL_CTX_free(p->cctx);
    close(p->fd[0]);
    close(p->fd[1]);
}

struct sent {
    size_t sends;   /* messages (send calls) the writev became */
    size_t records; /* TLS records in them */
    size_t max_record;
    char *plain; /* what the client decrypted */
    size_t plain_len;
};

/* writev on the server's side, then what reached the client. */
static struct sent write_and_see(struct pair *p, const struct iovec *iov, int n, size_t total)
{
    assert_int_equal(tls_conn_writev(p->srv, iov, n), (ssize_t)total);
    static unsigned char msg[MSG_MAX];
    struct sent s = {0};
    for (int guard = 0; guard < 1000; guard++) {
        ssize_t r = recv(p->fd[1], msg, sizeof msg, MSG_DONTWAIT);
        if (r < 0)
            break;
        s.sends++;
        /* whole records, back to back: 5-byte header, length in bytes 3-4 */
        size_t off = 0;
        while (off < (size_t)r) {
            assert_true(off + 5 <= (size_t)r);
            size_t len = (size_t)msg[off + 3] << 8 | msg[off + 4];
            assert_true(off + 5 + len <= (size_t)r);
            s.records++;
            if (len > s.max_record)
                s.max_record = len;
            off += 5 + len;
        }
        assert_int_equal(BIO_write(p->cin, msg, (int)r), (int)r);
    }
    s.plain = malloc(total + 1);
    assert_non_null(s.plain);
    for (int guard = 0; guard < 1000 && s.plain_len < total; guard++) {
        int r = SSL_read(p->cli, s.plain + s.plain_len, (int)(total + 1 - s.plain_len));
        if (r <= 0)
            break;
        s.plain_len += (size_t)r;
    }
    return s;
}

/* Twenty small replies of one read: one send, one record, same bytes. */
static void test_small_replies_one_record(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    static const char r[] = "VALUE k 0 1\r\nx\r\nEND\r\n";
    struct iovec iov[20];
    char want[sizeof iov / sizeof iov[0] * (sizeof r - 1)];
    size_t total = 0;
    for (size_t i = 0; i < 20; i++) {
        iov[i] = (struct iovec){(void *)r, sizeof r - 1};
        memcpy(want + total, r, sizeof r - 1);
        total += sizeof r - 1;
    }
    struct sent s = write_and_see(&p, iov, 20, total);
    assert_int_equal(s.sends, 1);
    assert_int_equal(s.records, 1);
    assert_int_equal(s.plain_len, total);
    assert_memory_equal(s.plain, want, total);
    free(s.plain);
    pair_close(&p);
}

/* A large value between two small replies: still one send, records no
 * larger than TLS allows and no more than one beyond the fewest possible. */
static void test_large_reply_one_send(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    size_t big = 40000;
    char *v = malloc(big);
    assert_non_null(v);
    for (size_t i = 0; i < big; i++)
        v[i] = (char)('a' + i % 26);
    static const char head[] = "VALUE big 0 40000\r\n", tail[] = "\r\nEND\r\n";
    struct iovec iov[3] = {{(void *)head, sizeof head - 1},
                           {v, big},
                           {(void *)tail, sizeof tail - 1}};
    size_t total = sizeof head - 1 + big + sizeof tail - 1;
    char *want = malloc(total);
    assert_non_null(want);
    memcpy(want, head, sizeof head - 1);
    memcpy(want + sizeof head - 1, v, big);
    memcpy(want + sizeof head - 1 + big, tail, sizeof tail - 1);
    struct sent s = write_and_see(&p, iov, 3, total);
    assert_int_equal(s.sends, 1);
    size_t fewest = (total + RECORD_MAX - 1) / RECORD_MAX;
    assert_true(s.records >= fewest && s.records <= fewest + 1);
    assert_true(s.max_record <= RECORD_MAX + 256); /* plaintext plus the cipher's bytes */
    assert_int_equal(s.plain_len, total);
    assert_memory_equal(s.plain, want, total);
    free(s.plain);
    free(want);
    free(v);
    pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_replies_one_record),
        cmocka_unit_test(test_large_reply_one_send),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
