/* SPDX-License-Identifier: BSD-3-Clause */
/* -h, generated from the table: each flag row, then each -o row, in table
 * order; rows with a note are marked (compat). */
#include <string.h>

#include "settings/settings_internal.h"
#include "base/version.h"

#define SETTINGS_HELP_COLUMN 26

/* "-p, --port=<num>", "-D <char>", "    --config=<file>", "   hashpower=<n>" */
static void settings_help_label(const struct settings_row *r, char *buf, size_t n)
{
    const char *arg = r->arg;
    bool optional = arg && arg[0] == '?';
    if (optional)
        arg++;
    char value[64] = "";
    if (arg && *arg)
        snprintf(value, sizeof value, optional ? "[=<%s>]" : "=<%s>", arg);
    if (r->oname)
        snprintf(buf, n, "   %s%s", r->oname, value);
    else if (r->sopt && r->lopt)
        snprintf(buf, n, "-%c, --%s%s", r->sopt, r->lopt, optional ? "" : value);
    else if (r->sopt && arg && !optional)
        snprintf(buf, n, "-%c <%s>", r->sopt, arg);
    else if (r->sopt)
        snprintf(buf, n, "-%c", r->sopt);
    else
        snprintf(buf, n, "    --%s%s", r->lopt, value);
}

static void settings_help_row(FILE *out, const struct settings_row *r)
{
    char label[96];
    settings_help_label(r, label, sizeof label);
    int len = (int)strlen(label);
    fprintf(out, "%s%*s", label, len < SETTINGS_HELP_COLUMN ? SETTINGS_HELP_COLUMN - len : 2, "");
    if (r->note)
        fputs("(compat) ", out);
    for (const char *h = r->help; *h; h++) {
        fputc(*h, out);
        if (*h == '\n')
            fprintf(out, "%*s", SETTINGS_HELP_COLUMN, "");
    }
    fputc('\n', out);
}

void settings_print_help(FILE *out)
{
    fprintf(out,
            "nodelay %s - a memcached-compatible cache server.\n"
            "Speaks memcached %s's text, meta and binary protocols and takes its flags.\n"
            "Options marked (compat) are accepted and shown in `stats settings` so existing\n"
            "command lines keep working, but change nothing in nodelay (a line at start-up\n"
            "says so). `nodelay --man` prints the full manual.\n"
            "\n",
            NODELAY_VERSION, NODELAY_PROTOCOL_VERSION);
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if ((r->sopt || r->lopt) && r->help)
            settings_help_row(out, r);
    }
    /* The ext_ rows too: memcached's own tests (and scripts like them)
     * take "ext_path" in -h to mean extstore works, and it does: items
     * idle ext_item_age go to flash as memcached's do. */
    for (size_t i = 0; i < SETTINGS_NROWS; i++) {
        const struct settings_row *r = &settings_rows[i];
        if (r->oname && r->help)
            settings_help_row(out, r);
    }
    fprintf(out,
            "\n"
            "`version` answers VERSION %s: nodelay implements memcached %s's protocol.\n"
            "`stats nodelay` shows nodelay's own version and counters.\n",
            NODELAY_PROTOCOL_VERSION, NODELAY_PROTOCOL_VERSION);
}
