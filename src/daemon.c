/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* pipe2, strsignal */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DAEMON_EX_OSERR 71
#define DAEMON_READY 'R'

/* The starting process: wait for the ready byte, or for the pipe to close
 * because the child exited; exit with what it says. */
static void daemon_wait(pid_t child, int fd, bool keep_stderr, const char *logfile)
{
    char c;
    ssize_t n;
    do
        n = read(fd, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n == 1 && c == DAEMON_READY)
        _exit(0);
    int status = 0, code = DAEMON_EX_OSERR;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    char how[64];
    if (WIFEXITED(status)) {
        snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
        if (WEXITSTATUS(status) != 0)
            code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        snprintf(how, sizeof how, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        snprintf(how, sizeof how, "stopped");
    }
    if (logfile)
        fprintf(stderr, "nodelay: -d: the server %s before it was ready; its messages are in %s\n",
                how, logfile);
    else if (keep_stderr)
        fprintf(stderr, "nodelay: -d: the server %s before it was ready (messages above)\n", how);
    else
        fprintf(stderr, "nodelay: -d: the server %s before it was ready; run it with -v, or "
                "without -d, to see why\n", how);
    _exit(code);
}

/* The child: a session of its own, out of the way of any mount, and its
 * standard streams off the terminal. */
static int daemon_detach(int log, bool keep_stderr)
{
    if (setsid() < 0) {
        fprintf(stderr, "failed to daemonize: setsid: %s\n", strerror(errno));
        return -1;
    }
    if (chdir("/") < 0) {
        fprintf(stderr, "failed to daemonize: chdir /: %s\n", strerror(errno));
        return -1;
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) {
        fprintf(stderr, "failed to daemonize: /dev/null: %s\n", strerror(errno));
        return -1;
    }
    dup2(null, STDIN_FILENO);
    dup2(log >= 0 ? log : null, STDOUT_FILENO);
    if (log >= 0 || !keep_stderr)
        dup2(log >= 0 ? log : null, STDERR_FILENO);
    close(null);
    return 0;
}

int daemon_start(struct daemon *d, bool keep_stderr, const char *logfile)
{
    d->ready_fd = -1;
    /* opened here, in the process whose stderr the operator sees */
    int log = -1;
    if (logfile) {
        log = open(logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (log < 0) {
            int e = errno;
            fprintf(stderr, "failed to daemonize: cannot open the logfile %s: %s\n", logfile,
                    strerror(e));
            errno = e;
            return -1;
        }
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        int e = errno;
        fprintf(stderr, "failed to daemonize: pipe: %s\n", strerror(e));
        if (log >= 0)
            close(log);
        errno = e;
        return -1;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        fprintf(stderr, "failed to daemonize: fork: %s\n", strerror(e));
        close(p[0]);
        close(p[1]);
        if (log >= 0)
            close(log);
        errno = e;
        return -1;
    }
    if (pid > 0) {
        close(p[1]);
        daemon_wait(pid, p[0], keep_stderr, logfile);
    }
    close(p[0]);
    int rc = daemon_detach(log, keep_stderr);
    if (log >= 0)
        close(log);
    if (rc < 0) {
        close(p[1]);
        return -1;
    }
    d->ready_fd = p[1];
    return 0;
}

void daemon_ready(struct daemon *d)
{
    if (d->ready_fd < 0)
        return;
    char c = DAEMON_READY;
    ssize_t n;
    do
        n = write(d->ready_fd, &c, 1);
    while (n < 0 && errno == EINTR);
    /* a starting process that is gone (killed) is no reason to stop
     * serving: the write fails with EPIPE (SIGPIPE is ignored by then) */
    close(d->ready_fd);
    d->ready_fd = -1;
}
