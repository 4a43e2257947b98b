# SPDX-License-Identifier: BSD-3-Clause
"""Plain `stats` prints memcached's general field set in memcached's order
(scripts compare it key by key): 1.6.45's set (memcached-behaviour.md §5);
1.6.18's when the suite is validated against Debian's memcached."""
from helpers import expect

COMMON_HEAD = """pid uptime time version libevent pointer_size rusage_user rusage_system
max_connections curr_connections total_connections rejected_connections connection_structures
response_obj_oom response_obj_count response_obj_bytes read_buf_count read_buf_bytes
read_buf_bytes_free read_buf_oom reserved_fds cmd_get cmd_set cmd_flush cmd_touch cmd_meta
get_hits get_misses get_expired get_flushed delete_misses delete_hits incr_misses incr_hits
decr_misses decr_hits cas_misses cas_hits cas_badval touch_hits touch_misses store_too_large
store_no_memory auth_cmds auth_errors""".split()
COMMON_MID = """bytes_read bytes_written limit_maxbytes accepting_conns listen_disabled_num
time_in_listen_disabled_us threads conn_yields hash_power_level hash_bytes hash_is_expanding
slab_reassign_rescues slab_reassign_chunk_rescues""".split()
SLAB_MOVER_145 = """slab_reassign_inline_reclaim slab_reassign_busy_items slab_reassign_busy_deletes
slab_reassign_busy_nomem slab_reassign_last_busy_status slab_reassign_running slabs_moved""".split()
SLAB_MOVER_118 = """slab_reassign_evictions_nomem slab_reassign_inline_reclaim
slab_reassign_busy_items slab_reassign_busy_deletes slab_reassign_running slabs_moved""".split()
COMMON_TAIL = """lru_crawler_running lru_crawler_starts lru_maintainer_juggles malloc_fails
log_worker_dropped log_worker_written log_watcher_skipped log_watcher_sent log_watchers
unexpected_napi_ids round_robin_fallback bytes curr_items total_items slab_global_page_pool
expired_unfetched evicted_unfetched evicted_active evictions reclaimed crawler_reclaimed
crawler_items_checked lrutail_reflocked moves_to_cold moves_to_warm moves_within_lru
direct_reclaims lru_bumps_dropped""".split()


def stat_keys(conn):
    raw = conn.call("stats", until=b"END\r\n").decode()
    return [line.split(" ")[1] for line in raw.split("\r\n") if line.startswith("STAT ")]


def expected(idle):
    mover = expect(SLAB_MOVER_145, SLAB_MOVER_118)
    return COMMON_HEAD + (["idle_kicks"] if idle else []) + COMMON_MID + mover + COMMON_TAIL


def test_plain_stats_field_order(conn):
    assert stat_keys(conn) == expected(idle=False)


def test_plain_stats_with_idle_timeout(start_server):
    c = start_server("-o", "idle_timeout=100").connect()
    assert stat_keys(c) == expected(idle=True)


def test_stats_values_are_numbers_where_memcached_prints_numbers(conn):
    raw = conn.call("stats", until=b"END\r\n").decode()
    for line in raw.split("\r\n"):
        if not line.startswith("STAT "):
            continue
        _, name, value = line.split(" ", 2)
        if name in ("version", "libevent"):
            continue
        float(value)  # raises on anything that is not a number
