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
    X(bool, daemonize, false, "run as a daemon (-d)")                                      \
    X(const char *, pid_file, NULL, "pid file (-P, with -d)")                              \
    X(const char *, username, NULL, "user to run as (-u)")                                 \
    X(bool, lock_memory, false, "mlockall (-k)")                                           \
    X(bool, enable_coredumps, false, "raise the core limit (-r)")                          \
    X(const char *, memory_file, NULL, "restartable memory file (-e)")

struct settings {
#define SETTINGS_FIELD(type, name, def, help) type name;
    SETTINGS(SETTINGS_FIELD)
#undef SETTINGS_FIELD
};

/* Fill *s with the defaults. */
void settings_defaults(struct settings *s);

#endif
