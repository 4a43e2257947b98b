/* SPDX-License-Identifier: BSD-3-Clause */
/* Requests and replies of the three memcached protocols, as the load generator
 * uses them: encode into a buffer, and recognise one complete reply at the
 * front of a buffer (or say that more bytes are needed). No sockets here. */
#ifndef LG_WIRE_H
#define LG_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define LG_MAX_MULTI 128

enum lg_proto { LG_TEXT, LG_META, LG_BINARY, LG_PROTO_MIXED };
enum lg_op { LG_OP_GET, LG_OP_SET, LG_OP_DELETE };

enum lg_status {
    LG_ST_OK,        /* stored, deleted, or a get answered (hits in the reply) */
    LG_ST_MISS,      /* delete of a missing key */
    LG_ST_NOT_STORED,
    LG_ST_SERVER_ERROR, /* e.g. out of memory: allowed, counted */
    LG_ST_ERROR,     /* ERROR / CLIENT_ERROR / unexpected binary status */
};

struct lg_buf {
    char *p;
    size_t len, cap;
};

int lg_buf_reserve(struct lg_buf *b, size_t extra);
void lg_buf_release(struct lg_buf *b);

struct lg_hit {
    const char *key; /* NULL when the reply does not carry the key */
    size_t keylen;
    const char *data;
    size_t len;
    int pos; /* which key of the request, when known from position; else -1 */
};

struct lg_reply {
    enum lg_status status;
    unsigned nhits;
    struct lg_hit hits[LG_MAX_MULTI];
};

/* Appends a get of nkeys keys (each LG_KEY_LEN bytes, back to back). */
int lg_wire_get(struct lg_buf *b, enum lg_proto p, const char *keys, unsigned nkeys);
/* Appends a set; the value's bytes are written by the caller into *value_at. */
int lg_wire_set(struct lg_buf *b, enum lg_proto p, const char *key, uint32_t vlen,
                uint32_t ttl, char **value_at);
int lg_wire_delete(struct lg_buf *b, enum lg_proto p, const char *key);

/* Parses the reply to one request at the front of buf. Returns the bytes it
 * spans (> 0), 0 if incomplete, -1 if the bytes are not a valid reply. */
long lg_wire_parse(enum lg_proto p, enum lg_op op, unsigned nkeys, const char *buf,
                   size_t len, struct lg_reply *out);

#endif
