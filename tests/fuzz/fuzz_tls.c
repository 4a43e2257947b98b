/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the TLS read path (net/tls.c): arbitrary bytes
 * arrive on a server connection's socket, either
 *   first byte even: from its first byte (a ClientHello or garbage), or
 *   first byte odd:  after a real handshake with an in-process client, as
 *                    raw records inside the established session;
 * then the client closes. tls_conn_read is driven until it reports end of
 * input or an error (never more than a bounded number of calls), and
 * tls_conn_writev is tried once the session is up. Must never crash, leak
 * or spin; an error must leave the connection failed. The server's
 * certificate is made in memory at start-up (no keys in the repository). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net/tls.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "stats/stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct settings fz_set;
static struct options fz_opt; /* from fz_set; tls keeps a pointer to its tls part */
static SSL_CTX *fz_client_ctx;
static struct stats_thread fz_stats;
static char fz_cert[64], fz_key[64];

static void fz_die(const char *what)
{
    fprintf(stderr, "fuzz_tls setup: %s\n", what);
    ERR_print_errors_fp(stderr);
    abort();
}

/* A P-256 key and a self-signed certificate, written to two temp files. */
static void fz_make_cert(void)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!pk || !x)
        fz_die("key");
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pk);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"fuzz", -1, -1, 0);
    X509_set_issuer_name(x, n);
    if (!X509_sign(x, pk, EVP_sha256()))
        fz_die("sign");
    snprintf(fz_cert, sizeof fz_cert, "/tmp/fuzz_tls_cert_XXXXXX");
    snprintf(fz_key, sizeof fz_key, "/tmp/fuzz_tls_key_XXXXXX");
    int cfd = mkstemp(fz_cert), kfd = mkstemp(fz_key);
    FILE *cf = cfd >= 0 ? fdopen(cfd, "w") : NULL, *kf = kfd >= 0 ? fdopen(kfd, "w") : NULL;
    if (!cf || !kf || !PEM_write_X509(cf, x) || !PEM_write_PrivateKey(kf, pk, NULL, NULL, 0, NULL, NULL))
        fz_die("write");
    fclose(cf);
    fclose(kf);
    X509_free(x);
    EVP_PKEY_free(pk);
}

static void fz_cleanup(void)
{
    unlink(fz_cert);
    unlink(fz_key);
    tls_teardown();
    SSL_CTX_free(fz_client_ctx);
}

static void fz_setup(void)
{
    fz_make_cert();
    settings_defaults(&fz_set);
    fz_set.ssl_enabled = true;
    fz_set.ssl_chain_cert = fz_cert;
    fz_set.ssl_key = fz_key;
    options_from_settings(&fz_set, &fz_opt);
    if (tls_setup(&fz_opt.tls, stderr) < 0)
        fz_die("tls_setup");
    fz_client_ctx = SSL_CTX_new(TLS_client_method());
    if (!fz_client_ctx)
        fz_die("client ctx");
    SSL_CTX_set_verify(fz_client_ctx, SSL_VERIFY_NONE, NULL);
    atexit(fz_cleanup);
}

/* Drive the server until end of input or an error. */
static void fz_drain(struct tls_conn *t)
{
    char buf[4096];
    for (int i = 0; i < 512; i++) {
        ssize_t n = tls_conn_read(t, buf, (size_t)(i % 7 == 3 ? 5 : sizeof buf));
        if (n == 0 || (n < 0 && errno != EAGAIN))
            return;
        if (n < 0 && !tls_conn_record_incomplete(t))
            return; /* nothing more will come: the client's bytes are all read */
    }
}

/* Alternate client and server until both finish the handshake. */
static SSL *fz_handshake(int cfd, struct tls_conn *t)
{
    SSL *cl = SSL_new(fz_client_ctx);
    if (!cl)
        return NULL;
    SSL_set_fd(cl, cfd);
    SSL_set_connect_state(cl);
    char buf[64];
    for (int i = 0; i < 20; i++) {
        int r = SSL_do_handshake(cl);
        (void)tls_conn_read(t, buf, sizeof buf);
        if (r == 1 && i > 0)
            break;
    }
    ERR_clear_error();
    return cl;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    if (!ready) {
        fz_setup();
        ready = true;
    }
    if (size == 0 || size > 128 * 1024)
        return 0;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return 0;
    int big = 512 * 1024;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    struct tls_conn *t = tls_conn_new(sv[1], TLS_MODE_TLS, &fz_stats, 0);
    SSL *cl = NULL;
    if (t && (data[0] & 1))
        cl = fz_handshake(sv[0], t);
    if (t) {
        /* the client's bytes, then its close */
        size_t off = 1;
        while (off < size) {
            ssize_t n = write(sv[0], data + off, size - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        shutdown(sv[0], SHUT_WR);
        fz_drain(t);
        struct iovec iov[2] = {{(void *)"VALUE k 0 1\r\n", 13}, {(void *)"v\r\nEND\r\n", 8}};
        (void)tls_conn_writev(t, iov, 2);
        tls_conn_free(t);
    }
    SSL_free(cl);
    ERR_clear_error();
    close(sv[0]);
    close(sv[1]);
    return 0;
}
