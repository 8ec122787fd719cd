# powercut - one flat Makefile.
#
#   make              host controller and agent in build/
#   make check        unit + integration tests, built with ASan/UBSan (build/san/)
#   make check-long   the soaks (minutes each) make check leaves out, same build
#   make demo         a power-cut campaign on two sim boards, then the per-device report
#   make install      the host's part: PREFIX=/usr/local DESTDIR= (SYSTEMDDIR=$(PREFIX)/lib/systemd/system)
#   make install-agent DESTDIR=ROOT  the board's files only, into a board's root
#                     file system (a cross agent; DESTDIR=/ on the board itself)
#   make deb          Debian packages powercut and powercut-agent into build/deb/
#   make deb-check    ...installed, upgraded and purged in a fresh Debian root (root)
#   make agent CROSS_COMPILE=aarch64-linux-gnu- STATIC=1
#   make agent SIM=0  the agent without the emulated eMMC (B=DIR: beside the full one)
#
# Missing Debian build dependencies are installed by tools/install-deps
# (from tools/debian-packages.txt, the one list .ci/run uses too).

# `make` alone builds the two binaries (the first rule below is the build's own check)
.DEFAULT_GOAL := all

PREFIX   ?= /usr/local
DESTDIR  ?=
CROSS_COMPILE ?=
ifeq ($(origin CC),default)
CC       := $(CROSS_COMPILE)gcc
endif

# ---- cross builds (1/2: settings) -------------------------------------------
# CROSS_COMPILE=<triplet>- builds into build/<arch>/ (aarch64, armhf, ...) and
# asks pkg-config for the target's libraries only: Debian multiarch -dev
# packages in /usr/lib/<triplet>/pkgconfig, or a sysroot (CROSS_SYSROOT=DIR,
# e.g. a Yocto/Buildroot staging dir; tools/install-cross-deps makes one in
# /opt/powercut-cross/<triplet> when apt cannot co-install the multiarch ones).
# `make cross-check` builds static agents for both and runs them under qemu.
CROSS_TRIPLET := $(patsubst %-,%,$(CROSS_COMPILE))
CROSS_SYSROOT ?=
ifneq ($(CROSS_TRIPLET),)
CROSS_ARCH := $(or $(if $(filter aarch64-%,$(CROSS_TRIPLET)),aarch64),\
		   $(if $(filter %-gnueabihf,$(CROSS_TRIPLET)),armhf),\
		   $(firstword $(subst -, ,$(CROSS_TRIPLET))))
B ?= build/$(CROSS_ARCH)
ifeq ($(CROSS_SYSROOT),)
ifeq ($(wildcard /usr/lib/$(CROSS_TRIPLET)/pkgconfig/json-c.pc),)
CROSS_SYSROOT := $(wildcard /opt/powercut-cross/$(CROSS_TRIPLET))
endif
endif
ifeq ($(origin PKG_CONFIG),undefined)
PKG_CONFIG := env PKG_CONFIG_LIBDIR=$(CROSS_SYSROOT)/usr/lib/$(CROSS_TRIPLET)/pkgconfig:$(CROSS_SYSROOT)/usr/share/pkgconfig \
	      $(if $(CROSS_SYSROOT),PKG_CONFIG_SYSROOT_DIR=$(CROSS_SYSROOT)) pkg-config
endif
endif
# ---- end cross builds (1/2) -------------------------------------------------

PKG_CONFIG ?= pkg-config
STATIC   ?=
B        ?= build

WARN     := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wformat=2 -Wvla \
            -Wmissing-prototypes -Wstrict-prototypes -Wno-unused-parameter -Wno-format-truncation
OPT      ?= -O2 -g
CFLAGS   ?=
# LDFLAGS: added to the two binaries' link lines (debian/rules passes dpkg's)
LDFLAGS  ?=
BASE_CFLAGS := -std=gnu11 -I. $(WARN) -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -MMD -MP
SANFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# Optional libraries are detected, not assumed.
have = $(shell $(PKG_CONFIG) --exists $(1) 2>/dev/null && echo 1)
HAVE_URING := $(call have,liburing)
HAVE_BLKID := $(call have,blkid)
GPIOD_VER  := $(shell $(PKG_CONFIG) --modversion libgpiod 2>/dev/null | cut -d. -f1)

AGENT_PKGS := json-c libsodium $(if $(HAVE_URING),liburing) $(if $(HAVE_BLKID),blkid)
HOST_PKGS  := json-c libsodium $(if $(GPIOD_VER),libgpiod)
DEFS       := $(if $(HAVE_URING),-DPC_HAVE_URING=1) $(if $(HAVE_BLKID),-DPC_HAVE_BLKID=1) \
              $(if $(GPIOD_VER),-DPC_GPIOD_API=$(GPIOD_VER))
PKG_STATIC := $(if $(STATIC),--static)
ALL_CFLAGS  = $(OPT) $(BASE_CFLAGS) $(STATIC_CFLAGS) $(DEFS) $(shell $(PKG_CONFIG) --cflags $(sort $(AGENT_PKGS) $(HOST_PKGS)) 2>/dev/null) $(CFLAGS)
AGENT_LIBS := $(shell $(PKG_CONFIG) $(PKG_STATIC) --libs $(AGENT_PKGS) 2>/dev/null)
HOST_LIBS  := $(shell $(PKG_CONFIG) --libs $(HOST_PKGS) 2>/dev/null) -lm
CUNIT_LIBS := $(shell $(PKG_CONFIG) --libs cunit 2>/dev/null)
# The build's own check before it compiles (tools/build-config): the compiler
# and the required libraries, or a stop naming the Debian packages missing and
# `make deps`; the flags (compiler, CFLAGS, the optional libraries found) kept
# in $(B)/build-flags, replaced only when they change, so every object depends
# on them: a library installed after a first build rebuilds what uses it. It
# says which optional libraries are in when they change; --version says so too.
REQ_PKGS     := json-c libsodium
FEATURES_TXT  = libblkid $(if $(HAVE_BLKID),yes,no), liburing $(if $(HAVE_URING),yes,no), libgpiod $(if $(GPIOD_VER),v$(GPIOD_VER),no)
BUILD_FLAGS   = $(B)/build-flags
.PHONY: FORCE
$(BUILD_FLAGS): FORCE
	$(shell mkdir -p $(B))$(file >$@.new,$(CC) | $(ALL_CFLAGS) | $(AGENT_LDFLAGS) $(LDFLAGS) | $(AGENT_LIBS) | $(HOST_LIBS) | $(CUNIT_LIBS))
	@CC="$(CC)" PKG_CONFIG="$(PKG_CONFIG)" PC_REQ="$(REQ_PKGS)" PC_FEATURES="$(FEATURES_TXT)" \
		PC_CROSS="$(CROSS_TRIPLET)" tools/build-config $@ $@.new
# A static agent is the one boards run: each function and object in a section
# of its own, and the linker drops those nothing reaches (docs/performance.md
# has what each step saves).
STATIC_CFLAGS := $(if $(STATIC),-ffunction-sections -fdata-sections)
comma := ,
AGENT_LDFLAGS := $(if $(STATIC),-static -Wl$(comma)--gc-sections)

# SIM=0 builds the agent without the emulated eMMC: no sim/ object is linked
# and agent/dev_nosim.c stands in for agent/dev_sim.c (a sim: device is
# refused, "built without the sim board"). The host links sim/opts.c alone (a
# board's profile name is checked), never the emulator.
SIM      ?= 1
COMMON_SRC  := $(sort $(wildcard common/*.c))
SIM_SRC     := $(sort $(wildcard sim/*.c))
SIM_HOST_SRC := sim/opts.c
# the commands (main.c, cmd_*.c) are the agent's alone; the rest is a library the tests link too
AGENT_CMD_SRC := agent/main.c $(sort $(wildcard agent/cmd_*.c))
AGENT_SRC   := $(filter-out $(AGENT_CMD_SRC) agent/dev_sim.c agent/dev_nosim.c,$(sort $(wildcard agent/*.c)))
AGENT_SIM_SRC := $(if $(filter 0,$(SIM)),agent/dev_nosim.c,agent/dev_sim.c $(SIM_SRC))
RELAY_SRC   := $(sort $(wildcard relay/*.c))
# the virtual boards (QEMU, its volatile cache, its kept inputs): above relay/,
# whose qemu driver they add to relay.c's list at start-up (vboard/vboard.h)
VBOARD_SRC  := $(sort $(wildcard vboard/*.c))
HARNESS_SRC := $(filter-out harness/cli/main.c,$(sort $(wildcard harness/*/*.c)))
UNIT_SRC    := $(sort $(wildcard tests/unit/*.c))
TOOL_SRC    := $(sort $(wildcard tests/tools/*.c))

objs = $(patsubst %.c,$(1)/obj/%.o,$(2))

AGENT_OBJ   = $(call objs,$(B),$(COMMON_SRC) $(AGENT_SIM_SRC) $(AGENT_SRC))
# the host links the agent's library too: powercut crash-states scans images with its scan code
HARNESS_OBJ = $(call objs,$(B),$(COMMON_SRC) $(SIM_HOST_SRC) $(RELAY_SRC) $(VBOARD_SRC) $(HARNESS_SRC) $(AGENT_SRC) agent/dev_nosim.c)

.PHONY: all agent host check lint unit integration demo deps install clean fault-matrix fixtures bench
all: $(B)/powercut $(B)/powercut-agent

agent: $(B)/powercut-agent
host: $(B)/powercut

deps:
	@tools/install-deps

$(B)/obj/%.o: %.c $(BUILD_FLAGS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/powercut-agent: $(AGENT_OBJ) $(call objs,$(B),$(AGENT_CMD_SRC))
	$(CC) $(ALL_CFLAGS) $(AGENT_LDFLAGS) $(LDFLAGS) -o $@ $^ $(AGENT_LIBS)

$(B)/powercut: $(HARNESS_OBJ) $(B)/obj/harness/cli/main.o
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(sort $(AGENT_LIBS) $(HOST_LIBS))

ALL_LIB_OBJ = $(call objs,$(B),$(COMMON_SRC) $(SIM_SRC) agent/dev_sim.c $(AGENT_SRC) $(RELAY_SRC) $(VBOARD_SRC) $(HARNESS_SRC))

$(B)/test-unit: $(ALL_LIB_OBJ) $(call objs,$(B),$(UNIT_SRC))
	@$(PKG_CONFIG) --exists --print-errors cunit || { echo "build: the unit tests need libcunit1-dev: run 'make deps'" >&2; exit 1; }
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(sort $(AGENT_LIBS) $(HOST_LIBS)) $(CUNIT_LIBS)

# (the tools' objects kept: as intermediates of this pattern rule make would
# delete them after a build, and a second make in the same tree - .ci/run
# runs check-long, lava-check and vm-check side by side - could then link a
# tool whose object another make had just removed)
.SECONDARY: $(patsubst tests/tools/%.c,$(B)/obj/tests/tools/%.o,$(TOOL_SRC))
$(B)/tools/%: $(B)/obj/tests/tools/%.o $(call objs,$(B),$(COMMON_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(HOST_LIBS)

# inputcheck reads the sim's kept write logs with the virtual board's reader too
$(B)/tools/inputcheck: $(call objs,$(B),vboard/vcache.c)

TOOLS = $(patsubst tests/tools/%.c,$(B)/tools/%,$(TOOL_SRC))

# The tests run sanitized builds of everything, built JOBS at a time (make
# check, make check-long: one compiler per core).
SAN = build/san
JOBS ?= $(shell nproc 2> /dev/null || echo 2)
san:
	@$(MAKE) --no-print-directory B=$(SAN) OPT="$(SANFLAGS)" \
		$(SAN)/powercut $(SAN)/powercut-agent $(SAN)/test-unit $(SAN)/syncfault.so \
		$(patsubst tests/tools/%.c,$(SAN)/tools/%,$(TOOL_SRC))

# -k: a failing part does not hide the others; the unit and integration totals
# (passed, failed, skipped: skips are never passes) close the output. PC_CI=1
# (.ci/run) makes a skip of a test CI must run a failure (docs/testing.md).
# The integration tests run side by side (tests/integration/run-all -j;
# PC_JOBS=N sets how many at once), and lint, the unit tests and the fuzzers'
# replay beside them (they mostly wait too), their output shown after.
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) san
	@rm -f $(SAN)/unit.totals $(SAN)/integration.totals
	@rc=0; \
		$(MAKE) --no-print-directory -k lint unit fuzz-replay > $(SAN)/check-beside.log 2>&1 & beside=$$!; \
		$(MAKE) --no-print-directory integration || rc=$$?; \
		wait $$beside || rc=$$?; \
		echo "check: lint, unit and fuzz-replay, run beside the integration tests:"; \
		cat $(SAN)/check-beside.log; \
		echo "check: totals"; \
		for p in unit integration; do \
			cat $(SAN)/$$p.totals 2>/dev/null || { echo "$$p: no totals (its runner did not finish)"; rc=1; }; \
		done; \
		[ $$rc -eq 0 ] && echo "check: passed" || echo "check: FAILED"; exit $$rc

# The shell tests' own rules (an assertion decides the test; no status
# discarded) and shellcheck at --severity=warning: tools/lint-tests. The C
# code's one home each for fork, byte codecs and JSON getters: tools/lint-code.
lint:
	tools/lint-tests
	tools/lint-code

unit:
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 PC_TOTALS=$(SAN)/unit.totals $(SAN)/test-unit

integration:
	PC_BIN=$(SAN) PC_TOTALS=$(SAN)/integration.totals tests/integration/run-all

# The soaks: the tests marked "# run-all: long" (a minute-long link flood,
# ...), which make check skips (ci-expected: "allowed-to-skip: make
# check-long runs it"); here a skip fails (PC_LONG_REQUIRE=1), like
# PC_VM_REQUIRE=1 in make vm-check. Same runner, same totals.
.PHONY: check-long
check-long: deps
	@$(MAKE) --no-print-directory -j$(JOBS) san
	@rm -f $(SAN)/long.totals
	@rc=0; PC_BIN=$(SAN) PC_TOTALS=$(SAN)/long.totals tests/integration/run-all --long || rc=$$?; \
		echo "check-long: totals"; \
		cat $(SAN)/long.totals 2>/dev/null || { echo "integration: no totals (its runner did not finish)"; rc=1; }; \
		[ $$rc -eq 0 ] && echo "check-long: passed" || echo "check-long: FAILED"; exit $$rc

# A fresh demo campaign each time. Exit 1 from `powercut run` means some cycle
# FAILed -- the lying-flush board is there to show exactly that.
demo: deps
	@$(MAKE) --no-print-directory all
	@rm -rf results/sim-quick
	$(B)/powercut run configs/sim-quick.json --agent $(B)/powercut-agent; rc=$$?; \
		if [ $$rc -le 1 ]; then echo "demo: results in results/sim-quick/ (verdicts.jsonl, events.jsonl, console/)"; \
		else exit $$rc; fi; \
		$(B)/powercut report --format html -o results/sim-quick/report.html results/sim-quick >/dev/null; \
		[ $$? -le 1 ] && echo "demo: the same report as one HTML page: results/sim-quick/report.html"; true

# The speed cost of each durability mode, side by side with fio.
bench: all
	bench/scan-vs-fio
	bench/modes-vs-fio
	bench/replay-rate
	bench/harness
	bench/slow-results

# Regenerate the crafted region images of tests/fixtures/ (they are committed).
fixtures: $(B)/tools/mkfixtures
	$(B)/tools/mkfixtures tests/fixtures

# its tool too: a fresh clone has no build/tools/faultmatrix yet
fault-matrix: all $(B)/tools/faultmatrix
	PC_BIN=$(B) bench/fault-matrix

# What `make install` puts where: the host's part only (install-host):
# powercut, its man page, the example configurations (EXAMPLESDIR) and the
# campaign daemon's unit (powercut@NAME: configuration /etc/powercut/NAME.json,
# results /var/lib/powercut/results/NAME).
# The board's part (install-agent): powercut-agent, its man page, its unit and
# init script (their paths pointed at $(PREFIX)/bin), /etc/powercut (0700) and
# /etc/default/powercut-agent (agent/powercut-agent.env; one already there is
# kept). It goes into a board's root file system, never the host's /etc:
# install-agent stops without a DESTDIR (DESTDIR=/ on the board itself).
# From a cross build:
#   make install-agent CROSS_COMPILE=aarch64-linux-gnu- STATIC=1 DESTDIR=/mnt/rootfs PREFIX=/usr
# INITDIR= (empty) leaves the init script out (a systemd board), SYSTEMDDIR= the
# unit (a BusyBox board; INITSCRIPT=S95powercut-agent names it for its rcS).
SYSTEMDDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
INITDIR    ?= $(SYSCONFDIR)/init.d
INITSCRIPT ?= powercut-agent
MAN1DIR    := $(PREFIX)/share/man/man1
# the Debian package puts them in /usr/share/doc/powercut/examples
EXAMPLESDIR ?= $(PREFIX)/share/powercut/configs
# a unit or script with its /usr/bin/powercut paths pointed at $(PREFIX)/bin,
# written beside and renamed: $(call install_sub,SRC,DEST,MODE)
install_sub = sed 's|/usr/bin/powercut|$(PREFIX)/bin/powercut|g' $(1) > $(2).tmp && chmod $(3) $(2).tmp && mv $(2).tmp $(2)

.PHONY: install-host install-agent
install: install-host

install-host: $(B)/powercut
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MAN1DIR) \
		$(DESTDIR)$(EXAMPLESDIR) $(DESTDIR)$(SYSTEMDDIR)
	install -m 0755 $(B)/powercut $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 docs/man/powercut.1 $(DESTDIR)$(MAN1DIR)/
	install -m 0644 configs/*.json $(DESTDIR)$(EXAMPLESDIR)/
	$(call install_sub,systemd/powercut@.service,$(DESTDIR)$(SYSTEMDDIR)/powercut@.service,0644)

install-agent: $(B)/powercut-agent
	@if [ -z "$(DESTDIR)" ]; then \
		echo "install-agent: a board's files (/etc/default/powercut-agent, its init script) go into a board's root file system: give DESTDIR=ROOT (DESTDIR=/ on the board itself); make install is the host's part" >&2; \
		exit 2; \
	fi
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MAN1DIR) $(DESTDIR)$(SYSCONFDIR)/default
	install -d -m 0700 $(DESTDIR)$(SYSCONFDIR)/powercut
	install -m 0755 $(B)/powercut-agent $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 docs/man/powercut-agent.1 $(DESTDIR)$(MAN1DIR)/
ifneq ($(SYSTEMDDIR),)
	install -d $(DESTDIR)$(SYSTEMDDIR)
	$(call install_sub,agent/powercut-agent.service,$(DESTDIR)$(SYSTEMDDIR)/powercut-agent.service,0644)
endif
ifneq ($(INITDIR),)
	install -d $(DESTDIR)$(INITDIR)
	$(call install_sub,agent/powercut-agent.init,$(DESTDIR)$(INITDIR)/$(INITSCRIPT),0755)
endif
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/default/powercut-agent ]; then \
		echo "install-agent: kept $(DESTDIR)$(SYSCONFDIR)/default/powercut-agent (the shipped example is agent/powercut-agent.env)"; \
	else \
		echo "install -m 0644 agent/powercut-agent.env $(DESTDIR)$(SYSCONFDIR)/default/powercut-agent"; \
		install -m 0644 agent/powercut-agent.env $(DESTDIR)$(SYSCONFDIR)/default/powercut-agent; \
	fi

# ---- Debian packages --------------------------------------------------------
#   make deb                 powercut and powercut-agent (and their -dbgsym) for
#                            this machine, from debian/ (dpkg-buildpackage -b -us -uc)
#   make deb DEB_ARCH=arm64  cross-built (the cross toolchain, the :arm64 -dev packages)
# dpkg-buildpackage writes beside the source tree (..): what the .changes file
# lists, and the .changes, are moved to build/deb/. Needs debhelper (13);
# lintian build/deb/*.changes checks them.
#   make deb-check           lintian (an error or a warning fails), then the
#                            packages installed in a fresh Debian 12 root
#                            (tools/deb-install-check: apt-get install, check-config,
#                            an upgrade keeping the conffile, a short sim campaign,
#                            purge leaving nothing, the agent by dpkg --root into a
#                            second root); root, not part of make check
DEB_ARCH ?=
DEB_VERSION = $(shell dpkg-parsechangelog -S Version)
DEB_CHANGES = ../powercut_$(DEB_VERSION)_$(or $(DEB_ARCH),$(shell dpkg --print-architecture)).changes
.PHONY: deb deb-deps deb-check
deb-deps: deps
	@tools/install-deps tools/debian-packages-deb.txt

deb: deb-deps
	dpkg-buildpackage -b -us -uc $(if $(DEB_ARCH),-a $(DEB_ARCH))
	mkdir -p build/deb
	for f in $$(sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]* [0-9]* [^ ]* [^ ]* //p' $(DEB_CHANGES)); do \
		mv ../$$f build/deb/; done
	mv $(DEB_CHANGES) build/deb/
	@ls -l build/deb/

deb-check: deb
	lintian --fail-on error,warning build/deb/*.changes
	tools/deb-install-check

clean:
	rm -rf build

# ---- cross builds (2/2: targets) --------------------------------------------
#   make cross-check   install the cross toolchains and qemu-user, build static
#                      agents for aarch64 and armhf, print their sizes, run
#                      tests/integration/t-cross.sh: a target that cannot run
#                      fails; a part it cannot test (fua, fua+flush and journal
#                      under a qemu-user without pwritev2) is a named, counted
#                      skip on the closing "cross:" line, never a pass
#   make cross-unit CROSS_COMPILE=... STATIC=1   the portable unit suites
#                      (crc32c, record, proto) as $(B)/test-unit-portable
CROSS_TARGETS  := aarch64-linux-gnu- arm-linux-gnueabihf-
CROSS_UNIT_SRC := tests/unit/main.c tests/unit/test_crc32c.c tests/unit/test_record.c tests/unit/test_proto.c
.PHONY: cross-deps cross-unit cross-check
cross-deps:
	@tools/install-cross-deps

cross-unit: $(B)/test-unit-portable
$(B)/test-unit-portable: $(call objs,$(B),$(COMMON_SRC) $(CROSS_UNIT_SRC))
	$(CC) $(ALL_CFLAGS) $(AGENT_LDFLAGS) -o $@ $^ $(AGENT_LIBS) $(CUNIT_LIBS)

cross-check: cross-deps
	@$(MAKE) --no-print-directory B=build host
	@for t in $(CROSS_TARGETS); do \
		$(MAKE) --no-print-directory CROSS_COMPILE=$$t STATIC=1 agent cross-unit || exit 1; done
	@for t in $(CROSS_TARGETS); do \
		a=$$($(MAKE) -s --no-print-directory CROSS_COMPILE=$$t print-cross-b) && \
		$${t}strip -o $$a/powercut-agent.stripped $$a/powercut-agent && \
		$${t}size $$a/powercut-agent | tail -1 | { read -r tx da bs _; \
		printf 'static agent %-8s %9s bytes stripped (%s with debug info; text %s, data %s, bss %s); limit 1572864 (1.5 MiB) for aarch64\n' \
			"$${a##*/}:" "$$(stat -c %s $$a/powercut-agent.stripped)" "$$(stat -c %s $$a/powercut-agent)" $$tx $$da $$bs; } && \
		{ [ "$${a##*/}" != aarch64 ] || [ $$(stat -c %s $$a/powercut-agent.stripped) -le 1572864 ] || \
			{ echo "cross-check: the aarch64 agent is over 1.5 MiB"; exit 1; }; } \
		|| exit 1; done
	@rc=0; PC_BIN=build PC_CROSS_REQUIRE=1 bash tests/integration/t-cross.sh > build/cross-check.log 2>&1 || rc=$$?; \
		cat build/cross-check.log; \
		if [ $$rc -eq 77 ]; then echo "cross: 0 failed, 1 skipped: $$(grep '^SKIP:' build/cross-check.log | tail -1)"; \
		elif [ $$rc -ne 0 ]; then echo "cross-check: t-cross FAILED"; exit $$rc; fi

.PHONY: print-cross-b
print-cross-b:
	@echo $(B)
# ---- end cross builds (2/2) -------------------------------------------------

# ---- relay hardware tests (gpiod, hidrelay) ---------------------------------
# tests/gpiosim/{gpiosim,hidrawsim}.c are LD_PRELOAD shims that play the GPIO
# character device and a dcttech HID relay board; tests/unit/test_relay_hw.c
# re-runs itself under the ones next to its binary, so they are built with
# every test-unit (order-only: they are not linked in). syncfault.c fails or
# slows fsync/fdatasync of chosen files (a results disk that loses data:
# t-sync-fault; a slow one: bench/slow-results); make san builds it.
#   make gpiosim   just the shims, in $(B)/
#   make gpiod2    libgpiod 2.x from bookworm-backports (apt only; unpacked, not
#                  installed) into build/gpiod2/, and the relay tests built
#                  against it with PC_GPIOD_API=2 as build/gpiod2/test-relay-gpiod
SHIM_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wvla -Wmissing-prototypes \
               -Wstrict-prototypes -D_GNU_SOURCE -O2 -g -fPIC -shared
GPIOSIM_SO  := $(B)/gpiosim.so $(B)/hidrawsim.so $(B)/syncfault.so
GPIOD2      := build/gpiod2
GPIOD2_LIB   = $(GPIOD2)/usr/lib/$(shell $(CC) -print-multiarch 2>/dev/null)
GPIOD2_SRC  := tests/unit/main.c tests/unit/test_relay_hw.c tests/unit/test_relay_gpiod_kernel.c $(RELAY_SRC) $(VBOARD_SRC) \
               $(COMMON_SRC)
.PHONY: gpiosim gpiod2
gpiosim: $(GPIOSIM_SO)
$(B)/test-unit: | $(GPIOSIM_SO)
$(GPIOSIM_SO): $(B)/%.so: tests/gpiosim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -o $@ $< -ldl
$(GPIOD2)/gpiosim.so $(GPIOD2)/hidrawsim.so: $(GPIOD2)/%.so: tests/gpiosim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -o $@ $< -ldl

gpiod2: $(GPIOD2)/test-relay-gpiod $(GPIOD2)/gpiosim.so $(GPIOD2)/hidrawsim.so
$(GPIOD2)/usr/include/gpiod.h:
	tests/gpiosim/fetch-gpiod2 $(GPIOD2)
$(GPIOD2)/test-relay-gpiod: $(GPIOD2)/usr/include/gpiod.h $(GPIOD2_SRC) $(wildcard relay/*.h vboard/*.h common/*.h tests/unit/*.h)
	$(CC) $(SANFLAGS) $(filter-out -MMD -MP,$(BASE_CFLAGS)) -DPC_GPIOD_API=2 -I$(GPIOD2)/usr/include \
		$(shell $(PKG_CONFIG) --cflags json-c libsodium) -o $@ $(GPIOD2_SRC) \
		$(GPIOD2_LIB)/libgpiod.so -Wl,-rpath,$(abspath $(GPIOD2_LIB)) \
		$(shell $(PKG_CONFIG) --libs json-c libsodium) $(CUNIT_LIBS) -lm
# ---- end relay hardware tests ------------------------------------------------

# ---- virtual board (QEMU) ---------------------------------------------------
# A QEMU machine with a real Linux MMC stack, driven like a real board
# (docs/vm.md): the `qemu` relay starts and SIGKILLs it, the harness talks to
# the agent over its serial console.
#   make vm-deps    install tools/debian-packages-vm.txt (qemu-system-x86, ...)
#   make vm-image   build/vm/: Debian kernel, initramfs (busybox, MMC modules,
#                   the static agent), SD card image with a prepared region;
#                   initrd-fua.img, the same with the SCSI and NVMe drivers
#                   (tools/board/mkfua) for the FUA board
#   make vm-image-emmc build/vm/emmc/: the eMMC board (QEMU 10's ast2600-evb,
#                   Debian's armmp kernel and dtb, the static armhf agent;
#                   tools/board/mkemmc); needs vm-image and the armhf cross
#                   compiler (make cross-deps)
#   make vm-image-gpiohost build/vm/gpiohost/: the relay-host VM (QEMU 10's
#                   ast2600-evb, Debian's armmp kernel with gpio-aspeed, static
#                   armhf powercut against libgpiod 1.6 and 2.1;
#                   tools/board/mkgpiohost) and tests/tools/gpiobridge; needs
#                   the armhf cross compiler (make cross-deps)
#   make vm-run     configs/vm-sd.json: a campaign on the virtual board, its
#                   cable started and stopped around it (results/vm-sd/)
#   make vm-run-fua configs/vm-fua.json: the FUA boards, a SCSI disk (vm2) and
#                   an NVMe namespace (vm3), their cables around it
#   make vm-run-emmc configs/vm-emmc.json: the eMMC board (results/vm-emmc/)
#   make vm-check   vm-deps, cross-deps, vm-image, vm-image-emmc, then
#                   tests/integration/t-vm.sh, t-vm-fua.sh, t-vm-cache.sh,
#                   t-vm-crash-keep.sh, t-vm-kvm.sh and t-vm-gpiohost.sh
#                   one after the other, and t-vm-emmc.sh alongside them (the
#                   eMMC board's cycles are mostly its guest booting), all
#                   of which may not skip (PC_VM_REQUIRE=1)
#   make vm-check-emmc  vm-deps, vm-image-emmc, then t-vm-emmc.sh alone
VM_DIR    := build/vm
VM_STATIC := build/static
VM_TESTS  := t-vm t-vm-fua t-vm-cache t-vm-crash-keep t-vm-kvm t-vm-gpiohost
.PHONY: vm-deps vm-image vm-image-emmc vm-image-gpiohost vm-run vm-run-fua vm-run-emmc vm-check vm-check-emmc
vm-deps:
	@tools/board/install-deps

vm-image: $(B)/tools/ptypair
	@$(MAKE) --no-print-directory STATIC=1 B=$(VM_STATIC) agent
	tools/mkboard --out $(VM_DIR) --agent $(VM_STATIC)/powercut-agent
	tools/board/mkfua --out $(VM_DIR)

vm-image-emmc: vm-image
	@$(MAKE) --no-print-directory CROSS_COMPILE=arm-linux-gnueabihf- STATIC=1 agent
	tools/board/mkemmc --out $(VM_DIR) --agent build/armhf/powercut-agent

vm-image-gpiohost: $(B)/tools/ptypair $(B)/tools/gpiobridge
	tools/board/mkgpiohost --out $(VM_DIR)

vm-run-emmc: all vm-image-emmc
	@test -e $(VM_DIR)/emmc/emmc-vm5.img || cp $(VM_DIR)/emmc/emmc.img $(VM_DIR)/emmc/emmc-vm5.img
	tools/board/cable start $(VM_DIR)/cable-vm5
	$(B)/powercut run configs/vm-emmc.json --agent $(B)/powercut-agent; rc=$$?; \
		tools/board/cable stop $(VM_DIR)/cable-vm5; exit $$rc

vm-run: all vm-image
	@test -e $(VM_DIR)/sd-vm1.img || cp $(VM_DIR)/sd.img $(VM_DIR)/sd-vm1.img
	tools/board/cable start $(VM_DIR)/cable-vm1
	$(B)/powercut run configs/vm-sd.json --agent $(B)/powercut-agent; rc=$$?; \
		tools/board/cable stop $(VM_DIR)/cable-vm1; exit $$rc

vm-run-fua: all vm-image
	@for b in vm2 vm3; do test -e $(VM_DIR)/disk-$$b.img || cp $(VM_DIR)/sd.img $(VM_DIR)/disk-$$b.img; done
	tools/board/cable start $(VM_DIR)/cable-vm2
	tools/board/cable start $(VM_DIR)/cable-vm3
	$(B)/powercut run configs/vm-fua.json --agent $(B)/powercut-agent; rc=$$?; \
		tools/board/cable stop $(VM_DIR)/cable-vm2; tools/board/cable stop $(VM_DIR)/cable-vm3; exit $$rc

# every test runs, a failure of the first does not hide the second's; the
# eMMC board's test runs in the background, its output shown at the end
vm-check: vm-deps
	@tools/install-cross-deps
	@$(MAKE) --no-print-directory all vm-image-emmc vm-image-gpiohost
	@mkdir -p build/test-tmp
	@tmp=$${PC_TEST_TMP:-$(CURDIR)/build/test-tmp}; log=build/test-tmp/vm-check-emmc.log; \
	PC_BIN=build PC_VM_REQUIRE=1 PC_TEST_TMP=$$tmp bash tests/integration/t-vm-emmc.sh > $$log 2>&1 & emmc=$$!; \
	rc=0; for t in $(VM_TESTS); do \
		echo "== $$t"; \
		PC_BIN=build PC_VM_REQUIRE=1 PC_TEST_TMP=$$tmp \
			bash tests/integration/$$t.sh || { echo "vm-check: $$t FAILED"; rc=1; }; \
	done; \
	wait $$emmc; erc=$$?; echo "== t-vm-emmc (alongside)"; cat $$log; \
	[ $$erc -eq 0 ] || { echo "vm-check: t-vm-emmc FAILED"; rc=1; }; exit $$rc

vm-check-emmc: vm-deps
	@tools/install-cross-deps
	@$(MAKE) --no-print-directory all vm-image-emmc
	@mkdir -p build/test-tmp
	PC_BIN=build PC_VM_REQUIRE=1 PC_TEST_TMP=$${PC_TEST_TMP:-$(CURDIR)/build/test-tmp} \
		bash tests/integration/t-vm-emmc.sh
# ---- end virtual board --------------------------------------------------------

# ---- LAVA (docs/lava.md) -----------------------------------------------------
#   make lava-check   install LAVA's dispatcher, docker and debootstrap
#                     (tools/debian-packages-lava.txt), start dockerd
#                     (tools/lava/dockerd), build the test shell's image
#                     (tools/lava/shell-image), then the tests that need them,
#                     which may not skip (PC_LAVA_REQUIRE=1): t-lava-scripts,
#                     t-lava (lava-run jobs), t-lava-server (lava-server,
#                     PostgreSQL, two lava-workers, lavacli)
LAVA_TESTS := t-lava-scripts t-lava t-lava-server
.PHONY: lava-check
lava-check: deps
	@tools/install-deps tools/debian-packages-lava.txt
	@$(MAKE) --no-print-directory san all
	@tools/lava/dockerd start
	@tools/lava/shell-image
	@mkdir -p build/test-tmp
	@rc=0; for t in $(LAVA_TESTS); do \
		echo "== $$t"; \
		PC_BIN=$(SAN) PC_LAVA_REQUIRE=1 PC_TEST_TMP=$${PC_TEST_TMP:-$(CURDIR)/build/test-tmp} \
			bash tests/integration/$$t.sh || { echo "lava-check: $$t FAILED"; rc=1; }; \
	done; exit $$rc
# ---- end LAVA -----------------------------------------------------------------

# ---- fresh-root check of the install lists (docs/testing.md) ----------------
#   make fresh-root-check  each install list -- build, vm, cross, lava, bench, deb --
#                          installed by its own installer (tools/install-deps,
#                          board/install-deps, install-cross-deps) in a fresh
#                          copy of a bare Debian 12 root (debootstrap, no
#                          backports, no foreign architecture), every package
#                          it names then checked installed
#                          (tools/fresh-root-check; root; about 5 min); then
#                          t-fresh-root: a list naming a package the archive
#                          lacks fails, named. FRESH_LISTS="cross vm" picks lists.
FRESH_LISTS ?=
.PHONY: fresh-root-check
fresh-root-check:
	tools/fresh-root-check $(foreach l,$(FRESH_LISTS),--list $(l))
	@mkdir -p build/test-tmp
	PC_FRESH_ROOT=1 PC_TEST_TMP=$${PC_TEST_TMP:-$(CURDIR)/build/test-tmp} \
		bash tests/integration/t-fresh-root.sh
# ---- end fresh-root check -----------------------------------------------------

# ---- fuzzing (libFuzzer) ----------------------------------------------------
# One libFuzzer target per kind of untrusted input, tests/fuzz/fuzz_<target>.c
# (docs/fuzzing.md): proto (protocol lines), auth (tagged lines), config
# (campaign files), events (events.jsonl through replay and resume), report and
# status (a results folder through report_run; through status_run and status's
# own scanner), scan (the agent's scan of a crafted region image), sector
# (superblock and sector decoders).
#   make fuzz          clang + libFuzzer + ASan/UBSan into build/fuzz/, then each
#                      target for FUZZ_SECONDS on its corpus (FUZZ_TARGETS="proto
#                      scan" picks some); new inputs go to build/fuzz/corpus/<t>/,
#                      crashes to build/fuzz/crashes/<t>/; exit 1 on any crash
#   make fuzz-replay   every file of tests/fuzz/corpus/<t>/ and tests/fuzz/regress/<t>/
#                      through its target once, no libFuzzer: $(CC) with ASan/UBSan
#                      in build/san/fuzz/ (part of make check)
FUZZ_ALL     := $(patsubst tests/fuzz/fuzz_%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_B       := build/fuzz
FUZZ_OPT     := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=undefined
FUZZ_LIBS     = $(sort $(AGENT_LIBS) $(HOST_LIBS))
.PHONY: fuzz fuzz-build fuzz-replay
fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	tests/fuzz/run $(FUZZ_B) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build:
	@$(MAKE) --no-print-directory B=$(FUZZ_B) CC=$(FUZZ_CC) OPT="$(FUZZ_OPT)" \
		CFLAGS="$(CFLAGS) -Wno-unknown-warning-option -Wno-error" $(patsubst %,$(FUZZ_B)/fuzz-%,$(FUZZ_TARGETS))

fuzz-replay:
	@$(MAKE) --no-print-directory B=$(SAN) OPT="$(SANFLAGS)" $(patsubst %,$(SAN)/fuzz/replay-%,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
		d=; for x in tests/fuzz/corpus/$$t tests/fuzz/regress/$$t; do [ ! -d $$x ] || d="$$d $$x"; done; \
		[ -n "$$d" ] || { echo "fuzz-replay: no corpus for $$t"; exit 1; }; \
		ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(SAN)/fuzz/replay-$$t $$d || exit 1; \
	done

# (kept: make would delete them as intermediates of the pattern rules below)
.SECONDARY: $(patsubst %,$(B)/obj/tests/fuzz/fuzz_%.o,$(FUZZ_ALL)) $(B)/obj/tests/fuzz/replay_main.o
$(B)/libpowercut-fuzz.a: $(ALL_LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# the scan target serves its image from memory: its own dev_ops_for() picks the backend
$(B)/fuzz-scan $(B)/fuzz/replay-scan: FUZZ_LDFLAGS := -Wl,--wrap=dev_ops_for
$(B)/fuzz-%: $(B)/obj/tests/fuzz/fuzz_%.o $(B)/libpowercut-fuzz.a
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer $(FUZZ_LDFLAGS) -o $@ $^ $(FUZZ_LIBS)

$(B)/fuzz/replay-%: $(B)/obj/tests/fuzz/fuzz_%.o $(B)/obj/tests/fuzz/replay_main.o $(B)/libpowercut-fuzz.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(FUZZ_LDFLAGS) -o $@ $^ $(FUZZ_LIBS)
# ---- end fuzzing --------------------------------------------------------------

# each build's own dependency files: its objects' folder alone (build/ also
# holds the fresh-root check's and LAVA's Debian roots, whose *.d are not ours)
-include $(shell find $(B)/obj -name '*.d' -type f 2>/dev/null)
