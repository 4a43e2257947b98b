/* memcached's meta commands (mg ms md ma mn me), framed by the text protocol:
 * text_process() hands every line whose command is a meta command to
 * meta_command(). */
#ifndef NODELAY_PROTO_META_H
#define NODELAY_PROTO_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct session;
struct text_line;

/* What an ms keeps while its value arrives (the flags it must echo). */
struct meta_state {
    bool active;
    /* Filled in by the meta implementation. */
    unsigned char opaque[33];
    size_t nopaque;
    uint32_t ret_flags; /* which return flags were asked for */
    bool quiet;
    bool base64_key;
    char key[251];
    size_t nkey;
};

/* True if the line's command (tok[0]) is a meta command. */
bool meta_is_command(const struct text_line *line);

/* Run one meta command. Replies go to s->reply. For ms it calls
 * text_expect_value() and finishes when the value has arrived. */
void meta_command(struct session *s, const struct text_line *line);

/* Release anything held by an unfinished ms. */
void meta_state_release(struct session *s);

#endif
