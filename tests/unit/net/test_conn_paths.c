/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection's two I/O paths on a socketpair, driven as a worker
 * drives them (event_wait, then conn_on_event or conn_on_complete): the
 * readiness path on the build's backend, the completion path on io_uring
 * when the build and the kernel have it, with its receive and zombie
 * states checked after each step. */
#include "../proto/text/test_text_support.h"

#include <sys/socket.h>
#include <unistd.h>

#include "event/event.h"
#include "net/conn.h"
#include "net/worker_pool.h"

struct cp {
    struct tt *t;
    struct worker_pool pool;
    struct conn_env env;
    struct iovec iov[64];
    size_t reply_bytes;
    struct conn *c;
    int peer;
};

static size_t cp_client_bytes(const struct worker_pool *pool)
{
    (void)pool;
    return 0;
}

/* ring: on io_uring, else the build's readiness backend. False when the
 * ring was asked for and is not there. */
static bool cp_open(struct cp *p, bool ring)
{
    memset(p, 0, sizeof *p);
    char why[128];
    if (event_select(ring, why, sizeof why) < 0) {
        print_message("io_uring is not available here (%s): not run\n", why);
        return false;
    }
    p->t = tt_new();
    p->pool.opt = &p->t->opt.net;
    p->pool.proto = &p->t->opt.proto;
    p->pool.run = settings_runtime_of(&p->t->set);
    assert_int_equal(registry_init(&p->pool.registry), 0);
    p->env.pool = &p->pool;
    assert_int_equal(event_loop_create(&p->env.loop), 0);
    assert_int_equal(event_has_io(p->env.loop), ring);
    p->env.store = p->t->ctx;
    p->env.stats = &p->t->stats;
    p->env.rbufs = &p->t->pool;
    p->env.iov = p->iov;
    p->env.iov_max = 64;
    p->env.reply_bytes = &p->reply_bytes;
    p->env.client_bytes = cp_client_bytes;
    p->env.plain_path = ring ? &conn_uring_path : &conn_ready_path;
    p->env.tls_path = &conn_ready_path;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    p->peer = sv[1];
    p->pool.curr_conns = 1;
    p->c = conn_create(&p->env, sv[0], false, 0, "unix:test", "unix:test");
    assert_non_null(p->c);
    assert_int_equal(p->c->u.on, ring);
    return true;
}

static void cp_free_dead(struct cp *p)
{
    while (p->env.dead) {
        struct conn *d = p->env.dead;
        p->env.dead = d->dead_next;
        if (d == p->c)
            p->c = NULL;
        conn_free(d);
    }
}

/* One turn of the worker's loop for this connection. */
static int cp_turn(struct cp *p, int timeout_ms)
{
    struct event_fired ev[16];
    int n = event_wait(p->env.loop, ev, 16, timeout_ms);
    assert_true(n >= 0);
    for (int i = 0; i < n; i++) {
        struct loop_token *wt = ev[i].ptr;
        if (wt->kind != TOKEN_CONN)
            continue;
        if (ev[i].events & (EVENT_RECV | EVENT_SEND))
            conn_on_complete(wt->obj, ev[i].events, ev[i].res, ev[i].data);
        else
            conn_on_event(wt->obj, ev[i].events);
    }
    while (p->env.ready) {
        struct conn *r = p->env.ready;
        p->env.ready = r->ready_next;
        r->in_ready = false;
        conn_resume(r);
    }
    cp_free_dead(p);
    return n;
}

/* Send req from the peer; turn the loop until want has come back (bounded). */
static void cp_ask(struct cp *p, const char *req, const char *want)
{
    size_t len = strlen(req);
    assert_int_equal(write(p->peer, req, len), (ssize_t)len);
    char got[4096];
    size_t have = 0, wlen = strlen(want);
    for (int i = 0; i < 200 && have < wlen; i++) {
        cp_turn(p, 10);
        ssize_t r = read(p->peer, got + have, sizeof got - 1 - have);
        if (r > 0)
            have += (size_t)r;
    }
    got[have] = '\0';
    assert_string_equal(got, want);
}

static void cp_close(struct cp *p)
{
    if (p->c)
        conn_close(p->c, NULL);
    /* closed with I/O started: a zombie until its completions come */
    for (int i = 0; i < 200 && p->env.zombies; i++)
        cp_turn(p, 10);
    assert_null(p->env.zombies);
    cp_free_dead(p);
    assert_null(p->c);
    assert_null(p->env.conns);
    close(p->peer);
    event_loop_destroy(&p->env.loop);
    registry_release(&p->pool.registry);
    tt_free(p->t);
}

static void cp_requests(struct cp *p)
{
    cp_ask(p, "set a 0 0 5\r\nhello\r\n", "STORED\r\n");
    cp_ask(p, "get a\r\nget b\r\n", "VALUE a 0 5\r\nhello\r\nEND\r\nEND\r\n");
    /* a request in two pieces: the first asks for nothing yet */
    cp_ask(p, "get ", "");
    cp_ask(p, "a\r\n", "VALUE a 0 5\r\nhello\r\nEND\r\n");
}

static void test_ready_path(void **state)
{
    (void)state;
    struct cp p;
    assert_true(cp_open(&p, false));
    assert_null(p.c->rd.tls);
    cp_requests(&p);
    /* nothing is started on readiness: closing frees at the turn's end */
    conn_close(p.c, NULL);
    assert_null(p.env.zombies);
    assert_non_null(p.env.dead);
    cp_close(&p);
}

static void test_ready_peer_closes(void **state)
{
    (void)state;
    struct cp p;
    assert_true(cp_open(&p, false));
    cp_ask(&p, "get zz\r\n", "END\r\n");
    shutdown(p.peer, SHUT_WR);
    for (int i = 0; i < 200 && p.c; i++)
        cp_turn(&p, 10);
    assert_null(p.c); /* end of input closed and freed it */
    cp_close(&p);
}

static void test_uring_path(void **state)
{
    (void)state;
    struct cp p;
    if (!cp_open(&p, true))
        skip();
    /* an idle connection has a receive started from the start */
    assert_true(p.c->u.recv_busy);
    cp_requests(&p);
    assert_false(p.c->u.send_busy); /* every reply was taken */
    assert_true(p.c->u.recv_busy);
    /* closed with its receive started: a zombie, then released when the
     * cancellation completes */
    conn_close(p.c, NULL);
    assert_non_null(p.env.zombies);
    assert_null(p.env.dead);
    cp_close(&p);
}

static void test_uring_peer_closes(void **state)
{
    (void)state;
    struct cp p;
    if (!cp_open(&p, true))
        skip();
    cp_ask(&p, "get zz\r\n", "END\r\n");
    shutdown(p.peer, SHUT_WR);
    for (int i = 0; i < 200 && p.c; i++)
        cp_turn(&p, 10);
    assert_null(p.c); /* the receive's EOF closed it; nothing left started */
    assert_null(p.env.zombies);
    cp_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_path),
        cmocka_unit_test(test_ready_peer_closes),
        cmocka_unit_test(test_uring_path),
        cmocka_unit_test(test_uring_peer_closes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
