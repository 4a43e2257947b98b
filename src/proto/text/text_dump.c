/* SPDX-License-Identifier: BSD-3-Clause */
/* lru_crawler metadump / mgdump: list every live item (memcached 1.6.45's
 * format). memcached streams these from its crawler thread; we walk the
 * store inline, class filters included, in chunks: a dump pauses when the
 * connection owes what it may or after TEXT_DUMP_CHUNK batches, so other
 * clients run in between and a dump of any size needs bounded memory.
 * The index first (RAM items), then the flash tier's segments, whose
 * items RAM keeps no key of: read a part at a time by the session's flash
 * reads (store_compat.h), the dump stopping (PROTO_WAIT) while one is out
 * and going on when it is in (text_flash_probe). */
#include <string.h>

#include "base/clock.h"
#include "proto/meta/meta_base64.h"
#include "proto/proto_flash.h"
#include "proto/session.h"
#include "proto/text/text_internal.h"
#include "store/store.h"
#include "store/store_compat.h"

/* Buckets walked between looks at what the connection owes: what one batch
 * adds past its allowance (about 60 items: 15 KB of 240-byte keys) is what
 * a non-reader holds beyond its share, besides its blocks' rounding and
 * the reply's table (51-64 KiB a paused connection with its read buffer).
 * 64 let 1,000 non-readers of mgdump hold 126 MB against a 32 MiB
 * client_mem_limit; 8, 56 MB. */
#define TEXT_DUMP_BATCH 8
/* Batches walked per call before other clients get their turn. */
#define TEXT_DUMP_CHUNK 512

struct text_dump {
    struct session *s;
    const struct text_cont *c; /* mgdump, all, classes */
};

/* memcached URI-encodes keys in metadump: all but [A-Za-z0-9._~-]. */
static char *text_uri_encode(const char *key, size_t nkey, char *p)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < nkey; i++) {
        unsigned char c = (unsigned char)key[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_' || c == '~' || c == '-') {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    return p;
}

static char *text_i64toa(int64_t v, char *p)
{
    if (v < 0) {
        *p++ = '-';
        return text_u64toa((uint64_t)0 - (uint64_t)v, p);
    }
    return text_u64toa((uint64_t)v, p);
}

/* where an item on flash is (memcached's ext_page and ext_offset) */
struct text_dump_ext {
    uint32_t page, offset;
};

static void text_dump_line(struct text_dump *d, const struct store_item *it,
                           const struct text_dump_ext *ext)
{
    struct session *s = d->s;
    if (!d->c->all && (it->class_id >= 64 || !d->c->classes[it->class_id]))
        return;
    char *p = reply_reserve(&s->reply, 3 * STORE_KEY_MAX + 260);
    if (!p) {
        text_of(s)->closing = true;
        return;
    }
    char *q = p;
    if (d->c->mgdump) {
        memcpy(q, "mg ", 3);
        q += 3;
        if (meta_base64_key_plain(it->key, it->nkey)) {
            memcpy(q, it->key, it->nkey);
            q += it->nkey;
        } else {
            /* replayed raw, a space or CRLF in the key would be another
             * request (`x\r\nflush_all`); base64 with b is one mg, as
             * 1.6.45 dumps keys stored with b */
            q += meta_base64_encode((const unsigned char *)it->key, it->nkey, q);
            memcpy(q, " b", 2);
            q += 2;
        }
        *q++ = '\r';
        *q++ = '\n';
    } else {
        time_t epoch = clock_epoch();
        memcpy(q, "key=", 4);
        q = text_uri_encode(it->key, it->nkey, q + 4);
        memcpy(q, " exp=", 5);
        q = text_i64toa(it->exptime == REL_TIME_NEVER ? -1 : (int64_t)epoch + it->exptime, q + 5);
        memcpy(q, " la=", 4);
        q = text_u64toa((uint64_t)epoch + it->last_access, q + 4);
        memcpy(q, " cas=", 5);
        q = text_u64toa(it->cas, q + 5);
        if (it->fetched) {
            memcpy(q, " fetch=yes", 10);
            q += 10;
        } else {
            memcpy(q, " fetch=no", 9);
            q += 9;
        }
        memcpy(q, " cls=", 5);
        q = text_u64toa(it->class_id, q + 5);
        memcpy(q, " size=", 6);
        q = text_u64toa(store_item_mc_size(store_ctx_store(s->store), it), q + 6);
        memcpy(q, " flags=", 7);
        q = text_u64toa(it->flags, q + 7);
        if (ext) {
            memcpy(q, " ext_page=", 10);
            q = text_u64toa(ext->page, q + 10);
            memcpy(q, " ext_offset=", 12);
            q = text_u64toa(ext->offset, q + 12);
        }
        /* 1.6.45 ends these lines with a space and a bare newline */
        *q++ = ' ';
        *q++ = '\n';
    }
    reply_commit(&s->reply, (size_t)(q - p));
}

static void text_dump_item(const struct store_item *it, void *arg)
{
    text_dump_line(arg, it, NULL);
}

static void text_dump_flash_item(const struct store_item *it, uint32_t page, uint32_t offset,
                                 void *arg)
{
    struct text_dump_ext ext = {page, offset};
    text_dump_line(arg, it, &ext);
}

void text_cmd_dump(struct session *s, const struct text_line *l, bool mgdump)
{
    /* over UDP a dump would reflect the whole cache at a forged source:
     * 1.6.45 answers nothing, and so do we */
    if (s->datagram)
        return;
    if (!s->opt->dump_enabled) {
        /* 1.6.45's wording, which differs between the two */
        if (mgdump)
            TEXT_OUT(s, "ERROR key dump not allowed");
        else
            TEXT_OUT(s, "ERROR metadump not allowed");
        return;
    }
    if (text_of(s)->after_others) {
        if (mgdump)
            TEXT_OUT(s, "ERROR cannot pipeline other commands before mgdump");
        else
            TEXT_OUT(s, "ERROR cannot pipeline other commands before metadump");
        return;
    }
    struct text_cont *c = &text_of(s)->cont;
    *c = (struct text_cont){.mgdump = mgdump};
    const struct text_token *arg = &l->tok[2];
    if (TEXT_TOK_IS(arg, "all") || TEXT_TOK_IS(arg, "hash")) {
        c->all = true;
    } else {
        size_t i = 0;
        bool any = false;
        while (i <= arg->len) {
            size_t b = i;
            while (i < arg->len && arg->s[i] != ',')
                i++;
            if (i > b) {
                struct text_token one = {arg->s + b, i - b};
                uint32_t id;
                if (!text_parse_u32(&one, &id) || id < 1 || id >= 64) {
                    TEXT_OUT(s, "BADCLASS invalid class id");
                    return;
                }
                c->classes[id] = true;
                any = true;
            }
            i++;
        }
        if (!any) {
            TEXT_OUT(s, "BADCLASS invalid class id");
            return;
        }
    }
    TEXT_OUT(s, "OK");
    store_note_crawler_start(s->store); /* memcached dumps from its crawler */
    c->scan = store_flash_scan_create(s->store, proto_flash_wait(s));
    text_dump_resume(s);
}

void text_dump_resume(struct session *s)
{
    struct text_cont *c = &text_of(s)->cont;
    struct text_dump d = {.s = s, .c = c};
    struct store *store = store_ctx_store(s->store);
    c->kind = TEXT_CONT_NONE;
    for (int batches = 0; !text_of(s)->closing; batches++) {
        if (batches >= TEXT_DUMP_CHUNK || reply_pending(&s->reply) > s->reply_allow) {
            c->kind = TEXT_CONT_DUMP;
            return;
        }
        if (c->cursor != UINT64_MAX) {
            uint64_t before = c->cursor;
            if (store_walk(store, &c->cursor, TEXT_DUMP_BATCH, text_dump_item, &d) == 0 &&
                c->cursor == before)
                c->cursor = UINT64_MAX; /* no progress: never spin */
            continue;
        }
        enum store_scan st =
            store_flash_scan_walk(c->scan, TEXT_DUMP_BATCH, text_dump_flash_item, &d);
        if (st == STORE_SCAN_END)
            break;
        if (st == STORE_SCAN_READ) {
            /* its next part is read before the dump goes on (the probe) */
            c->kind = TEXT_CONT_DUMP;
            return;
        }
    }
    store_flash_scan_destroy(c->scan);
    c->scan = NULL;
    if (c->mgdump)
        TEXT_OUT(s, "EN");
    else
        TEXT_OUT(s, "END");
}
