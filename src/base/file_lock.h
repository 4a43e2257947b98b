/* SPDX-License-Identifier: BSD-3-Clause */
/* One server per file (file_lock.c): the -e memory file and the flash
 * files are locked for the life of the server that uses them. */
#ifndef NODELAY_FILE_LOCK_H
#define NODELAY_FILE_LOCK_H

/* An exclusive flock on fd, released by the kernel when the holder exits
 * however it exits. A server just killed may take a moment to let go (its
 * io_uring and files are torn down after it is reaped), so a lock held
 * elsewhere is asked for again for up to 2 s: a restart right after a
 * kill -9 waits for it rather than failing. 0, or -errno (EWOULDBLOCK:
 * still held, another server uses the file). */
int file_lock(int fd);

#endif
