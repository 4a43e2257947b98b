# SPDX-License-Identifier: BSD-3-Clause
"""The RSS bound the soak holds the server to: the README's formula."""


class MemoryBound:
    """The README's formula (KiB): -m + index + 2 x upload_limit +
    client_mem_limit + 48 KiB x connections + 16 MiB fixed, plus the
    watchers' stated buffers; memcached's are not ours."""

    def __init__(self, a, sanitized):
        self.sanitized = sanitized
        self.slack_kib = a.rss_slack_mb * 1024
        self.m_kib = a.memory * 1024
        # twice upload_limit: uploads being sent and cut-off ones not yet
        # freed may pass upload_limit itself (docs/store.md "Uploads")
        self.upload_kib = 2 * max(self.m_kib // 8, 4 * 1024)
        self.client_kib = max(self.m_kib // 2, 32 * 1024)

        # the watchers' stated bound (docs/observability.md, `watch`): each its buffer
        # and as much again queued, 2 x watcher_logbuf_size + 16 KiB (each is
        # also one of the connections), and a worker_logbuf_size ring for each
        # thread that logs (the workers and the housekeeping threads)
        self.n_read, self.n_stalled = (int(x) for x in a.watchers.split(","))
        watchers = self.n_read + self.n_stalled
        self.watch_kib = watchers * (2 * 256 + 16) + (a.threads + 4) * 64 if watchers else 0

    def kib(self, index_kib, conns):
        b = (self.m_kib + index_kib + self.upload_kib + self.client_kib + 48 * conns
             + 16 * 1024 + self.watch_kib)
        b += self.slack_kib
        return 4 * b + 256 * 1024 if self.sanitized else b
