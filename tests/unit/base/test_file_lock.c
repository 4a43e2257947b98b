/* SPDX-License-Identifier: BSD-3-Clause */
/* file_lock (base/file_lock.h): a lock another holder lets go of within
 * its wait is taken (a server just killed releasing its files); one held
 * past it is refused with EWOULDBLOCK. The holder is a child process, as a
 * server on the same file would be. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/file_lock.h"

static char path[64];

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/nodelay-lock-%d", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

/* A child takes the lock, tells the parent, holds it ms, then exits. */
static pid_t hold_for(int ms)
{
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_RDWR);
        if (fd < 0 || flock(fd, LOCK_EX) != 0)
            _exit(1);
        (void)write(pipefd[1], "x", 1);
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        _exit(0);
    }
    char c;
    assert_int_equal(read(pipefd[0], &c, 1), 1);
    close(pipefd[0]);
    close(pipefd[1]);
    return pid;
}

static void test_lock_let_go_within_the_wait_is_taken(void **state)
{
    (void)state;
    pid_t pid = hold_for(300);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1); /* held now */
    assert_int_equal(file_lock(fd), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(fd);
}

static void test_lock_held_past_the_wait_is_refused(void **state)
{
    (void)state;
    pid_t pid = hold_for(4000);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(file_lock(fd), -EWOULDBLOCK);
    kill(pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_let_go_within_the_wait_is_taken),
        cmocka_unit_test(test_lock_held_past_the_wait_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
