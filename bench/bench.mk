# SPDX-License-Identifier: BSD-3-Clause
# The benchmark's tools, built from bench/ (never part of libnodelay.a).
#   make bench                the side-by-side comparison (bench/compare.sh), into
#                             bench/results/tmp/ (untracked)
#   make bench-publish        the same, kept in bench/results/<date>/ and made
#                             bench/results/latest* (what the README shows)
#   make loadgen              build/bench/loadgen only
#   make floor                build/bench/floor: the canned-reply floor server (liburing)
#   make loadgen-selftest     its self-checks (no server needed)
#   make pipecost             build/bench/pipecost: the cache's own cost per request, no kernel
#   make bench-traces         real traces, nodelay beside memcached, and build/bench/cachesim
#                             (bench/traces.sh; make bench runs it with the replay)
#   make bench-soak           the soak against the release server (SOAK_SECONDS=300)
#   make bench-watch          what 0, 1 and 20 `watch` streams cost a pipelining load
#                             (bench/watchcost.py; WATCH_ARGS="--noread --seconds 5")
#   make bench-flash          the flash tier: memcached -o ext_path beside nodelay, key
#                             space 10x RAM (bench/flash.py; FLASH_ARGS=--short; make
#                             bench runs it short, --flash-full in BENCH_ARGS for 30 s)
#   make bench-flash-pair     the flash tier paired: memcached and nodelay filled once, then
#                             taking turns, medians of per-round ratios (bench/flash_pair.py;
#                             FLASH_PAIR_ARGS="--memory 128 --values 100-1024")
#   make bench-flash-ram      RAM per flash item at 10.5 M flash items: -m 64, a 7 GiB
#                             file in /var/tmp, deleted after (bench/flash_ram.py;
#                             FLASH_RAM_ARGS="--keys N --flash-size SIZE --file PATH")
# Durations and rounds: BENCH_ARGS="--duration 3 --rounds 3" make bench
# The memcached compared with: ../shared/ref/memcached-1.6.45 when present,
# else MEMCACHED=PATH, else Debian's /usr/bin/memcached; memtier_benchmark:
# ../shared/ref/memtier_benchmark, else MEMTIER=PATH, else one on PATH
# (bench/compare.sh says which it used, and the report names both).
# MEMTIER_EXTRA= (empty) runs memtier without --distinct-client-seed.

LOADGEN := build/bench/loadgen
LOADGEN_SRC := $(wildcard bench/loadgen/*.c)
LOADGEN_OBJ := $(LOADGEN_SRC:%.c=build/bench/obj/%.o)
LOADGEN_CFLAGS := -std=gnu11 -O2 -g -pthread $(WARN) -MMD -MP

.PHONY: loadgen loadgen-selftest bench-soak bench-publish floor pipecost cachesim bench-traces \
    bench-watch bench-flash bench-flash-pair bench-flash-ram

FLASH_ARGS ?=
bench-flash: $(LOADGEN)
	$(MAKE) CONFIG=release EVENT=epoll server
	MEMCACHED="$(MEMCACHED)" /usr/bin/python3 bench/flash.py $(FLASH_ARGS)

FLASH_PAIR_ARGS ?=
bench-flash-pair: $(LOADGEN)
	$(MAKE) CONFIG=release EVENT=epoll server
	MEMCACHED="$(MEMCACHED)" /usr/bin/python3 bench/flash_pair.py $(FLASH_PAIR_ARGS)

FLASH_RAM_ARGS ?=
bench-flash-ram: $(LOADGEN)
	$(MAKE) CONFIG=release EVENT=epoll server
	/usr/bin/python3 bench/flash_ram.py $(FLASH_RAM_ARGS)

loadgen: $(LOADGEN)

# The offline eviction simulator (bench/cachesim), reading traces as loadgen does
CACHESIM := build/bench/cachesim
cachesim: $(CACHESIM)
$(CACHESIM): bench/cachesim/cachesim.c bench/cachesim/policies.c bench/cachesim/lfu.c bench/cachesim/cachesim.h \
    bench/loadgen/tracefile.c bench/loadgen/keyspace.c bench/loadgen/tracefile.h bench/loadgen/keyspace.h
	@mkdir -p $(dir $@)
	$(CC) $(LOADGEN_CFLAGS) -o $@ bench/cachesim/cachesim.c bench/cachesim/policies.c bench/cachesim/lfu.c \
	    bench/loadgen/tracefile.c bench/loadgen/keyspace.c -lm

# Real traces (../shared/traces) against nodelay and memcached, with cachesim
bench-traces: $(LOADGEN) $(CACHESIM)
	$(MAKE) CONFIG=release EVENT=epoll server
	bash bench/traces.sh $(TRACES_ARGS)

FLOOR := build/bench/floor
floor: $(FLOOR)

$(FLOOR): bench/floor/floor.c
	@mkdir -p $(dir $@)
	$(CC) $(LOADGEN_CFLAGS) -o $@ $< -luring

# Links the release library: it measures the server's own code as shipped.
pipecost:
	$(MAKE) CONFIG=release EVENT=$(EVENT) build/release-$(EVENT)/libnodelay.a
	@mkdir -p build/bench
	$(CC) $(LOADGEN_CFLAGS) -Isrc -o build/bench/pipecost bench/pipecost/pipecost.c \
	    build/release-$(EVENT)/libnodelay.a $(LDLIBS)

loadgen-selftest: $(LOADGEN)
	$(LOADGEN) selftest

build/bench/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LOADGEN_CFLAGS) -c $< -o $@

$(LOADGEN): $(LOADGEN_OBJ)
	$(CC) -pthread -o $@ $^ -lm -lssl -lcrypto

BENCH_ARGS ?=
MEMCACHED ?=
MEMTIER ?=
BENCH_ENV = MEMCACHED="$(MEMCACHED)" MEMTIER="$(MEMTIER)" $(if $(filter undefined,$(origin MEMTIER_EXTRA)),,MEMTIER_EXTRA="$(MEMTIER_EXTRA)")
bench: $(LOADGEN) $(FLOOR)
	$(MAKE) CONFIG=release EVENT=epoll server
	$(BENCH_ENV) bash bench/compare.sh $(BENCH_ARGS)

bench-publish: $(LOADGEN) $(FLOOR)
	$(MAKE) CONFIG=release EVENT=epoll server
	$(BENCH_ENV) bash bench/compare.sh --publish $(BENCH_ARGS)

SOAK_SECONDS ?= 300
bench-soak: $(LOADGEN)
	$(MAKE) CONFIG=release EVENT=epoll server
	bench/soak --server build/release-epoll/nodelay --duration $(SOAK_SECONDS)

-include $(LOADGEN_OBJ:.o=.d)

WATCH_ARGS ?=
bench-watch:
	$(MAKE) CONFIG=release EVENT=epoll server
	python3 bench/watchcost.py --bin build/release-epoll/nodelay $(WATCH_ARGS)
