/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the text protocol (classic commands and framing).
 *
 * Each input is one connection: its first byte picks the read size and a
 * few settings, the rest is fed as reads of that size the way a connection
 * feeds them (direct reads into s->sink while a value wants them; an odd
 * read size hints each read as a worker does, proto_read_hint), replies
 * are drained as they come, and the session is released at the end. The
 * store is real and shared across inputs, as a server's is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "base/log.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "stats/stats.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct store *fz_store;
static struct store_ctx *fz_ctx;
static struct stats_thread fz_stats;

static void fz_setup(void)
{
    clock_setup();
    struct store_options opt = {
        .mem_limit = 8u << 20,
        .item_size_max = 64u << 10,
        .evictions = true,
        .cas_enabled = true,
    };
    if (store_create(&fz_store, &opt) != 0)
        abort();
    fz_ctx = store_ctx_create(fz_store);
    if (!fz_ctx)
        abort();
}

static void fz_drain(struct session *s)
{
    struct iovec iov[64];
    while (reply_pending(&s->reply) > 0) {
        int n = reply_iov(&s->reply, iov, 64);
        size_t got = 0;
        for (int i = 0; i < n; i++)
            got += iov[i].iov_len;
        reply_consume(&s->reply, got);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fz_store)
        fz_setup();
    if (size == 0)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;

    struct settings set;
    settings_defaults(&set);
    set.binding_protocol = "ascii";
    SETTINGS_SET(&set, maxbytes, 8u << 20);
    set.item_size_max = 64u << 10;
    set.reqs_per_event = (mode & 0x40) ? 1 : 20;
    set.flush_enabled = !(mode & 0x80);
    size_t chunk = 1 + (mode & 0x3f);

    struct session s;
    struct options opt;
    options_from_settings(&set, &opt);
    session_init(&s, fz_ctx, &fz_stats, &opt.proto, settings_runtime_of(&set));

    char *rbuf = malloc(size + 1);
    size_t rlen = 0;
    bool closed = false;
    for (size_t off = 0; off < size && !closed;) {
        size_t n = size - off < chunk ? size - off : chunk;
        const char *in = (const char *)data + off;
        off += n;
        while (n > 0 && !closed) {
            if (s.sink_len > 0 && rlen == 0) {
                size_t k = n < s.sink_len ? n : s.sink_len;
                memcpy(s.sink, in, k);
                proto_sink_filled(&s, k);
                in += k;
                n -= k;
                continue;
            }
            memcpy(rbuf + rlen, in, n);
            rlen += n;
            n = 0;
            if (chunk & 1) {
                /* as a worker does before it runs a read: the session
                 * keeps what it found of the first line for the run */
                struct store_prefetch_run run;
                proto_read_hint(&s, rbuf, rlen, &run);
                proto_read_hint_next(&s, &run);
            }
            for (;;) {
                size_t used = 0;
                enum proto_status st = proto_process(&s, rbuf, rlen, &used);
                if (used > rlen)
                    abort();
                memmove(rbuf, rbuf + used, rlen - used);
                rlen -= used;
                fz_drain(&s);
                if (st == PROTO_CLOSE)
                    closed = true;
                if (st != PROTO_YIELD || closed)
                    break;
            }
        }
    }
    free(rbuf);
    fz_drain(&s);
    proto_release(&s);
    log_set_verbosity(0); /* a fuzzed `verbosity` must not flood the log */
    return 0;
}
