/* SPDX-License-Identifier: BSD-3-Clause */
/* Each module's options, from the settings: the one place that maps the
 * settings table to what the store, the connection layer, the protocols
 * and TLS are given at setup (main.c, and tests that start from a command
 * line's settings). No module but this, main.c and server.c sees struct
 * settings; the values that change at run time reach modules as the
 * settings' struct settings_runtime (settings_run.h). */
#ifndef NODELAY_OPTIONS_H
#define NODELAY_OPTIONS_H

#include "base/flash_tuning.h"
#include "net/net_options.h"
#include "net/tls.h"
#include "proto/proto_options.h"
#include "store/store.h"

struct settings;

struct options {
    struct store_options store;
    struct net_options net;
    struct proto_options proto;
    struct tls_options tls;
    /* the ext_* values `extstore` changes at run time, for the flash tier */
    struct flash_tuning_src flash_tuning;
};

/* Fill *o from *s (which must outlive o: strings are shared). */
void options_from_settings(const struct settings *s, struct options *o);
/* memcached's test hook T_MEMD_INITIAL_MALLOC from the environment: bytes to
 * count as already taken from -m (store_options.initial_malloced), or 0. */
size_t options_initial_malloced(void);

#endif
