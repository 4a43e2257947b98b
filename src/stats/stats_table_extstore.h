/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-page rows of the counters table (stats_table.h, which includes
 * this at its end): `stats extstore`, declared once. */
#ifndef NODELAY_STATS_TABLE_EXTSTORE_H
#define NODELAY_STATS_TABLE_EXTSTORE_H

/* `stats extstore`: a block of rows per flash page, "<page>:<name>", in
 * memcached 1.6.45's order (its process_extstore_stats), from struct
 * store_flash_page (a flash segment's; docs/store-flash.md "Counters").
 *
 *   X(name, metric, help)
 *
 *   metric  the /metrics name, with a page="<page>" label: memcached_exporter
 *           has none for these
 */
#define STATS_EXTSTORE_PAGE(X)                                                                     \
    X(version, "nodelay_extstore_page_version",                                                    \
      "The write a flash page holds, numbered from 1 (memcached's page version); 0 when free.")    \
    X(bytes, "nodelay_extstore_page_bytes", "Bytes of live items on a flash page.")                \
    X(bucket, "nodelay_extstore_page_bucket",                                                      \
      "memcached's write bucket of a flash page: 0 default, 1 compaction, 3 low TTL.")             \
    X(free_bucket, "nodelay_extstore_page_free_bucket",                                            \
      "The bucket a flash page goes back to when freed: always 0.")

#endif
