#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run a program with io_uring_setup(2) refused, as the seccomp policies of
container runtimes refuse it: `noring.py ERRNO PROGRAM ARGS...` installs a
seccomp filter that answers io_uring_setup with -ERRNO, then execs PROGRAM.
The server then goes through its real fallback path (test_event_backend)."""
import ctypes
import os
import struct
import sys

NR_IO_URING_SETUP = 425  # the same on every architecture (generic table)
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def refuse_io_uring(err):
    insns = [
        (0x20, 0, 0, 0),                         # ld [nr]
        (0x15, 0, 1, NR_IO_URING_SETUP),         # jeq io_uring_setup
        (0x06, 0, 0, SECCOMP_RET_ERRNO | err),   # ret ERRNO(err)
        (0x06, 0, 0, SECCOMP_RET_ALLOW),         # ret ALLOW
    ]
    code = b"".join(struct.pack("HBBI", *i) for i in insns)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = SockFprog(len(insns), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


if __name__ == "__main__":
    refuse_io_uring(int(sys.argv[1]))
    os.execv(sys.argv[2], sys.argv[2:])
