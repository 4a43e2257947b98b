/* SPDX-License-Identifier: BSD-3-Clause */
/* The store's one lookup (store_lookup.c): every operation that reads or
 * changes a key finds it through store_lookup. */
#ifndef NODELAY_STORE_LOOKUP_H
#define NODELAY_STORE_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

#include "store/store_index.h"
#include "store/store_item.h"
#include "store/store_life.h"
#include "store/store_classes.h"
#include "store/seg_counts.h"

struct seg;
struct store;
struct flash_item;

struct store_ctx;

/* A key and its hash, computed once per operation. */
struct store_key {
    const char *key;
    size_t nkey;
    uint64_t hv;
    uint32_t tag; /* index_tag(hv) */
};
/* The same for a key whose hash hv store_key_of gave already. */
static inline struct store_key store_key_hashed(const char *key, size_t nkey, uint64_t hv)
{
    return (struct store_key){.key = key, .nkey = nkey, .hv = hv, .tag = index_tag(hv)};
}
/* Inline: every lookup and every key of a prefetch hashes one, and the
 * call around XXH3's was nearly as long as the hash of a short key. */
static inline struct store_key store_key_of(const char *key, size_t nkey)
{
    return store_key_hashed(key, nkey, XXH3_64bits(key, nkey));
}

struct store_found {
    /* The key's buckets, locked: keys.b[0] the first (the one flash code
     * is given), keys.b[1] the second, or NULL when they are one bucket or
     * the item was found in the first (then only that one is locked,
     * which excludes every other operation on the key: each locks the
     * first). On a miss both are locked, for an insert. */
    struct index_pair keys;
    uint64_t *chain;    /* the bucket whose chain holds slot */
    uint64_t *slot;     /* the rest is set only when the item was found */
    char *p;            /* the item */
    struct seg *seg;
    struct item_hdr h;
    rel_time_t now;     /* the time its life was judged by */
    /* On a miss: ITEM_EXPIRED or ITEM_FLUSHED when the lookup found the key
     * dead and unlinked it, else ITEM_LIVE (no such key). */
    enum item_life gone;
    /* On a miss with STORE_LOOK_KEEP_FLASH: the key's item is on flash
     * (read and checked for this request) and was left there; flash is
     * that item as read (its CAS, which memcached compares first). */
    bool on_flash;
    /* On a miss with STORE_LOOK_FLASH_BUF: the key's item as read from
     * flash for this request, not recached, its pointers into the read's
     * buffer (flash_buf: store_flash_buf_pin takes a reference on it);
     * else NULL. */
    const struct flash_item *flash;
    void *flash_buf;
};

enum store_look {
    STORE_LOOK_FIND = 0, /* under the bucket lock only */
    STORE_LOOK_PIN = 1,  /* and pin the item's segment, to read it after unlocking */
    /* A flag beside either: a flash item read for the request stays on
     * flash and the lookup misses with f->on_flash, for the commands
     * memcached refuses on an item whose value is on extstore (incr,
     * decr, append, prepend), rather than bringing it into RAM. */
    STORE_LOOK_KEEP_FLASH = 2,
    /* A flag beside either, for a read that changes nothing in the item
     * (no touch, no win): a flash item read for the request that
     * memcached's recache rule does not put back in RAM is served from
     * the read's buffer, with no RAM copy: the lookup misses with
     * f->flash set. */
    STORE_LOOK_FLASH_BUF = 4,
    /* A flag beside any: a read that leaves the item's access alone (mg
     * u, me): a flash item read for it is not counted as read, as
     * memcached does not bump the header it keeps in RAM. */
    STORE_LOOK_NO_BUMP = 8,
    /* A flag beside any: the request does not send the value (touch, me,
     * mg without v): memcached reads no flash for it, so its recache
     * rule never puts the item back in RAM for it. */
    STORE_LOOK_NO_VALUE = 16,
    /* A flag beside STORE_LOOK_FLASH_BUF: the read wins a stale item's
     * token (mg), a change, so a stale flash item is lent in RAM for it. */
    STORE_LOOK_WINS = 32,
    /* A flag beside any: the request replaces the item whatever it was (a
     * plain set's commit): one that left RAM for flash since the request
     * began is not read back for it (FLASH_UNREAD), only dropped. */
    STORE_LOOK_REPLACES = 64,
};

/* The one lookup every operation makes: lock the key's bucket (wherever a
 * growth of the index has put it) and find the key's live item, unlinking
 * it if it has expired or been flushed (counted as get_expired /
 * get_flushed). With STORE_LOOK_PIN the item's segment is pinned too; while
 * eviction is compacting that segment the lookup waits and looks again, so
 * a pin that is taken never lets the item move.
 * Returns true when found (f filled; pinned with STORE_LOOK_PIN), false on
 * a miss (f->keys and f->now only: a caller may link a new item into the
 * key's buckets). Either way f->keys are locked on return: the caller
 * releases them (store_found_unlock) and, after a pinned find, the pin
 * (seg_unpin(f->seg)). */
static inline void store_found_unlock(const struct store_found *f)
{
    index_unlock_pair(&f->keys);
}
bool store_lookup_write(struct store_ctx *ctx, const struct store_key *k, enum store_look how,
                        bool reclaim, struct store_found *f);
static inline bool store_lookup(struct store_ctx *ctx, const struct store_key *k,
                                enum store_look how, struct store_found *f)
{
    return store_lookup_write(ctx, k, how, false, f);
}
/* store_lookup for a storage command (set, add, replace, cas, append,
 * prepend, in every protocol): with reclaim (memcached without its
 * segmented LRU, whose do_item_alloc pulls the LRU tail before the key is
 * looked up: lru_pull_tail reclaims the expired and flushed items it finds
 * there), an expired or flushed item of the key is unlinked as reclaimed
 * (and expired_unfetched if never fetched) rather than counted get_expired
 * / get_flushed. Declared above, for store_lookup. */
/* Unlink key's live item, if any (what a plain delete does, for a write
 * that must drop the old value); true when there was one. */
bool store_lookup_drop(struct store_ctx *ctx, const char *key, size_t nkey);


/* The view of a found item (bucket lock held) a get or a walk hands out;
 * its pin is the caller's. Inline: every hit takes it. st is the item's
 * access-time word (item_get_st), which a get reads once for this and
 * for what it writes back. */
static inline void store_fill_item_st(const struct store_classes *c, const struct store_found *f,
                                      uint32_t st, struct store_item *out)
{
    const char *p = f->p;
    out->key = p + f->h.hlen;
    out->value = p + f->h.hlen + f->h.nkey;
    out->nvalue = f->h.nvalue;
    out->nkey = f->h.nkey;
    out->flags = item_get_u32(p, f->h.flags_off);
    out->cas = item_get_cas(p, &f->h, f->seg->cas_base);
    out->exptime = item_get_u32(p, f->h.exp_off);
    out->last_access = st & ~ITEM_S_MASK;
    out->fetched = st & ITEM_S_FETCHED;
    out->stale = st & ITEM_S_STALE;
    out->class_id =
        classes_id(c, item_mc_size(f->h.nkey, f->h.nvalue, out->flags, c->cas_enabled));
    out->lru = __atomic_load_n(&f->seg->lru, __ATOMIC_RELAXED);
}
static inline void store_fill_item(const struct store_classes *c, const struct store_found *f,
                                   struct store_item *out)
{
    store_fill_item_st(c, f, item_get_st(f->p, &f->h, f->seg->tbase), out);
}


#endif
