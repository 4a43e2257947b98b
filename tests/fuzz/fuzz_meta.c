/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the meta commands: bytes -> proto_process() on a
 * real store, replies drained, everything released, per input.
 *
 * Input structure (corpus-friendly): lines split on '\n'. A line whose first
 * byte is 0..5 becomes that meta command (mg ms md ma mn me) followed by the
 * rest of the line, so mutations stay inside the meta grammar; any other
 * line (a value, a raw command) is passed as it is. The first input byte
 * picks how the stream is cut into reads (1..64 bytes, or all at once) and
 * whether values go through the direct-read sink.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *         tests/fuzz/fuzz_meta.c build/asan-epoll/libnodelay.a -lxxhash -o fuzz_meta
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "clock.h"
#include "reply/reply.h"
#include "proto/proto.h"
#include "proto/session.h"
#include "options.h"
#include "settings.h"
#include "stats/stats.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const META_CMDS[6] = {"mg ", "ms ", "md ", "ma ", "mn ", "me "};

static struct store *fuzz_store;
static struct store_ctx *fuzz_ctx;
static struct settings fuzz_settings;
static struct options fuzz_opt; /* from fuzz_settings */

static int fuzz_setup(void)
{
    clock_setup();
    settings_defaults(&fuzz_settings);
    fuzz_settings.item_size_max = 64 * 1024;
    options_from_settings(&fuzz_settings, &fuzz_opt);
    struct store_options opt = {
        .mem_limit = 8u << 20,
        .item_size_max = 64 * 1024,
        .evictions = true,
        .cas_enabled = true,
    };
    if (store_create(&fuzz_store, &opt) != 0)
        return -1;
    fuzz_ctx = store_ctx_create(fuzz_store);
    return fuzz_ctx ? 0 : -1;
}

/* Expand the structured input into the byte stream a client would send. */
static size_t fuzz_expand(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        const uint8_t *nl = memchr(in + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - in) : n;
        size_t start = i;
        if (in[i] < 6) {
            memcpy(out + o, META_CMDS[in[i]], 3);
            o += 3;
            start++;
        }
        memcpy(out + o, in + start, end - start);
        o += end - start;
        if (nl) {
            out[o++] = '\r';
            out[o++] = '\n';
        }
        i = end + 1;
    }
    return o;
}

static void fuzz_drain(struct session *s)
{
    struct iovec iov[64];
    int n;
    while ((n = reply_iov(&s->reply, iov, 64)) > 0) {
        size_t total = 0;
        for (int i = 0; i < n; i++)
            total += iov[i].iov_len;
        reply_consume(&s->reply, total);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fuzz_store && fuzz_setup() != 0)
        abort();
    if (size < 1 || size > 64 * 1024)
        return 0;
    uint8_t mode = data[0];
    size_t step = (mode & 63) ? (size_t)(mode & 63) : SIZE_MAX;
    bool use_sink = mode & 64;

    /* every byte can grow to "mX " + byte, or "\n" to "\r\n" */
    char *stream = malloc(size * 4 + 1);
    char *buf = malloc(size * 4 + 1);
    if (!stream || !buf)
        abort();
    size_t nstream = fuzz_expand(data + 1, size - 1, stream);

    struct stats_thread stats;
    memset(&stats, 0, sizeof stats);
    struct session s;
    session_init(&s, fuzz_ctx, &stats, &fuzz_opt.proto, settings_runtime_of(&fuzz_settings));

    size_t nbuf = 0, off = 0;
    bool closed = false;
    while (off < nstream && !closed) {
        size_t n = nstream - off < step ? nstream - off : step;
        if (use_sink && s.sink_len > 0 && nbuf == 0) {
            /* a value being received: read straight into item memory */
            size_t k = n < s.sink_len ? n : s.sink_len;
            memcpy(s.sink, stream + off, k);
            off += k;
            proto_sink_filled(&s, k);
            continue;
        }
        memcpy(buf + nbuf, stream + off, n);
        nbuf += n;
        off += n;
        for (;;) {
            size_t used = 0;
            enum proto_status st = proto_process(&s, buf, nbuf, &used);
            if (used > nbuf)
                abort();
            memmove(buf, buf + used, nbuf - used);
            nbuf -= used;
            if (st == PROTO_CLOSE) {
                closed = true;
                break;
            }
            if (st != PROTO_YIELD)
                break;
        }
        fuzz_drain(&s);
    }
    fuzz_drain(&s);
    proto_release(&s);
    free(stream);
    free(buf);
    return 0;
}
