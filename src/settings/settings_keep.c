/* SPDX-License-Identifier: BSD-3-Clause */
/* Lines kept for the life of the settings: values parsed from -o lists and
 * --config files point into them. Beneath both parsers, so neither calls
 * the other for it. */
#include <stdlib.h>
#include <string.h>

#include "settings/settings_internal.h"

/* Keep a copy of a line for the life of the settings: values point into it. */
char *settings_keep(struct settings *s, const char *line)
{
    size_t n = strlen(line) + 1;
    char *block = malloc(sizeof(char *) + n);
    if (!block)
        return NULL;
    memcpy(block, &s->strings, sizeof(char *)); /* chain to the previous block */
    memcpy(block + sizeof(char *), line, n);
    s->strings = block;
    return block + sizeof(char *);
}

void settings_keep_release(struct settings *s)
{
    while (s->strings) {
        char *next;
        memcpy(&next, s->strings, sizeof next);
        free(s->strings);
        s->strings = next;
    }
}
