/* SPDX-License-Identifier: BSD-3-Clause */
/* Password-guessing limits (see auth_guard.h). */
#include "proto/auth_guard.h"

#include <pthread.h>
#include <string.h>
#include <xxhash.h>

/* Failures per source address, in a small direct-mapped table: an address
 * that collides with another shares (or takes over) its slot, which can only
 * make a limit start over, never refuse an address that has not failed. */
#define AUTH_GUARD_SLOTS 4096

struct auth_guard_slot {
    uint64_t addr;
    rel_time_t window_end; /* 0: empty */
    uint32_t failures;
};

static pthread_mutex_t auth_guard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct auth_guard_slot auth_guard_slots[AUTH_GUARD_SLOTS];

void auth_guard_init(struct auth_guard *g, const char *peer)
{
    memset(g, 0, sizeof *g);
    if (!peer || strncmp(peer, "tcp", 3) != 0)
        return;
    const char *port = strrchr(peer, ':');
    if (!port || port == peer)
        return;
    g->addr = XXH3_64bits(peer, (size_t)(port - peer));
    g->has_addr = true;
}

static struct auth_guard_slot *auth_guard_slot(uint64_t addr)
{
    return &auth_guard_slots[addr & (AUTH_GUARD_SLOTS - 1)];
}

static uint32_t auth_guard_addr_limit(int limit)
{
    return (uint32_t)limit * AUTH_GUARD_ADDR_FACTOR;
}

bool auth_guard_admit(const struct auth_guard *g, int limit, rel_time_t now)
{
    if (limit <= 0 || !g->has_addr)
        return true;
    pthread_mutex_lock(&auth_guard_lock);
    const struct auth_guard_slot *sl = auth_guard_slot(g->addr);
    bool blocked = sl->addr == g->addr && now < sl->window_end &&
                   sl->failures >= auth_guard_addr_limit(limit);
    pthread_mutex_unlock(&auth_guard_lock);
    return !blocked;
}

bool auth_guard_failed(struct auth_guard *g, int limit, rel_time_t now)
{
    if (limit <= 0)
        return false;
    g->failures++;
    if (g->has_addr) {
        pthread_mutex_lock(&auth_guard_lock);
        struct auth_guard_slot *sl = auth_guard_slot(g->addr);
        if (sl->addr != g->addr || now >= sl->window_end) {
            sl->addr = g->addr;
            sl->window_end = now + AUTH_GUARD_WINDOW;
            sl->failures = 0;
        }
        if (sl->failures < UINT32_MAX)
            sl->failures++;
        pthread_mutex_unlock(&auth_guard_lock);
    }
    return g->failures >= (uint32_t)limit;
}

void auth_guard_reset(void)
{
    pthread_mutex_lock(&auth_guard_lock);
    memset(auth_guard_slots, 0, sizeof auth_guard_slots);
    pthread_mutex_unlock(&auth_guard_lock);
}
