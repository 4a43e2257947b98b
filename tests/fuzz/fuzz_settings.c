/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness for the settings parsers: the first byte picks the
 * input, 'F' a --config file (settings_config_stream, each line through
 * getopt and the table's parse hooks), anything else a command line (the
 * rest split at NUL bytes into argv). Checks what must always hold: parsing
 * ends in RUN or EXIT with an exit code that is 0 only for RUN or -h/-V/-i/
 * --man, a RUN result passes memcached's cross-flag rules, and nothing
 * leaks (settings_release frees what the parse kept). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "settings/settings_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_ARGS 64

static FILE *fz_null;

static void fz_check_run(const struct settings *s)
{
    if (s->item_size_max < 1024 || s->item_size_max > SETTINGS_GET(s, maxbytes) / 2)
        abort();
    if (SETTINGS_GET(s, hot_lru_pct) + SETTINGS_GET(s, warm_lru_pct) > 80)
        abort();
    if (!s->inter || !s->binding_protocol || !s->hash_algorithm)
        abort();
}

static void fz_config(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    FILE *f = fmemopen(text, size + 1, "r");
    if (f) {
        struct settings s;
        settings_defaults(&s);
        struct settings_parse_ctx c = {.s = &s, .out = fz_null, .err = fz_null};
        int rc = settings_config_stream(&c, f, "fuzz.conf");
        if (rc < 0 && c.exit_code == 0 && !c.done)
            abort();
        fclose(f);
        settings_release(&s);
    }
    free(text);
}

static void fz_argv(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[FZ_MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "nodelay";
    for (char *p = text; p < text + size && argc <= FZ_MAX_ARGS; p += strlen(p) + 1) {
        if (strstr(p, "--c"))
            goto out; /* --config would open files named by the input */
        argv[argc++] = p;
    }
    argv[argc] = NULL;
    struct settings s;
    settings_defaults(&s);
    int code = -1;
    enum settings_result res = settings_parse(&s, argc, argv, fz_null, fz_null, &code);
    if (res == SETTINGS_RUN) {
        if (code != 0)
            abort();
        fz_check_run(&s);
    }
    settings_release(&s);
out:
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fz_null)
        fz_null = fopen("/dev/null", "w");
    if (size < 1 || !fz_null)
        return 0;
    if (data[0] == 'F')
        fz_config(data + 1, size - 1);
    else
        fz_argv(data + 1, size - 1);
    return 0;
}
