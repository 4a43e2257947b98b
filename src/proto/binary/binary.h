/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's binary protocol (and SASL, which exists only there).
 *
 * A request is a 24-byte header, then `extlen` bytes of extras, `keylen`
 * bytes of key and the rest of `bodylen` as the value. The framing is split
 * in three, so each can be tested alone:
 *  - bin_wire.c    decodes and encodes headers, checks lengths (pure);
 *  - bin_compose.c appends response packets to a reply queue;
 *  - bin_exec.c, bin_stat.c, bin_sasl.c run the opcodes against the store;
 *  - bin_process.c is the resumable loop: headers, value receiving (straight
 *    into item memory, or swallowed), the -R budget.
 * See docs/protocol-binary.md for the behaviour, byte for byte.
 */
#ifndef NODELAY_PROTO_BINARY_H
#define NODELAY_PROTO_BINARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/session.h"
#include "store/store.h"
#include "stats/stats_emit.h"

#define BIN_HEADER_LEN 24
#define BIN_MAGIC_REQ 0x80
#define BIN_MAGIC_RES 0x81
/* memcached's MAX_SASL_MECH_LEN */
#define BIN_SASL_MECH_MAX 32
/* SASL data kept for one AUTH/STEP; longer data can never match a pwdb line
 * (memcached caps user + password at 252 bytes) so it is swallowed and fails. */
#define BIN_SASL_DATA_MAX 512

enum bin_opcode {
    BIN_OP_GET = 0x00,
    BIN_OP_SET = 0x01,
    BIN_OP_ADD = 0x02,
    BIN_OP_REPLACE = 0x03,
    BIN_OP_DELETE = 0x04,
    BIN_OP_INCREMENT = 0x05,
    BIN_OP_DECREMENT = 0x06,
    BIN_OP_QUIT = 0x07,
    BIN_OP_FLUSH = 0x08,
    BIN_OP_GETQ = 0x09,
    BIN_OP_NOOP = 0x0a,
    BIN_OP_VERSION = 0x0b,
    BIN_OP_GETK = 0x0c,
    BIN_OP_GETKQ = 0x0d,
    BIN_OP_APPEND = 0x0e,
    BIN_OP_PREPEND = 0x0f,
    BIN_OP_STAT = 0x10,
    BIN_OP_SETQ = 0x11,
    BIN_OP_ADDQ = 0x12,
    BIN_OP_REPLACEQ = 0x13,
    BIN_OP_DELETEQ = 0x14,
    BIN_OP_INCREMENTQ = 0x15,
    BIN_OP_DECREMENTQ = 0x16,
    BIN_OP_QUITQ = 0x17,
    BIN_OP_FLUSHQ = 0x18,
    BIN_OP_APPENDQ = 0x19,
    BIN_OP_PREPENDQ = 0x1a,
    BIN_OP_VERBOSITY = 0x1b, /* defined by the protocol; memcached answers UNKNOWN_COMMAND */
    BIN_OP_TOUCH = 0x1c,
    BIN_OP_GAT = 0x1d,
    BIN_OP_GATQ = 0x1e,
    BIN_OP_SASL_LIST_MECHS = 0x20,
    BIN_OP_SASL_AUTH = 0x21,
    BIN_OP_SASL_STEP = 0x22,
    BIN_OP_GATK = 0x23,
    BIN_OP_GATKQ = 0x24,
};

enum bin_status {
    BIN_STATUS_OK = 0x00,
    BIN_STATUS_KEY_ENOENT = 0x01,
    BIN_STATUS_KEY_EEXISTS = 0x02,
    BIN_STATUS_E2BIG = 0x03,
    BIN_STATUS_EINVAL = 0x04,
    BIN_STATUS_NOT_STORED = 0x05,
    BIN_STATUS_DELTA_BADVAL = 0x06,
    BIN_STATUS_AUTH_ERROR = 0x20,
    BIN_STATUS_AUTH_CONTINUE = 0x21,
    BIN_STATUS_UNKNOWN_COMMAND = 0x81,
    BIN_STATUS_ENOMEM = 0x82,
};

/* A request header in host byte order. `opaque` is kept as sent: it is only
 * ever echoed back. */
struct bin_header {
    uint8_t magic;
    uint8_t opcode;
    uint16_t keylen;
    uint8_t extlen;
    uint8_t datatype;
    uint16_t vbucket;
    uint32_t bodylen;
    uint32_t opaque;
    uint64_t cas;
};

/* ---- bin_wire.c: pure functions over bytes ---- */

/* Decode the 24 bytes at p. */
void bin_header_decode(const unsigned char *p, struct bin_header *h);

/* What one request is, after the lengths are checked. */
enum bin_kind {
    BIN_KIND_INVALID,      /* lengths wrong for the opcode: EINVAL, close */
    BIN_KIND_UNKNOWN,      /* not an opcode memcached serves: UNKNOWN_COMMAND */
    BIN_KIND_GET,          /* GET GETQ GETK GETKQ */
    BIN_KIND_TOUCH,        /* TOUCH GAT GATQ GATK GATKQ */
    BIN_KIND_UPDATE,       /* SET ADD REPLACE (+Q): a value follows */
    BIN_KIND_APPEND,       /* APPEND PREPEND (+Q): a value follows */
    BIN_KIND_DELETE,
    BIN_KIND_ARITH,        /* INCREMENT DECREMENT (+Q) */
    BIN_KIND_FLUSH,
    BIN_KIND_NOOP,
    BIN_KIND_VERSION,
    BIN_KIND_QUIT,
    BIN_KIND_STAT,
    BIN_KIND_SASL_LIST,
    BIN_KIND_SASL_AUTH,    /* AUTH and STEP: data follows */
};

/* The opcode with its quiet flag taken off (GETQ -> GET, ...), as memcached
 * maps them before dispatch; *quiet says whether it was a quiet variant. */
uint8_t bin_opcode_base(uint8_t opcode, bool *quiet);

/* True when keylen + extlen do not fit in bodylen: memcached answers
 * UNKNOWN_COMMAND and closes, before anything else is looked at. */
bool bin_lengths_inconsistent(const struct bin_header *h);

/* Classify a request whose lengths are consistent and whose key is at most
 * STORE_KEY_MAX: the per-opcode length rules memcached applies. */
enum bin_kind bin_classify(const struct bin_header *h);

/* Bytes of value after the extras and key (only meaningful for UPDATE,
 * APPEND and SASL_AUTH). Never underflows: call after the checks above. */
static inline size_t bin_value_len(const struct bin_header *h)
{
    return (size_t)h->bodylen - h->keylen - h->extlen;
}

/* Everything a response header carries besides the lengths. */
struct bin_resp {
    uint8_t opcode;
    uint16_t status;
    uint32_t opaque;
    uint64_t cas;
};

/* Encode a response header into out[24]. */
void bin_header_encode(unsigned char *out, const struct bin_resp *r, uint16_t keylen,
                       uint8_t extlen, uint32_t bodylen);

/* Big-endian loads and stores, unaligned. */
uint32_t bin_load32(const unsigned char *p);
uint64_t bin_load64(const unsigned char *p);
void bin_store16(unsigned char *p, uint16_t v);
void bin_store32(unsigned char *p, uint32_t v);
void bin_store64(unsigned char *p, uint64_t v);

/* ---- bin_compose.c: responses appended to a reply queue ---- */

struct reply_queue;

/* Append one response: header, then extras, key and body copied. Returns 0 or
 * -1 (out of memory). */
int bin_compose(struct reply_queue *q, const struct bin_resp *r, const void *ext,
                uint8_t extlen, const void *key, uint16_t keylen, const void *body,
                uint32_t bodylen);

/* bin_stat.c: the group a STAT key asks for, as memcached's binary STAT
 * reads it: "reset" and "settings" by prefix, "detail on|off|dump", and the
 * groups its get_stats() knows (items, slabs, sizes; nodelay is ours). Others,
 * including the text-only conns and cachedump, are NULL: KEY_ENOENT. */
const char *bin_stat_group(const char *key, size_t n);

/* bin_stat.c: an emitter (stats/stats_emit.h) that writes each stat as one
 * STAT packet (key = name, body = value) answering r. */
struct bin_stat_emitter {
    struct reply_queue *out;
    const struct bin_resp *r;
};
struct stats_emit bin_stat_emitter(struct bin_stat_emitter *be);

/* memcached's text for an error status ("Not found", ...). */
const char *bin_status_text(uint16_t status);

/* An error response with memcached's text as its body (cas 0). */
int bin_compose_error(struct reply_queue *q, uint8_t opcode, uint32_t opaque,
                      uint16_t status);

struct session;
/* The session's replies: bin_compose / bin_compose_error into s->reply, and
 * at -vv the header logged as memcached's add_bin_header does (and an
 * error's text, as its write_bin_error). STAT packets use bin_compose: memcached
 * logs none of them. */
int bin_reply(struct session *s, const struct bin_resp *r, const void *ext, uint8_t extlen,
              const void *key, uint16_t keylen, const void *body, uint32_t bodylen);
int bin_reply_error(struct session *s, uint8_t opcode, uint32_t opaque, uint16_t status);

/* ---- bin_log.c: memcached's -vv lines (call under LOG_ENABLED) ---- */

/* A request header as read (response false) or a response header as
 * written: head is the 24 bytes on the wire. */
void bin_log_header(int fd, bool response, const unsigned char *head);
/* The line memcached prints for the command (op without its quiet bit;
 * ext: the request's extras; vlen: its value's length). */
void bin_log_command(int fd, uint8_t op, const char *key, uint16_t nkey,
                     const unsigned char *ext, size_t vlen);

/* ---- bin_process.c: the protocol as the session sees it ---- */

/* What the value now arriving is for. */
enum bin_recv {
    BIN_RECV_NONE,
    BIN_RECV_STORE,   /* into st->res, then committed */
    BIN_RECV_SASL,    /* into st->sasl_data, then checked */
    BIN_RECV_SWALLOW, /* discarded */
};

/* State kept between reads. Zero-initialised means idle and, under -S, not
 * authenticated. */
struct bin_state {
    enum bin_recv recv;
    size_t need;   /* value bytes expected */
    size_t filled; /* value bytes received so far */
    size_t avail;  /* bytes of this read after the request's key: a value not
                      all here is an upload (store.h) */
    /* The request waiting for its value. */
    struct bin_header hdr;
    bool quiet;
    bool failed; /* a reply could not be composed (no memory): close */
    uint8_t timing_family;  /* its service time, when /metrics is on: the */
    uint64_t timing_start;  /* family and the start (0: not timed) */
    struct store_reservation res;
    struct store_set_req set_req;
    /* SASL: a PLAIN exchange in progress, and its outcome. */
    bool sasl_authed;   /* only set by a successful AUTH/STEP, cleared by every attempt */
    bool sasl_started;  /* AUTH answered AUTH_CONTINUE; STEP may follow */
    bool sasl_overflow; /* the data was longer than BIN_SASL_DATA_MAX */
    char sasl_mech[BIN_SASL_MECH_MAX];
    uint8_t sasl_nmech;
    char *sasl_data; /* BIN_SASL_DATA_MAX bytes, allocated on first use */
};

_Static_assert(sizeof(struct bin_state) <= SESSION_STATE_BYTES,
               "bin_state outgrew the session's storage: raise SESSION_STATE_BYTES");

/* The binary protocol's state in session s (session.h's protocol storage). */
static inline struct bin_state *bin_of(struct session *s)
{
    return (struct bin_state *)(void *)s->state.bytes;
}
static inline const struct bin_state *bin_of_const(const struct session *s)
{
    return (const struct bin_state *)(const void *)s->state.bytes;
}

struct session;
enum proto_status;

enum proto_status bin_process(struct session *s, const char *buf, size_t len,
                              size_t *consumed);

/* The connection wrote n bytes at s->sink (proto_sink_filled for a binary
 * session must call this). */
void bin_sink_filled(struct session *s, size_t n);

/* Abort any value being received and free what the state holds. */
void bin_state_release(struct session *s);
/* Now and then while idle: free a value being received that was cut off
 * to make room for others (store_upload_alive). */
void bin_tick(struct session *s);

/* ---- internal to bin_*.c ---- */

/* One request whose header, extras and key are buffered. Returns PROTO_OK or
 * PROTO_CLOSE; may leave a value to receive (bin_of(s)->recv). */
enum proto_status bin_exec(struct session *s, const struct bin_header *h, enum bin_kind kind,
                           const unsigned char *ext, const char *key);
/* A value has fully arrived into bin_of(s)->res / bin_of(s)->sasl_data. */
void bin_update_complete(struct session *s);
void bin_sasl_complete(struct session *s);
enum proto_status bin_sasl_list(struct session *s, const struct bin_header *h);
enum proto_status bin_sasl_start(struct session *s, const struct bin_header *h,
                                 const char *key);
enum proto_status bin_stat(struct session *s, const struct bin_header *h, const char *key);
/* Expect the next n value bytes to be discarded. Inline here, beneath the
 * request loop (bin_process.c) and the commands that call it (bin_exec.c,
 * bin_sasl.c), which the loop calls. */
static inline void bin_swallow(struct session *s, size_t n)
{
    struct bin_state *st = bin_of(s);
    st->recv = BIN_RECV_SWALLOW;
    st->need = n;
    st->filled = 0;
}

#endif
