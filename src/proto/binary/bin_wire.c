/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: the wire format (header decoding and encoding) and
 * memcached's length rules.
 *
 * Every check here runs on the header alone, in 64-bit arithmetic, before any
 * length is used to index a buffer: memcached's CVE-2011-4971,
 * CVE-2016-8704/8705/8706 and CVE-2020-10931 all came from lengths used before
 * they were checked against each other. */
#include "proto/binary/binary.h"

#include <string.h>

uint32_t bin_load32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t bin_load64(const unsigned char *p)
{
    return (uint64_t)bin_load32(p) << 32 | bin_load32(p + 4);
}

void bin_store16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

void bin_store32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

void bin_store64(unsigned char *p, uint64_t v)
{
    bin_store32(p, (uint32_t)(v >> 32));
    bin_store32(p + 4, (uint32_t)v);
}

void bin_header_decode(const unsigned char *p, struct bin_header *h)
{
    h->magic = p[0];
    h->opcode = p[1];
    h->keylen = (uint16_t)(p[2] << 8 | p[3]);
    h->extlen = p[4];
    h->datatype = p[5];
    h->vbucket = (uint16_t)(p[6] << 8 | p[7]);
    h->bodylen = bin_load32(p + 8);
    memcpy(&h->opaque, p + 12, 4); /* echoed as sent */
    h->cas = bin_load64(p + 16);
}

void bin_header_encode(unsigned char *out, const struct bin_resp *r, uint16_t keylen,
                       uint8_t extlen, uint32_t bodylen)
{
    out[0] = BIN_MAGIC_RES;
    out[1] = r->opcode;
    bin_store16(out + 2, keylen);
    out[4] = extlen;
    out[5] = 0; /* datatype: raw bytes */
    bin_store16(out + 6, r->status);
    bin_store32(out + 8, bodylen);
    memcpy(out + 12, &r->opaque, 4);
    bin_store64(out + 16, r->cas);
}

uint8_t bin_opcode_base(uint8_t opcode, bool *quiet)
{
    *quiet = true;
    switch (opcode) {
    case BIN_OP_GETQ: return BIN_OP_GET;
    case BIN_OP_GETKQ: return BIN_OP_GETK;
    case BIN_OP_SETQ: return BIN_OP_SET;
    case BIN_OP_ADDQ: return BIN_OP_ADD;
    case BIN_OP_REPLACEQ: return BIN_OP_REPLACE;
    case BIN_OP_DELETEQ: return BIN_OP_DELETE;
    case BIN_OP_INCREMENTQ: return BIN_OP_INCREMENT;
    case BIN_OP_DECREMENTQ: return BIN_OP_DECREMENT;
    case BIN_OP_QUITQ: return BIN_OP_QUIT;
    case BIN_OP_FLUSHQ: return BIN_OP_FLUSH;
    case BIN_OP_APPENDQ: return BIN_OP_APPEND;
    case BIN_OP_PREPENDQ: return BIN_OP_PREPEND;
    case BIN_OP_GATQ: return BIN_OP_GAT;
    case BIN_OP_GATKQ: return BIN_OP_GATK;
    default:
        *quiet = false;
        return opcode;
    }
}

bool bin_lengths_inconsistent(const struct bin_header *h)
{
    return (uint64_t)h->keylen + h->extlen > h->bodylen;
}

enum bin_kind bin_classify(const struct bin_header *h)
{
    bool quiet;
    uint64_t key = h->keylen, ext = h->extlen, body = h->bodylen;
    bool nobody = key == 0 && ext == 0 && body == 0;

    switch (bin_opcode_base(h->opcode, &quiet)) {
    case BIN_OP_VERSION:
        return nobody ? BIN_KIND_VERSION : BIN_KIND_INVALID;
    case BIN_OP_NOOP:
        return nobody ? BIN_KIND_NOOP : BIN_KIND_INVALID;
    case BIN_OP_QUIT:
        return nobody ? BIN_KIND_QUIT : BIN_KIND_INVALID;
    case BIN_OP_SASL_LIST_MECHS:
        return nobody ? BIN_KIND_SASL_LIST : BIN_KIND_INVALID;
    case BIN_OP_FLUSH:
        return key == 0 && body == ext && (ext == 0 || ext == 4) ? BIN_KIND_FLUSH
                                                                 : BIN_KIND_INVALID;
    case BIN_OP_SET:
    case BIN_OP_ADD:
    case BIN_OP_REPLACE:
        return ext == 8 && key != 0 && body >= key + 8 ? BIN_KIND_UPDATE : BIN_KIND_INVALID;
    case BIN_OP_GET:
    case BIN_OP_GETK:
        return ext == 0 && key > 0 && body == key ? BIN_KIND_GET : BIN_KIND_INVALID;
    case BIN_OP_DELETE:
        return ext == 0 && key > 0 && body == key ? BIN_KIND_DELETE : BIN_KIND_INVALID;
    case BIN_OP_INCREMENT:
    case BIN_OP_DECREMENT:
        return ext == 20 && key > 0 && body == key + 20 ? BIN_KIND_ARITH : BIN_KIND_INVALID;
    case BIN_OP_APPEND:
    case BIN_OP_PREPEND:
        return ext == 0 && key > 0 ? BIN_KIND_APPEND : BIN_KIND_INVALID;
    case BIN_OP_STAT:
        return ext == 0 ? BIN_KIND_STAT : BIN_KIND_INVALID;
    case BIN_OP_SASL_AUTH:
    case BIN_OP_SASL_STEP:
        return ext == 0 && key != 0 ? BIN_KIND_SASL_AUTH : BIN_KIND_INVALID;
    case BIN_OP_TOUCH:
    case BIN_OP_GAT:
    case BIN_OP_GATK:
        return ext == 4 && key != 0 ? BIN_KIND_TOUCH : BIN_KIND_INVALID;
    default:
        return BIN_KIND_UNKNOWN;
    }
}
