/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the connection's input unit (net/conn_input) with
 * the text/binary protocols behind it: reads cut at any size, a reply
 * allowance from tiny to unlimited, a client that takes only part of what
 * it is owed between resumes, -R yields, and end of input at any point.
 *
 * First byte: read size and -R; second: the allowance and how much of the
 * queue each "client read" takes, the read buffer limit, and whether a
 * full read means more is queued (conn_input.more_queued), and whether
 * bytes come while the unit has work left (a multishot receive's on
 * io_uring, conn_input_keep). Every read into the buffer is hinted as the
 * readiness path hints it (proto_read_hint over the unread bytes; debug
 * builds check each hint the run takes against the bytes, text_ahead.c),
 * and kept bytes as io_uring's window does (when nothing is buffered).
 * Checks what must always hold: the unit
 * never reports buffered bytes it does not have, a pause leaves no more than
 * the allowance plus one bounded reply owed, and EOF ends in CLOSE within a
 * bounded number of resumes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "base/log.h"
#include "net/conn_input.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "stats/stats.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_ITEM_MAX (64u << 10)

static struct store *fz_store;
static struct store_ctx *fz_ctx;
static struct stats_thread fz_stats;

static void fz_setup(void)
{
    clock_setup();
    struct store_options opt = {
        .mem_limit = 8u << 20,
        .item_size_max = FZ_ITEM_MAX,
        .evictions = true,
        .cas_enabled = true,
    };
    if (store_create(&fz_store, &opt) != 0)
        abort();
    fz_ctx = store_ctx_create(fz_store);
    if (!fz_ctx)
        abort();
}

/* The client takes up to `take` bytes (0 = all). */
static void fz_take(struct session *s, size_t take)
{
    struct iovec iov[64];
    size_t left = take ? take : SIZE_MAX;
    while (reply_pending(&s->reply) > 0 && left > 0) {
        int n = reply_iov(&s->reply, iov, 64);
        size_t got = 0;
        for (int i = 0; i < n; i++)
            got += iov[i].iov_len;
        if (got > left)
            got = left;
        reply_consume(&s->reply, got);
        left -= got;
    }
}

/* Resume while the unit asks, as a connection does once the client took
 * some of its replies. Returns false when it closed. */
static bool fz_settle(struct conn_input *in, struct session *s, unsigned act, size_t take)
{
    /* An over-long key, a 2 KiB non-get line's reply or a 64 KiB value: a
     * pause may leave that much beyond the allowance. */
    const size_t slack = FZ_ITEM_MAX + 4096;
    for (int rounds = 0; rounds < 100000; rounds++) {
        if (act & CONN_IN_CLOSE)
            return false;
        if (!(act & CONN_IN_AGAIN))
            return true;
        if (s->reply_allow != SIZE_MAX && reply_pending(&s->reply) > s->reply_allow + slack)
            abort();
        fz_take(s, take);
        while (reply_pending(&s->reply) > s->reply_allow)
            fz_take(s, take);
        act = conn_input_resume(in, s);
    }
    abort(); /* never resumes forever */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fz_store)
        fz_setup();
    if (size < 2)
        return 0;
    uint8_t mode = data[0], mem = data[1];
    data += 2;
    size -= 2;

    struct settings set;
    settings_defaults(&set);
    set.binding_protocol = (mode & 0x80) ? "auto" : "ascii";
    SETTINGS_SET(&set, maxbytes, 8u << 20);
    set.item_size_max = FZ_ITEM_MAX;
    set.reqs_per_event = (mode & 0x40) ? 1 : 20;
    size_t chunk = 1 + (mode & 0x3f) * 37;
    static const size_t allows[8] = {16, 512, 4096, 16384, 65536, 1u << 20, 4u << 20, SIZE_MAX};
    static const size_t takes[4] = {0, 1, 100, 5000};

    size_t held = 0;
    struct rbuf_pool pool;
    rbuf_pool_init(&pool, &held, (mem & 0x20) ? 64 * 1024 : 0);
    struct conn_input in;
    conn_input_init(&in, &pool);
    struct session s;
    struct options opt;
    options_from_settings(&set, &opt);
    session_init(&s, fz_ctx, &fz_stats, &opt.proto, settings_runtime_of(&set));
    s.reply_allow = allows[mem & 7];
    size_t take = takes[(mem >> 3) & 3];
    /* the clients' bound leaves room for one growth, or is far off */
    size_t grow_room = (mem & 0x40) ? RBUF_SIZE : SIZE_MAX;

    bool open = true;
    for (size_t off = 0; off < size && open;) {
        char *at;
        size_t room;
        enum conn_in_target to = conn_input_target(&in, &s, grow_room, &at, &room);
        if (to == CONN_IN_TO_NOWHERE)
            break;
        if (room == 0)
            abort();
        size_t n = size - off < chunk ? size - off : chunk;
        /* as an epoll connection holding a value whose rest is queued
         * (s.sink_held): one read fills it and takes what follows */
        char *tail = NULL;
        size_t tail_room = 0;
        if (to == CONN_IN_TO_SINK && (mem & 0x80)) {
            s.sink_held = true;
            tail_room = conn_input_tail(&in, &s, &tail);
        }
        if (n > room + tail_room)
            n = room + tail_room;
        memcpy(at, data + off, n < room ? n : room);
        if (n > room)
            memcpy(tail, data + off + room, n - room);
        off += n;
        struct store_prefetch_run run;
        if (to == CONN_IN_TO_BUF) {
            const char *unread;
            size_t nunread = conn_input_unread(&in, n, &unread);
            proto_read_hint(&s, unread, nunread, &run);
            proto_read_hint_next(&s, &run);
        }
        unsigned act = conn_input_received(&in, &s, to, n);
        /* the next read's bytes arrive before the resume: kept, run after
         * what was buffered */
        if ((mem & 0x80) && (act & CONN_IN_AGAIN) && off < size) {
            size_t k = size - off < chunk ? size - off : chunk;
            if (in.len == 0)
                proto_read_hint(&s, (const char *)data + off, k, &run);
            if (conn_input_keep(&in, (const char *)data + off, k) < 0)
                break;
            off += k;
            if (!conn_input_busy(&in))
                abort();
        }
        open = fz_settle(&in, &s, act, take);
        /* as a ring connection does: a read that filled its room says the
         * rest is queued (the next value goes to the buffer if it fits) */
        in.more_queued = (mem & 0x40) && n == room;
        if (in.len > in.size || in.pos + in.len > in.size)
            abort();
        fz_take(&s, 0);
    }
    if (open)
        (void)fz_settle(&in, &s, conn_input_eof(&in, &s), take);
    fz_take(&s, 0);
    proto_release(&s);
    conn_input_release(&in);
    if (held != 0)
        abort();
    rbuf_pool_release(&pool);
    log_set_verbosity(0); /* a fuzzed `verbosity` must not flood the log */
    return 0;
}
