/* The text protocol: line framing shared by the classic commands and the
 * meta commands (proto/meta.h), the classic commands themselves, and the
 * receiving of a value into reserved item memory. */
#ifndef NODELAY_PROTO_TEXT_H
#define NODELAY_PROTO_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/meta.h"
#include "store/store.h"

/* memcached splits a command line on spaces into at most this many tokens
 * (the last one holding the unsplit rest when there are more). */
#define TEXT_MAX_TOKENS 24

struct text_token {
    const char *s;
    size_t len;
};

/* One request line, without its "\r\n" / "\n". */
struct text_line {
    const char *raw;
    size_t len;
    struct text_token tok[TEXT_MAX_TOKENS];
    size_t ntok;
};

struct session;
enum proto_status;

/* Called once a value and the two bytes after it have arrived: chunk_ok is
 * false when those two bytes were not "\r\n" (memcached's "bad data chunk").
 * The reservation, if any, is in s->text.res and is the callee's to commit or
 * abort. */
typedef void (*text_value_done_fn)(struct session *s, bool chunk_ok);

/* State kept between reads: a value being received or swallowed. */
struct text_state {
    bool receiving;              /* a value (+ "\r\n") is arriving */
    bool have_res;               /* into `res`; otherwise it is swallowed */
    struct store_reservation res;
    size_t need;                 /* value bytes still to come */
    size_t filled;               /* value bytes received so far */
    char term[2];                /* the two bytes after the value */
    size_t term_got;
    text_value_done_fn done;
    /* the classic set/cas command waiting for its value */
    struct store_set_req set_req;
    bool set_noreply;
    struct meta_state meta;      /* the meta ms command waiting for its value */
};

/* Receive the next nvalue bytes and the "\r\n" after them for the command
 * being executed: into s->text.res when have_res (the caller reserved it),
 * else they are discarded. done() runs when all have arrived. */
void text_expect_value(struct session *s, size_t nvalue, bool have_res, text_value_done_fn done);

enum proto_status text_process(struct session *s, const char *buf, size_t len,
                               size_t *consumed);
void text_state_release(struct session *s);

#endif
