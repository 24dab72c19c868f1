# Test and benchmark binaries, and `make test`; included by the top Makefile
# (which defines BUILD, CC, CFLAGS and $(BUILD)/sluice).
#
# To add a test: a pure-C unit test is tests/unit/test_NAME.c and is picked up
# by the wildcard below; anything else gets its own rule and a line
# `TEST_BINS += $(BUILD)/tests/NAME`. Then list it in tests/list.

TEST_HEADERS	:= $(wildcard include/sluice/*.h) tests/lib/harness.h tests/lib/golden.h tests/lib/on_cpus.h
# The unit tests find the harness by name.
UNIT_CFLAGS	:= -iquote tests/lib
# Sanitizers abort on the first report so a finding fails the test.
TEST_SAN_FLAGS	:= -fsanitize=address,undefined -fno-sanitize-recover=all \
		   -fno-omit-frame-pointer

# Unit tests, the math with a fake clock: tests/unit/test_NAME.c runs the
# cases, which are in it or in tests/unit/NAME_*.c, one file a subject.
UNIT_TEST_SRCS	:= $(filter-out tests/unit/test_prom.c tests/unit/test_lru.c tests/unit/test_check_prom.c tests/unit/test_output.c,\
		     $(wildcard tests/unit/test_*.c))
UNIT_TEST_BINS	:= $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_TEST_SRCS))
UNIT_PARTS	:= $(filter-out tests/unit/test_%,$(wildcard tests/unit/*.c))

TEST_BINS	:= $(UNIT_TEST_BINS)
BENCH_BINS	:=

$(UNIT_TEST_BINS): $(BUILD)/tests/%: tests/unit/%.c $(UNIT_PARTS) $(wildcard tests/unit/*.h) \
		$(TEST_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(UNIT_CFLAGS) $(TEST_SAN_FLAGS) $< \
		$(filter tests/unit/$(patsubst test_%,%,$*)_%.c,$(UNIT_PARTS)) -o $@

# The Prometheus writer's golden-text tests: user/lib/prom.c alone, no libbpf.
$(BUILD)/tests/test_prom: tests/unit/test_prom.c user/lib/prom.c user/lib/prom.h $(TEST_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(UNIT_CFLAGS) $(TEST_SAN_FLAGS) tests/unit/test_prom.c user/lib/prom.c -o $@
TEST_BINS	+= $(BUILD)/tests/test_prom

# The LRU hash table (user/lib/lru.c) alone.
$(BUILD)/tests/test_lru: tests/unit/test_lru.c user/lib/lru.c user/lib/lru.h user/lib/hash.h \
		$(TEST_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(UNIT_CFLAGS) $(TEST_SAN_FLAGS) tests/unit/test_lru.c user/lib/lru.c -o $@
TEST_BINS	+= $(BUILD)/tests/test_lru

# The error funnel and the JSON writer (user/lib/output.c) alone.
$(BUILD)/tests/test_output: tests/unit/test_output.c user/lib/output.c user/lib/output_log.c \
		user/lib/output.h user/lib/opts.h $(TEST_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(UNIT_CFLAGS) $(TEST_SAN_FLAGS) tests/unit/test_output.c user/lib/output.c \
		user/lib/output_log.c -o $@
TEST_BINS	+= $(BUILD)/tests/test_output

# The check server's /metrics text against its golden file: its writer
# (user/daemon/check/metrics.c) over user/lib/prom.c, no libbpf.
$(BUILD)/tests/test_check_prom: tests/unit/test_check_prom.c user/daemon/check/metrics.c \
		user/daemon/check/metrics.h user/lib/prom.c user/lib/prom.h $(TEST_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(UNIT_CFLAGS) $(TEST_SAN_FLAGS) tests/unit/test_check_prom.c user/daemon/check/metrics.c \
		user/lib/prom.c -o $@
TEST_BINS	+= $(BUILD)/tests/test_check_prom

# Bounded traffic generator for the e2e tests and the demo.
$(BUILD)/flood_xdp.bpf.o: tools/flood_xdp.bpf.c tools/flood_src.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(BUILD)/sluice-flood: tools/flood.c tools/flood_opts.c tools/flood.h tools/flood_src.h \
		$(BUILD)/flood_xdp.skel.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) tools/flood.c tools/flood_opts.c -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/sluice-flood

# The minimal XDP token bucket that tools/bench-napi.sh measures sluice
# against, and its loader.
$(BUILD)/bench_min.bpf.o: tools/bench_min.bpf.c
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(BUILD)/bench-min: tools/bench_min.c $(BUILD)/bench_min.skel.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LIBS)

# BPF tests: the real XDP program through BPF_PROG_TEST_RUN, its policy
# committed by the CLI's own code (USER_LIB_OBJS), and variants of it that
# the tests must be able to tell apart (a racy CAS, no bucket to be had, a
# short IPv6 extension-header walk, a racy lease), that run on a clock the
# tests choose (the first hour after boot) or that the benchmark runs:
# each is tests/bpf/NAME.bpf.c, which overrides a macro and includes
# bpf/sluice.bpf.c (or tools/bench_min.bpf.c), and its skeleton is
# $(BUILD)/tests/NAME.skel.h, named NAME_bpf.
BPF_TEST_CFLAGS	:= -I $(BUILD)/tests
$(BUILD)/tests/%.bpf.o: tests/bpf/%.bpf.c bpf/sluice.bpf.c bpf/*.h tools/bench_min.bpf.c tests/bpf/sluice_churn.bpf.c \
		$(TEST_HEADERS)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -I bpf -c $< -o $@
$(BUILD)/tests/%.skel.h: $(BUILD)/tests/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@
$(BUILD)/tests/test_xdp $(BUILD)/tests/test_race $(BUILD)/tests/test_rules $(BUILD)/tests/test_sources \
		$(BUILD)/tests/test_frag $(BUILD)/tests/test_algos $(BUILD)/tests/test_ban_sweep \
		$(BUILD)/tests/test_ban_prefix: $(BUILD)/tests/%: tests/bpf/%.c \
		tests/bpf/fixture.h tests/lib/harness.h $(USER_LIB_OBJS) \
		$(BUILD)/tests/sluice_racy.skel.h $(BUILD)/tests/sluice_nobucket.skel.h \
		$(BUILD)/tests/sluice_firsthour.skel.h
	$(CC) $(CFLAGS) $(BPF_TEST_CFLAGS) $< $(USER_LIB_OBJS) -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/test_xdp $(BUILD)/tests/test_race $(BUILD)/tests/test_rules $(BUILD)/tests/test_sources
TEST_BINS	+= $(BUILD)/tests/test_algos
# Fragment trains: later fragments judged by their first's rule (bpf/frag.h).
TEST_BINS	+= $(BUILD)/tests/test_frag
# test_ban_sweep defines the sweep's ban_sweep_window (a weak symbol in user/cmd/ban.c).
TEST_BINS	+= $(BUILD)/tests/test_ban_sweep
# Prefix bans (ban add, ban load) through the real program.
TEST_BINS	+= $(BUILD)/tests/test_ban_prefix
# The cluster leases: test_cluster drives --cluster rules, their
# shares, hot notices and leases (user/daemon/cluster/lease.c's writer) through the real
# program, and under two CPUs at once through sluice_lease_racy.bpf.c, whose
# lease credit is decremented by a plain store: the test must see it
# over-admit.
$(BUILD)/tests/test_cluster: tests/bpf/test_cluster.c tests/bpf/fixture.h tests/lib/harness.h \
		$(USER_LIB_OBJS) $(BUILD)/tests/sluice_lease_racy.skel.h
	$(CC) $(CFLAGS) $(BPF_TEST_CFLAGS) $< $(USER_LIB_OBJS) -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/test_cluster
# The source table's insert race: test_srctab runs the churn build, whose
# skeleton has one map more than sluice's.
$(BUILD)/tests/test_srctab: tests/bpf/test_srctab.c tests/bpf/fixture.h tests/lib/harness.h \
		$(USER_LIB_OBJS) $(BUILD)/tests/sluice_churn.skel.h $(BUILD)/tests/sluice_churn_nolock.skel.h \
		$(BUILD)/tests/sluice_churn_evict.skel.h
	$(CC) $(CFLAGS) $(BPF_TEST_CFLAGS) $< $(USER_LIB_OBJS) -o $@ $(LIBS) -lpthread
TEST_BINS	+= $(BUILD)/tests/test_srctab
# The source table's seed: secret from the pins' group, rotated with the
# table (aimed floods miss their victim).
$(BUILD)/tests/test_seed: tests/bpf/test_seed.c tests/bpf/fixture.h tests/lib/harness.h \
		$(USER_LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BPF_TEST_CFLAGS) $< $(USER_LIB_OBJS) -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/test_seed
# The minimal bucket with the same marker sources (bench_min_random.bpf.c)
# gives bench_xdp its baseline rows.
$(BUILD)/tests/bench_xdp: tests/bpf/bench_xdp.c tests/bpf/fixture.h $(USER_LIB_OBJS) \
		$(BUILD)/tests/sluice_random.skel.h $(BUILD)/tests/bench_min_random.skel.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BPF_TEST_CFLAGS) $< $(USER_LIB_OBJS) -o $@ $(LIBS)
BENCH_BINS	+= $(BUILD)/tests/bench_xdp $(BUILD)/sluice-flood $(BUILD)/bench-min

# The CLI under ASan/UBSan for tests/cli: the same user/*.c, own objects.
ASAN_USER_OBJS	:= $(patsubst user/%.c,$(BUILD)/asan/%.o,$(USER_SRCS))
$(ASAN_USER_OBJS): $(BUILD)/asan/%.o: user/%.c $(HEADERS) $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(TEST_SAN_FLAGS) -c $< -o $@
$(BUILD)/asan/sluice: $(ASAN_USER_OBJS)
	$(CC) $(CFLAGS) $(TEST_SAN_FLAGS) $^ -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/asan/sluice

# Exporter test helpers: raw, stalled and trickling HTTP clients, a
# source-table filler, and a pin-permission prober (tests/exporter/).
$(BUILD)/tests/http_raw: tests/exporter/http_raw.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(TEST_SAN_FLAGS) $< -o $@
$(BUILD)/tests/fill_sources: tests/exporter/fill_sources.c $(TEST_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ -lbpf
$(BUILD)/tests/pin_access: tests/exporter/pin_access.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ -lbpf
TEST_BINS	+= $(BUILD)/tests/http_raw $(BUILD)/tests/fill_sources $(BUILD)/tests/pin_access

# `make test` runs the whole list, as CI does; `make test TESTS=unit` only
# the tests whose names match. On a fresh machine `sudo make test` first
# installs what is missing, so the build itself runs in a second make that
# sees the installed toolchain. TEST_JOBS tests run side by side (most of
# them wait on traffic, timers or daemons; the ones marked [serial] in
# tests/list run alone): 2 takes the list from about 40 to about 25
# minutes on a 2-CPU machine; TEST_JOBS=1 runs one at a time.
TEST_JOBS	?= 2
test:
	tools/install-deps.sh
	$(MAKE) all $(TEST_BINS)
	tests/run -j $(TEST_JOBS) $(TESTS)

# `make test-quick`: the suites that need no traffic (unit, lint, bpf, cli)
# and the fuzzers cut to SLUICE_FUZZ_SECONDS (default 5) each, in minutes.
QUICK_SUITES		:= unit lint bpf cli fuzz
SLUICE_FUZZ_SECONDS	?= 5
test-quick:
	tools/install-deps.sh
	$(MAKE) all $(TEST_BINS)
	SLUICE_FUZZ_SECONDS=$(SLUICE_FUZZ_SECONDS) tests/run $(QUICK_SUITES)

# The differential packet fuzzer (tests/bpf/fuzz_pkt.c): the real program
# against a reference classifier (refclass.c), and a variant whose parser
# walks too few IPv6 extension headers, which the fuzzer must catch.
$(BUILD)/tests/fuzz_pkt: tests/bpf/fuzz_pkt.c tests/bpf/fuzz_gen.c tests/bpf/fuzz_pkt.h \
		tests/bpf/refclass.c tests/bpf/refclass.h \
		tests/bpf/fixture.h $(USER_LIB_OBJS) $(BUILD)/tests/sluice_shortext.skel.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BPF_TEST_CFLAGS) tests/bpf/fuzz_pkt.c tests/bpf/fuzz_gen.c \
		tests/bpf/refclass.c $(USER_LIB_OBJS) -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/fuzz_pkt
# Fault injection (tests/fault/): probe frames through a pinned program
# and a timed SIGKILL.
$(BUILD)/tests/fault_tool: tests/fault/fault_tool.c $(TEST_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ -lbpf
TEST_BINS	+= $(BUILD)/tests/fault_tool
# sluice with the fault-injecting map writer and step hooks of
# tests/fault/ linked in place of user/lib/map_write.c and steps.c:
# SLUICE_TEST_FAULT=map_update:N fails its Nth map write,
# SLUICE_TEST_HOOK=STEP:kill|stop kills or stops attach/detach at STEP.
FAULT_SRCS	:= tests/fault/map_write.c tests/fault/steps.c
FAULT_OBJS	:= $(patsubst tests/fault/%.c,$(BUILD)/tests/fault/%.o,$(FAULT_SRCS))
$(FAULT_OBJS): $(BUILD)/tests/fault/%.o: tests/fault/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/tests/sluice-fault: $(filter-out $(BUILD)/user/lib/map_write.o $(BUILD)/user/lib/steps.o,$(USER_OBJS)) \
		$(FAULT_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/sluice-fault

# e2e/l4_bypass's raw sender and listener (no python3 on CI).
$(BUILD)/tests/l4_send: tests/e2e/l4_send.c tests/e2e/craft.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@
TEST_BINS	+= $(BUILD)/tests/l4_send

# e2e/vlan_stack's and e2e/v6_frag_proto's raw UDP sender and counting receiver.
$(BUILD)/tests/udp_send: tests/e2e/udp_send.c tests/e2e/craft.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@
TEST_BINS	+= $(BUILD)/tests/udp_send
# libFuzzer targets for the parsers, and `make fuzz` (tests/fuzz/).
include tests/fuzz/fuzz.mk

# The check server with each bucket judged outside its lock: the sluice
# binary linked with tests/check/racy_bucket.c in place of
# user/daemon/check/bucket.c. tests/check/concurrency.sh shows that this
# build over-admits under concurrent checks of one source where the real
# one does not.
$(BUILD)/tests/check_racy_bucket.o: tests/check/racy_bucket.c $(HEADERS) $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/tests/sluice_check_racy: $(filter-out $(BUILD)/user/daemon/check/bucket.o,$(USER_OBJS)) \
		$(BUILD)/tests/check_racy_bucket.o
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/sluice_check_racy

# The sluice binary whose cluster agent grants with a GET-then-SET
# read-modify-write instead of the Lua script, its syncs aligned across
# hosts: the same objects as build/sluice with tests/cluster/racy_grant.c
# linked in place of user/daemon/cluster/grant.c. tests/cluster/race.sh
# shows that this build over-admits one source flooding several hosts where
# the real one does not.
$(BUILD)/tests/racy_grant.o: tests/cluster/racy_grant.c $(HEADERS) $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
RACY_CLUSTER_OBJS	:= $(filter-out $(BUILD)/user/daemon/cluster/grant.o,$(USER_OBJS)) \
			   $(BUILD)/tests/racy_grant.o
$(BUILD)/tests/sluice-racy-cluster: $(RACY_CLUSTER_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/sluice-racy-cluster
# The sluice binary whose cluster agent grants first come, first served:
# user/daemon/cluster/grant.c built with GRANT_ASKERS_MAX 0, so the grant
# script drops the hash of asking hosts at every grant and each host asks
# alone. tests/cluster/fair.sh shows that busy hosts' shares then follow
# their sync phases, not an even split.
$(BUILD)/tests/fcfs_grant.o: user/daemon/cluster/grant.c $(HEADERS) $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DGRANT_ASKERS_MAX=0U -c $< -o $@
$(BUILD)/tests/sluice-fcfs-cluster: $(filter-out $(BUILD)/user/daemon/cluster/grant.o,$(USER_OBJS)) \
		$(BUILD)/tests/fcfs_grant.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/sluice-fcfs-cluster
# The sluice binary whose cluster agent speaks to a Redis Cluster as a
# naive client would: MOVED and ASK plain errors, the slot's first owner
# kept for good (tests/cluster/rcluster_noredirect.c in place of
# user/daemon/cluster/rcluster.c). tests/cluster/rcluster.sh fails with it.
$(BUILD)/tests/rcluster_noredirect.o: tests/cluster/rcluster_noredirect.c \
		user/daemon/cluster/rcluster.c $(HEADERS) $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/tests/sluice-rcluster-noredirect: $(filter-out $(BUILD)/user/daemon/cluster/rcluster.o,\
		$(USER_OBJS)) $(BUILD)/tests/rcluster_noredirect.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/sluice-rcluster-noredirect
# The sluice binary whose cluster agent asks the sentinels of a sentinel://
# URL once and keeps the first master's address forever
# (-DSLUICE_SENTINEL_STICKY): tests/cluster/sentinel.sh with
# SENTINEL_BREAK=sticky runs it and must fail, its agents never following
# the failover.
$(BUILD)/tests/sentinel_sticky.o: user/daemon/cluster/sentinel.c $(HEADERS) $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DSLUICE_SENTINEL_STICKY -c $< -o $@
$(BUILD)/tests/sluice-sticky-sentinel: $(filter-out $(BUILD)/user/daemon/cluster/sentinel.o,$(USER_OBJS)) \
		$(BUILD)/tests/sentinel_sticky.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS)
TEST_BINS	+= $(BUILD)/tests/sluice-sticky-sentinel
# sluice whose XDP program's eviction takes established sources as
# probation ones (SLUICE_EVICT_IGNORES_ESTABLISHED, test_srctab's churn
# variant): the flood tests' *_BREAK=evict run against it and must fail.
# Built on demand, not by `make test`: the user objects that include
# sluice.skel.h are compiled again against this build's skeleton.
EVICT_DIR	:= $(BUILD)/tests/evict
EVICT_SRCS	:= $(shell grep -l '"sluice.skel.h"' $(USER_SRCS))
EVICT_OBJS	:= $(patsubst user/%.c,$(EVICT_DIR)/%.o,$(EVICT_SRCS))
$(EVICT_DIR)/sluice.bpf.o: bpf/sluice.bpf.c bpf/*.h $(wildcard include/sluice/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -DSLUICE_EVICT_IGNORES_ESTABLISHED -c $< -o $@
$(EVICT_DIR)/sluice.skel.h: $(EVICT_DIR)/sluice.bpf.o
	$(BPFTOOL) gen skeleton $< name sluice_bpf > $@.tmp
	mv $@.tmp $@
$(EVICT_OBJS): $(EVICT_DIR)/%.o: user/%.c $(HEADERS) $(SKELS) $(EVICT_DIR)/sluice.skel.h
	@mkdir -p $(@D)
	$(CC) -I $(EVICT_DIR) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(BUILD)/tests/sluice-evict: $(filter-out $(patsubst user/%.c,$(BUILD)/user/%.o,$(EVICT_SRCS)),$(USER_OBJS)) \
		$(EVICT_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIBS)
