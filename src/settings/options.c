/* SPDX-License-Identifier: BSD-3-Clause */
/* Settings to module options. A field of net_options, proto_options or
 * tls_options is a settings row of the same name; its type is checked
 * against the row's here, so the lists cannot drift from the table. */
#include "settings/options.h"

#include "event/event.h"
#include "base/num.h"
#include "settings/settings.h"

#include <stdlib.h>
#include <string.h>

/* memcached's test hook (slabs_init, "for the test suite: faking of how much
 * we've already malloc'd"): T_MEMD_INITIAL_MALLOC=N counts N bytes as taken
 * from -m before anything is stored; its t/64bit.t sets just over 4 GiB
 * under -m 4098 to check the 64-bit counters without allocating them. Read
 * as memcached reads it (safe_strtoll); a negative or unreadable value is
 * ignored (memcached would wrap a negative one to a huge size). */
size_t options_initial_malloced(void)
{
    const char *v = getenv("T_MEMD_INITIAL_MALLOC");
    int64_t n;
    if (!v || !num_safe_i64(v, strlen(v), &n) || n < 0)
        return 0;
    return (size_t)n;
}

#define OPTIONS_CHECK(type, name)                                                                  \
    _Static_assert(__builtin_types_compatible_p(type, __typeof__(((struct settings *)0)->name)),  \
                   #name " has another type in the settings table");
NET_OPTIONS(OPTIONS_CHECK)
PROTO_OPTIONS(OPTIONS_CHECK)
TLS_OPTIONS(OPTIONS_CHECK)
#undef OPTIONS_CHECK

/* The -o ext_* values for the store's flash tier (memcached's units: MB
 * for the page and write buffer). The paths stay valid for the process:
 * the store reads them when it starts. */
static void options_flash(const struct settings *s, struct store_flash_options *f)
{
    static struct settings_ext_file files[SETTINGS_EXT_FILES_MAX];
    *f = (struct store_flash_options){0};
    if (!s->ext_path)
        return;
    int n = settings_ext_files(s, files, SETTINGS_EXT_FILES_MAX);
    for (int i = 0; i < n && i < STORE_FLASH_FILES_MAX; i++) {
        f->paths[i] = files[i].path;
        f->sizes[i] = files[i].size;
        f->nfiles = i + 1;
    }
    f->page_size = (uint64_t)s->ext_page_size << 20;
    f->wbuf_size = (uint32_t)((uint64_t)s->ext_wbuf_size << 20);
    f->threads = (int)s->ext_threads;
    f->io_depth = (unsigned)s->ext_io_depth;
    /* the ones `extstore` changes, as memcached holds them (32 bits) */
    struct flash_tuning t;
    settings_flash_tuning(settings_runtime_of(s), &t);
    f->item_size = t.item_size;
    f->item_age = t.item_age;
    f->low_ttl = t.low_ttl;
    f->recache_rate = t.recache_rate;
    f->compact_under = t.compact_under;
    f->drop_under = t.drop_under;
    f->max_frag = t.max_frag;
    f->drop_unread = t.drop_unread;
    f->max_sleep = t.max_sleep;
}

void options_from_settings(const struct settings *s, struct options *o)
{
#define OPTIONS_NET(type, name) o->net.name = s->name;
#define OPTIONS_PROTO(type, name) o->proto.name = s->name;
#define OPTIONS_TLS(type, name) o->tls.name = s->name;
    NET_OPTIONS(OPTIONS_NET)
    PROTO_OPTIONS(OPTIONS_PROTO)
    TLS_OPTIONS(OPTIONS_TLS)
    /* io_uring's default "on" means where the build has it: a build
     * without liburing says so in -V and at -v, not at every start; a run
     * that names -o io_uring=on still hears, in one line, that it is not
     * there (core_start). */
    o->net.io_uring = s->io_uring && (event_ring_built() || s->given[SETTINGS_ROW_io_uring]);
#undef OPTIONS_NET
#undef OPTIONS_PROTO
#undef OPTIONS_TLS
    o->flash_tuning = (struct flash_tuning_src){settings_flash_tuning, settings_runtime_of(s)};
    /* the store's own names (store.h) */
    o->store = (struct store_options){
        .mem_limit = SETTINGS_GET(s, maxbytes),
        .item_size_max = s->item_size_max,
        .evictions = s->evictions,
        .cas_enabled = s->cas_enabled,
        .hashpower = (unsigned)s->hashpower_init,
        .background = true,
        .memory_file = s->memory_file,
        .temp_lru = SETTINGS_GET(s, temp_lru),
        .temporary_ttl = (unsigned)SETTINGS_GET(s, temporary_ttl),
        .growth_factor = s->growth_factor,
        .chunk_size = (size_t)s->chunk_size,
        .slab_chunk_max = (size_t)s->slab_chunk_max,
        .no_lru_maintainer = !s->lru_maintainer_thread,
        .initial_malloced = options_initial_malloced(),
        .lru_flat = !SETTINGS_GET(s, lru_segmented),
        .writers = (unsigned)s->num_threads,
    };
    options_flash(s, &o->store.flash);
    o->store.flash.tuning = o->flash_tuning;
}
