/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's meta commands (mg ms md ma mn me), framed by the text protocol:
 * text_process() hands every line whose command is a meta command to
 * meta_command().
 *
 * Inside, a request goes through three steps, each testable alone:
 *   meta_parse()      text_line -> struct meta_req (pure: no store, no reply)
 *   meta_<cmd>()      runs it against the store (meta_get.c, meta_set.c, ...)
 *   meta_compose_*()  appends the reply line to the reply queue
 * What the meta*.c files share among themselves (and with their unit tests)
 * is meta_internal.h.
 */
#ifndef NODELAY_PROTO_META_H
#define NODELAY_PROTO_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_flash.h"

struct session;
struct text_line;
struct reply_queue;

/* memcached's limits: an opaque token (with its 'O') is at most 32 bytes; a
 * line has at most 20 tokens, so at most 18 flags (17 for ms). */
#define META_OPAQUE_MAX 32
#define META_TOKENS_MAX 20
#define META_FLAGS_MAX 18

/* What an ms keeps while its value arrives: what to store and what to echo. */
struct meta_state {
    bool active;
    bool quiet;
    bool base64_key;        /* echo the key base64-encoded, followed by " b" */
    bool cas_mode;          /* C given with set/replace: counts as a cas command */
    struct store_set_req req;
    uint32_t datalen;
    char key[STORE_KEY_MAX];
    uint8_t nkey;
    char opaque[META_OPAQUE_MAX]; /* the O token, 'O' included */
    uint8_t nopaque;
    char ret[META_FLAGS_MAX]; /* return flags (O k c s b) in request order */
    uint8_t nret;
};

/* True if the line's command (tok[0]) is a meta command. */
bool meta_is_command(const struct text_line *line);

/* Run one meta command. Replies go to s->reply. For ms it receives the
 * value (proto/line/value.h) and finishes when it has arrived. */
void meta_command(struct session *s, const struct text_line *line);

/* Flash (proto_flash.h): probe the key of a meta command that needs the
 * key's item (all but mn, and an ms that sets whatever was there), before
 * it runs. WAIT when a read went out. */
enum store_probe meta_flash_probe(struct session *s, const struct text_line *line);

/* Release anything held by an unfinished ms. */
void meta_state_release(struct session *s);

#endif
