#!/usr/bin/env bash
# fault/map_fail: a map write that fails (out of memory, injected with the
# SLUICE_TEST_FAULT=map_update:N of sluice-fault, which fails the Nth write of a
# command to a map: update, delete, or the config map's shared mapping)
# gives one clean error line and exit 1, and leaves nothing half-written:
# `limit list -j` (counters included), `policy show` and the datapath's
# own verdicts (probe frames through the pinned program) are as before,
# and the next command works. Covered:
#   - policy apply of a 60-rule policy over another: every N from 1 to the
#     number of writes it makes when the write that fails is among the
#     first 16 or the last 120 (the trie, the budget, the flip), every
#     FAULT_STRIDE-th (default 48) in between; FAULT_STRIDE=1 covers all;
#   - limit set, limit new-sources: their first 4 writes and about their
#     last 12 (the same commit as policy apply's); ban del: its one write
#     (the ban stays, ban list unchanged);
#   - the table full for real: a policy file of SLUICE_MAX_POLICIES rules,
#     a rule added to a full policy, too many port rules for one prefix:
#     refused before anything is written (bad input: one line, exit 2).
#
# Can fail: with a commit that
# writes the active slot in place: a write failing half-way then leaves a
# mix of both policies live (NEW's default with OLD's rules).
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/fault/policy_files.sh
. "$(dirname "$0")/policy_files.sh"

STRIDE=${FAULT_STRIDE:-48}
fault_setup fm
need_sluice_fault

S() { "$SLUICE" -i "$IF_RX" "$@"; }
# sluice-fault, for the commands whose writes fail.
F() { "$SLUICE_FAULT" -i "$IF_RX" "$@"; }
n=0
verdicts() { # sets V: the datapath's verdicts for PROBES, from fresh sources
	local out
	n=$((n + 1))
	((n < 2048)) || fail "out of fresh probe sources"
	out=$("$TOOL" probe "$PIN" "$n" "${PROBES[@]}") || fail "probe failed"
	V=${out%%$'\n'*}
}
state() { S -j limit list && S policy show; }

# CMD... run with the Nth map write failing: exit 1, one line, no change.
# Sets R to "ok ERROR", or to "done" when the command made fewer than N
# writes (and so succeeded: the caller then puts the old state back).
fault_at() { # N WANT_VERDICTS CMD...
	local k=$1 want=$2 rc=0 err before after
	shift 2
	before=$(state) || fail "state before $*"
	err=$(SLUICE_TEST_FAULT=map_update:$k "$@" 2>&1 >/dev/null) || rc=$?
	if ((rc == 0)); then
		R="done"
		return
	fi
	[[ $rc == 1 ]] || fail "$* with write $k failing: exit $rc, want 1 ($err)"
	[[ $(wc -l <<<"$err") == 1 && $err == "sluice: "* ]] ||
		fail "$* with write $k failing: not one error line: $err"
	after=$(state) || fail "$* with write $k failing: the next command failed"
	[[ $after == "$before" ]] ||
		fail "$* with write $k failing changed the policy: $(diff <(echo "$before") <(echo "$after") | head -6)"
	if [[ -n $want ]]; then
		verdicts
		[[ $V == "$want" ]] || fail "$* with write $k failing: the datapath's verdicts changed:
  got  $V
  want $want"
	fi
	R="ok $err"
}

# About how many map writes CMD makes (what a failed run leaves in the
# inactive slot changes it a little): sets LAST to the largest N found at
# which it fails. Every run that succeeds is undone (OLD applied again).
count_writes() { # CMD...
	local lo=0 hi=1 mid
	while :; do
		if SLUICE_TEST_FAULT=map_update:$hi "$@" >/dev/null 2>&1; then
			S policy apply "$POL/old" >/dev/null
			break
		fi
		lo=$hi
		hi=$((hi * 2))
	done
	while ((hi - lo > 1)); do
		mid=$(((lo + hi) / 2))
		if SLUICE_TEST_FAULT=map_update:$mid "$@" >/dev/null 2>&1; then
			hi=$mid
			S policy apply "$POL/old" >/dev/null
		else
			lo=$mid
		fi
	done
	LAST=$lo
}

S policy apply "$POL/old" >/dev/null
verdicts
[[ $V == "$want_old" ]] || fail "OLD not live after apply"

# --- policy apply NEW over OLD -------------------------------------------
# How many writes an apply makes depends a little on what a failed one left
# in the inactive slot (the trie entries it clears), so the end is found by
# running until it succeeds: every N up to 16, then every STRIDE-th until
# one succeeds, then every N of the last 120 before that one (the trie,
# the budget and the flip) until one succeeds.
checked=0
first_err="" last_err=""
fault_apply() { # N: sets R
	fault_at "$1" "$want_old" F policy apply "$POL/new"
	if [[ $R == ok* ]]; then
		checked=$((checked + 1))
		[[ -n $first_err ]] || first_err=${R#ok }
		last_err=${R#ok }
	else
		S policy apply "$POL/old" >/dev/null
	fi
}
for ((k = 1; k <= 16; k++)); do
	fault_apply "$k"
	[[ $R == ok* ]] || fail "policy apply succeeded with write $k failing"
done
for ((k = STRIDE; ; k += STRIDE)); do
	fault_apply "$k"
	[[ $R == ok* ]] || break
done
for ((k = k - STRIDE - 120 > 16 ? k - STRIDE - 120 : 17; ; k++)); do
	fault_apply "$k"
	[[ $R == ok* ]] || break
done
total=$((k - 1))
ok "policy apply of 60 rules makes $total map writes (this time)"
[[ $last_err == *"cannot switch to the new policy"* ]] ||
	fail "the last write failing should be the flip, got: $last_err"
ok "policy apply: $checked of its writes failed one at a time, each a clean exit 1 with nothing changed (e.g. '$first_err', '$last_err')"
ok "policy apply works once no write fails"

# --- limit set, limit new-sources, ban del: first and last writes ----------
edit_cmds=(
	"limit set 198.19.200.0/24 --rate 7 --burst 9"
	"limit new-sources --rate 50 --burst 60"
)
for words in "${edit_cmds[@]}"; do
	# Their commit is policy apply's: its first writes and its last 12
	# (the end of the trie, the budget, the flip) are enough here.
	# shellcheck disable=SC2086 # words split on purpose
	count_writes F $words
	cnt=0
	for ((k = 1; ; k++)); do
		((k == 5)) && k=$((LAST - 12 > 5 ? LAST - 12 : 5))
		# shellcheck disable=SC2086 # words split on purpose
		fault_at "$k" "" F $words
		[[ $R == ok* ]] || break
		cnt=$((cnt + 1))
	done
	S policy apply "$POL/old" >/dev/null
	verdicts
	[[ $V == "$want_old" ]] || fail "$words: the datapath's verdicts changed"
	ok "$words: $cnt of its $((k - 1)) writes failed one at a time (the first 4 and the last 12 or so), each a clean exit 1 with nothing changed"
done

# ban del: a source banned by a --ban rule, the lift's one write failing.
S limit set 198.18.77.0/24 --rate 1/h --burst 1 --ban 1h >/dev/null
"$TOOL" probe "$PIN" 0 198.18.77.5 >/dev/null
banned=$(S -j ban list | jq length)
assert_eq "$banned" 1 "one ban live before ban del"
fault_at 1 "" F ban del 198.18.77.5
r=$R
[[ $r == ok* ]] || fail "ban del succeeded with its write failing"
ok "ban del with its write failing: ${r#ok }"
assert_eq "$(S -j ban list | jq length)" 1 "the ban is still live"
S ban del 198.18.77.5 >/dev/null || fail "ban del after the failure"
assert_eq "$(S -j ban list | jq length)" 0 "ban del works next"

# --- the policy table full for real ---------------------------------------
S policy apply "$POL/old" >/dev/null
before=$(state)
max=$(awk '/#define SLUICE_MAX_POLICIES/ { sub("U", "", $3); print $3 }' \
	"$SLUICE_ROOT/include/sluice/policy.h")
[[ $max =~ ^[0-9]+$ ]] || fail "cannot read SLUICE_MAX_POLICIES"
big=$(netns_tmp big)
for ((i = 0; i < max; i++)); do
	echo "deny 2001:2:1:$(printf %x "$i")::/64"
done >"$big"
rc=0
err=$(S policy apply "$big" 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 2 "policy apply of $max rules (one more than the table holds): exit ($err)"
[[ $(wc -l <<<"$err") == 1 ]] || fail "not one line: $err"
[[ $(state) == "$before" ]] || fail "the refused apply changed the policy"
ok "policy unchanged after the refused apply"
head -n $((max - 1)) "$big" >"$big.full"
S policy apply "$big.full" >/dev/null || fail "policy apply of $((max - 1)) rules"
full=$(state)
rc=0
err=$(S limit set 2001:2:2::/64 --rate 5 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 2 "limit set on a full table: exit ($err)"
[[ $(wc -l <<<"$err") == 1 ]] || fail "not one line: $err"
[[ $(state) == "$full" ]] || fail "the refused limit set changed the policy"
ok "policy unchanged after the refused limit set"
S policy apply "$POL/old" >/dev/null
for ((i = 0; i < 9; i++)); do
	echo "limit set 198.19.0.0/21 --proto udp --dport $((2000 + i)) --rate 5"
done >"$big.ports"
before=$(state)
rc=0
err=$(S policy apply "$big.ports" 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 2 "nine port rules on one prefix: exit ($err)"
[[ $(state) == "$before" ]] || fail "the refused apply changed the policy"
ok "policy unchanged after the refused apply"
verdicts
[[ $V == "$want_old" ]] || fail "the datapath's verdicts changed"
ok "the datapath still runs OLD"
echo "FIGURES map_fail apply_writes=$total apply_faults=$checked"
