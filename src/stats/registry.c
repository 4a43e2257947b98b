/* SPDX-License-Identifier: BSD-3-Clause */
#include "stats/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats_emit.h"

int registry_init(struct registry *r)
{
    memset(r, 0, sizeof *r);
    return pthread_mutex_init(&r->lock, NULL) == 0 ? 0 : -1;
}

void registry_release(struct registry *r)
{
    free(r->by_fd);
    free(r->used);
    pthread_mutex_destroy(&r->lock);
    r->by_fd = NULL;
    r->used = NULL;
    r->cap = 0;
}

int registry_add(struct registry *r, struct registry_entry *e)
{
    if (e->fd < 0)
        return -1;
    pthread_mutex_lock(&r->lock);
    if ((size_t)e->fd >= r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap <= (size_t)e->fd)
            cap *= 2;
        struct registry_entry **n = realloc(r->by_fd, cap * sizeof *n);
        if (n)
            r->by_fd = n;
        unsigned char *u = n ? realloc(r->used, cap) : NULL;
        if (!u) {
            pthread_mutex_unlock(&r->lock);
            return -1;
        }
        r->used = u;
        memset(n + r->cap, 0, (cap - r->cap) * sizeof *n);
        memset(u + r->cap, 0, cap - r->cap);
        r->cap = cap;
    }
    r->by_fd[e->fd] = e;
    if (!r->used[e->fd]) {
        r->used[e->fd] = 1;
        r->structures++;
    }
    pthread_mutex_unlock(&r->lock);
    return 0;
}

void registry_remove(struct registry *r, struct registry_entry *e)
{
    pthread_mutex_lock(&r->lock);
    if (e->fd >= 0 && (size_t)e->fd < r->cap && r->by_fd[e->fd] == e)
        r->by_fd[e->fd] = NULL;
    pthread_mutex_unlock(&r->lock);
}

void registry_log_state(const struct registry_entry *e, enum registry_state st)
{
    int old = __atomic_load_n(&e->state, __ATOMIC_RELAXED);
    if (old != (int)st)
        log_write(LOG_LEVEL_DEBUG, "%d: going from %s to %s", e->fd, registry_state_name(old),
                  registry_state_name((int)st));
}

const char *registry_state_name(int state)
{
    switch (state) {
    case REGISTRY_LISTENING: return "conn_listening";
    case REGISTRY_NEW_CMD: return "conn_new_cmd";
    case REGISTRY_READ: return "conn_read";
    case REGISTRY_PARSE_CMD: return "conn_parse_cmd";
    case REGISTRY_NREAD: return "conn_nread";
    case REGISTRY_MWRITE: return "conn_mwrite";
    case REGISTRY_CLOSING: return "conn_closing";
    }
    return "conn_closed";
}

int registry_compose(struct registry *r, rel_time_t now, const struct stats_emit *e)
{
    int rc = 0;
    char name[48];
    pthread_mutex_lock(&r->lock);
    for (size_t fd = 0; fd < r->cap && rc == 0; fd++) {
        const struct registry_entry *en = r->by_fd[fd];
        if (!en)
            continue;
        snprintf(name, sizeof name, "%zu:addr", fd);
        rc |= stats_emit_str(e, name, en->addr);
        if (en->listen_addr) {
            snprintf(name, sizeof name, "%zu:listen_addr", fd);
            rc |= stats_emit_str(e, name, en->listen_addr);
        }
        snprintf(name, sizeof name, "%zu:state", fd);
        rc |= stats_emit_str(e, name,
                             registry_state_name(__atomic_load_n(&en->state, __ATOMIC_RELAXED)));
        rel_time_t last = __atomic_load_n(&en->last_cmd, __ATOMIC_RELAXED);
        snprintf(name, sizeof name, "%zu:secs_since_last_cmd", fd);
        rc |= stats_emit_u64(e, name, now > last ? now - last : 0);
    }
    pthread_mutex_unlock(&r->lock);
    return rc ? -1 : 0;
}

size_t registry_structures(struct registry *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->structures;
    pthread_mutex_unlock(&r->lock);
    return n;
}
