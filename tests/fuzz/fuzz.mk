# libFuzzer targets for sluice's parsers: the rule
# parser, the policy-file parser, address/CIDR/number/duration parsing, the
# exporter's HTTP request handling, and simulate's trace files (the other
# file sluice reads); and the check server's request handling.
# Included at the end of tests/tests.mk.
#
# The user objects are built again with clang, libFuzzer's coverage and
# ASan/UBSan into $(BUILD)/fuzz/ (main.o left out: each target has its own
# entry point). `make fuzz` runs every target for as long as FUZZ_SECONDS
# says (tools/fuzz.sh); tests/fuzz/run.sh is CI's bounded run.

FUZZ_CC		:= clang
FUZZ_SAN	:= address,undefined
FUZZ_CFLAGS	:= $(filter-out -O2,$(CFLAGS)) -O1 -fno-omit-frame-pointer \
		   -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -fno-sanitize-recover=all
FUZZ_LDFLAGS	:= -fsanitize=fuzzer,$(FUZZ_SAN)
FUZZ_USER_OBJS	:= $(patsubst user/%.c,$(BUILD)/fuzz/user/%.o,$(filter-out user/main.c,$(USER_SRCS)))
FUZZ_TARGETS	:= rule policy parse exporter trace check
FUZZ_BINS	:= $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))

$(FUZZ_USER_OBJS): $(BUILD)/fuzz/user/%.o: user/%.c $(HEADERS) $(SKELS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

# Every target links all the user objects: the exporter's and the check
# server's call their exported handlers (exporter.h, check.h).
$(FUZZ_BINS): $(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/fuzz_http.h \
		$(wildcard tests/fuzz/fuzz_check_*.h) $(FUZZ_USER_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_USER_OBJS) -o $@ $(FUZZ_LDFLAGS) $(LIBS)
TEST_BINS	+= $(FUZZ_BINS)

# `make fuzz [FUZZ_SECONDS=300]`: every parser target, then the packet
# fuzzer ($(BUILD)/tests/fuzz_pkt) when it has been built.
.PHONY: fuzz
fuzz: $(FUZZ_BINS)
	@if $(MAKE) -q $(BUILD)/tests/fuzz_pkt >/dev/null 2>&1; [ $$? -ne 2 ]; then \
		$(MAKE) $(BUILD)/tests/fuzz_pkt; fi
	tools/fuzz.sh

# Planted bugs, to show that the fuzzing fails when it should: targets
# linked with a copy of one user/ file that has an off-by-one. fuzz_rule:
# rule.c's --dport length check (a 16-character --dport overflows
# parse_dport's buffer); fuzz_parse: parse.c's host-bit check skips the last
# bit (198.18.0.1/24 passes as a CIDR); fuzz_check: judge.c rounds a 429's
# Retry-After down (the wait in whole seconds, at least 1), so a client that
# waits as told can get a second 429. Run them with
#   make build/fuzz/planted/fuzz_rule build/fuzz/planted/fuzz_parse \
#	build/fuzz/planted/fuzz_check
#   FUZZ_BIN_DIR=build/fuzz/planted tests/fuzz/run.sh rule parse check
# and all fail: rule on its regression input tests/fuzz/regress/rule/dport-16
# (and, without it, by finding the overflow from the seed corpus in about a
# minute), parse and check on their seed corpus.
PLANT_rule	:= s/if (strlen(s) >= sizeof(buf))$$/if (strlen(s) > sizeof(buf))/
PLANT_parse	:= 0,/bit < 8 \* SLUICE_ADDR_LEN/s//bit + 1 < 8 * SLUICE_ADDR_LEN/
PLANT_check	:= s/: ns_to_s_up(wait);$$/: wait \/ SLUICE_NS_PER_SEC;/
.SECONDEXPANSION:
$(BUILD)/fuzz/planted/%.c: $$(filter %/$$*.c,$$(USER_SRCS))
	@mkdir -p $(@D)
	sed '$(PLANT_$*)' $< > $@
	@! cmp -s $< $@ || { echo "fuzz.mk: the planted bug no longer applies to $<" >&2; rm -f $@; exit 1; }
$(BUILD)/fuzz/planted/%.o: $(BUILD)/fuzz/planted/%.c $(HEADERS) $(SKELS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@
$(BUILD)/fuzz/planted/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/fuzz_http.h $(FUZZ_USER_OBJS) $(BUILD)/fuzz/planted/%.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(filter-out %/$*.o,$(FUZZ_USER_OBJS)) \
		$(BUILD)/fuzz/planted/$*.o -o $@ $(FUZZ_LDFLAGS) $(LIBS)
# fuzz_check: the planted copy of user/daemon/check/judge.c, which holds the
# Retry-After rounding, in place of its object.
$(BUILD)/fuzz/planted/check_judge.c: user/daemon/check/judge.c
	@mkdir -p $(@D)
	sed '$(PLANT_check)' $< > $@
	@! cmp -s $< $@ || { echo "fuzz.mk: the planted bug no longer applies to $<" >&2; rm -f $@; exit 1; }
$(BUILD)/fuzz/planted/fuzz_check: tests/fuzz/fuzz_check.c tests/fuzz/fuzz.h tests/fuzz/fuzz_http.h \
		$(wildcard tests/fuzz/fuzz_check_*.h) $(FUZZ_USER_OBJS) $(BUILD)/fuzz/planted/check_judge.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(filter-out %/check/judge.o,$(FUZZ_USER_OBJS)) \
		$(BUILD)/fuzz/planted/check_judge.o -o $@ $(FUZZ_LDFLAGS) $(LIBS)
