/* One event-loop interface; the backend (epoll on Linux, poll anywhere) is
 * chosen at build time (EVENT=epoll|poll) and nothing else knows which.
 *
 * Level-triggered: an fd stays reported while it is readable/writable and
 * its interest includes that, so a caller that stops early (the -R budget,
 * backpressure) loses nothing. A loop belongs to one thread. */
#ifndef NODELAY_EVENT_H
#define NODELAY_EVENT_H

enum {
    EVENT_READ = 1u << 0,
    EVENT_WRITE = 1u << 1,
    EVENT_ERROR = 1u << 2,     /* reported only: hang-up or socket error */
    EVENT_EXCLUSIVE = 1u << 3, /* interest only, with event_add: a listening fd
                                  watched by several loops wakes one of them
                                  (EPOLLEXCLUSIVE); ignored by poll */
};

struct event_loop;

struct event_fired {
    void *ptr;
    unsigned events; /* EVENT_READ | EVENT_WRITE | EVENT_ERROR */
};

/* Returns 0 or -1 (errno set). */
int event_loop_create(struct event_loop **out);
void event_loop_destroy(struct event_loop **loop);

/* Watch fd for `interest` (EVENT_READ/EVENT_WRITE, 0 = nothing for now);
 * ptr comes back in event_fired. Each returns 0 or -1 (errno set). */
int event_add(struct event_loop *loop, int fd, unsigned interest, void *ptr);
int event_modify(struct event_loop *loop, int fd, unsigned interest, void *ptr);
int event_delete(struct event_loop *loop, int fd);

/* Wait up to timeout_ms (-1 = forever) and fill up to max events. Returns
 * how many (0 on timeout or EINTR), or -1 on error. */
int event_wait(struct event_loop *loop, struct event_fired *out, int max, int timeout_ms);

/* "epoll" or "poll", for logs and `stats nodelay`. */
const char *event_backend(void);

#endif
