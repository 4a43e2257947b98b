/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-page rows of the counters table (stats_table.h, which includes
 * this at its end): `stats extstore` and its sums on /metrics, declared
 * once. */
#ifndef NODELAY_STATS_TABLE_EXTSTORE_H
#define NODELAY_STATS_TABLE_EXTSTORE_H

/* `stats extstore`: a block of rows per flash page, "<page>:<name>", in
 * memcached 1.6.45's order (its process_extstore_stats), from struct
 * store_flash_page (a flash segment's; docs/store-flash.md "Counters"):
 * version (the write there, from 1; 0 when free), bytes (live), bucket
 * (memcached's write bucket) and free_bucket (always 0).
 *
 *   X(name)  a field of struct store_flash_page
 */
#define STATS_EXTSTORE_PAGE(X) X(version) X(bytes) X(bucket) X(free_bucket)

/* /metrics has these rows summed over the pages instead (stats_extstore_sum),
 * a fixed number of series however many pages there are: a page label
 * would make 4 series a page, 64k at 64 GB of flash in 4 MB pages.
 *
 * memcached's write buckets a written page is in, the bucket label's
 * values: 0 default, 1 compaction, 3 low TTL (2, chunked, nodelay does not
 * write). */
#define STATS_EXTSTORE_BUCKETS(X) X(0) X(1) X(3)
#define STATS_EXTSTORE_BUCKET_MAX 3

/*   X(field, metric, help)   a gauge per bucket, bucket="<bucket>" */
#define STATS_EXTSTORE_BY_BUCKET(X)                                                                \
    X(pages, "nodelay_extstore_bucket_pages",                                                      \
      "Flash pages written (stats extstore version above 0), by memcached's write bucket: "        \
      "0 default, 1 compaction, 3 low TTL.")                                                       \
    X(bytes, "nodelay_extstore_bucket_bytes",                                                      \
      "Bytes of live items on the written flash pages of a write bucket.")

/*   X(field, metric, help)   a gauge without labels */
#define STATS_EXTSTORE_TOTALS(X)                                                                   \
    X(free_pages, "nodelay_extstore_free_pages",                                                   \
      "Flash pages free (stats extstore version 0); pages of ext_wbuf_size, where "                \
      "nodelay_extstore_pages_free counts ext_page_size ones.")

/* A histogram of the written pages by their live bytes over the page's
 * size, in tenths (le="0.1" .. le="1"): a compaction frees the pages low
 * down, and many there while nodelay_extstore_free_pages is low is flash
 * lost to fragmentation. */
#define STATS_EXTSTORE_FILL_METRIC "nodelay_extstore_page_fill_ratio"
#define STATS_EXTSTORE_FILL_HELP                                                                   \
    "Written flash pages by their live bytes over the page's size (ext_wbuf_size)."
#define STATS_EXTSTORE_FILL_STEPS 10

#endif
