/* Binary protocol: response packets, appended to a reply queue. */
#include "proto/binary.h"

#include <string.h>

#include "net/reply.h"

int bin_compose(struct reply_queue *q, const struct bin_resp *r, const void *ext,
                uint8_t extlen, const void *key, uint16_t keylen, const void *body,
                uint32_t bodylen)
{
    size_t total = (size_t)BIN_HEADER_LEN + extlen + keylen + bodylen;
    uint32_t wire_body = (uint32_t)extlen + keylen + bodylen;
    unsigned char *p = (unsigned char *)reply_reserve(q, total);
    if (!p)
        return -1;
    bin_header_encode(p, r, keylen, extlen, wire_body);
    size_t off = BIN_HEADER_LEN;
    if (extlen) {
        memcpy(p + off, ext, extlen);
        off += extlen;
    }
    if (keylen) {
        memcpy(p + off, key, keylen);
        off += keylen;
    }
    if (bodylen) {
        memcpy(p + off, body, bodylen);
        off += bodylen;
    }
    reply_commit(q, off);
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
