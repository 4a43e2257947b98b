/* SPDX-License-Identifier: BSD-3-Clause */
/* The flash file of a store unit test: a fresh temporary directory per
 * test (cmocka setup and teardown), the file's path in flash_path. */
#ifndef TEST_FLASH_FILE_H
#define TEST_FLASH_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char flash_dir[64];
static char flash_path[128];

static int flash_file_setup(void **state)
{
    (void)state;
    snprintf(flash_dir, sizeof flash_dir, "/tmp/nd-flash-XXXXXX");
    assert_non_null(mkdtemp(flash_dir));
    snprintf(flash_path, sizeof flash_path, "%s/flash", flash_dir);
    return 0;
}

static int flash_file_teardown(void **state)
{
    (void)state;
    unlink(flash_path);
    rmdir(flash_dir);
    return 0;
}

#endif
