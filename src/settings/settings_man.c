/* SPDX-License-Identifier: BSD-3-Clause */
/* nodelay(1) in groff -man, generated from the same table as -h and `stats
 * settings` (so the three cannot drift), plus the worker counters of
 * stats/stats.h and the differences from memcached. `nodelay --man` prints
 * it; `make man` writes build/nodelay.1. */
#include <string.h>

#include "settings/settings_internal.h"
#include "stats/stats_output.h"
#include "base/version.h"

/* Text with groff's specials escaped; "\n" in help text becomes a blank. */
static void settings_man_text(FILE *out, const char *s)
{
    bool bol = true;
    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", out);
        bol = false;
        if (*s == '-')
            fputs("\\-", out);
        else if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '\n')
            fputc(' ', out);
        else
            fputc(*s, out);
    }
}

static void settings_man_option(FILE *out, const struct settings_row *r)
{
    const char *arg = r->arg;
    bool optional = arg && arg[0] == '?';
    if (optional)
        arg++;
    fputs(".TP\n", out);
    if (r->oname) {
        fputs("\\fB", out);
        settings_man_text(out, r->oname);
        fputs("\\fR", out);
        if (arg && *arg) {
            fputs(optional ? "[=\\fI" : "=\\fI", out);
            settings_man_text(out, arg);
            fputs(optional ? "\\fR]" : "\\fR", out);
        }
    } else {
        if (r->sopt)
            fprintf(out, "\\fB\\-%c\\fR%s", r->sopt, r->lopt ? ", " : "");
        if (r->lopt) {
            fputs("\\fB\\-\\-", out);
            settings_man_text(out, r->lopt);
            fputs("\\fR", out);
        }
        if (arg && *arg && !optional) {
            fputs(r->lopt ? "=\\fI" : " \\fI", out);
            settings_man_text(out, arg);
            fputs("\\fR", out);
        }
    }
    fputc('\n', out);
    if (r->note)
        fputs("(compat) ", out);
    settings_man_text(out, r->help);
    fputc('\n', out);
    if (r->note) {
        fputs("Accepted but inert: ", out);
        settings_man_text(out, r->note);
        fputs(".\n", out);
    }
}

static const char *const settings_man_differences[] = {
    "nodelay listens on 127.0.0.1 unless -l says otherwise; memcached listens on all "
    "interfaces.",
    "UDP is off unless -U asks for it.",
    "Every accepted socket gets TCP_NODELAY; replies to what one read brought leave in one "
    "writev; nodelay never corks a socket (no kernel corking option on any system).",
    "Memory is one store of fixed-size segments: -m is an exact cap, there are no slab "
    "classes to rebalance, and eviction works on whole segments with a second chance for "
    "items read since.",
    "Memory owed to clients is bounded: all together by -o client_mem_limit (past half of "
    "it, those owing most are not read, and a request line that would take its read buffer "
    "past 16 KiB and the client's share is answered "
    "SERVER_ERROR out of memory reading request and its connection closed); a client's replies "
    "pause once it owes 4 MiB, and it is cut "
    "off only when it takes no byte for 60 s, or owes more than -o reply_queue_limit while "
    "its socket takes no more.",
    "Numbers that memcached reads as 0 (atoi) are refused with a message.",
    "-Z turns TLS on (OpenSSL); the replies to one read leave as one run of TLS records in one "
    "write. -o proxy_* is refused: there is no built-in proxy.",
};

/* The sections after the generated ones: what a packaged server reads and
 * writes, what each signal does (main.c's main_wait_for_stop), the exit
 * codes of main.c, daemon.c and the settings, and the licence. */
static const char settings_man_tail[] =
    ".SH ENVIRONMENT\n"
    ".TP\n\\fBNOTIFY_SOCKET\\fR\n"
    "Set by systemd for a \\fBType=notify\\fR service: nodelay sends READY=1 once every "
    "listener is bound and every worker runs, STOPPING=1 at a stop signal, and ignores "
    "\\fB\\-d\\fR.\n"
    ".TP\n\\fBMEMCACHED_PORT_FILENAME\\fR\n"
    "A file to write the bound ports to (\\fBTCP INET: \\fIport\\fR lines), as memcached; "
    "useful with \\fB\\-p \\-1\\fR.\n"
    ".TP\n\\fBMEMCACHED_SASL_PWDB\\fR\n"
    "The SASL password file read under \\fB\\-S\\fR.\n"
    ".SH FILES\n"
    ".TP\n\\fI/etc/nodelay.conf\\fR\n"
    "The packaged configuration, in /etc/memcached.conf's format, read by the unit through "
    "\\fB\\-\\-config\\fR. \\fI/etc/nodelay_NAME.conf\\fR is instance \\fINAME\\fR's.\n"
    ".TP\n\\fI/lib/systemd/system/nodelay.service\\fR, \\fInodelay@.service\\fR\n"
    "The units (\\fBType=notify\\fR; \\fBsystemctl reload\\fR sends SIGHUP); the template "
    "runs one server per instance. \\fBmake install\\fR puts them under "
    "\\fIPREFIX\\fR/lib/systemd/system.\n"
    ".TP\n\\fI/run/nodelay\\fR\n"
    "Made by the tmpfiles.d entry for user \\fBnodelay\\fR: where the pid file "
    "(\\fB\\-P\\fR) and a unix socket (\\fB\\-s\\fR) may go.\n"
    ".TP\n\\fI/dev/shm/nodelay.mem\\fR\n"
    "The \\fB\\-e\\fR memory file the packaged configuration suggests (commented out): on "
    "tmpfs, it keeps the cache across restarts and crashes, not reboots. The file is sized "
    "for \\fB\\-m\\fR, must belong to the server's user, and one server at a time may use "
    "it.\n"
    ".SH SIGNALS\n"
    ".TP\n\\fBSIGTERM\\fR, \\fBSIGUSR1\\fR\n"
    "Graceful stop: stop accepting, give clients up to 2 s to take the replies they are "
    "owed, close, remove the pid file, exit 0. With \\fB\\-e\\fR the memory file is marked "
    "clean. SIGUSR1 is memcached's graceful stop; \\fBshutdown graceful\\fR raises it.\n"
    ".TP\n\\fBSIGINT\\fR\n"
    "The same without the 2 s for replies; \\fBshutdown\\fR raises it. The \\fB\\-e\\fR "
    "file is kept and restored as after SIGTERM.\n"
    ".TP\n\\fBSIGHUP\\fR\n"
    "Reload the \\fB\\-Y\\fR password file and, with \\fB\\-S\\fR, the SASL password file; "
    "a file that cannot be read leaves the old list. Nothing else is reloaded: restart for "
    "settings, \\fBrefresh_certs\\fR for TLS certificates.\n"
    ".TP\n\\fBSIGPIPE\\fR\n"
    "Ignored.\n"
    ".TP\n\\fBSIGXFSZ\\fR\n"
    "Ignored: a flash write past the file size limit (\\fBulimit \\-f\\fR) fails and is "
    "counted as any failed flash write.\n"
    ".SH \"EXIT STATUS\"\n"
    ".TP\n\\fB0\\fR\n"
    "Stopped by a signal or \\fBshutdown\\fR; \\fB\\-h\\fR, \\fB\\-V\\fR, \\fB\\-i\\fR, "
    "\\fB\\-\\-man\\fR; under \\fB\\-d\\fR, the server is serving.\n"
    ".TP\n\\fB1\\fR\n"
    "A value out of range or an unknown option (memcached's messages and code), a config "
    "file that cannot be read, a \\fB\\-Y\\fR file that cannot be read, SASL that cannot "
    "start.\n"
    ".TP\n\\fB64\\fR\n"
    "Conflicting or malformed options (EX_USAGE): a value that is not a number, options "
    "memcached refuses together, TLS files that do not load, \\fB\\-o metrics_listen\\fR "
    "in a build without it or on an address that cannot be bound, started as root without "
    "\\fB\\-u\\fR.\n"
    ".TP\n\\fB71\\fR\n"
    "The system refused (EX_OSERR): \\fB\\-d\\fR or \\fB\\-u\\fR failed, the store, a "
    "listener or a worker could not be set up (a taken port, an \\fB\\-e\\fR file in use "
    "by another server).\n"
    ".PP\n"
    "Under \\fB\\-d\\fR the started process exits with the server's status when start\\-up "
    "fails after the fork.\n"
    ".SH EXAMPLES\n"
    "A cache of 1 GiB on the default port of localhost:\n"
    ".PP\n.RS\n.nf\nnodelay \\-m 1024\n.fi\n.RE\n"
    ".PP\n"
    "Items kept across restarts and crashes in a memory file on tmpfs:\n"
    ".PP\n.RS\n.nf\nnodelay \\-m 1024 \\-e /dev/shm/nodelay.mem\n.fi\n.RE\n"
    ".PP\n"
    "TLS on every interface, with a certificate and its key:\n"
    ".PP\n.RS\n.nf\n"
    "nodelay \\-u nodelay \\-l 0.0.0.0 \\-Z \\e\n"
    "    \\-o ssl_chain_cert=/etc/nodelay/cert.pem,ssl_key=/etc/nodelay/key.pem\n"
    ".fi\n.RE\n"
    ".PP\n"
    "Prometheus metrics on 127.0.0.1:9150, then a look at them:\n"
    ".PP\n.RS\n.nf\n"
    "nodelay \\-o metrics_listen=9150\n"
    "curl http://127.0.0.1:9150/metrics\n"
    ".fi\n.RE\n"
    ".PP\n"
    "Debian's memcached configuration, unchanged:\n"
    ".PP\n.RS\n.nf\nnodelay \\-\\-config /etc/memcached.conf\n.fi\n.RE\n"
    ".SH \"SEE ALSO\"\n"
    ".BR memcached (1),\n"
    ".BR memcstat (1),\n"
    ".BR systemd.service (5),\n"
    ".BR tmpfiles.d (5),\n"
    ".BR openssl (1)\n"
    ".SH COPYRIGHT\n"
    "Copyright (c) 2026, the nodelay developers. "
    "nodelay is released under the BSD 3\\-Clause licence (\\fBnodelay \\-i\\fR; the "
    "LICENSE file, or /usr/share/doc/nodelay/copyright when installed as a package).\n";

void settings_print_man(FILE *out)
{
    fprintf(out, ".TH NODELAY 1 \"\" \"nodelay %s\" \"User Commands\"\n", NODELAY_VERSION);
    fputs(".SH NAME\nnodelay \\- a memcached\\-compatible cache server\n"
          ".SH SYNOPSIS\n.B nodelay\n[\\fIoptions\\fR] [\\fB\\-\\-config\\fR \\fIfile\\fR]\n"
          ".SH DESCRIPTION\n",
          out);
    fprintf(out,
            "nodelay is an in\\-memory cache server that speaks memcached %s's text, meta "
            "and binary protocols and takes memcached's command\\-line flags, so memcached "
            "clients, proxies and tools work with it unchanged.\n",
            NODELAY_PROTOCOL_VERSION);
    fputs(".SH OPTIONS\n", out);
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if ((r->sopt || r->lopt) && r->help)
            settings_man_option(out, r);
    }
    fputs(".SS \"Sub\\-options of \\-o\"\n"
          "Comma\\-separated; most take \\fBno_\\fR to turn them off.\n",
          out);
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if (r->oname && r->help)
            settings_man_option(out, r);
    }
    fputs(".SH \"CONFIGURATION FILE\"\n"
          "\\fB\\-\\-config\\fR \\fIfile\\fR reads flags from a file in the format of "
          "Debian's /etc/memcached.conf: one flag and its value per line (short or long "
          "form), \\fB#\\fR starts a comment, blank lines are skipped, a \\fB\\-h\\fR line "
          "is skipped; \\fBlogfile\\fR \\fIfile\\fR sends output there when running with "
          "\\fB\\-d\\fR (under systemd, \\fB\\-d\\fR is ignored). "
          "Flags after \\fB\\-\\-config\\fR on the command line override the file; an error "
          "names the file and line.\n",
          out);
    fputs(".SH STATISTICS\n"
          "\\fBstats settings\\fR prints, in memcached's order:\n.IP\n",
          out);
    const char *sep = "";
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        if (!settings_rows[i].stat)
            continue;
        fputs(sep, out);
        settings_man_text(out, settings_rows[i].stat);
        sep = ", ";
    }
    fputs("\n.PP\n"
          "Values changed at run time (verbosity, cache_memlimit, stats detail, lru_crawler "
          "enable|disable, slabs automove, lru tune|mode|temp_ttl) show their current value. "
          "Each worker keeps these counters, summed under \\fBstats\\fR (memcached's names) "
          "and \\fBstats nodelay\\fR (nodelay's own):\n.IP\n",
          out);
    sep = "";
    /* the counters table's per-worker rows (stats/stats_table.h) */
    const struct stats_rows *tables[] = {&stats_general_rows, &stats_nodelay_rows};
    for (size_t t = 0; t < 2; t++)
        for (size_t i = 0; i < tables[t]->n; i++) {
            if (tables[t]->row[i].src != STATS_SRC_WORKER)
                continue;
            fputs(sep, out);
            settings_man_text(out, tables[t]->row[i].name);
            sep = ", ";
        }
    fputs("\n.SH \"DIFFERENCES FROM MEMCACHED\"\n", out);
    for (size_t i = 0; i < sizeof settings_man_differences / sizeof settings_man_differences[0];
         i++) {
        fputs(".IP \\(bu 2\n", out);
        settings_man_text(out, settings_man_differences[i]);
        fputc('\n', out);
    }
    fputs(".PP\nAccepted for compatibility, without effect (a line at start\\-up says so):\n",
          out);
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if (!r->note)
            continue;
        char label[64];
        settings_row_label(r, label, sizeof label);
        fputs(".IP \\(bu 2\n\\fB", out);
        settings_man_text(out, label);
        fputs("\\fR: ", out);
        settings_man_text(out, r->note);
        fputc('\n', out);
    }
    fputs(settings_man_tail, out);
}
