/* SPDX-License-Identifier: BSD-3-Clause */
/* What the text protocol (classic and meta commands) keeps in a session
 * between reads, and where: the session's protocol storage, which only
 * the protocol's own files see as this type (session.h). A header alone,
 * so meta and the classic commands both reach it without calling each
 * other. */
#ifndef NODELAY_PROTO_TEXT_STATE_H
#define NODELAY_PROTO_TEXT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/line/value.h"
#include "proto/meta/meta.h"
#include "proto/session.h"
#include "store/store.h"

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
    uint64_t cursor;                /* the RAM walk's, then UINT64_MAX */
    struct store_flash_scan *scan;  /* then the flash tier's, or NULL */
    bool mgdump, all;
    bool classes[64];
};

/* What text_read_hint found of a read's first request line, kept for the
 * text_process that runs it so that the line is split and its key hashed
 * once. Offsets from the line's first byte: the process may be given the
 * same bytes elsewhere (io_uring's receive buffer is copied). It describes
 * the bytes at the first unconsumed byte of the input, so text_process
 * drops it once it consumes any. Lines of more tokens get none. */
#define TEXT_HINT_TOKENS 8
struct text_hint {
    uint32_t nl;   /* the line's '\n' */
    uint32_t data; /* a storage command's value bytes after it (text_batch_key) */
    uint8_t ntok;  /* 0: no hint */
    uint8_t key;   /* the token the batch looks up (hv its hash), 0: none */
    struct {
        uint16_t off, len;
    } tok[TEXT_HINT_TOKENS];
    uint64_t hv;
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
    bool after_others;           /* requests of this read came before this one
                                    since the last mn: memcached has not sent
                                    their replies (noreply or not), so watch
                                    and dumps refuse to start */
    uint64_t timing_start;       /* metrics: a command waiting for its value, since */
    unsigned timing_family;      /* ... and its family (stats/stats_hist.h) */
    bool closing;                /* quit, HTTP guard, shutdown, out of memory */
    char *auth_buf;              /* -Y: the "user pass" token being received */
    struct text_cont cont;       /* a paused multiget or dump */
    struct text_hint hint;       /* the next line, as proto_read_hint split it */
};

_Static_assert(sizeof(struct text_state) <= SESSION_STATE_BYTES,
               "text_state outgrew the session's storage: raise SESSION_STATE_BYTES");

/* The text protocol's state in session s: the same offset from s as a
 * member's, no pointer to follow. */
static inline struct text_state *text_of(struct session *s)
{
    return (struct text_state *)(void *)s->state.bytes;
}
static inline const struct text_state *text_of_const(const struct session *s)
{
    return (const struct text_state *)(const void *)s->state.bytes;
}

#endif
