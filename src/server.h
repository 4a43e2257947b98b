/* What protocols may ask of the running server as a whole. Implemented by
 * the server core (main.c / net), so protocols never reach into it. */
#ifndef NODELAY_SERVER_H
#define NODELAY_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct reply_queue;

/* shutdown [graceful] (-A): stop accepting, finish, exit. */
void server_shutdown(bool graceful);

/* verbosity <n>: clamps like memcached. */
void server_set_verbosity(unsigned level);

/* cache_memlimit <MB>: 0, or -1 when too small (memcached: < 8 MB). */
int server_set_memlimit(size_t megabytes);

/* Compose the reply to `stats <args>` (args is what follows "stats ",
 * possibly empty), ending with END (or RESET for `stats reset`). Returns 0,
 * or -1 when the subcommand is unknown (the caller answers as memcached). */
int server_stats(const char *args, size_t len, struct reply_queue *out);

/* stats detail bookkeeping (-D / stats detail on): called by the protocols
 * per key when detail_enabled. op is 'g' get, 's' set, 'd' delete. */
void server_stats_detail(const char *key, size_t nkey, char op, bool hit);

#endif
