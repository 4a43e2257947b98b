/* SPDX-License-Identifier: BSD-3-Clause */
/* The restore at start (restore.c): walk the -e file's segments, keep what
 * is live, rebuild the index (restore_index.c). Above persist.c, which
 * never calls it. */
#ifndef NODELAY_STORE_RESTORE_H
#define NODELAY_STORE_RESTORE_H

struct store;

/* Rebuild the index and the segment lists from the file; called once the
 * index and the segment table exist. */
void restore_run(struct store *s);
/* With a flash tier kept in the file (restore_flash.c): link its live
 * items again, after restore_run. */
void restore_flash(struct store *s);

#endif
