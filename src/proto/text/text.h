/* SPDX-License-Identifier: BSD-3-Clause */
/* The text protocol: the framing of a read into lines, the classic
 * commands, and the hand-off of meta commands to proto/meta/. The line
 * tokenizer and the value receiver both use are in proto/line/. */
#ifndef NODELAY_PROTO_TEXT_H
#define NODELAY_PROTO_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/line/line.h"
#include "proto/line/value.h"
#include "proto/meta/meta.h"
#include "store/store.h"

struct session;
enum proto_status;

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
    struct text_value value;     /* a value being received (proto/line/value.h) */
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

enum proto_status text_process(struct session *s, const char *buf, size_t len,
                               size_t *consumed);
/* The connection read n bytes straight into s->sink (proto_sink_filled). */
void text_sink_filled(struct session *s, size_t n);
/* Now and then while idle: free a value being received that was cut off
 * to make room for others (store_upload_alive). */
void text_tick(struct session *s);
/* Abort a value being received (its reservation included: meta_state_release
 * must not abort s->text.value.res again), release meta's and auth's state. */
void text_state_release(struct session *s);

/* -Y ascii authentication: load (or, on SIGHUP, reload) the file of
 * "user:pass" lines. Safe to call while workers run; not from a signal
 * handler. Returns 0, or -1 (errno set) when the file cannot be read, in
 * which case the previous list stays in force. */
int text_auth_load(const char *path);
/* Free the loaded list (at exit). */
void text_auth_unload(void);

#endif
