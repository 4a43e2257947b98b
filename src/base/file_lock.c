/* SPDX-License-Identifier: BSD-3-Clause */
#include "base/file_lock.h"

#include <errno.h>
#include <sys/file.h>
#include <time.h>

#define FILE_LOCK_WAIT_MS 2000
#define FILE_LOCK_STEP_MS 10

int file_lock(int fd)
{
    for (int waited = 0;; waited += FILE_LOCK_STEP_MS) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        int err = errno;
        if ((err != EWOULDBLOCK && err != EINTR) || waited >= FILE_LOCK_WAIT_MS)
            return -err;
        struct timespec ts = {0, FILE_LOCK_STEP_MS * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
