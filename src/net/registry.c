#include "net/registry.h"

#include <stdlib.h>
#include <string.h>

#include "reply/reply.h"

int registry_init(struct registry *r)
{
    memset(r, 0, sizeof *r);
    return pthread_mutex_init(&r->lock, NULL) == 0 ? 0 : -1;
}

void registry_release(struct registry *r)
{
    free(r->by_fd);
    pthread_mutex_destroy(&r->lock);
    r->by_fd = NULL;
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
        if (!n) {
            pthread_mutex_unlock(&r->lock);
            return -1;
        }
        memset(n + r->cap, 0, (cap - r->cap) * sizeof *n);
        r->by_fd = n;
        r->cap = cap;
    }
    r->by_fd[e->fd] = e;
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

int registry_compose(struct registry *r, rel_time_t now, struct reply_queue *out)
{
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    for (size_t fd = 0; fd < r->cap && rc == 0; fd++) {
        const struct registry_entry *e = r->by_fd[fd];
        if (!e)
            continue;
        rc |= reply_printf(out, "STAT %zu:addr %s\r\n", fd, e->addr);
        if (e->listen_addr)
            rc |= reply_printf(out, "STAT %zu:listen_addr %s\r\n", fd, e->listen_addr);
        rc |= reply_printf(out, "STAT %zu:state %s\r\n", fd,
                           registry_state_name(__atomic_load_n(&e->state, __ATOMIC_RELAXED)));
        rel_time_t last = __atomic_load_n(&e->last_cmd, __ATOMIC_RELAXED);
        rc |= reply_printf(out, "STAT %zu:secs_since_last_cmd %u\r\n", fd,
                           now > last ? now - last : 0);
    }
    pthread_mutex_unlock(&r->lock);
    return rc ? -1 : 0;
}
