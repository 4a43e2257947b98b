/* SPDX-License-Identifier: BSD-3-Clause */
/* ms (meta set): reserve, let the text framing receive the value, then
 * commit and reply. What the reply needs is kept in text_of(s)->meta meanwhile. */
#include <stddef.h>
#include <string.h>

#include "reply/reply.h"
#include "proto/meta/meta_internal.h"
#include "proto/session.h"
#include "proto/text/text_state.h"
#include "stats/stats.h"
#include "proto/watch_note.h"
#include "store/store_compat.h"

static enum store_mode meta_set_mode(char mode)
{
    switch (mode) {
    case 'E': return STORE_MODE_ADD;
    case 'A': return STORE_MODE_APPEND;
    case 'P': return STORE_MODE_PREPEND;
    case 'R': return STORE_MODE_REPLACE;
    default: return STORE_MODE_SET;
    }
}

static void meta_set_reply(struct session *s, const struct meta_state *m, enum store_status st,
                           uint64_t cas, uint32_t size)
{
    struct meta_line l;
    l.len = 0;
    switch (st) {
    case STORE_OK:
        if (m->quiet)
            return;
        meta_line_mem(&l, "HD", 2);
        break;
    case STORE_EXISTS:
        meta_line_mem(&l, "EX", 2);
        break;
    case STORE_MISS:
        meta_line_mem(&l, "NF", 2);
        break;
    case STORE_NOT_STORED:
        meta_line_mem(&l, "NS", 2);
        break;
    case STORE_TOO_LARGE:
        meta_reply_error(s, "SERVER_ERROR object too large for cache");
        return;
    case STORE_NO_MEMORY:
        meta_reply_error(s, "SERVER_ERROR out of memory storing object");
        return;
    default:
        meta_reply_error(s, "SERVER_ERROR Unhandled storage type.");
        return;
    }
    for (size_t i = 0; i < m->nret; i++) {
        switch (m->ret[i]) {
        case 'O':
            meta_line_opaque(&l, m->opaque, m->nopaque);
            break;
        case 'k':
            meta_line_key(&l, m->key, m->nkey, m->base64_key);
            break;
        case 'c':
            /* memcached reports 0 when nothing was stored */
            meta_line_flag_u64(&l, 'c', st == STORE_OK ? cas : 0);
            break;
        case 's':
            meta_line_flag_u64(&l, 's', st == STORE_OK ? size : m->datalen);
            break;
        default:
            break;
        }
    }
    meta_line_send(s, &l);
}

/* cls: the new item's class (store_class_for); cas_cls: the one of the item
 * its CAS was compared with, where memcached counts cas_hits and cas_badval */
static void meta_set_count(struct session *s, const struct meta_state *m, enum store_status st,
                           unsigned cls, unsigned cas_cls)
{
    STAT_INC(s->stats, cmd_set);
    STAT_CLS_INC(s->stats, cls, cmd_set);
    if (!m->cas_mode)
        return;
    if (st == STORE_OK) {
        STAT_INC(s->stats, cas_hits);
        STAT_CLS_INC(s->stats, cas_cls, cas_hits);
    } else if (st == STORE_EXISTS) {
        STAT_INC(s->stats, cas_badval);
        STAT_CLS_INC(s->stats, cas_cls, cas_badval);
    }
    else if (st == STORE_MISS)
        STAT_INC(s->stats, cas_misses);
}

static void meta_set_done(struct session *s, bool chunk_ok)
{
    struct meta_state *m = &text_of(s)->meta;
    m->active = false;
    if (!chunk_ok) {
        store_abort(s->store, &text_of(s)->value.res);
        STAT_INC(s->stats, cmd_set);
        /* sent even with q: the client must learn its stream is off */
        meta_reply_error(s, "CLIENT_ERROR bad data chunk");
        return;
    }
    uint64_t cas = 0;
    uint32_t size = 0;
    struct watch_commit wc = {0};
    if (watch_active(WATCH_LOOKUPS | WATCH_MUTATIONS))
        watch_commit_begin(s, &text_of(s)->value.res, &wc);
    enum store_status st = store_commit(s->store, &text_of(s)->value.res, &m->req, &cas, &size);
    unsigned cls = text_of(s)->value.res.cls; /* the new item's (the commit says it) */
    if (wc.on)
        watch_commit_end(s, &wc, st, m->req.mode, m->req.exptime, cls);
    meta_set_count(s, m, st, cls, text_of(s)->value.res.cas_cls);
    meta_set_reply(s, m, st, cas, size);
}

void meta_set(struct session *s, const struct meta_req *req)
{
    struct meta_state *m = &text_of(s)->meta;
    /* clear the scalars; the key, opaque and flag buffers are filled below */
    memset(m, 0, offsetof(struct meta_state, key));
    m->nopaque = 0;
    m->nret = 0;
    m->quiet = req->quiet;
    m->base64_key = req->base64_key;
    m->datalen = req->datalen;
    memcpy(m->key, req->key, req->nkey);
    m->nkey = (uint8_t)req->nkey;
    if (req->opaque) {
        memcpy(m->opaque, req->opaque, req->nopaque);
        m->nopaque = (uint8_t)req->nopaque;
    }
    for (size_t i = 0; i < req->norder; i++) {
        char f = req->order[i];
        if (f == 'O' || f == 'k' || f == 'c' || f == 's')
            m->ret[m->nret++] = f;
    }

    struct store_set_req *r = &m->req;
    r->mode = meta_set_mode(req->mode);
    r->fail_deletes = true; /* memcached's ms, whatever its mode */
    r->flags = req->client_flags;
    r->exptime = req->has_ttl ? meta_exptime(req->ttl) : REL_TIME_NEVER;
    r->cas_new = req->has_cas_new ? req->cas_new : 0;
    if (req->has_cas) {
        /* memcached turns set and replace with a CAS into a cas command */
        if (r->mode == STORE_MODE_SET || r->mode == STORE_MODE_REPLACE) {
            r->mode = STORE_MODE_CAS;
            m->cas_mode = true;
        }
        r->cas_compare = req->cas;
        r->invalidate = req->invalidate;
    }
    if (req->has_vivify && (r->mode == STORE_MODE_APPEND || r->mode == STORE_MODE_PREPEND)) {
        r->vivify = true;
        r->vivify_exptime = meta_exptime(req->vivify_ttl);
    }

    /* flags and expiry are known now: the store lays the item out for them */
    rel_time_t exptime = r->vivify ? r->vivify_exptime : r->exptime;
    size_t need = (size_t)req->datalen + 2; /* the value and its "\r\n" */
    enum store_status st = session_reserve_value(s, req->key, req->nkey, req->datalen,
                                                 text_of(s)->avail, need, true, r->flags, exptime,
                                                 &text_of(s)->value.res);
    if (st != STORE_OK) {
        if (st == STORE_TOO_LARGE)
            STAT_INC(s->stats, store_too_large);
        else
            STAT_INC(s->stats, store_no_memory);
        /* as memcached: a failed store leaves no stale value behind */
        store_delete(s->store, req->key, req->nkey, NULL);
        meta_set_reply(s, m, st, 0, 0);
        text_expect_value(s, &text_of(s)->value, req->datalen, false, text_swallowed);
        return;
    }
    m->active = true;
    text_expect_value(s, &text_of(s)->value, req->datalen, true, meta_set_done);
}
