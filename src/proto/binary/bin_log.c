/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: memcached's -vv lines (proto_bin.c's, byte for byte):
 * every request header as read and every response header as written, each
 * as six rows of four bytes, and one line per command. Callers test
 * LOG_ENABLED(LOG_LEVEL_VERBOSE) first, so below -vv this costs a branch. */
#include "proto/binary/binary.h"

#include <stdio.h>

#include "base/log.h"

void bin_log_header(int fd, bool response, const unsigned char *head)
{
    char dir = response ? '>' : '<';
    /* 40 for the title, 6 rows of (prefix + 4 x " 0xNN") */
    char buf[40 + 6 * (16 + 4 * 5)];
    size_t n = (size_t)snprintf(buf, sizeof buf, "%c%d %s", dir, fd,
                                response ? "Writing bin response:" : "Read binary protocol data:");
    for (int i = 0; i < BIN_HEADER_LEN && n < sizeof buf; i++) {
        if (i % 4 == 0)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "\n%c%d%s", dir, fd,
                                  response ? "  " : "   ");
        if (n < sizeof buf)
            n += (size_t)snprintf(buf + n, sizeof buf - n, " 0x%02x", head[i]);
    }
    log_write(LOG_LEVEL_VERBOSE, "%s", buf);
}

void bin_log_command(int fd, uint8_t op, const char *key, uint16_t nkey,
                     const unsigned char *ext, size_t vlen)
{
    int k = (int)nkey;
    switch (op) {
    case BIN_OP_GET:
    case BIN_OP_GETK:
        log_write(LOG_LEVEL_VERBOSE, "<%d GET %.*s", fd, k, key);
        break;
    case BIN_OP_TOUCH:
    case BIN_OP_GAT:
    case BIN_OP_GATK:
        log_write(LOG_LEVEL_VERBOSE, "<%d TOUCH %.*s", fd, k, key);
        break;
    case BIN_OP_SET:
    case BIN_OP_ADD:
    case BIN_OP_REPLACE:
        log_write(LOG_LEVEL_VERBOSE, "<%d %s %.*s Value len is %zu", fd,
                  op == BIN_OP_SET ? "SET" : op == BIN_OP_ADD ? "ADD" : "REPLACE", k, key, vlen);
        break;
    case BIN_OP_APPEND:
    case BIN_OP_PREPEND:
        log_write(LOG_LEVEL_VERBOSE, "Value len is %zu", vlen);
        break;
    case BIN_OP_INCREMENT:
    case BIN_OP_DECREMENT:
        /* memcached says "incr" for both, delta signed, exptime as sent */
        log_write(LOG_LEVEL_VERBOSE, "incr %.*s %lld, %llu, %d", k, key,
                  (long long)bin_load64(ext), (unsigned long long)bin_load64(ext + 8),
                  (int)bin_load32(ext + 16));
        break;
    case BIN_OP_DELETE:
        log_write(LOG_LEVEL_VERBOSE, "Deleting %.*s", k, key);
        break;
    case BIN_OP_STAT:
        log_write(LOG_LEVEL_VERBOSE, "<%d STATS %.*s", fd, k, key);
        break;
    default:
        break; /* memcached prints nothing more for the others */
    }
}
