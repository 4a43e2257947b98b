/* SPDX-License-Identifier: BSD-3-Clause */
/* --config FILE: flags read from a file in Debian's /etc/memcached.conf
 * format, so an existing memcached.conf works unchanged.
 *
 * Each line holds flags as on the command line ("-m 64", "-l 127.0.0.1",
 * "-o a=b", "--port=11211"), split at blanks; '...' or "..." keep blanks in
 * a value. '#' starts a comment (\# is a literal '#'). A line that does
 * not start with '-' is a directive, as in Debian's start-memcached: only
 * `logfile FILE` exists (with -d, output is appended there). -d is kept:
 * Debian's wrappers drop it because they daemonise themselves, and under
 * systemd main.c ignores it, so the file means the same either way. A -h
 * line is skipped, as those wrappers skip it (help is not a setting). A bad
 * line stops start-up with `nodelay: FILE:LINE: ` before memcached's
 * message for that flag. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "settings/settings_internal.h"

#define SETTINGS_CONFIG_MAX_ARGS 64

static bool settings_config_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* Split at blanks, in place, up to a '#' comment. Returns the word count,
 * or -1 for an unterminated quote or too many words. */
static int settings_config_split(char *line, char **words, int max)
{
    int n = 0;
    char *r = line;
    for (;;) {
        while (settings_config_blank(*r))
            r++;
        if (!*r || *r == '#')
            return n;
        if (n == max)
            return -1;
        char *w = r; /* the word is written over itself: w never passes r */
        words[n++] = w;
        char quote = 0;
        for (; *r; r++) {
            if (quote) {
                if (*r == quote)
                    quote = 0;
                else
                    *w++ = *r;
            } else if (*r == '\'' || *r == '"') {
                quote = *r;
            } else if (*r == '\\' && r[1] == '#') {
                *w++ = *++r;
            } else if (settings_config_blank(*r) || *r == '#') {
                break;
            } else {
                *w++ = *r;
            }
        }
        if (quote)
            return -1;
        char stop = *r;
        *w = '\0';
        if (!stop || stop == '#')
            return n;
        r++;
    }
}

/* Print the message a line's flags produced, prefixed with the file and
 * line (and without getopt's own "nodelay: "). */
static void settings_config_report(FILE *err, const char *path, int line, const char *msg)
{
    if (strncmp(msg, "nodelay: ", 9) == 0)
        msg += 9;
    fprintf(err, "nodelay: %s:%d: %s", path, line, msg);
    size_t n = strlen(msg);
    if (n == 0 || msg[n - 1] != '\n')
        fputc('\n', err);
}

static int settings_config_line(struct settings_parse_ctx *c, const char *path, int lineno,
                                char *line)
{
    char *words[SETTINGS_CONFIG_MAX_ARGS + 2]; /* argv[0], the words, NULL */
    int n = settings_config_split(line, words + 1, SETTINGS_CONFIG_MAX_ARGS);
    if (n < 0) {
        settings_config_report(c->err, path, lineno, "unterminated quote or too many words");
        c->exit_code = SETTINGS_EX_USAGE;
        return -1;
    }
    if (n == 0)
        return 0;
    if (words[1][0] != '-') {
        if (strcmp(words[1], "logfile") == 0 && n == 2) {
            c->s->logfile = words[2];
            c->s->given[SETTINGS_ROW_logfile] = 1;
            return 0;
        }
        char msg[256];
        snprintf(msg, sizeof msg, "unknown directive \"%s\" (only flags and `logfile FILE`)",
                 words[1]);
        settings_config_report(c->err, path, lineno, msg);
        c->exit_code = SETTINGS_EX_USAGE;
        return -1;
    }
    if (strncmp(words[1], "-h", 2) == 0)
        return 0;
    for (int i = 1; i <= n; i++) {
        if (strcmp(words[i], "--config") == 0 || strncmp(words[i], "--config=", 9) == 0) {
            settings_config_report(c->err, path, lineno, "--config cannot be nested");
            c->exit_code = SETTINGS_EX_USAGE;
            return -1;
        }
    }
    words[0] = "nodelay";
    words[n + 1] = NULL;

    /* memcached's message for the flag goes to a buffer first, so the file
     * and line can lead it. */
    char *msg = NULL;
    size_t msglen = 0;
    FILE *mem = open_memstream(&msg, &msglen);
    if (!mem) {
        fprintf(c->err, "nodelay: %s: %s\n", path, strerror(errno));
        c->exit_code = 1;
        return -1;
    }
    FILE *err = c->err;
    c->err = mem;
    int rc = settings_parse_args(c, n + 1, words);
    c->err = err;
    fclose(mem);
    if (msglen) {
        if (rc == 0)
            fputs(msg, err); /* a warning: pass it on as it is */
        else
            settings_config_report(err, path, lineno, msg);
    }
    free(msg);
    return rc;
}

int settings_config_read(struct settings_parse_ctx *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(c->err, "nodelay: %s: %s\n", path, strerror(errno));
        c->exit_code = SETTINGS_EX_USAGE;
        return -1;
    }
    int rc = settings_config_stream(c, f, path);
    fclose(f);
    return rc;
}

int settings_config_stream(struct settings_parse_ctx *c, FILE *f, const char *path)
{
    char *buf = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (rc == 0 && getline(&buf, &cap, f) >= 0) {
        lineno++;
        char *line = settings_keep(c->s, buf);
        if (!line) {
            fprintf(c->err, "out of memory\n");
            c->exit_code = 1;
            rc = -1;
            break;
        }
        rc = settings_config_line(c, path, lineno, line);
    }
    if (rc == 0 && ferror(f)) {
        fprintf(c->err, "nodelay: %s: %s\n", path, strerror(errno));
        c->exit_code = SETTINGS_EX_USAGE;
        rc = -1;
    }
    free(buf);
    return rc;
}
