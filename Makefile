# sluice — build, test, demo, bench, install.
ARCH_TRIPLET	:= $(shell gcc -dumpmachine)
CLANG		?= clang
BPFTOOL		?= bpftool
CC		?= gcc
BUILD		:= build
VERSION		:= $(shell cat VERSION 2>/dev/null || echo 0.0.0)
# A build from a git checkout names its commit, 0.1.0+git.abc1234 (and
# .dirty with uncommitted edits to tracked files), so that it is never
# taken for the release; a tree without a .git of its own (a release
# tarball, the Debian package's clean copy) is VERSION as it is.
GIT_COMMIT	:= $(if $(wildcard .git),$(shell git rev-parse --short=7 HEAD 2>/dev/null))
GIT_DIRTY	:= $(if $(GIT_COMMIT),$(shell git diff --quiet HEAD -- 2>/dev/null || echo .dirty))
FULL_VERSION	:= $(VERSION)$(if $(GIT_COMMIT),+git.$(GIT_COMMIT)$(GIT_DIRTY))

# Where `make install` puts things, under DESTDIR when staging a package.
# systemd's own unit directory for PREFIX=/usr, else one under PREFIX
# (systemd also reads /usr/local/lib/systemd/system).
PREFIX		?= /usr/local
SBINDIR		?= $(PREFIX)/sbin
MANDIR		?= $(PREFIX)/share/man
DATADIR		?= $(PREFIX)/share/sluice
UNITDIR		?= $(if $(filter /usr /usr/,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)
CONFDIR		:= /etc/sluice

BPF_CFLAGS	:= -O2 -g -target bpf -mcpu=v3 -Wall -Werror \
		   -I include -I /usr/include/$(ARCH_TRIPLET)
CFLAGS		?= -O2 -g
USER_INC	= $(addprefix -iquote ,$(USER_DIRS))
CFLAGS		+= -std=gnu11 -Wall -Wextra -Werror -I include -I $(BUILD) $(USER_INC) \
		   -DSLUICE_VERSION='"$(FULL_VERSION)"'
LIBS		:= $(shell pkg-config --libs libxdp libbpf libmicrohttpd 2>/dev/null || echo -lxdp -lbpf -lmicrohttpd) \
		   $(shell pkg-config --libs hiredis 2>/dev/null || echo -lhiredis) \
		   $(shell pkg-config --libs libssl libcrypto 2>/dev/null || echo -lssl -lcrypto) \
		   $(shell pkg-config --libs libsystemd 2>/dev/null || echo -lsystemd) -lelf -lz -lpthread

# user/: main.c, lib/ (the core every command uses), cmd/ (one file per
# command object), daemon/ (the servers and agents). Headers are found by
# name from any of these directories.
USER_DIRS	:= $(shell find user -type d | sort)
USER_SRCS	:= $(sort $(foreach d,$(USER_DIRS),$(wildcard $(d)/*.c)))
USER_OBJS	:= $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS))
# Everything but main(), for tests that drive the core directly (they
# define `struct options opts` themselves).
USER_LIB_OBJS	:= $(filter-out $(BUILD)/user/main.o,$(USER_OBJS))
HEADERS		:= $(wildcard include/sluice/*.h) $(foreach d,$(USER_DIRS),$(wildcard $(d)/*.h))
# One skeleton per bpf/NAME.bpf.c, named NAME_bpf.
BPF_SRCS	:= $(wildcard bpf/*.bpf.c)
SKELS		:= $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

.PHONY: FORCE print-version all clean test test-quick demo bench install uninstall deps check lint soak man docs

all: $(BUILD)/sluice man

$(BUILD)/%.bpf.o: bpf/%.bpf.c bpf/*.h $(wildcard include/sluice/*.h)
	@mkdir -p $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# A constant the compiler puts in .rodata becomes a map of its own, which
# the pins would have to keep and libxdp's loads fight over: none allowed.
$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp
	@if [ $* = sluice ] && grep -q 'struct bpf_map \*rodata;' $@.tmp; then \
		echo "$<: has .rodata (a constant initializer?); sluice's maps must be its own" >&2; \
		rm -f $@.tmp; exit 1; fi
	mv $@.tmp $@

.SECONDARY:

# The version the binary says, rewritten only when it changes: the objects
# that use it are rebuilt then (a commit, an edit making the tree dirty).
# They are found by name, not listed: store.c writes it into the pins and
# maps.c compares the pins' with it, so one left out gave pins of an older
# version than `sluice version` said after a commit.
VERSION_STAMP	:= $(BUILD)/version.txt
$(VERSION_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(FULL_VERSION)' | cmp -s - $@ || echo '$(FULL_VERSION)' > $@
VERSION_USERS	:= $(patsubst user/%.c,%.o,$(shell grep -l SLUICE_VERSION $(USER_SRCS)))
$(addprefix $(BUILD)/user/,$(VERSION_USERS)) $(addprefix $(BUILD)/asan/,$(VERSION_USERS)): $(VERSION_STAMP)

print-version:
	@echo '$(FULL_VERSION)'

$(BUILD)/user/%.o: user/%.c $(HEADERS) $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/sluice: $(USER_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIBS)

# The manual page, from the reStructuredText pages under doc/ (rst2man, from
# python3-docutils). Its SYNOPSIS is `sluice help`'s usage lines, so it
# cannot drift from the command tables.
RST2MAN		?= rst2man
MAN_SRCS	:= doc/sluice.8.rst doc/rules.rst doc/policy.rst $(wildcard doc/commands/*.rst)

man: $(BUILD)/sluice.8

$(BUILD)/man/synopsis.rst: $(BUILD)/sluice doc/synopsis.awk
	@mkdir -p $(@D)
	$(BUILD)/sluice help > $@.help
	awk -f doc/synopsis.awk $@.help > $@.tmp
	mv $@.tmp $@

# The copies in the docs of facts kept once elsewhere (the usage lines of
# `sluice help`, the layers of tests/lint/layers.sh, the suites of
# tests/list), written anew; docs/generated fails while one is stale.
docs: $(BUILD)/sluice
	tools/gen-docs.sh

$(BUILD)/man/version.rst: $(VERSION_STAMP)
	@mkdir -p $(@D)
	printf '.. |version| replace:: sluice %s\n' '$(FULL_VERSION)' > $@

$(BUILD)/sluice.8: $(MAN_SRCS) $(BUILD)/man/synopsis.rst $(BUILD)/man/version.rst
	$(RST2MAN) --halt=warning --strip-elements-with-class=no-man doc/sluice.8.rst $@.tmp
	mv $@.tmp $@

# Test binaries and the runner live in tests/; see tests/tests.mk.
include tests/tests.mk

deps:
	tools/install-deps.sh

demo:
	tools/install-deps.sh
	$(MAKE) all $(BUILD)/sluice-flood
	tools/demo.sh

bench: all $(BENCH_BINS)
	tools/bench.sh

# The soak of tests/soak/soak.sh for 10 minutes (SOAK_SECONDS=N to change),
# then the flood at 10 times the table, then as long a spoofed flood beside
# established clients (tests/soak/established.sh); prints their summaries.
SOAK_SECONDS	?= 600
soak: all $(BUILD)/sluice-flood
	SOAK_SECONDS=$(SOAK_SECONDS) tests/soak/soak.sh
	tests/soak/flood_10x.sh
	SOAK_SECONDS=$(SOAK_SECONDS) tests/soak/established.sh

# The binary, its manual page, the systemd units (contrib/systemd/*.in with
# the binary's path filled in), the settings and examples under /etc/sluice
# (never over a file already there: it may be yours), the dashboard and the
# alert rules. doc/install.md lists every file.
UNIT_INS	:= $(wildcard contrib/systemd/*.service.in)
UNITS		:= $(notdir $(UNIT_INS:.in=))
CONF_FILES	:= $(wildcard contrib/etc/*)
SHARE_FILES	:= contrib/grafana/sluice-dashboard.json $(wildcard contrib/prometheus/*.yml)

install: all
	install -D -m 0755 $(BUILD)/sluice $(DESTDIR)$(SBINDIR)/sluice
	install -D -m 0644 $(BUILD)/sluice.8 $(DESTDIR)$(MANDIR)/man8/sluice.8
	install -d -m 0755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(CONFDIR)
	set -e; for f in $(UNIT_INS); do \
		u=$(DESTDIR)$(UNITDIR)/$$(basename $$f .in); \
		sed 's|@SBINDIR@|$(SBINDIR)|g' $$f > $$u.tmp; \
		chmod 0644 $$u.tmp; mv $$u.tmp $$u; \
	done
	install -m 0644 $(SHARE_FILES) $(DESTDIR)$(DATADIR)/
	set -e; for f in $(CONF_FILES); do \
		t=$(DESTDIR)$(CONFDIR)/$$(basename $$f); \
		if [ -e $$t ]; then echo "install: $$t is there already: kept"; \
		else install -m 0644 $$f $$t; fi; \
	done

# Removes what install put outside $(CONFDIR), which holds your settings.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/sluice $(DESTDIR)$(MANDIR)/man8/sluice.8
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS))
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/,$(notdir $(SHARE_FILES)))
	-rmdir $(DESTDIR)$(DATADIR)
	@echo "uninstall: $(DESTDIR)$(CONFDIR) kept (your settings); remove it by hand if you want"

# `make lint`: the static checks, a file set per CPU. cppcheck over user/
# and the unit tests; clang-tidy (.clang-tidy) over user/, tools/ and the
# BPF tests' userspace, which include the skeletons they are built with.
NPROC := $(shell nproc 2>/dev/null || echo 1)
TIDY_SRCS	:= $(USER_SRCS) $(filter-out %.bpf.c,$(wildcard tools/*.c tests/bpf/*.c))
TIDY_SKELS	:= $(SKELS) $(BUILD)/bench_min.skel.h $(BUILD)/flood_xdp.skel.h \
		   $(patsubst tests/bpf/%.bpf.c,$(BUILD)/tests/%.skel.h,$(wildcard tests/bpf/*.bpf.c))

lint: $(TIDY_SKELS)
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		-j $(NPROC) --inline-suppr -I include $(addprefix -I ,$(USER_DIRS)) user/ tests/unit/
	printf '%s\n' $(TIDY_SRCS) | xargs -P $(NPROC) -n 1 sh -c \
		'clang-tidy --quiet "$$@" -- -std=gnu11 -I include -isystem $(BUILD) \
		-isystem $(BUILD)/tests -iquote tests/bpf $(USER_INC)' clang-tidy

# GNU's name for the tests.
check: test

clean:
	rm -rf $(BUILD)
