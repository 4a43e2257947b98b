/* SPDX-License-Identifier: BSD-3-Clause */
/* Every counter nodelay reports, declared once.
 *
 * One row per stat, in the order it is printed:
 *
 *   X(name, source, field, format, kind, when, metric, help)
 *
 *   name    what `stats` prints (memcached 1.6.45's name where it has one)
 *   source  WORKER  a per-worker counter: the row declares the field of
 *                   struct stats_thread (stats.h) and the sum over workers
 *           STORE   a field of struct store_stats (the store's own list)
 *           SNAP    a field of struct stats_snapshot the server fills
 *           CONST   memcached machinery nodelay does not have: `field` is
 *                   the value (0, or a build-time constant)
 *   field   the struct member (WORKER rows: the stats_thread field the row
 *           declares) or, for CONST, the value
 *   format  U64, I64, STR, TIMEVAL ("sec.usec", as rusage) or F2 (a double,
 *           "%.2f")
 *   kind    COUNTER  only grows; `stats reset` zeroes it
 *           CLOCK    only grows; `stats reset` leaves it (uptime, CPU time)
 *           GAUGE    a level; `stats reset` leaves it
 *           INFO     a string (version, backend)
 *   when    ALWAYS, or the setting without which memcached omits the row
 *   metric  its /metrics name: memcached_exporter's, so the exporter's
 *           dashboards work unchanged, with any fixed labels in braces
 *           (STATS_COMMAND); a counter exactly when it ends in _total, as
 *           promtool's lint asks (so uptime is a gauge); an INFO row is an
 *           info metric, 1 with the text in a label named after the row.
 *           NULL: nodelay_<name>, with the row's kind (metrics_page.c);
 *           a nodelay_ name here where that would not be Prometheus'
 *           (no unit, a prefix twice, a gauge in a counter's suffix)
 *   help    the metric's # HELP: memcached_exporter's words where metric
 *           names one of its metrics, else ours
 *
 * STATS_GENERAL is plain `stats` in memcached 1.6.45's exact order (no
 * proxy rows; the extstore rows only with ext_path, the TLS rows only with -Z); STATS_NODELAY
 * is `stats nodelay`. Text `stats`, binary STAT and the metrics endpoint
 * all walk the row arrays built from these lists (stats_table.c), so a new
 * counter is one line here and its increments.
 */
#ifndef NODELAY_STATS_TABLE_H
#define NODELAY_STATS_TABLE_H

/* memcached_exporter's commands_total{command,status}, from the rows it
 * reads (its set, cmd_set less the cas commands, is no row: metrics_page.c). */
#define STATS_COMMAND(command, status)                                                             \
    "memcached_commands_total{command=\"" command "\",status=\"" status "\"}"
#define STATS_HELP_COMMANDS                                                                        \
    "Total number of all requests broken down by command (get, set, etc.) and status."

/* Written on two lines per row only where the metric and help are long. */
#define STATS_GENERAL(X)                                                                           \
    X(pid, SNAP, pid, I64, INFO, ALWAYS, NULL, "process id")                                       \
    X(uptime, SNAP, uptime, U64, CLOCK, ALWAYS, "memcached_uptime_seconds",                        \
      "Number of seconds since the server started.")                                               \
    X(time, SNAP, time, I64, GAUGE, ALWAYS, "memcached_time_seconds",                              \
      "current UNIX time according to the server.")                                                \
    X(version, SNAP, version, STR, INFO, ALWAYS, "memcached_version",                              \
      "The version of this memcached server.")                                                     \
    X(libevent, SNAP, libevent, STR, INFO, ALWAYS, NULL,                                           \
      "the event backend (io_uring, epoll, poll)")                                                 \
    X(pointer_size, CONST, (8 * sizeof(void *)), U64, GAUGE, ALWAYS, NULL, "bits in a pointer")    \
    X(rusage_user, SNAP, rusage_user, TIMEVAL, CLOCK, ALWAYS,                                      \
      "memcached_process_user_cpu_seconds_total", "Accumulated user time for this process.")       \
    X(rusage_system, SNAP, rusage_system, TIMEVAL, CLOCK, ALWAYS,                                  \
      "memcached_process_system_cpu_seconds_total", "Accumulated system time for this process.")   \
    X(max_connections, SNAP, max_connections, U64, GAUGE, ALWAYS, NULL, "-c")                      \
    /* memcached's: open connections and listeners, less one */                                    \
    X(curr_connections, SNAP, curr_connections, U64, GAUGE, ALWAYS,                                \
      "memcached_current_connections", "Current number of open connections.")                      \
    /* listeners included */                                                                       \
    X(total_connections, SNAP, total_connections, U64, COUNTER, ALWAYS,                            \
      "memcached_connections_total",                                                               \
      "Total number of connections opened since the server started running.")                      \
    /* refused over -c */                                                                          \
    X(rejected_connections, WORKER, rejected_connections, U64, COUNTER, MAXCONNS_FAST,             \
      "memcached_connections_rejected_total",                                                      \
      "Total number of connections rejected due to hitting the -c limit in maxconns_fast mode.")   \
    X(connection_structures, SNAP, connection_structures, U64, GAUGE, ALWAYS, NULL,                \
      "descriptors ever used by a connection or listener")                                         \
    X(response_obj_oom, CONST, 0, U64, COUNTER, ALWAYS, NULL,                                      \
      "memcached's response objects: none")                                                        \
    X(response_obj_count, SNAP, response_obj_count, U64, GAUGE, ALWAYS, "nodelay_response_objects", \
      "client connections (each owns one reply queue)")                                            \
    X(response_obj_bytes, SNAP, reply_bytes, U64, GAUGE, ALWAYS, NULL, "memory reply queues hold") \
    X(read_buf_count, SNAP, read_buf_count, U64, GAUGE, ALWAYS, "nodelay_read_buffers",            \
      "read buffers held")                                                                         \
    X(read_buf_bytes, SNAP, read_buf_bytes, U64, GAUGE, ALWAYS, NULL, "bytes in read buffers")     \
    X(read_buf_bytes_free, CONST, 0, U64, GAUGE, ALWAYS, "nodelay_read_buf_free_bytes",            \
      "read buffers are returned, not pooled")                                                     \
    X(read_buf_oom, CONST, 0, U64, COUNTER, ALWAYS, NULL, "read buffer allocation failures")       \
    X(reserved_fds, SNAP, reserved_fds, U64, GAUGE, ALWAYS, NULL,                                  \
      "descriptors kept from connections (stdio, event loops, wake pipes, listeners)")             \
    X(cmd_get, WORKER, cmd_get, U64, COUNTER, ALWAYS, NULL,                                        \
      "keys requested by get/gets/mg/binary get")                                                  \
    X(cmd_set, WORKER, cmd_set, U64, COUNTER, ALWAYS, NULL, "storage commands")                    \
    X(cmd_flush, WORKER, cmd_flush, U64, COUNTER, ALWAYS, STATS_COMMAND("flush", "hit"),           \
      STATS_HELP_COMMANDS)                                                                         \
    X(cmd_touch, WORKER, cmd_touch, U64, COUNTER, ALWAYS, NULL, "keys touched (touch, gat, gats)") \
    X(cmd_meta, WORKER, cmd_meta, U64, COUNTER, ALWAYS, NULL, "meta commands")                     \
    X(get_hits, WORKER, get_hits, U64, COUNTER, ALWAYS, STATS_COMMAND("get", "hit"),               \
      STATS_HELP_COMMANDS)                                                                         \
    X(get_misses, WORKER, get_misses, U64, COUNTER, ALWAYS, STATS_COMMAND("get", "miss"),          \
      STATS_HELP_COMMANDS)                                                                         \
    X(get_expired, STORE, get_expired, U64, COUNTER, ALWAYS, NULL,                                 \
      "reads that found an expired item")                                                          \
    X(get_flushed, STORE, get_flushed, U64, COUNTER, ALWAYS, NULL,                                 \
      "reads that found a flushed item")                                                           \
    X(get_extstore, STORE, get_extstore, U64, COUNTER, EXTSTORE, NULL,                             \
      "reads served from flash")                                                                   \
    X(get_aborted_extstore, STORE, get_aborted_extstore, U64, COUNTER, EXTSTORE, NULL,             \
      "flash reads whose session went first")                                                      \
    X(get_oom_extstore, STORE, get_oom_extstore, U64, COUNTER, EXTSTORE, NULL,                     \
      "flash reads with no room to copy the item back into RAM")                                   \
    X(recache_from_extstore, STORE, recache_from_extstore, U64, COUNTER, EXTSTORE, NULL,           \
      "flash items copied back into RAM")                                                          \
    X(miss_from_extstore, STORE, miss_from_extstore, U64, COUNTER, EXTSTORE, NULL,                 \
      "flash reads that found the item gone or bad")                                               \
    X(badcrc_from_extstore, STORE, badcrc_from_extstore, U64, COUNTER, EXTSTORE, NULL,             \
      "flash reads whose checksum failed")                                                         \
    X(delete_misses, WORKER, delete_misses, U64, COUNTER, ALWAYS, STATS_COMMAND("delete", "miss"), \
      STATS_HELP_COMMANDS)                                                                         \
    X(delete_hits, WORKER, delete_hits, U64, COUNTER, ALWAYS, STATS_COMMAND("delete", "hit"),      \
      STATS_HELP_COMMANDS)                                                                         \
    X(incr_misses, WORKER, incr_misses, U64, COUNTER, ALWAYS, STATS_COMMAND("incr", "miss"),       \
      STATS_HELP_COMMANDS)                                                                         \
    X(incr_hits, WORKER, incr_hits, U64, COUNTER, ALWAYS, STATS_COMMAND("incr", "hit"),            \
      STATS_HELP_COMMANDS)                                                                         \
    X(decr_misses, WORKER, decr_misses, U64, COUNTER, ALWAYS, STATS_COMMAND("decr", "miss"),       \
      STATS_HELP_COMMANDS)                                                                         \
    X(decr_hits, WORKER, decr_hits, U64, COUNTER, ALWAYS, STATS_COMMAND("decr", "hit"),            \
      STATS_HELP_COMMANDS)                                                                         \
    X(cas_misses, WORKER, cas_misses, U64, COUNTER, ALWAYS, STATS_COMMAND("cas", "miss"),          \
      STATS_HELP_COMMANDS)                                                                         \
    X(cas_hits, WORKER, cas_hits, U64, COUNTER, ALWAYS, STATS_COMMAND("cas", "hit"),               \
      STATS_HELP_COMMANDS)                                                                         \
    X(cas_badval, WORKER, cas_badval, U64, COUNTER, ALWAYS, STATS_COMMAND("cas", "badval"),        \
      STATS_HELP_COMMANDS)                                                                         \
    X(touch_hits, WORKER, touch_hits, U64, COUNTER, ALWAYS, STATS_COMMAND("touch", "hit"),         \
      STATS_HELP_COMMANDS)                                                                         \
    X(touch_misses, WORKER, touch_misses, U64, COUNTER, ALWAYS, STATS_COMMAND("touch", "miss"),    \
      STATS_HELP_COMMANDS)                                                                         \
    X(store_too_large, WORKER, store_too_large, U64, COUNTER, ALWAYS,                              \
      "memcached_item_too_large_total",                                                            \
      "The number of times an item exceeded the max-item-size when being stored.")                 \
    X(store_no_memory, WORKER, store_no_memory, U64, COUNTER, ALWAYS,                              \
      "memcached_item_no_memory_total",                                                            \
      "The number of times an item could not be stored due to no more memory.")                    \
    X(auth_cmds, WORKER, auth_cmds, U64, COUNTER, ALWAYS, NULL, "authentication attempts")         \
    X(auth_errors, WORKER, auth_errors, U64, COUNTER, ALWAYS, NULL, "failed authentications")      \
    X(idle_kicks, WORKER, idle_kicks, U64, COUNTER, IDLE_TIMEOUT, NULL,                            \
      "connections closed by idle_timeout")                                                        \
    X(bytes_read, WORKER, bytes_read, U64, COUNTER, ALWAYS, "memcached_read_bytes_total",          \
      "Total number of bytes read by this server from network.")                                   \
    X(bytes_written, WORKER, bytes_written, U64, COUNTER, ALWAYS, "memcached_written_bytes_total", \
      "Total number of bytes sent by this server to network.")                                     \
    X(limit_maxbytes, STORE, limit_maxbytes, U64, GAUGE, ALWAYS, "memcached_limit_bytes",          \
      "Number of bytes this server is allowed to use for storage.")                                \
    /* 1 unless accept is paused (out of descriptors); the pauses */                               \
    X(accepting_conns, SNAP, accepting_conns, U64, GAUGE, ALWAYS,                                  \
      "memcached_accepting_connections", "The server is currently accepting new connections.")     \
    X(listen_disabled_num, SNAP, listen_disabled_num, U64, COUNTER, ALWAYS,                        \
      "memcached_connections_listener_disabled_total",                                             \
      "Number of times the server has hit its connections limit and disabled its listener.")       \
    X(time_in_listen_disabled_us, CONST, 0, U64, COUNTER, ALWAYS, NULL, "not measured")            \
    X(threads, SNAP, threads, U64, GAUGE, ALWAYS, NULL, "worker threads (-t)")                     \
    /* the -R budget spent with requests still buffered */                                         \
    X(conn_yields, WORKER, conn_yields, U64, COUNTER, ALWAYS,                                      \
      "memcached_connections_yielded_total",                                                       \
      "Total number of connections yielded running due to hitting the -R limit.")                  \
    X(hash_power_level, STORE, hash_power_level, U64, GAUGE, ALWAYS, NULL,                         \
      "memcached's hash power: log2 of index buckets x 4")                                         \
    X(hash_bytes, STORE, hash_bytes, U64, GAUGE, ALWAYS, NULL, "index memory, outside -m")         \
    X(hash_is_expanding, STORE, hash_is_expanding, U64, GAUGE, ALWAYS, NULL,                       \
      "1 while the index grows")                                                                   \
    /* memcached's slab mover: segments have no slabs to move */                                   \
    X(slab_reassign_rescues, CONST, 0, U64, COUNTER, SLAB_REASSIGN, NULL, "no slab mover")         \
    X(slab_reassign_chunk_rescues, CONST, 0, U64, COUNTER, SLAB_REASSIGN, NULL, "no slab mover")   \
    X(slab_reassign_inline_reclaim, CONST, 0, U64, COUNTER, SLAB_REASSIGN, NULL, "no slab mover")  \
    X(slab_reassign_busy_items, CONST, 0, U64, COUNTER, SLAB_REASSIGN, NULL, "no slab mover")      \
    X(slab_reassign_busy_deletes, CONST, 0, U64, COUNTER, SLAB_REASSIGN, NULL, "no slab mover")    \
    X(slab_reassign_busy_nomem, CONST, 0, U64, COUNTER, SLAB_REASSIGN, NULL, "no slab mover")      \
    X(slab_reassign_last_busy_status, CONST, 0, U64, GAUGE, SLAB_REASSIGN, NULL, "no slab mover")  \
    X(slab_reassign_running, CONST, 0, U64, GAUGE, SLAB_REASSIGN, NULL, "no slab mover")           \
    X(slabs_moved, CONST, 0, U64, COUNTER, SLAB_REASSIGN, NULL, "no slab mover")                   \
    /* `lru_crawler crawl` runs on the housekeeper */                                              \
    X(lru_crawler_running, STORE, lru_crawler_running, U64, GAUGE, LRU_CRAWLER, NULL,              \
      "1 while a lru_crawler crawl runs")                                                          \
    /* crawls, metadumps and mgdumps */                                                            \
    X(lru_crawler_starts, STORE, lru_crawler_starts, U64, COUNTER, LRU_CRAWLER,                    \
      "memcached_lru_crawler_starts_total", "Times an LRU crawler was started.")                   \
    X(lru_maintainer_juggles, CONST, 0, U64, COUNTER, LRU_MAINTAINER, NULL, "no LRU to maintain")  \
    X(malloc_fails, CONST, 0, U64, COUNTER, ALWAYS, NULL, "item memory is preallocated")           \
    X(log_worker_dropped, SNAP, log_worker_dropped, U64, COUNTER, ALWAYS, NULL,                    \
      "watch events a full per-thread ring dropped")                                               \
    X(log_worker_written, SNAP, log_worker_written, U64, COUNTER, ALWAYS, NULL,                    \
      "watch events written to the per-thread rings")                                              \
    X(log_watcher_skipped, SNAP, log_watcher_skipped, U64, COUNTER, ALWAYS, NULL,                  \
      "watch lines a watcher lost (its buffer or a ring full)")                                    \
    X(log_watcher_sent, SNAP, log_watcher_sent, U64, COUNTER, ALWAYS, NULL,                        \
      "watch lines placed in a watcher buffer")                                                    \
    X(log_watchers, SNAP, log_watchers, U64, GAUGE, ALWAYS, NULL, "connections running watch")     \
    X(extstore_memory_pressure, SNAP, extstore_memory_pressure, F2, GAUGE, EXTSTORE, NULL,         \
      "percent of RAM pages held by classes below ext_item_size, which flash cannot relieve")      \
    X(extstore_compact_lost, STORE, extstore_compact_lost, U64, COUNTER, EXTSTORE, NULL,           \
      "live flash items compaction could not keep")                                                \
    X(extstore_compact_rescues, STORE, extstore_compact_rescues, U64, COUNTER, EXTSTORE, NULL,     \
      "flash items compaction rewrote")                                                            \
    X(extstore_compact_resc_cold, CONST, 0, U64, COUNTER, EXTSTORE, NULL, "no cold LRU rescue")    \
    X(extstore_compact_resc_old, CONST, 0, U64, COUNTER, EXTSTORE, NULL, "no old-page rescue")     \
    X(extstore_compact_skipped, STORE, extstore_compact_skipped, U64, COUNTER, EXTSTORE, NULL,     \
      "unread flash items compaction dropped")                                                     \
    X(extstore_page_allocs, STORE, extstore_page_allocs, U64, COUNTER, EXTSTORE, NULL,             \
      "flash segments opened for writing")                                                         \
    X(extstore_page_evictions, STORE, extstore_page_evictions, U64, COUNTER, EXTSTORE, NULL,       \
      "flash segments dropped for room with items live")                                           \
    X(extstore_page_reclaims, STORE, extstore_page_reclaims, U64, COUNTER, EXTSTORE, NULL,         \
      "flash segments freed with nothing live")                                                    \
    X(extstore_pages_free, STORE, extstore_pages_free, U64, GAUGE, EXTSTORE, NULL,                 \
      "flash pages free")                                                                          \
    X(extstore_pages_used, STORE, extstore_pages_used, U64, GAUGE, EXTSTORE, NULL,                 \
      "flash pages in use")                                                                        \
    X(extstore_objects_evicted, STORE, extstore_objects_evicted, U64, COUNTER, EXTSTORE, NULL,     \
      "flash items lost with a dropped segment")                                                   \
    X(extstore_objects_read, STORE, extstore_objects_read, U64, COUNTER, EXTSTORE, NULL,           \
      "items read from flash")                                                                     \
    X(extstore_objects_written, STORE, extstore_objects_written, U64, COUNTER, EXTSTORE, NULL,     \
      "items written to flash")                                                                    \
    X(extstore_objects_used, STORE, extstore_objects_used, U64, GAUGE, EXTSTORE, NULL,             \
      "items on flash")                                                                            \
    X(extstore_bytes_evicted, STORE, extstore_bytes_evicted, U64, COUNTER, EXTSTORE, NULL,         \
      "bytes of flash items lost with a dropped segment")                                          \
    X(extstore_bytes_written, STORE, extstore_bytes_written, U64, COUNTER, EXTSTORE, NULL,         \
      "item bytes written to flash")                                                               \
    X(extstore_bytes_read, STORE, extstore_bytes_read, U64, COUNTER, EXTSTORE, NULL,               \
      "item bytes read from flash")                                                                \
    X(extstore_bytes_used, STORE, extstore_bytes_used, U64, GAUGE, EXTSTORE, NULL,                 \
      "bytes of live items on flash")                                                              \
    X(extstore_bytes_fragmented, STORE, extstore_bytes_fragmented, U64, GAUGE, EXTSTORE, NULL,     \
      "bytes of flash segments in use not held by live items")                                     \
    X(extstore_limit_maxbytes, STORE, extstore_limit_maxbytes, U64, GAUGE, EXTSTORE, NULL,         \
      "flash bytes configured")                                                                    \
    X(extstore_io_queue, STORE, extstore_io_queue, U64, GAUGE, EXTSTORE, NULL,                     \
      "flash segments waiting for their write")                                                    \
    X(ssl_new_sessions, WORKER, ssl_new_sessions, U64, COUNTER, SSL_SESSION_CACHE, NULL,           \
      "TLS sessions put in the session cache")                                                     \
    X(ssl_handshake_errors, WORKER, ssl_handshake_errors, U64, COUNTER, SSL, NULL,                 \
      "TLS handshakes that failed or timed out")                                                   \
    X(ssl_proto_errors, WORKER, ssl_proto_errors, U64, COUNTER, SSL, NULL,                         \
      "TLS errors after the handshake")                                                            \
    X(time_since_server_cert_refresh, SNAP, cert_age, U64, GAUGE, SSL,                             \
      "nodelay_server_cert_age_seconds",                                                           \
      "seconds since the certificate and key were loaded (start or refresh_certs)")                \
    X(unexpected_napi_ids, CONST, 0, U64, COUNTER, ALWAYS, NULL, "no NAPI id steering")            \
    X(round_robin_fallback, CONST, 0, U64, COUNTER, ALWAYS, NULL, "no NAPI id steering")           \
    X(bytes, STORE, bytes, U64, GAUGE, ALWAYS, "memcached_current_bytes",                          \
      "Current number of bytes used to store items.")                                              \
    X(curr_items, STORE, curr_items, U64, GAUGE, ALWAYS, "memcached_current_items",                \
      "Current number of items stored by this instance.")                                          \
    X(total_items, STORE, total_items, U64, COUNTER, ALWAYS, "memcached_items_total",              \
      "Total number of items stored during the life of this instance.")                            \
    X(slab_global_page_pool, CONST, 0, U64, GAUGE, ALWAYS, NULL, "no slab page pool")              \
    X(expired_unfetched, STORE, expired_unfetched, U64, COUNTER, ALWAYS, NULL,                     \
      "expired items reclaimed that were never fetched")                                           \
    X(evicted_unfetched, STORE, evicted_unfetched, U64, COUNTER, ALWAYS, NULL,                     \
      "evicted items that were never fetched")                                                     \
    X(evicted_active, STORE, evicted_active, U64, COUNTER, LRU_MAINTAINER, NULL,                   \
      "evicted items that were accessed recently")                                                 \
    X(evictions, STORE, evictions, U64, COUNTER, ALWAYS, "memcached_items_evicted_total",          \
      "Total number of valid items removed from cache to free memory for new items.")              \
    /* stores into expired or dead space */                                                        \
    X(reclaimed, STORE, reclaimed, U64, COUNTER, ALWAYS, "memcached_items_reclaimed_total",        \
      "Total number of times an entry was stored using memory from an expired entry.")             \
    /* what `lru_crawler crawl` unlinked and examined */                                          \
    X(crawler_reclaimed, STORE, crawler_reclaimed, U64, COUNTER, ALWAYS,                           \
      "memcached_lru_crawler_reclaimed_total", "Total items freed by LRU Crawler.")                \
    X(crawler_items_checked, STORE, crawler_items_checked, U64, COUNTER, ALWAYS,                   \
      "memcached_lru_crawler_items_checked_total", "Total items examined by LRU Crawler.")         \
    X(lrutail_reflocked, CONST, 0, U64, COUNTER, ALWAYS, NULL, "no LRU tail")                      \
    /* HOT, WARM, COLD are where an item's segment stands (docs/store.md "Size classes"): sealed   \
     * onto probation (to cold), kept by an eviction walk (to warm, within it) */                  \
    X(moves_to_cold, STORE, moves_to_cold, U64, COUNTER, LRU_MAINTAINER,                           \
      "memcached_lru_crawler_moves_to_cold_total",                                                 \
      "Total number of items moved from HOT/WARM to COLD LRU's.")                                  \
    X(moves_to_warm, STORE, moves_to_warm, U64, COUNTER, LRU_MAINTAINER,                           \
      "memcached_lru_crawler_moves_to_warm_total",                                                 \
      "Total number of items moved from COLD to WARM LRU.")                                        \
    X(moves_within_lru, STORE, moves_within_lru, U64, COUNTER, LRU_MAINTAINER,                     \
      "memcached_lru_crawler_moves_within_lru_total",                                              \
      "Total number of items reshuffled within HOT or WARM LRU's.")                                \
    X(direct_reclaims, CONST, 0, U64, COUNTER, LRU_MAINTAINER, "memcached_direct_reclaims_total",  \
      "Times worker threads had to directly reclaim or evict items.")                              \
    X(lru_bumps_dropped, CONST, 0, U64, COUNTER, LRU_MAINTAINER, NULL, "no segmented LRU")

/* `stats nodelay`: nodelay's own. */
#define STATS_NODELAY(X)                                                                           \
    X(extstore_device_bytes_written, STORE, extstore_device_bytes_written, U64, COUNTER, EXTSTORE, NULL,\
      "bytes written to the flash device (aligned segments)")                                      \
    X(extstore_value_bytes_moved, STORE, extstore_value_bytes_moved, U64, COUNTER, EXTSTORE, NULL, \
      "value bytes moved from RAM to flash, counted as they reach the device (write "             \
      "amplification: device bytes over these)")                                                   \
    X(extstore_device_bytes_read, STORE, extstore_device_bytes_read, U64, COUNTER, EXTSTORE, NULL, \
      "bytes read from the flash device (whole blocks around each item read)")                     \
    X(extstore_write_errors, STORE, extstore_write_errors, U64, COUNTER, EXTSTORE, NULL,           \
      "flash segment writes that failed (their items are misses)")                                 \
    X(extstore_read_errors, STORE, extstore_read_errors, U64, COUNTER, EXTSTORE, NULL,             \
      "flash reads that failed or came back short (a miss each)")                                  \
    X(extstore_ring_reads, STORE, extstore_ring_reads, U64, COUNTER, EXTSTORE, NULL,               \
      "flash device reads started on the worker's own io_uring ring")                              \
    X(extstore_pool_reads, STORE, extstore_pool_reads, U64, COUNTER, EXTSTORE, NULL,               \
      "flash device reads handed to the read threads (no ring, or it refused)")                    \
    X(extstore_skipped_full, STORE, extstore_skipped_full, U64, COUNTER, EXTSTORE, NULL,           \
      "items evicted because no flash write buffer was free")                                      \
    X(extstore_slots_dropped, STORE, extstore_slots_dropped, U64, COUNTER, EXTSTORE, NULL,         \
      "index slots cleared naming a gone or bad flash item")                                       \
    X(extstore_index_dropped, STORE, extstore_index_dropped, U64, COUNTER, EXTSTORE, NULL,         \
      "flash slots an index growth could not keep")                                                \
    X(extstore_tag_dropped, STORE, extstore_tag_dropped, U64, COUNTER, EXTSTORE, NULL,             \
      "flash slots dropped under a written key's tag (its own older copy, or another key's)")      \
    X(nodelay_version, SNAP, nodelay_version, STR, INFO, ALWAYS, NULL, "nodelay's own version")    \
    X(protocol_version, SNAP, version, STR, INFO, ALWAYS, NULL,                                    \
      "the memcached protocol version served")                                                     \
    X(event_backend, SNAP, libevent, STR, INFO, ALWAYS, NULL,                                      \
      "the event backend (io_uring/epoll/poll)")                                                   \
    X(read_calls, WORKER, read_calls, U64, COUNTER, ALWAYS, NULL, "read(2)/recv calls")            \
    X(write_calls, WORKER, write_calls, U64, COUNTER, ALWAYS, NULL, "writev/sendmsg calls")        \
    X(direct_reads, WORKER, direct_reads, U64, COUNTER, ALWAYS, NULL,                              \
      "reads straight into item memory")                                                           \
    X(multishot_receives, WORKER, multishot_receives, U64, COUNTER, ALWAYS, NULL,                  \
      "io_uring multishot receives started (each serves an idle connection's requests)")           \
    X(multishot_kept_bytes, WORKER, multishot_kept_bytes, U64, COUNTER, ALWAYS, NULL,              \
      "bytes a multishot receive delivered while its connection could not run them (kept in its read buffer)") \
    X(quickacks, WORKER, quickacks, U64, COUNTER, ALWAYS, NULL,                                    \
      "TCP_QUICKACK set after a read: a partial request, or no reply")                             \
    X(flash_waits, WORKER, flash_waits, U64, COUNTER, ALWAYS, NULL,                                \
      "requests that stopped to wait for flash reads (run again once they completed)")             \
    X(slow_reader_kills, WORKER, slow_reader_kills, U64, COUNTER, ALWAYS, NULL,                    \
      "connections cut off for an unbounded reply queue")                                          \
    X(nodelay_failures, WORKER, nodelay_failures, U64, COUNTER, ALWAYS,                            \
      "nodelay_tcp_nodelay_failures_total",                                                        \
      "accepted sockets where TCP_NODELAY failed")                                                 \
    /* the worker counter behind total_connections (which adds the listeners) */                   \
    X(accepted_connections, WORKER, total_connections, U64, COUNTER, ALWAYS, NULL,                 \
      "client connections accepted")                                                               \
    X(reply_queue_bytes, SNAP, reply_bytes, U64, GAUGE, ALWAYS, NULL, "memory reply queues hold")  \
    X(read_buffer_bytes, SNAP, read_buf_bytes, U64, GAUGE, ALWAYS, NULL, "bytes in read buffers")  \
    X(index_bytes, STORE, hash_bytes, U64, GAUGE, ALWAYS, NULL, "index memory, outside -m")        \
    X(seg_size, STORE, seg_size, U64, GAUGE, ALWAYS, "nodelay_seg_size_bytes", "bytes per segment")\
    X(seg_total, STORE, seg_total, U64, GAUGE, ALWAYS, "nodelay_seg_limit",                        \
      "segments that fit in -m")                                                                   \
    X(seg_used, STORE, seg_used, U64, GAUGE, ALWAYS, NULL, "segments holding items")               \
    X(seg_evicted, STORE, seg_evicted, U64, COUNTER, ALWAYS, NULL,                                 \
      "segments reclaimed by eviction")                                                            \
    X(seg_expired, STORE, seg_expired, U64, COUNTER, ALWAYS, NULL,                                 \
      "segments reclaimed whole because all expired")                                              \
    X(items_reinserted, STORE, items_reinserted, U64, COUNTER, ALWAYS, NULL,                       \
      "live, accessed items carried forward at eviction")                                          \
    X(dead_bytes, STORE, dead_bytes, U64, GAUGE, ALWAYS, NULL,                                     \
      "overwritten/deleted bytes awaiting reclaim")                                                \
    X(upload_bytes, STORE, upload_bytes, U64, GAUGE, ALWAYS, NULL,                                 \
      "bytes held by values still arriving (outside -m)")                                          \
    X(upload_limit, STORE, upload_limit, U64, GAUGE, ALWAYS, "nodelay_upload_limit_bytes",         \
      "the bound on large values still arriving")                                                  \
    X(uploads_refused, STORE, uploads_refused, U64, COUNTER, ALWAYS, NULL,                         \
      "large uploads refused at upload_limit")                                                     \
    X(uploads_cut, STORE, uploads_cut, U64, COUNTER, ALWAYS, NULL,                                 \
      "stalled uploads cut off to make room for new ones")                                         \
    X(sets_direct, WORKER, sets_direct, U64, COUNTER, ALWAYS, NULL,                                \
      "values not all read yet, reserved in a segment as the socket held the rest (no staging)") \
    /* how the cache started (-e, store/restore.c) */                                              \
    X(restore_mode, SNAP, restore_mode, STR, INFO, ALWAYS, NULL,                                   \
      "how the cache started: none, new, graceful, crash, discarded")                              \
    X(restored_items, STORE, restored_items, U64, GAUGE, ALWAYS, NULL,                             \
      "items restored from the -e file")                                                           \
    X(restore_discarded_expired, STORE, restore_discarded_expired, U64, GAUGE, ALWAYS, NULL,       \
      "items in the -e file found expired or flushed at the restore")                              \
    X(restore_discarded_corrupt, STORE, restore_discarded_corrupt, U64, GAUGE, ALWAYS, NULL,       \
      "items in the -e file failing their checksum, or damaged")                                   \
    X(restore_ms, STORE, restore_ms, U64, GAUGE, ALWAYS, NULL, "time the restore took")            \
    X(restore_cpu_ms, STORE, restore_cpu_ms, U64, GAUGE, ALWAYS, NULL,                             \
      "CPU time the restore used, all threads")

/* Per memcached size class: `stats items`, `stats slabs`. */
#include "stats/stats_table_classes.h"
/* Per flash page: `stats extstore`. */
#include "stats/stats_table_extstore.h"

#endif
