/* SPDX-License-Identifier: BSD-3-Clause */
/* base64 for binary keys: meta commands' b flag and the mgdump lines of
 * lru_crawler (text_dump.c). */
#ifndef NODELAY_PROTO_META_BASE64_H
#define NODELAY_PROTO_META_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* base64 (RFC 4648 alphabet), as memcached uses for binary keys. encode
 * pads and returns the output length (out must hold 4 * ceil(n / 3)); decode
 * follows memcached's lenient rules (see meta_base64.c) and returns the
 * decoded length, or 0 when the input cannot be decoded or the output would
 * exceed outmax. */
size_t meta_base64_encode(const unsigned char *in, size_t n, char *out);
size_t meta_base64_decode(const char *in, size_t n, unsigned char *out, size_t outmax);
/* A key that reads back as the same single token: no byte at or below space
 * (separators, CR, LF, controls) and none at or above DEL. Keys that are not
 * are printed in base64 (dumps, `me`). */
bool meta_base64_key_plain(const char *key, size_t nkey);

#endif
