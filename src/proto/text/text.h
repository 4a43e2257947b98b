/* SPDX-License-Identifier: BSD-3-Clause */
/* The text protocol: line framing shared by the classic commands and the
 * meta commands (proto/meta.h), the classic commands themselves, and the
 * receiving of a value into reserved item memory. */
#ifndef NODELAY_PROTO_TEXT_H
#define NODELAY_PROTO_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/meta/meta.h"
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
    /* A read's batch hashed this token's key (hkey, a token's s) for its
     * prefetch: its hash, so that its lookup does not hash it again. NULL
     * (text_tokenize) when not. */
    const char *hkey;
    uint64_t hv;
};

struct session;
enum proto_status;

/* Called once a value and the two bytes after it have arrived: chunk_ok is
 * false when those two bytes were not "\r\n" (memcached's "bad data chunk").
 * The reservation, if any, is in s->text.res and is the callee's to commit or
 * abort. */
typedef void (*text_value_done_fn)(struct session *s, bool chunk_ok);

/* A multiget or dump paused while its reply drains (PROTO_PAUSE). Its line
 * stays unconsumed at the head of the connection's buffer, so the keys are
 * not copied; the next call finds the line again and resumes here. */
enum text_cont_kind { TEXT_CONT_NONE, TEXT_CONT_GET, TEXT_CONT_DUMP };
struct text_cont {
    enum text_cont_kind kind;
    /* get/gets/gat/gats */
    size_t tok;        /* the next key's token, while tokens are whole keys */
    size_t off;        /* then where in the line's unsplit rest to go on */
    bool want_cas, touch;
    bool crlf;         /* a value was sent: "\r\n" goes before what follows */
    bool rest_ok;      /* the rest of the line has no over-long key */
    bool no_pause;     /* it has one: run to the end (it discards the reply) */
    rel_time_t exptime; /* for gat */
    /* lru_crawler metadump / mgdump */
    uint64_t cursor;
    bool mgdump, all;
    bool classes[64];
};

/* State kept between reads: a value being received or swallowed. */
struct text_state {
    bool receiving;              /* a value (+ "\r\n") is arriving */
    bool have_res;               /* into `res`; otherwise it is swallowed */
    char *dest;                  /* where the value goes (res.value, the auth
                                    buffer) or NULL to swallow it */
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
    /* the command being executed */
    size_t avail;                /* bytes of this read after its line: a value
                                    not all here is an upload (store.h) */
    bool noreply;                /* classic `noreply`: suppress every reply */
    bool reply_unlogged;         /* -vv: memcached does not log this command's reply */
    uint64_t timing_start;       /* metrics: a command waiting for its value, since */
    unsigned timing_family;      /* ... and its family (stats/stats_hist.h) */
    bool closing;                /* quit, HTTP guard, shutdown, out of memory */
    char *auth_buf;              /* -Y: the "user pass" token being received */
    struct text_cont cont;       /* a paused multiget or dump */
};

/* Receive the next nvalue bytes and the "\r\n" after them for the command
 * being executed: into s->text.res when have_res (the caller reserved it),
 * else they are discarded. done() runs when all have arrived. */
void text_expect_value(struct session *s, size_t nvalue, bool have_res, text_value_done_fn done);

enum proto_status text_process(struct session *s, const char *buf, size_t len,
                               size_t *consumed);
/* The connection read n bytes straight into s->sink (proto_sink_filled). */
void text_sink_filled(struct session *s, size_t n);
/* Now and then while idle: free a value being received that was cut off
 * to make room for others (store_upload_alive). */
void text_tick(struct session *s);
/* Abort a value being received (its reservation included: meta_state_release
 * must not abort s->text.res again), release meta's and auth's state. */
void text_state_release(struct session *s);

/* -Y ascii authentication: load (or, on SIGHUP, reload) the file of
 * "user:pass" lines. Safe to call while workers run; not from a signal
 * handler. Returns 0, or -1 (errno set) when the file cannot be read, in
 * which case the previous list stays in force. */
int text_auth_load(const char *path);
/* Free the loaded list (at exit). */
void text_auth_unload(void);

#endif
