/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: response packets, appended to a reply queue. */
#include "proto/binary/binary.h"

#include <string.h>

#include "base/log.h"
#include "proto/session.h"
#include "reply/reply.h"

/* Each part goes in with reply_copy, which either appends all of it or
 * fails cleanly (reply_reserve + reply_commit could drop bytes on a failed
 * allocation); a failure rolls the whole packet back, so the queue never
 * holds half a response. Copies into the same block share one iovec. */
int bin_compose(struct reply_queue *q, const struct bin_resp *r, const void *ext,
                uint8_t extlen, const void *key, uint16_t keylen, const void *body,
                uint32_t bodylen)
{
    unsigned char head[BIN_HEADER_LEN];
    bin_header_encode(head, r, keylen, extlen, (uint32_t)extlen + keylen + bodylen);
    struct reply_mark mark;
    reply_get_mark(q, &mark);
    if (reply_copy(q, head, sizeof head) != 0 || reply_copy(q, ext, extlen) != 0 ||
        reply_copy(q, key, keylen) != 0 || reply_copy(q, body, bodylen) != 0) {
        reply_rollback(q, &mark);
        return -1;
    }
    return 0;
}

const char *bin_status_text(uint16_t status)
{
    switch (status) {
    case BIN_STATUS_ENOMEM: return "Out of memory";
    case BIN_STATUS_UNKNOWN_COMMAND: return "Unknown command";
    case BIN_STATUS_KEY_ENOENT: return "Not found";
    case BIN_STATUS_EINVAL: return "Invalid arguments";
    case BIN_STATUS_KEY_EEXISTS: return "Data exists for key.";
    case BIN_STATUS_E2BIG: return "Too large.";
    case BIN_STATUS_DELTA_BADVAL: return "Non-numeric server-side value for incr or decr";
    case BIN_STATUS_NOT_STORED: return "Not stored.";
    case BIN_STATUS_AUTH_ERROR: return "Auth failure.";
    default: return "UNHANDLED ERROR";
    }
}

int bin_compose_error(struct reply_queue *q, uint8_t opcode, uint32_t opaque,
                      uint16_t status)
{
    struct bin_resp r = {.opcode = opcode, .status = status, .opaque = opaque, .cas = 0};
    const char *text = bin_status_text(status);
    return bin_compose(q, &r, NULL, 0, NULL, 0, text, (uint32_t)strlen(text));
}

int bin_reply(struct session *s, const struct bin_resp *r, const void *ext, uint8_t extlen,
              const void *key, uint16_t keylen, const void *body, uint32_t bodylen)
{
    if (LOG_ENABLED(LOG_LEVEL_VERBOSE)) {
        unsigned char head[BIN_HEADER_LEN];
        bin_header_encode(head, r, keylen, extlen, (uint32_t)extlen + keylen + bodylen);
        bin_log_header(s->cfd, true, head);
    }
    return bin_compose(&s->reply, r, ext, extlen, key, keylen, body, bodylen);
}

int bin_reply_error(struct session *s, uint8_t opcode, uint32_t opaque, uint16_t status)
{
    const char *text = bin_status_text(status);
    log_verbose(">%d Writing an error: %s", s->cfd, text);
    struct bin_resp r = {.opcode = opcode, .status = status, .opaque = opaque, .cas = 0};
    return bin_reply(s, &r, NULL, 0, NULL, 0, text, (uint32_t)strlen(text));
}
