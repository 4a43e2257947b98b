# SPDX-License-Identifier: BSD-3-Clause
# nodelay - plain make is the build.
#
#   make                 optimised server: build/release/nodelay
#   make debug           debug server (debugtime command): build/debug/nodelay
#   make man             the man page nodelay(1), generated from the settings table: build/nodelay.1
#   make CONFIG=asan     any target under ASan+UBSan (also: tsan, debug, release)
#   make EVENT=poll      the portable poll(2) backend instead of epoll (and io_uring)
#   make URING=no        leave io_uring out even when liburing is there
#   make URING=yes       require it: fail if liburing is absent (so MHD=yes,
#                        SYSTEMD=yes; the Debian package builds so)
#   make unit            unit tests (cmocka), the fast tier: seconds
#   make unit-measure    the measurement tier: memory overhead per item and
#                        the many-thread store stress (make test runs both)
#   make test            everything CI runs (see scripts/test-all.sh)
#   make test-STAGE      one stage of it, e.g. test-unit-asan, test-integration-epoll
#   make fuzz            libFuzzer harnesses, briefly (clang)
#   make bench           side-by-side benchmark against memcached
#   make install         server, man page, systemd units (nodelay.service and
#                        the nodelay@.service template), config, tmpfiles.d
#                        and sysusers.d entries under DESTDIR + PREFIX (/usr/local)

CONFIG ?= release
UNAME := $(shell uname -s)
ifeq ($(UNAME),Linux)
EVENT ?= epoll
else
EVENT ?= poll
endif

CC ?= cc
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
BASE_CFLAGS := -std=gnu11 -pthread -Isrc $(WARN) -MMD -MP -DNODELAY_EVENT_$(EVENT)
LDLIBS := -pthread -lxxhash -lssl -lcrypto

# Optional libraries, each found by pkg-config and each chosen by a variable:
# auto (the default) builds with it when pkg-config finds it and without it
# otherwise; no leaves it out; yes requires it, and a build that cannot have
# it fails instead of quietly dropping the feature (a package build passes
# yes). FEATURE_PKG names the pkg-config module, FEATURE_DEB the Debian
# package that brings it (debian/control's Build-Depends lists each one).
PKG_CONFIG ?= pkg-config
# $(call feature_libs,VAR) -> the libraries of VAR's module, or empty
feature_libs = $(if $(filter no,$($(1))),,$(shell $(PKG_CONFIG) --libs $($(1)_PKG) 2>/dev/null))
# $(call feature_check,VAR,LIBS): refuse a bad value, or yes without LIBS
feature_check = $(if $(filter-out yes auto no,$($(1))),$(error $(1) must be yes, auto or no, not "$($(1))"))$(if $(and $(filter yes,$($(1))),$(if $(2),,no)),$(error $(1)=yes: $(PKG_CONFIG) cannot find $($(1)_PKG) (Debian: apt-get install $($(1)_DEB)); install it, or build with $(1)=auto to go without $($(1)_WHAT)))

# sd_notify(READY=1) for the systemd unit's Type=notify (libsystemd); without
# it the server builds the same and sends nothing.
SYSTEMD ?= auto
SYSTEMD_PKG := libsystemd
SYSTEMD_DEB := libsystemd-dev
SYSTEMD_WHAT := sd_notify readiness
SYSTEMD_LIBS := $(call feature_libs,SYSTEMD)
$(call feature_check,SYSTEMD,$(SYSTEMD_LIBS))
ifneq ($(SYSTEMD_LIBS),)
SERVER_CFLAGS := -DNODELAY_HAVE_SYSTEMD $(shell $(PKG_CONFIG) --cflags libsystemd 2>/dev/null)
endif

# The Prometheus endpoint (-o metrics_listen, libmicrohttpd); without it the
# server builds the same and refuses that option with a message.
MHD ?= auto
MHD_PKG := libmicrohttpd
MHD_DEB := libmicrohttpd-dev
MHD_WHAT := the /metrics endpoint
MHD_LIBS := $(call feature_libs,MHD)
$(call feature_check,MHD,$(MHD_LIBS))
ifneq ($(MHD_LIBS),)
MHD_CFLAGS := -DNODELAY_HAVE_MHD $(shell $(PKG_CONFIG) --cflags libmicrohttpd 2>/dev/null)
endif
LDLIBS += $(MHD_LIBS)

# The io_uring backend (chosen at run time, epoll its fallback; liburing),
# with EVENT=epoll only; without it the server builds the same on epoll alone.
URING ?= auto
URING_PKG := liburing
URING_DEB := liburing-dev
URING_WHAT := the io_uring backend
ifeq ($(EVENT),epoll)
URING_LIBS := $(call feature_libs,URING)
else ifeq ($(URING),yes)
$(error URING=yes needs EVENT=epoll: io_uring sits beside the epoll backend)
endif
$(call feature_check,URING,$(URING_LIBS))
ifneq ($(URING_LIBS),)
URING_CFLAGS := -DNODELAY_HAVE_URING $(shell $(PKG_CONFIG) --cflags liburing 2>/dev/null)
endif
LDLIBS += $(URING_LIBS)

ifeq ($(CONFIG),release)
CFLAGS_CONFIG := -O2 -g
else ifeq ($(CONFIG),debug)
CFLAGS_CONFIG := -O0 -g3 -DNODELAY_DEBUG
else ifeq ($(CONFIG),asan)
CFLAGS_CONFIG := -O1 -g -DNODELAY_DEBUG -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS_CONFIG := -fsanitize=address,undefined
else ifeq ($(CONFIG),tsan)
CFLAGS_CONFIG := -O1 -g -DNODELAY_DEBUG -fsanitize=thread
LDFLAGS_CONFIG := -fsanitize=thread
else
$(error CONFIG must be release, debug, asan or tsan)
endif

CPPFLAGS ?=
CFLAGS ?=
LDFLAGS ?=
ALL_CFLAGS := $(BASE_CFLAGS) $(CFLAGS_CONFIG) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS := $(LDFLAGS_CONFIG) $(LDFLAGS)

OUT := build/$(CONFIG)-$(EVENT)

# Every .c under src/ is part of the server; main.c alone is left out of the
# library that unit tests and fuzzers link, and only one readiness backend is
# built (io_uring beside it when liburing is there).
OTHER_EVENT := $(if $(filter epoll,$(EVENT)),poll,epoll)
NO_URING := $(if $(URING_LIBS),,src/event/event_uring.c)
LIB_SRC := $(filter-out src/main.c src/event/event_$(OTHER_EVENT).c $(NO_URING), \
             $(wildcard src/*.c src/*/*.c src/*/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(OUT)/%.o)
LIB := $(OUT)/libnodelay.a
SERVER := $(OUT)/nodelay

# tests/unit mirrors src/: a test sits in the folder of the code it tests
# (tests/unit/store/test_store_ops.c tests src/store/), and its binary in the
# same folder under $(OUT)/tests (build/release-epoll/tests/store/test_store_ops).
UNIT_SRC := $(wildcard tests/unit/*/test_*.c tests/unit/*/*/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(OUT)/tests/%)
# Tests that measure (fill a 64 MiB store to its first eviction, run many
# threads for seconds) take most of the unit time: they form a tier of their
# own so that `make unit` stays quick. The unit stages of `make test` run every
# test under tests/unit, both tiers.
UNIT_MEASURE := $(OUT)/tests/store/test_store_overhead $(OUT)/tests/store/test_store_stress
UNIT_FAST := $(filter-out $(UNIT_MEASURE),$(UNIT_BIN))

.PHONY: all server debug man unit unit-measure test fuzz bench clean run install FORCE
.DEFAULT_GOAL := all

all: server
# build/nodelay is the optimised server, whatever backend built it last.
server: $(SERVER)
	@ln -sf $(CONFIG)-$(EVENT)/nodelay build/nodelay$(if $(filter release,$(CONFIG)),,-$(CONFIG))

debug:
	$(MAKE) CONFIG=debug server

$(OUT)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Only main.c talks to systemd. The stamp holds whether this build has it, and
# changes (recompiling main.c, relinking) only when that does.
SYSTEMD_STAMP := $(OUT)/systemd.stamp
$(SYSTEMD_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(SYSTEMD_LIBS)' | cmp -s - $@ || echo '$(SYSTEMD_LIBS)' >$@
$(OUT)/src/main.o: src/main.c $(SYSTEMD_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SERVER_CFLAGS) -c $< -o $@

# Only metrics_http.c talks to libmicrohttpd; same stamp scheme as systemd's.
MHD_STAMP := $(OUT)/mhd.stamp
$(MHD_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(MHD_LIBS)' | cmp -s - $@ || echo '$(MHD_LIBS)' >$@
$(OUT)/src/metrics/metrics_http.o: src/metrics/metrics_http.c $(MHD_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MHD_CFLAGS) -c $< -o $@

# Only event.c asks whether io_uring is built in; same stamp scheme.
URING_STAMP := $(OUT)/uring.stamp
$(URING_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(URING_LIBS)' | cmp -s - $@ || echo '$(URING_LIBS)' >$@
$(OUT)/src/event/event.o $(OUT)/src/event/event_uring.o: ALL_CFLAGS += $(URING_CFLAGS)
$(OUT)/src/event/event.o: $(URING_STAMP)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(SERVER): $(OUT)/src/main.o $(LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS) $(SYSTEMD_LIBS)

$(OUT)/tests/%: $(OUT)/tests/unit/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

# nodelay(1) comes from the same table as -h and `stats settings`.
man: build/nodelay.1
build/nodelay.1: $(SERVER)
	$(SERVER) --man > $@.tmp && mv $@.tmp $@

unit: $(UNIT_FAST)
	@set -e; for t in $(UNIT_FAST); do echo "== $$t"; $$t; done

unit-measure: $(UNIT_MEASURE)
	@set -e; for t in $(UNIT_MEASURE); do echo "== $$t"; $$t; done

# The whole suite, every configuration CI runs: each stage is a target of its
# own, `make test-unit-asan`, `make test-integration-epoll`, ... (the list:
# scripts/test-stage.sh --list), which writes its counts to
# build/test-results/STAGE; `make test` runs them all in order and sums them.
test:
	bash scripts/test-all.sh

test-%:
	@bash scripts/test-stage.sh $*

FUZZ_SECONDS ?= 20
fuzz:
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

run: server
	$(SERVER) -u nobody

# Installation, as an operator or a package (debian/rules) does it. The config
# file goes to /etc for PREFIX=/usr, else under PREFIX; an existing one is
# kept. The units name the installed binary and config.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DOCDIR ?= $(PREFIX)/share/doc/nodelay
install: server man
	install -D -m 0755 $(SERVER) $(DESTDIR)$(BINDIR)/nodelay
	install -D -m 0644 build/nodelay.1 $(DESTDIR)$(MANDIR)/man1/nodelay.1
	install -D -m 0644 LICENSE $(DESTDIR)$(DOCDIR)/LICENSE
	@mkdir -p $(DESTDIR)$(UNITDIR)
	for u in nodelay.service nodelay@.service; do \
	    sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	        packaging/$$u.in >$(DESTDIR)$(UNITDIR)/$$u && \
	    chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	install -D -m 0644 packaging/nodelay.tmpfiles $(DESTDIR)$(TMPFILESDIR)/nodelay.conf
	install -D -m 0644 packaging/nodelay.sysusers $(DESTDIR)$(SYSUSERSDIR)/nodelay.conf
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/nodelay.conf ]; then \
	    echo "keeping $(DESTDIR)$(SYSCONFDIR)/nodelay.conf"; \
	else \
	    echo install -D -m 0644 packaging/nodelay.conf $(DESTDIR)$(SYSCONFDIR)/nodelay.conf; \
	    install -D -m 0644 packaging/nodelay.conf $(DESTDIR)$(SYSCONFDIR)/nodelay.conf; \
	fi

clean:
	rm -rf build

-include bench/bench.mk
-include $(LIB_OBJ:.o=.d) $(OUT)/src/main.d $(UNIT_SRC:tests/unit/%.c=$(OUT)/tests/unit/%.d)
