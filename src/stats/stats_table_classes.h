/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-class rows of the counters table (stats_table.h, which includes
 * this at its end): `stats items`, `stats slabs` and the per-class
 * counters, declared once. Kept apart only for the size of one file. */
#ifndef NODELAY_STATS_TABLE_CLASSES_H
#define NODELAY_STATS_TABLE_CLASSES_H

/* Per memcached size class and per worker (struct stats_thread's cls[]),
 * counted where the totals are, in the class of the item concerned, as
 * memcached's slab_stats and lru_hits: get_hits is the sum of hits_to_*,
 * kept on its own so a row reads one field. `stats reset` zeroes them. */
#define STATS_CLASSES 64 /* = STORE_CLASSES (checked in stats_output.c) */
#define STATS_CLASS_COUNTERS(X)                                                                    \
    X(get_hits)                                                                                    \
    X(hits_to_hot)                                                                                 \
    X(hits_to_warm)                                                                                \
    X(hits_to_cold)                                                                                \
    X(hits_to_temp)                                                                                \
    X(cmd_set)                                                                                     \
    X(touch_hits)                                                                                  \
    X(delete_hits)                                                                                 \
    X(incr_hits)                                                                                   \
    X(decr_hits)                                                                                   \
    X(cas_hits)                                                                                    \
    X(cas_badval)

/* `stats items` and `stats slabs`: a block of rows per memcached size class
 * holding a live item, printed "items:<class>:<name>" and "<class>:<name>"
 * in memcached 1.6.45's order (stats_output.c walks them).
 *
 *   X(name, source, field, when, metric, help)
 *
 *   source  CLS    a field of struct store_class_stats (the store's count)
 *           CNT    a field of struct stats_class_counts (STATS_CLASS_COUNTERS,
 *                  summed over workers)
 *           PAGE   a field of struct stats_class_pages: the chunks a
 *                  class's segments would hold were they slab pages
 *           CONST  memcached machinery nodelay does not have (out of memory
 *                  per class, slab repairs, the LRU tail's locks, direct
 *                  reclaims): `field` is the value
 *   when    ALWAYS, or the setting without which memcached 1.6.45 omits the
 *           row: LRU_MAINTAINER (its per-LRU rows; `lru mode flat` keeps
 *           them), TEMP_LRU (-o temporary_ttl)
 *   metric  the /metrics name, memcached_exporter's, with a slab="<class>"
 *           label and any fixed labels of its own in braces; a counter
 *           exactly when it ends in _total (so promtool's lint holds);
 *           NULL: not on the page (a row the exporter does not name: a
 *           CONST one, or crawler_items_checked; cmd_set, whose set the
 *           page derives). STATS_SLABS names what the exporter's slab
 *           collector serves (off there by default, always on here: a
 *           few rows per class holding an item).
 *   help    the metric's # HELP
 *
 * hot/warm/cold/temp are where the item's segment stands (enum store_lru,
 * docs/store.md "Size classes").
 */
#define STATS_ITEMS(X)                                                                             \
    X(number, CLS, number, ALWAYS, "memcached_slab_current_items",                                 \
      "Number of items currently stored in this slab class.")                                      \
    X(number_hot, CLS, number_lru[STORE_LRU_HOT], LRU_MAINTAINER, "memcached_slab_hot_items",      \
      "Number of items presently stored in the HOT LRU.")                                          \
    X(number_warm, CLS, number_lru[STORE_LRU_WARM], LRU_MAINTAINER, "memcached_slab_warm_items",   \
      "Number of items presently stored in the WARM LRU.")                                         \
    X(number_cold, CLS, number_lru[STORE_LRU_COLD], LRU_MAINTAINER, "memcached_slab_cold_items",   \
      "Number of items presently stored in the COLD LRU.")                                         \
    X(number_temp, CLS, number_lru[STORE_LRU_TEMP], TEMP_LRU, "memcached_slab_temporary_items",    \
      "Number of items presently stored in the TEMPORARY LRU.")                                    \
    X(age_hot, CLS, age_hot, LRU_MAINTAINER, "memcached_slab_hot_age_seconds",                     \
      "Age of the oldest item in HOT LRU.")                                                        \
    X(age_warm, CLS, age_warm, LRU_MAINTAINER, "memcached_slab_warm_age_seconds",                  \
      "Age of the oldest item in WARM LRU.")                                                       \
    X(age, CLS, age, ALWAYS, "memcached_slab_items_age_seconds",                                   \
      "Number of seconds the oldest item has been in the slab class.")                             \
    X(mem_requested, CLS, mem_requested, ALWAYS, "memcached_slab_mem_requested_bytes",             \
      "Number of bytes of memory actual items take up within a slab.")                             \
    X(evicted, CLS, evicted, ALWAYS, "memcached_slab_items_evicted_total",                         \
      "Total number of times an item had to be evicted from the LRU before it expired.")           \
    X(evicted_nonzero, CLS, evicted_nonzero, ALWAYS, "memcached_slab_items_evicted_nonzero_total", \
      "Total number of times an item which had an explicit expire time set had to be evicted.")    \
    X(evicted_time, CLS, evicted_time, ALWAYS, "memcached_slab_items_evicted_time_seconds",        \
      "Seconds since the last access for the most recent item evicted from this class.")           \
    X(outofmemory, CONST, 0, ALWAYS, "memcached_slab_items_outofmemory_total",                     \
      "Total number of items for this slab class that have triggered an out of memory error.")     \
    X(tailrepairs, CONST, 0, ALWAYS, "memcached_slab_items_tailrepairs_total",                     \
      "Total number of times the entries for a particular ID need repairing.")                     \
    X(reclaimed, CLS, reclaimed, ALWAYS, "memcached_slab_items_reclaimed_total",                   \
      "Total number of items reclaimed.")                                                          \
    X(expired_unfetched, CLS, expired_unfetched, ALWAYS,                                           \
      "memcached_slab_items_expired_unfetched_total",                                              \
      "Total number of valid items evicted from the LRU which were never touched after being set.")\
    X(evicted_unfetched, CLS, evicted_unfetched, ALWAYS,                                           \
      "memcached_slab_items_evicted_unfetched_total",                                              \
      "Total number of items evicted and never fetched.")                                          \
    X(evicted_active, CONST, 0, LRU_MAINTAINER, NULL, NULL)                                        \
    X(crawler_reclaimed, CLS, crawler_reclaimed, ALWAYS,                                           \
      "memcached_slab_items_crawler_reclaimed_total", "Number of items freed by the LRU Crawler.") \
    X(crawler_items_checked, CLS, crawler_items_checked, ALWAYS, NULL, NULL)                       \
    X(lrutail_reflocked, CONST, 0, ALWAYS, NULL, NULL)                                             \
    X(moves_to_cold, CLS, moves_to_cold, LRU_MAINTAINER, "memcached_slab_items_moves_to_cold",     \
      "Number of items moved from HOT or WARM into COLD.")                                         \
    X(moves_to_warm, CLS, moves_to_warm, LRU_MAINTAINER, "memcached_slab_items_moves_to_warm",     \
      "Number of items moves from COLD into WARM.")                                                \
    X(moves_within_lru, CLS, moves_within_lru, LRU_MAINTAINER,                                     \
      "memcached_slab_items_moves_within_lru",                                                     \
      "Number of times active items were bumped within HOT or WARM.")                              \
    X(direct_reclaims, CONST, 0, LRU_MAINTAINER, NULL, NULL)                                       \
    X(hits_to_hot, CNT, hits_to_hot, LRU_MAINTAINER, "memcached_slab_lru_hits_total{lru=\"hot\"}", \
      "Number of get_hits to the LRU.")                                                            \
    X(hits_to_warm, CNT, hits_to_warm, LRU_MAINTAINER,                                             \
      "memcached_slab_lru_hits_total{lru=\"warm\"}", "Number of get_hits to the LRU.")             \
    X(hits_to_cold, CNT, hits_to_cold, LRU_MAINTAINER,                                             \
      "memcached_slab_lru_hits_total{lru=\"cold\"}", "Number of get_hits to the LRU.")             \
    X(hits_to_temp, CNT, hits_to_temp, LRU_MAINTAINER,                                             \
      "memcached_slab_lru_hits_total{lru=\"temporary\"}", "Number of get_hits to the LRU.")

/* memcached_exporter's per-class commands_total{slab,command,status}, from
 * the `stats slabs` rows it reads (its set, cmd_set less the cas commands,
 * is no row: metrics_page.c). */
#define STATS_SLAB_COMMAND(command, status)                                                        \
    "memcached_slab_commands_total{command=\"" command "\",status=\"" status "\"}"
#define STATS_HELP_SLAB_COMMANDS "Requests per command and status, in the size class of the item."

#define STATS_SLABS(X)                                                                             \
    X(chunk_size, CLS, chunk_size, ALWAYS, "memcached_slab_chunk_size_bytes",                      \
      "Largest memcached item size (header, key, value) in this class.")                                       \
    X(chunks_per_page, PAGE, per_page, ALWAYS, "memcached_slab_chunks_per_page",                   \
      "Chunks of this class a page (a segment) holds.")                                            \
    X(total_pages, CLS, pages, ALWAYS, "memcached_slab_current_pages",                             \
      "Segments in use holding bytes of this class's items, live or dead.")                                       \
    X(total_chunks, PAGE, total, ALWAYS, "memcached_slab_current_chunks",                          \
      "Chunks of this class those segments would hold.")                                              \
    X(used_chunks, CLS, number, ALWAYS, "memcached_slab_chunks_used",                              \
      "Live items of this class.")                                                 \
    X(free_chunks, PAGE, free, ALWAYS, "memcached_slab_chunks_free",                               \
      "Those chunks less the live items (room dead items and other classes hold).")                                 \
    X(free_chunks_end, CONST, 0, ALWAYS, "memcached_slab_chunks_free_end",                         \
      "Chunks never handed out at the end of the last page: none, segments fill in order.")       \
    X(get_hits, CNT, get_hits, ALWAYS, STATS_SLAB_COMMAND("get", "hit"), STATS_HELP_SLAB_COMMANDS) \
    X(cmd_set, CNT, cmd_set, ALWAYS, NULL, NULL)                                                   \
    X(delete_hits, CNT, delete_hits, ALWAYS, STATS_SLAB_COMMAND("delete", "hit"),                  \
      STATS_HELP_SLAB_COMMANDS)                                                                    \
    X(incr_hits, CNT, incr_hits, ALWAYS, STATS_SLAB_COMMAND("incr", "hit"),                        \
      STATS_HELP_SLAB_COMMANDS)                                                                    \
    X(decr_hits, CNT, decr_hits, ALWAYS, STATS_SLAB_COMMAND("decr", "hit"),                        \
      STATS_HELP_SLAB_COMMANDS)                                                                    \
    X(cas_hits, CNT, cas_hits, ALWAYS, STATS_SLAB_COMMAND("cas", "hit"), STATS_HELP_SLAB_COMMANDS) \
    X(cas_badval, CNT, cas_badval, ALWAYS, STATS_SLAB_COMMAND("cas", "badval"),                    \
      STATS_HELP_SLAB_COMMANDS)                                                                    \
    X(touch_hits, CNT, touch_hits, ALWAYS, STATS_SLAB_COMMAND("touch", "hit"),                     \
      STATS_HELP_SLAB_COMMANDS)

#endif
