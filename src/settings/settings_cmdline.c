/* SPDX-License-Identifier: BSD-3-Clause */
/* The command line as a whole: runs of flags (settings_parse.c) split at
 * each --config FILE (settings_config.c), then the checks across flags.
 * Above both, so the file reader and the flag parser never call each
 * other. */
#include <stdlib.h>
#include <string.h>

#include "settings/settings_internal.h"

/* The command line is parsed in runs split at each `--config FILE`, whose
 * lines are parsed where it stands: flags after it override the file. */
enum settings_result settings_parse(struct settings *s, int argc, char **argv, FILE *out,
                                    FILE *err, int *exit_code)
{
    struct settings_parse_ctx c = {.s = s, .out = out, .err = err};
    char **run = malloc(((size_t)argc + 1) * sizeof *run);
    if (!run) {
        fprintf(err, "out of memory\n");
        *exit_code = 1;
        return SETTINGS_EXIT;
    }
    int rc = 0, start = 1;
    for (int i = 1; i <= argc && rc == 0; i++) {
        const char *path = NULL;
        int skip = 0;
        if (i < argc && strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                fprintf(err, "nodelay: option '--config' requires an argument\n");
                c.exit_code = SETTINGS_EX_USAGE;
                rc = -1;
                break;
            }
            path = argv[i + 1];
            skip = 2;
        } else if (i < argc && strncmp(argv[i], "--config=", 9) == 0) {
            path = argv[i] + 9;
            skip = 1;
        } else if (i < argc) {
            continue;
        }
        int n = 0;
        run[n++] = argv[0];
        for (int k = start; k < i; k++)
            run[n++] = argv[k];
        run[n] = NULL;
        rc = settings_parse_args(&c, n, run);
        if (rc == 0 && path) {
            s->given[SETTINGS_ROW_config_file] = 1;
            s->config_file = path;
            rc = settings_config_read(&c, path);
        }
        i += skip ? skip - 1 : 0;
        start = i + 1;
    }
    free(run);
    if (rc == 0)
        rc = settings_check(&c);
    *exit_code = rc == 0 ? 0 : c.exit_code;
    return rc == 0 ? SETTINGS_RUN : SETTINGS_EXIT;
}
