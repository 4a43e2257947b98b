/* SPDX-License-Identifier: BSD-3-Clause */
/* -d: run in the background, as a well-behaved daemon does. The process
 * that was started forks and waits; the child becomes the server and tells
 * it, over a pipe, once it serves. So the command that ran `nodelay -d`
 * returns 0 only with a server answering, and otherwise the server's own
 * exit status, with a line saying where its messages went: an init script
 * or an operator sees every start-up failure, as without -d. */
#ifndef NODELAY_DAEMON_H
#define NODELAY_DAEMON_H

#include <stdbool.h>

struct daemon {
    int ready_fd; /* the child's end of the pipe; -1 once told, or without -d */
};

/* Forks; returns only in the child, as the server, with stdin on /dev/null
 * and stdout and stderr appended to `logfile` when given, else stdout on
 * /dev/null and stderr too unless keep_stderr (-v). The starting process
 * stays in here until the child is ready or gone, and exits with 0 or the
 * child's status. A logfile that cannot be opened is reported, naming it,
 * before any fork. Returns -1 (errno set, message printed) on failure. */
int daemon_start(struct daemon *d, bool keep_stderr, const char *logfile);

/* The server serves: the waiting process may exit 0. Idempotent; a no-op
 * when daemon_start was not called (ready_fd -1). */
void daemon_ready(struct daemon *d);

#define DAEMON_INIT { .ready_fd = -1 }

#endif
