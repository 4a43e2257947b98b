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
    "Memory owed to clients is bounded: all together by -o client_mem_limit (past it, those "
    "owing most are not read), each by -o reply_queue_limit (a client that stops reading is "
    "cut off).",
    "Numbers that memcached reads as 0 (atoi) are refused with a message.",
    "-Z turns TLS on (OpenSSL); the replies to one read leave as one run of TLS records in one "
    "write. -o proxy_* is refused: there is no built-in proxy.",
};

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
    fputs(".SH \"SEE ALSO\"\n.BR memcached (1)\n", out);
}
