/* SPDX-License-Identifier: BSD-3-Clause */
/* The waiting side of the flash tier (store_flash.h). With no flash tier
 * configured every probe is READY and nothing is ever submitted. */
#include "store/store_flash.h"

#include <stdlib.h>

#include "store/store_core.h"

struct store_flash_wait {
    void (*wake)(void *arg);
    void *arg;
    unsigned pending;
};

struct store_flash_wait *store_flash_wait_create(void (*wake)(void *arg), void *arg)
{
    struct store_flash_wait *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->wake = wake;
    w->arg = arg;
    return w;
}

void store_flash_wait_destroy(struct store_flash_wait *w)
{
    free(w);
}

void store_flash_wait_reset(struct store_flash_wait *w)
{
    (void)w;
}

unsigned store_flash_pending(const struct store_flash_wait *w)
{
    return w->pending;
}

void store_flash_attach(struct store_ctx *ctx, struct store_flash_wait *w)
{
    ctx->flash_wait = w;
}

bool store_flash_on(const struct store_ctx *ctx)
{
    (void)ctx;
    return false;
}

enum store_probe store_flash_probe(struct store_ctx *ctx, struct store_flash_wait *w,
                                   const struct store_key *k)
{
    (void)ctx;
    (void)w;
    (void)k;
    return STORE_PROBE_READY;
}

int store_flash_fd(struct store_ctx *ctx)
{
    (void)ctx;
    return -1;
}

void store_flash_drain(struct store_ctx *ctx)
{
    (void)ctx;
}
