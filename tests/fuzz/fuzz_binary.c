/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the binary protocol, through proto_process.
 *
 * Self-contained: a small store, one session forced to binary, the input fed
 * in input-derived chunk sizes (so requests and values split at every
 * boundary, and values arrive both through the buffer and through the sink),
 * replies drained as a connection would, everything released.
 *
 * An input that starts with 0x80 is plain traffic (so recorded client
 * streams make good seeds). Otherwise the first byte picks options (bit 0
 * turns -S on, with a known user "user:pass"; bit 1 -C; bit 2 -F) and the
 * second seeds the chunk sizes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "reply/reply.h"
#include "proto/proto.h"
#include "proto/sasl.h"
#include "proto/session.h"
#include "options.h"
#include "settings.h"
#include "stats/stats.h"
#include "store/store.h"

static struct store *fuzz_store;
static struct store_ctx *fuzz_ctx;

static void fuzz_setup(void)
{
    clock_setup();
    struct store_options opt = {
        .mem_limit = 4u << 20,
        .item_size_max = 64u << 10,
        .evictions = true,
        .cas_enabled = true,
    };
    if (store_create(&fuzz_store, &opt) != 0)
        abort();
    fuzz_ctx = store_ctx_create(fuzz_store);
    if (!fuzz_ctx)
        abort();
    static const char pwdb[] = "user:pass\n";
    if (sasl_load_text(pwdb, sizeof pwdb - 1) != 0)
        abort();
}

static void fuzz_drain(struct session *s)
{
    struct iovec iov[64];
    while (reply_pending(&s->reply) > 0) {
        int n = reply_iov(&s->reply, iov, 64);
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            /* Touch every byte, as writev would: catches dangling references. */
            volatile unsigned char sink = 0;
            const unsigned char *p = iov[i].iov_base;
            for (size_t j = 0; j < iov[i].iov_len; j++)
                sink ^= p[j];
            (void)sink;
            total += iov[i].iov_len;
        }
        reply_consume(&s->reply, total);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fuzz_store)
        fuzz_setup();
    uint8_t opts = 0;
    uint32_t seed = (uint32_t)size;
    if (size > 0 && data[0] != 0x80) {
        if (size < 2)
            return 0;
        opts = data[0];
        seed = data[1];
        data += 2;
        size -= 2;
    }

    struct settings settings;
    settings_defaults(&settings);
    settings.binding_protocol = "binary";
    settings.item_size_max = 64u << 10;
    settings.sasl = opts & 1;
    settings.cas_enabled = !(opts & 2);
    settings.flush_enabled = !(opts & 4);
    struct stats_thread stats;
    memset(&stats, 0, sizeof stats);
    struct session s;
    struct options opt;
    options_from_settings(&settings, &opt);
    session_init(&s, fuzz_ctx, &stats, &opt.proto, settings_runtime_of(&settings));

    /* A connection's read buffer: unconsumed bytes are passed again. */
    char *buf = malloc(size + 1);
    if (!buf)
        abort();
    size_t have = 0, off = 0;
    while (off < size || have > 0) {
        seed = seed * 1103515245u + 12345u;
        size_t chunk = 1 + (seed >> 16) % 97;
        if (chunk > size - off)
            chunk = size - off;
        if (s.sink_len > 0 && chunk > 0) {
            /* Read straight into item memory, as the connection does. */
            size_t n = chunk < s.sink_len ? chunk : s.sink_len;
            memcpy(s.sink, data + off, n);
            off += n;
            proto_sink_filled(&s, n);
            fuzz_drain(&s);
            continue;
        }
        memcpy(buf + have, data + off, chunk);
        have += chunk;
        off += chunk;
        size_t consumed = 0;
        enum proto_status st = proto_process(&s, buf, have, &consumed);
        if (consumed > have)
            abort();
        memmove(buf, buf + consumed, have - consumed);
        have -= consumed;
        fuzz_drain(&s);
        if (st == PROTO_CLOSE)
            break;
        if (st == PROTO_OK && chunk == 0)
            break; /* no more input and nothing more to do */
    }
    free(buf);
    proto_release(&s);
    return 0;
}
