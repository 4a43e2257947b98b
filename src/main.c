/* SPDX-License-Identifier: BSD-3-Clause */
/* nodelay: start-up, signals and the shutdown order.
 *
 * Start: settings -> root check -> -d -> -u -> -P -> store -> listeners ->
 * workers -> -k -> readiness (sd_notify READY=1 when started by systemd;
 * under -d, the waiting parent exits 0).
 * Stop (SIGINT, or SIGTERM/SIGUSR1 = graceful; `shutdown` raises these):
 * workers stop accepting, close their connections and are joined; then the
 * listeners, the store (with -e: marked clean for a restore) and the pid
 * file go, and the process exits 0. */
#define _GNU_SOURCE /* strsignal */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef NODELAY_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "base/clock.h"
#include "server/daemon.h"
#include "event/event.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "net/listener.h"
#include "net/tls.h"
#include "settings/options.h"
#include "stats/registry.h"
#include "proto/sasl.h"
#include "proto/text/text.h"
#include "server/server.h"
#include "settings/settings.h"
#include "store/flash/flash_dev.h"
#include "store/store.h"
#include "base/version.h"
#include "watch/watch.h"

#define MAIN_EX_USAGE 64
#define MAIN_EX_OSERR 71
/* Descriptors beyond -c: listeners, worker loops and pipes, stdio, spare. */
#define MAIN_FD_RESERVE 64

/* memcached refuses to run as root unless -u says so; -u drops to that
 * user (-u root keeps root). Checked before -d so the message reaches the
 * terminal; *pw is NULL when nothing is to be dropped. */
static int main_check_user(const struct settings *s, struct passwd **pw)
{
    *pw = NULL;
    if (getuid() != 0 && geteuid() != 0)
        return 0;
    if (!s->username) {
        fprintf(stderr, "can't run as root without the -u switch\n");
        return -1;
    }
    struct passwd *p = getpwnam(s->username);
    if (!p) {
        fprintf(stderr, "can't find the user %s to switch to\n", s->username);
        return -1;
    }
    if (p->pw_uid != 0)
        *pw = p;
    return 0;
}

static int main_drop_privileges(const struct passwd *pw)
{
    if (!pw)
        return 0;
    if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0) {
        fprintf(stderr, "failed to assume identity of user %s: %s\n", pw->pw_name,
                strerror(errno));
        return -1;
    }
    return 0;
}

static void main_raise_limits(const struct settings *s)
{
    struct rlimit rl;
    if (s->enable_coredumps) {
        if (getrlimit(RLIMIT_CORE, &rl) == 0) {
            rl.rlim_cur = rl.rlim_max;
            if (setrlimit(RLIMIT_CORE, &rl) < 0)
                log_info("failed to raise the core file limit: %s", strerror(errno));
        }
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        /* the endpoint's connections are never taken from -c's */
        rlim_t want = (rlim_t)s->maxconns + MAIN_FD_RESERVE + (s->metrics_listen ? METRICS_FDS : 0);
        if (rl.rlim_cur < want) {
            rl.rlim_cur = want <= rl.rlim_max || rl.rlim_max == RLIM_INFINITY ? want : rl.rlim_max;
            if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
                log_info("file descriptor limit is below -c %d + %d%s; connections beyond it "
                         "will wait",
                         s->maxconns, MAIN_FD_RESERVE,
                         s->metrics_listen ? " + the metrics endpoint's" : "");
        }
    }
}

/* -P, with or without -d, as memcached 1.6.45: written after dropping to -u
 * and after forking, so it holds the final pid and belongs to the user that
 * must remove it at exit (a directory that user cannot write to fails here,
 * loudly, rather than at exit). Written to PATH.tmp and renamed, so a reader
 * never sees half a pid. A failure is reported and start-up goes on, as in
 * memcached. */
static int main_write_pid(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        log_error("Could not open the pid file %s for writing: name too long", path);
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        log_error("Could not open the pid file %s for writing: %s", tmp, strerror(errno));
        return -1;
    }
    int bad = fprintf(f, "%ld\n", (long)getpid()) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) < 0) {
        log_error("Could not write the pid file %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void main_remove_pid(const char *path)
{
    if (unlink(path) < 0 && errno != ENOENT)
        log_error("Could not remove the pid file %s: %s", path, strerror(errno));
}

/* Readiness and stop for systemd's Type=notify (a no-op without libsystemd
 * at build time, or when not started by systemd: sd_notify checks
 * NOTIFY_SOCKET). */
static void main_notify(const char *state)
{
#ifdef NODELAY_HAVE_SYSTEMD
    sd_notify(0, state);
#else
    (void)state;
#endif
}

/* -k as memcached: lock what is mapped now and what will be. Done once the
 * store, listeners and workers exist, so a memlock limit too small for them
 * fails here, with memcached's warning, instead of failing a later
 * allocation (a thread stack) and stopping start-up. */
static void main_lock_memory(const struct settings *s)
{
    if (s->lock_memory && mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
        fprintf(stderr, "warning: -k invalid, mlockall() failed: %s\n", strerror(errno));
}

/* SIGHUP: memcached 1.6 re-reads the -Y file and nothing else (its proxy
 * config too, which nodelay has not); a file that cannot be read leaves the
 * list it had. nodelay also re-reads the SASL password file under -S:
 * memcached reads that one at every authentication, nodelay at start-up
 * and here. Settings, certificates (`refresh_certs`) and the config file
 * are not reloaded. */
static void main_reload(const char *auth_file, bool sasl)
{
    if (auth_file) {
        if (text_auth_load(auth_file) < 0)
            log_error("could not reload the auth file %s: %s", auth_file, strerror(errno));
        else
            log_info("SIGHUP: auth file %s reloaded", auth_file);
    }
    if (sasl && sasl_reload() == 0)
        log_info("SIGHUP: SASL password file reloaded");
    if (!auth_file && !sasl)
        log_info("SIGHUP: nothing to reload (no -Y, no -S)");
}

/* Every signal we act on is blocked in all threads and taken by sigwait
 * here, so the workers never run a signal handler. */
static int main_wait_for_stop(const sigset_t *set, const char *auth_file, bool sasl,
                              bool *graceful)
{
    for (;;) {
        int sig;
        if (sigwait(set, &sig) != 0)
            return -1;
        switch (sig) {
        case SIGINT:
            log_info("Signal handled: %s.", strsignal(sig));
            *graceful = false;
            return 0;
        case SIGTERM: /* what systemd and init scripts send: let replies drain */
        case SIGUSR1:
            log_info("Graceful shutdown signal handled: %s.", strsignal(sig));
            *graceful = true;
            return 0;
        case SIGHUP:
            main_reload(auth_file, sasl);
            break;
        default:
            break;
        }
    }
}

/* memcached opens and locks every -o ext_path file at start-up (creating
 * it) and fails with these words when one cannot be: the same check,
 * before the flash tier opens them for use. Every lock is held until all
 * are taken, so one file named twice (or by two paths) fails as a file
 * another server holds. */
static int main_check_ext_files(const struct settings *s)
{
    struct settings_ext_file *files = calloc(SETTINGS_EXT_FILES_MAX, sizeof *files);
    if (!files)
        return -1;
    int fds[SETTINGS_EXT_FILES_MAX];
    int n = settings_ext_files(s, files, SETTINGS_EXT_FILES_MAX), rc = 0, held = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int fd = flash_dev_probe(files[i].path);
        if (fd < 0) {
            fprintf(stderr, "Failed to initialize external storage: failed to open file\n"
                            "extstore open: %s\n", strerror(-fd));
            rc = -1;
        } else {
            fds[held++] = fd;
        }
    }
    while (held > 0)
        close(fds[--held]);
    free(files);
    return rc;
}

int main(int argc, char **argv)
{
    struct settings s;
    settings_defaults(&s);
    int code = 0;
    if (settings_parse(&s, argc, argv, stdout, stderr, &code) != SETTINGS_RUN) {
        settings_release(&s);
        return code;
    }
    log_set_verbosity(SETTINGS_GET(&s, verbosity));
    /* -vvv logs every lookup, at the same points as `watch fetchers` */
    watch_set_stderr(SETTINGS_GET(&s, verbosity) >= LOG_LEVEL_DEBUG);
    watch_configure((size_t)s.worker_logbuf_size, (unsigned)s.watch_cpu_percent);
    if (s.metrics_listen && !metrics_available()) {
        log_error("-o metrics_listen=%s: this nodelay was built without libmicrohttpd "
                  "(install libmicrohttpd-dev and rebuild)", s.metrics_listen);
        settings_release(&s);
        return MAIN_EX_USAGE;
    }

    main_raise_limits(&s);
    struct passwd *pw;
    if (main_check_user(&s, &pw) < 0) {
        settings_release(&s);
        return MAIN_EX_USAGE;
    }
    /* getpwnam's result lives in static storage: keep what we need. */
    struct passwd user = pw ? *pw : (struct passwd){0};
    settings_print_notes(&s, stderr);
    struct options opt; /* what each module is given at setup */
    options_from_settings(&s, &opt);
    /* Certificates are checked before anything starts, as memcached does
     * (and before -d, so the message is seen). */
    if (s.ssl_enabled && tls_setup(&opt.tls, stderr) < 0) {
        settings_release(&s);
        return MAIN_EX_USAGE;
    }
    /* Under systemd's Type=notify the service is the process systemd
     * started: a fork would leave it watching a process that exits. So -d
     * (which Debian's memcached.conf carries) is ignored there. */
    if (s.daemonize && getenv("NOTIFY_SOCKET")) {
        log_info("-d ignored: started by systemd (NOTIFY_SOCKET), which keeps the server in "
                 "the foreground");
        s.daemonize = false;
    }
    /* -d: stdout and stderr go to the config file's `logfile` when there
     * is one (as Debian's start-memcached does), else stderr stays with -v;
     * the command returns once the server is ready, or with its failure */
    struct daemon daemon = DAEMON_INIT;
    if (s.daemonize && daemon_start(&daemon, SETTINGS_GET(&s, verbosity) > 0, s.logfile) < 0) {
        settings_release(&s);
        return MAIN_EX_OSERR;
    }
    if (main_drop_privileges(pw ? &user : NULL) < 0) {
        settings_release(&s);
        return MAIN_EX_OSERR;
    }

    /* Block the stop signals before any thread exists, so all inherit it. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A write past the file size limit (ulimit -f) fails with EFBIG, which
     * the flash tier counts as any failed write, where the signal's
     * default would kill the server */
    signal(SIGXFSZ, SIG_IGN);

    clock_setup();
    int rc = MAIN_EX_OSERR;
    if (s.auth_file && text_auth_load(s.auth_file) < 0) {
        fprintf(stderr, "Could not open authfile [%s] for reading: %s\n", s.auth_file,
                strerror(errno));
        settings_release(&s);
        return EXIT_FAILURE;
    }
    if (s.sasl && sasl_setup() < 0) {
        fprintf(stderr, "Failed to initialize SASL\n");
        settings_release(&s);
        return EXIT_FAILURE;
    }
    if (main_check_ext_files(&s) < 0) {
        settings_release(&s);
        return EXIT_FAILURE;
    }
    /* from here on every exit goes through out_settings, which removes it */
    bool pid_written = s.pid_file && main_write_pid(s.pid_file) == 0;
    struct server srv; /* the running server: its ops every session gets, its workers */
    if (server_init(&srv, &s, &opt.net, &opt.proto) < 0)
        goto out_settings;
    struct worker_pool *pool = &srv.pool;
    if (opt.store.initial_malloced)
        log_info("T_MEMD_INITIAL_MALLOC: %zu bytes of -m counted as already taken "
                 "(memcached's test hook)", opt.store.initial_malloced);
    if (store_create(&pool->store, &opt.store) != 0) {
        log_error("failed to create the store (-m %zu MB)", SETTINGS_GET(&s, maxbytes) >> 20);
        goto out_server;
    }
    if (registry_init(&pool->registry) < 0)
        goto out_store;
    if (listener_open_all(&opt.net, &pool->listeners) < 0)
        goto out_registry;
    if (s.udpport != 0)
        log_info("UDP is on (-U %d): keep it off networks where sources can be forged",
                 s.udpport);
    if (pool->listeners.n == 0)
        log_info("no listening sockets (-p 0 and no -s): nothing can connect");
    const char *port_file = getenv("MEMCACHED_PORT_FILENAME");
    if (port_file && listener_write_port_file(&pool->listeners, port_file) < 0)
        log_error("could not write %s: %s", port_file, strerror(errno));

    struct registry_entry *lentries = calloc(pool->listeners.n + 1, sizeof *lentries);
    if (!lentries)
        goto out_listeners;
    for (size_t i = 0; i < pool->listeners.n; i++) {
        struct listener *l = &pool->listeners.l[i];
        /* memcached shows a UDP socket as a connection always reading */
        lentries[i] = (struct registry_entry){.fd = l->fd,
                                              .state = l->udp ? REGISTRY_READ : REGISTRY_LISTENING,
                                              .last_cmd = clock_now()};
        snprintf(lentries[i].addr, sizeof lentries[i].addr, "%s", l->name);
        registry_add(&pool->registry, &lentries[i]);
        log_verbose("<%d server listening (%s)", l->fd,
                    strcmp(s.binding_protocol, "auto") == 0 ? "auto-negotiate"
                                                            : s.binding_protocol);
    }

    if (server_start(&srv) < 0)
        goto out_entries;
    /* The endpoint reads what the server runs (its workers' counters, the
     * backend it chose): started after it, so no scrape sees it half made. */
    if (s.metrics_listen) {
        char err[256];
        if (metrics_start(s.metrics_listen, &srv, err, sizeof err) < 0) {
            log_error("%s", err);
            server_stop(&srv, false);
            rc = MAIN_EX_USAGE;
            goto out_entries;
        }
    }
    main_lock_memory(&s);
    log_info("nodelay %s (memcached %s protocol): %d worker threads, %s%s, -m %zu MB",
             NODELAY_VERSION, NODELAY_PROTOCOL_VERSION, s.num_threads, event_backend(),
             event_ring_built() ? "" : " (this build has no io_uring: no liburing)",
             SETTINGS_GET(&s, maxbytes) >> 20);
    /* every listener is bound and every worker runs: clients can connect */
    main_notify("READY=1");
    daemon_ready(&daemon);

    bool graceful = false;
    main_wait_for_stop(&set, s.auth_file, s.sasl, &graceful);
    main_notify("STOPPING=1");
    metrics_stop(); /* before the workers it reads go away */
    server_stop(&srv, graceful);
    rc = 0;
out_entries:
    for (size_t i = 0; i < pool->listeners.n; i++)
        registry_remove(&pool->registry, &lentries[i]);
    free(lentries);
out_listeners:
    listener_close_all(&pool->listeners);
out_registry:
    registry_release(&pool->registry);
out_store:
    store_destroy(&pool->store);
out_server:
    server_release(&srv);
out_settings:
    if (s.auth_file)
        text_auth_unload();
    if (s.sasl)
        sasl_teardown();
    if (pid_written)
        main_remove_pid(s.pid_file);
    tls_teardown();
    settings_release(&s);
    return rc;
}
