/* Every setting, declared once: its C type, its name (memcached's `stats
 * settings` name where there is one), its default and what it means. The
 * struct, the defaults and `stats settings` are generated from this table;
 * settings.c maps memcached's command-line flags onto it.
 *
 * Modules get a const struct settings * at setup; only start-up and the few
 * run-time commands memcached has (verbosity, cache_memlimit) change it.
 */
#ifndef NODELAY_SETTINGS_H
#define NODELAY_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* X(type, name, default, help) */
#define SETTINGS(X)                                                                        \
    X(int, port, 11211, "TCP port (-p); 0 turns TCP off")                                  \
    X(int, udpport, 0, "UDP port (-U); 0 = off")                                           \
    X(const char *, inter, "127.0.0.1", "interfaces to listen on (-l)")                    \
    X(const char *, domain_socket, NULL, "unix socket path (-s)")                          \
    X(int, umask, 0700, "unix socket permissions (-a)")                                    \
    X(bool, shutdown_command, false, "allow the shutdown command (-A)")                    \
    X(size_t, maxbytes, 64u << 20, "item memory in bytes (-m, given in MiB)")              \
    X(bool, evictions, true, "evict when full; -M turns it off")                           \
    X(int, maxconns, 1024, "simultaneous connections (-c)")                                \
    X(int, verbosity, 0, "-v, -vv, -vvv")                                                  \
    X(int, num_threads, 4, "worker threads (-t)")                                          \
    X(int, reqs_per_event, 20, "requests per connection per wake-up (-R)")                 \
    X(bool, cas_enabled, true, "CAS on; -C turns it off")                                  \
    X(int, tcp_backlog, 1024, "listen backlog (-b)")                                       \
    X(const char *, binding_protocol, "auto", "ascii, binary or auto (-B)")               \
    X(size_t, item_size_max, 1u << 20, "largest item (-I)")                                \
    X(bool, flush_enabled, true, "flush_all allowed; -F turns it off")                     \
    X(bool, dump_enabled, true, "cachedump/metadump allowed; -X turns it off")             \
    X(bool, watch_enabled, true, "watch allowed; -W turns it off")                         \
    X(bool, sasl, false, "SASL authentication for the binary protocol (-S)")               \
    X(const char *, auth_file, NULL, "ascii authentication file (-Y)")                     \
    X(char, prefix_delimiter, ':', "stats detail prefix delimiter (-D)")                   \
    X(bool, detail_enabled, false, "stats detail on")                                      \
    X(int, hashpower_init, 0, "initial index size 2^n (-o hashpower)")                     \
    X(int, idle_timeout, 0, "close connections idle this many seconds (0 = never)")        \
    X(size_t, reply_queue_limit, 64u << 20,                                                \
      "bytes a connection may owe a client that does not read before it is cut off")       \
    X(size_t, client_mem_limit, 0,                                                         \
      "bytes all clients may be owed together (replies, read buffers); 0 = -m/2, >= 32 MiB") \
    X(bool, daemonize, false, "run as a daemon (-d)")                                      \
    X(const char *, pid_file, NULL, "pid file (-P, with -d)")                              \
    X(const char *, username, NULL, "user to run as (-u)")                                 \
    X(bool, lock_memory, false, "mlockall (-k)")                                           \
    X(bool, enable_coredumps, false, "raise the core limit (-r)")                          \
    X(const char *, memory_file, NULL, "restartable memory file (-e)")                     \
    /* Accepted for compatibility with memcached's slab allocator, LRU and \
     * threads; stored and reported in `stats settings`, no effect here. */ \
    X(double, growth_factor, 1.25, "slab growth factor (-f)")                              \
    X(int, chunk_size, 48, "smallest slab chunk (-n)")                                     \
    X(bool, maxconns_fast, true, "-o maxconns_fast: reject over -c at once")               \
    X(bool, hash_expand, true, "-o no_hashexpand turns index growth off")                   \
    X(bool, slab_reassign, true, "-o slab_reassign")                                       \
    X(int, slab_automove, 1, "-o slab_automove")                                           \
    X(double, slab_automove_ratio, 0.8, "-o slab_automove_ratio")                          \
    X(int, slab_automove_window, 30, "-o slab_automove_window")                            \
    X(int, slab_chunk_max, 512 * 1024, "-o slab_chunk_max (bytes)")                        \
    X(bool, lru_crawler, true, "-o lru_crawler")                                           \
    X(int, lru_crawler_sleep, 100, "-o lru_crawler_sleep (us)")                            \
    X(int, lru_crawler_tocrawl, 0, "-o lru_crawler_tocrawl")                               \
    X(int, tail_repair_time, 0, "-o tail_repair_time")                                     \
    X(const char *, hash_algorithm, "murmur3", "-o hash_algorithm")                        \
    X(bool, lru_maintainer_thread, true, "-o lru_maintainer")                              \
    X(bool, lru_segmented, true, "segmented LRU (off with -o no_modern)")                  \
    X(int, hot_lru_pct, 20, "-o hot_lru_pct")                                              \
    X(int, warm_lru_pct, 40, "-o warm_lru_pct")                                            \
    X(double, hot_max_factor, 0.2, "-o hot_max_factor")                                    \
    X(double, warm_max_factor, 2.0, "-o warm_max_factor")                                  \
    X(bool, temp_lru, false, "on when -o temporary_ttl is given")                          \
    X(int, temporary_ttl, 61, "-o temporary_ttl")                                          \
    X(int, watcher_logbuf_size, 256 * 1024, "-o watcher_logbuf_size (bytes)")              \
    X(int, worker_logbuf_size, 64 * 1024, "-o worker_logbuf_size (bytes)")                 \
    X(int, read_buf_mem_limit, 0, "-o read_buf_mem_limit (MB, 0 = unlimited)")             \
    X(bool, track_sizes, false, "-o track_sizes")                                          \
    X(bool, inline_ascii_response, false, "-o inline_ascii_resp")                          \
    X(bool, large_pages, false, "-L")                                                      \
    X(int, num_napi_ids, 0, "-N")                                                          \
    /* nodelay's own */                                                                    \
    X(char *, metrics_listen, NULL, "-o metrics_listen: Prometheus /metrics (off; owned)")  \
    X(char *, inter_alloc, NULL, "internal: owns `inter` when several -l were joined")

struct settings {
#define SETTINGS_FIELD(type, name, def, help) type name;
    SETTINGS(SETTINGS_FIELD)
#undef SETTINGS_FIELD
};

/* Fill *s with the defaults. */
void settings_defaults(struct settings *s);

/* Parse memcached's command line into *s (which holds the defaults).
 * Returns SETTINGS_RUN to start the server; otherwise the process should exit
 * with *exit_code: after -h/-V/-i (0) or after a bad flag, whose message was
 * printed to `err`. Help and version go to `out`. */
enum settings_result { SETTINGS_RUN, SETTINGS_EXIT };
enum settings_result settings_parse(struct settings *s, int argc, char **argv, FILE *out,
                                    FILE *err, int *exit_code);
/* Free what parsing allocated. */
void settings_release(struct settings *s);
void settings_print_help(FILE *out);

#endif
