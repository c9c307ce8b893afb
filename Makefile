# nfbox — the front door. `make help` lists the targets.
#
# Layout of the build tree (all under build/):
#   build/nfbox             the appliance binary (release flags)
#   build/asan/...          the same code and the unit tests, under ASan+UBSan
#                           (build/asan/libnfbox.a: its code, which they link)
#   build/fuzz/fuzz_policy  the policy fuzzer (clang, libFuzzer, ASan+UBSan)
#   build/bpf/*.bpf.o       BPF objects; build/bpf/*.skel.h their skeletons
#                           (shared by build/ and build/asan/: no C flags)
#   bpf/vmlinux/ARCH/vmlinux.h  kernel types for CO-RE, checked in (`make vmlinux`
#                           regenerates it from the running kernel); the build
#                           never reads /sys/kernel/btf

PREFIX  ?= /usr
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
LIBEXECDIR ?= $(PREFIX)/lib/nfbox
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# Where systemd looks for units; empty: do not install the unit (the Debian
# package's dh_installsystemd does).
UNITDIR ?= $(shell $(PKG_CONFIG) --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
DESTDIR ?=

CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config

B := build
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2);
endif

PKGS := libbpf libxdp libnftnl libmnl yaml-0.1 libcrypto libmicrohttpd jansson libmaxminddb libcares libcurl
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter
# CFLAGS, CPPFLAGS and LDFLAGS are the builder's (dpkg-buildflags sets them
# for the package: hardening, optimisation); the project's own flags are added
# beside them, never replaced by them.
CFLAGS  ?= -O2 -g
CPPFLAGS ?=
LDFLAGS ?=
# Includes are folder-qualified ("policy/policy.h", "backend/bpf/engine/engine.h",
# "bpf/nfbox.h", "bpf/nfbox_filter.skel.h" from $(B)); -iquote keeps the
# project's folders out of the <...> search. -MMD -MP: each object depends on
# the headers it includes.
BASE_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -DNFBOX_VERSION='"$(VERSION)"' \
	-iquote . -iquote appliance -iquote $(B) -MMD -MP $(PKG_CFLAGS)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# The test build (build/asan/) also takes NFBOX_TEST_PLANT=BUG from the
# environment: a bug planted on purpose, which the differential test must
# catch (appliance/backend/nftables/nft/build.c). The release build has no such switch.
TEST_DEFS := -DNFBOX_TEST_PLANT

# BPF objects are built for the target architecture's kernel types: the
# checked-in vmlinux.h of that architecture (bpf/vmlinux/README.md).
ARCH ?= $(shell uname -m)
BPF_ARCH_x86_64 := x86
BPF_ARCH := $(BPF_ARCH_$(ARCH))
VMLINUX_H := bpf/vmlinux/$(ARCH)/vmlinux.h
# -ffile-prefix-map: the objects' BTF names the sources relative to the
# tree, not by the build directory's path (nfbox embeds the objects: the
# package carried that path, and differed from one build directory to another).
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -Wall -Werror -D__TARGET_ARCH_$(BPF_ARCH) -Ibpf/vmlinux/$(ARCH) -Ibpf \
	-ffile-prefix-map=$(CURDIR)=.

# base/: what the language and the appliance both stand on (diagnostics,
# cleanup, JSON, the log); linked wherever policy/ is.
BASE_SRCS   := $(sort $(shell find base -name '*.c'))
POLICY_SRCS := $(BASE_SRCS) $(sort $(shell find policy -name '*.c'))
APP_SRCS    := $(sort $(shell find appliance -name '*.c'))
APP_MAIN    := appliance/cli/main.c
# What the fuzzer links: the language and the BPF backend's compiler.
COMPILE_SRCS := $(sort $(shell find appliance/backend/bpf/compile -name '*.c'))
APP_LIB_SRCS := $(filter-out $(APP_MAIN),$(APP_SRCS))
BPF_SRCS    := $(wildcard bpf/*.bpf.c)
BPF_OBJS    := $(patsubst bpf/%.bpf.c,$(B)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS   := $(patsubst bpf/%.bpf.c,$(B)/bpf/%.skel.h,$(BPF_SRCS))

TESTLIB_SRCS := $(wildcard tests/lib/*.c)
UNIT_SRCS   := $(wildcard tests/unit/test_*.c)
UNIT_BINS   := $(patsubst tests/unit/%.c,$(B)/asan/%,$(UNIT_SRCS))
BPFT_SRCS   := $(wildcard tests/bpf/test_*.c)
BPFT_BINS   := $(patsubst tests/bpf/%.c,$(B)/asan/%,$(BPFT_SRCS))
# The reference's judge for the three-way differential test (tests/diff/).
REFJUDGE    := $(B)/asan/refjudge
URLFEED     := $(B)/asan/urlfeed
BENCH_SRCS  := $(wildcard tests/bench/*.c)
BENCH_BINS  := $(patsubst tests/bench/%.c,$(B)/%,$(BENCH_SRCS))

rel_obj  = $(patsubst %.c,$(B)/obj/%.o,$(1))
asan_obj = $(patsubst %.c,$(B)/asan/obj/%.o,$(1))

.PHONY: all check check-long check-debian13 coverage mutants demo bench bench-fleet soak deb clean help deps deps-long install uninstall fuzz unit vmlinux format
# Keep generated skeletons and objects (they are intermediate files to make).
.SECONDARY:
.DEFAULT_GOAL := all

all: $(B)/nfbox

help:
	@echo 'nfbox targets:'
	@echo '  all (default)  build build/nfbox'
	@echo '  check          install missing deps, build, run every test suite (as root)'
	@echo '  check-long     check plus the long runs (longer fuzzing, 40 differential seeds, 400 classifier seeds, Cockpit in chromium: installs it)'
	@echo '  coverage       every suite on a gcov build; line and branch coverage of policy/, compiler, nft builder'
	@echo '  mutants        mutation testing of the compiler, encoder and nft builder (~10 min)'
	@echo '  check-debian13 install-deps, build, every suite and the .deb as a service, in a throw-away Debian 13 root (root)'
	@echo '  demo           run nfbox on config/policy.yaml in throw-away namespaces (root)'
	@echo '  bench          print benchmark figures beside their targets and peers (root)'
	@echo '  bench-fleet    NODES (500) real fleet nodes on 3 etcd members: push, shared bans, restarts, idle cost (root)'
	@echo '  soak           30 minutes of everything at once on the sanitizer build: RSS, descriptors, BPF memory (root)'
	@echo '  format         format the C sources with the pinned clang-format (tests/unit/test_format.sh checks it)'
	@echo '  deb            build the Debian package into build/'
	@echo '  install        install binary, unit and man pages under DESTDIR/PREFIX; configuration under /etc only where none is'
	@echo '  uninstall      remove what install installed, but not the configuration (/etc) nor the state (/var/lib/nfbox)'
	@echo '  clean          remove build/'
	@echo '  vmlinux        regenerate bpf/vmlinux/ARCH/vmlinux.h from the running kernel'
	@echo '  V=1            show the commands'
	@echo '  TESTS="P..."   check, check-long, coverage: only the suites whose names contain a pattern'

deps:
	$(Q)packaging/install-deps.sh

# deps-long: deps and what only the long runs need (the browser of
# tests/distro/test_cockpit.sh), which make check does not install.
deps-long:
	$(Q)packaging/install-deps.sh --long

# format: the C sources formatted as .clang-format says, by the pinned
# clang-format that install-deps fetches (tests/unit/test_format.sh checks it).
CLANG_FORMAT ?= node /var/cache/nfbox/tools/clang-format-23.1.0/package/clang-format-cli.cjs
format: deps
	$(Q)$(CLANG_FORMAT) -i $$(find appliance bpf policy tests -name '*.[ch]' -not -path 'bpf/vmlinux/*')

$(VMLINUX_H):
	@echo 'nfbox: no kernel types for architecture "$(ARCH)" ($@); see bpf/vmlinux/README.md' >&2; exit 1

# Regenerate the checked-in kernel types from the running kernel's BTF.
vmlinux:
	$(Q)mkdir -p bpf/vmlinux/$(ARCH)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(VMLINUX_H).tmp && mv $(VMLINUX_H).tmp $(VMLINUX_H)
	@echo "  GEN      $(VMLINUX_H) (kernel $$(uname -r))"

$(B)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(VMLINUX_H)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp.o
	$(Q)$(BPFTOOL) gen object $@ $@.tmp.o && rm -f $@.tmp.o

$(B)/bpf/%.skel.h: $(B)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .bpf,,$(basename $(notdir $<)))_bpf > $@.tmp && mv $@.tmp $@

# Skeletons are order-only: the first build makes them all before any C
# file; after that the .d files say which objects use which.
$(B)/obj/%.o: %.c | $(BPF_SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The test build's debug information: -g1, line tables and inlined frames,
# all that a sanitizer's report shows (the same stacks as -g), without the
# variables' descriptions, which made its compile a fifth longer (-g: 24.3 s
# of CPU for half the files, -g1: 19.9). SAN_DEBUG=-g for a debugger.
SAN_DEBUG ?= -g1
$(B)/asan/obj/%.o: %.c | $(BPF_SKELS)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(TEST_DEFS) -O1 $(SAN_DEBUG) $(SAN_FLAGS) -c $< -o $@

$(B)/nfbox: $(call rel_obj,$(APP_SRCS) $(POLICY_SRCS))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lelf -lz

$(B)/asan/nfbox: $(call asan_obj,$(APP_SRCS) $(POLICY_SRCS))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lelf -lz

# The test build's library: the code of the appliance (but its main), the
# language and tests/lib as one thin archive, so that each test program
# links only the objects it uses (most use a few of the 130; each linked
# them all, 8 s of make unit's CPU). Members keep their paths: several
# sources share a name (build.c, parse.c).
ASAN_LIB := $(B)/asan/libnfbox.a
$(ASAN_LIB): $(call asan_obj,$(APP_LIB_SRCS) $(POLICY_SRCS) $(TESTLIB_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcsPT $@ $^

# test_enomem fails nfbox's own allocations one at a time (tests/unit/test_enomem.c).
$(B)/asan/test_enomem: TEST_LDFLAGS := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup
$(B)/asan/test_%: $(call asan_obj,tests/unit/test_%.c) $(ASAN_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(SAN_FLAGS) $(TEST_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lelf -lz

$(B)/asan/test_bpf_%: $(call asan_obj,tests/bpf/test_bpf_%.c) $(ASAN_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lelf -lz

$(REFJUDGE): $(call asan_obj,tests/diff/refjudge.c) $(ASAN_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lelf -lz

$(URLFEED): $(call asan_obj,tests/feeds/urlfeed.c) $(ASAN_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lelf -lz

$(B)/bench_%: $(call rel_obj,tests/bench/bench_%.c) $(call rel_obj,$(APP_LIB_SRCS) $(POLICY_SRCS))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lelf -lz

# libFuzzer harness: clang, with ASan+UBSan, over what
# tests/fuzz/fuzz_policy.c calls: the policy loader and the BPF backend's
# compiler (not policy/diff/ nor policy/trace/, which it never reaches).
# A file at a time, as the other builds (make -j shares them out; one clang
# over all the files took 20 s on one core), with -gline-tables-only as
# OSS-Fuzz builds its fuzzers: a report's stacks, file:line and inlined
# frames. 14 s of CPU, against 21.5 s for all of policy/ with -g.
FUZZ_SRCS := tests/fuzz/fuzz_policy.c $(filter-out policy/diff/% policy/trace/%,$(POLICY_SRCS)) $(COMPILE_SRCS)
FUZZ_CFLAGS := -std=gnu11 -O1 -gline-tables-only -D_GNU_SOURCE -iquote . -iquote appliance -MMD -MP \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(shell $(PKG_CONFIG) --cflags yaml-0.1 2>/dev/null)
$(B)/fuzz/obj/%.o: %.c
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -c $< -o $@

$(B)/fuzz/fuzz_policy: $(patsubst %.c,$(B)/fuzz/obj/%.o,$(FUZZ_SRCS))
	$(call msg,LINK,$@)
	$(Q)$(CLANG) -fsanitize=fuzzer,address,undefined -o $@ $^ $(shell $(PKG_CONFIG) --libs yaml-0.1 2>/dev/null)

unit: $(B)/nfbox $(B)/asan/nfbox $(B)/bench_txgen $(UNIT_BINS) $(BPFT_BINS) $(B)/fuzz/fuzz_policy $(REFJUDGE) $(URLFEED)

# check: deps (idempotent, quiet), build (a job per CPU), then every suite
# through the runner (several at a time: tests/run.sh). TESTS="PATTERN..."
# runs only the suites whose names contain one (check, check-long,
# coverage; CI's short forms: .ci/targets).
NPROC := $(shell nproc 2>/dev/null || echo 2)
TESTS ?=
check: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) unit
	$(Q)tests/run.sh $(TESTS)

# coverage: the test build with gcov instead of the sanitizers (build/cov),
# every suite on it, then the line and branch coverage of policy/, the BPF
# compiler and the nftables builder (tests/quality/coverage.sh).
coverage: deps
	$(Q)find build/cov -name '*.gcda' -delete 2>/dev/null; true
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) B=build/cov SAN_FLAGS="--coverage -O0" unit
	$(Q)NFBOX_BUILD=build/cov tests/run.sh $(TESTS); rc=$$?; tests/quality/coverage.sh build/cov && exit $$rc

# mutants: mutation testing of the compiler, the encoder and the nftables
# builder against the fast suites (tests/quality/mutants.sh; ~10 min).
mutants: deps
	$(Q)tests/quality/mutants.sh

check-long: deps-long
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) unit
	$(Q)NFBOX_LONG=1 tests/run.sh $(TESTS)

# Debian 13 on any Debian machine: tests/distro/debian13.sh (debootstrap).
check-debian13: deps
	$(Q)tests/distro/debian13.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/demo.sh

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BENCH_BINS)
	$(Q)tests/bench/run.sh

# A fleet of NODES (500) nodes on etcd (tests/bench/fleetscale.sh); CI runs
# it with a few (.ci/targets). Not part of make bench: minutes and gigabytes.
NODES ?= 500
bench-fleet: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)NODES=$(NODES) tests/bench/fleetscale.sh

# The sanitizer build under everything at once for NFBOX_SOAK_MINUTES (30).
soak: deps
	$(Q)$(MAKE) --no-print-directory $(B)/asan/nfbox $(B)/bench_txgen
	$(Q)tests/bench/soak.sh

# What `make install` puts under DESTDIR, SOURCE:DESTINATION:MODE, and
# `make uninstall` removes; besides these, nfbox-stop and the unit (which
# name the binaries by their installed paths) and the man pages.
INSTALL_FILES := \
	$(B)/nfbox:$(SBINDIR)/nfbox:0755 \
	packaging/fleet/nfbox-fleet-rbac:$(SBINDIR)/nfbox-fleet-rbac:0755 \
	packaging/crowdsec/nfbox-crowdsec:$(LIBEXECDIR)/nfbox-crowdsec:0755 \
	packaging/crowdsec/crowdsec.md:$(PREFIX)/share/doc/nfbox/crowdsec.md:0644 \
	packaging/ha/runbook.md:$(PREFIX)/share/doc/nfbox/ha-runbook.md:0644 \
	packaging/fleet/runbook.md:$(PREFIX)/share/doc/nfbox/fleet-runbook.md:0644 \
	packaging/completion/nfbox:$(COMPLETIONDIR)/nfbox:0644 \
	packaging/modules-load/nfbox.conf:$(PREFIX)/lib/modules-load.d/nfbox.conf:0644 \
	config/schema/policy.schema.json:$(PREFIX)/share/nfbox/policy.schema.json:0644
# The configuration, SOURCE:DESTINATION: never overwritten once there (it
# is the administrator's), never removed. A file there that differs from the
# shipped one is kept, the shipped one going beside it as DESTINATION.dist.
INSTALL_CONFIG := \
	config/host/policy.yaml:/etc/nfbox/policy.yaml \
	packaging/systemd/nfbox.default:/etc/default/nfbox \
	packaging/logrotate/nfbox:/etc/logrotate.d/nfbox \
	packaging/fail2ban/action.d/nfbox.conf:/etc/fail2ban/action.d/nfbox.conf
MAN_PAGES := $(wildcard packaging/man/*.[1-8])

install: $(B)/nfbox
	$(Q)for f in $(INSTALL_FILES); do \
		src=$${f%%:*}; rest=$${f#*:}; \
		install -D -m $${rest##*:} $$src $(DESTDIR)$${rest%:*} || exit 1; done
	$(Q)mkdir -p $(DESTDIR)$(LIBEXECDIR)
	$(Q)sed 's|/usr/sbin/nfbox|$(SBINDIR)/nfbox|g' packaging/systemd/nfbox-stop >$(DESTDIR)$(LIBEXECDIR)/nfbox-stop
	$(Q)chmod 0755 $(DESTDIR)$(LIBEXECDIR)/nfbox-stop
	$(Q)for f in $(INSTALL_CONFIG); do \
		src=$${f%%:*}; dst=$(DESTDIR)$${f#*:}; \
		if [ ! -e $$dst ]; then install -D -m 0644 $$src $$dst || exit 1; \
		elif cmp -s $$src $$dst; then rm -f $$dst.dist; \
		else install -m 0644 $$src $$dst.dist || exit 1; \
			echo "kept $$dst as it is (it differs from the shipped one, which is $$dst.dist)"; fi; done
	$(Q)if [ -n "$(UNITDIR)" ]; then \
		mkdir -p $(DESTDIR)$(UNITDIR) && \
		sed -e 's|/usr/sbin/nfbox|$(SBINDIR)/nfbox|g' -e 's|/usr/lib/nfbox/|$(LIBEXECDIR)/|g' \
			packaging/systemd/nfbox.service >$(DESTDIR)$(UNITDIR)/nfbox.service; fi
	$(Q)for m in $(MAN_PAGES); do \
		s=$${m##*.}; install -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/$$(basename $$m) || exit 1; done

# What install installed, but not the configuration (install's .dist
# copies go) nor the daemon's state (/var/lib/nfbox, /var/log/nfbox).
uninstall:
	$(Q)for f in $(INSTALL_FILES); do rest=$${f#*:}; rm -f $(DESTDIR)$${rest%:*}; done
	$(Q)rm -f $(DESTDIR)$(LIBEXECDIR)/nfbox-stop
	$(Q)if [ -n "$(UNITDIR)" ]; then rm -f $(DESTDIR)$(UNITDIR)/nfbox.service; fi
	$(Q)for m in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$(basename $$m); done
	$(Q)for f in $(INSTALL_CONFIG); do rm -f $(DESTDIR)$${f#*:}.dist; done
	$(Q)for d in $(LIBEXECDIR) $(PREFIX)/share/doc/nfbox $(PREFIX)/share/nfbox; do \
		[ ! -d $(DESTDIR)$$d ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$$d; done
	$(Q)for f in $(INSTALL_CONFIG); do dst=$(DESTDIR)$${f#*:}; \
		[ ! -e $$dst ] || echo "kept $$dst (configuration: remove it by hand)"; done

# The Debian package, built from the source package in packaging/debian
# with dpkg-buildpackage (packaging/build-deb.sh); the .deb lands in build/.
deb:
	$(Q)packaging/build-deb.sh

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
