#!/usr/bin/env bash
# fault/attach_fail: a first attach that cannot finish leaves nothing
# behind. SLUICE_TEST_FAULT=map_update:K makes sluice-fault fail attach's Kth
# map write: K = 1 is the attach metadata, 2..5 the first policy commit
# (the writing mark, the policy slot, the config mapping, the flip). Each
# must exit 1 with one "sluice: ..." line, and leave no XDP program on the
# link and no pin directory, so that a plain attach afterwards works.
#
# Can fail: an attach that does not undo its steps leaves, at every K, its
# program running on the link with all its pins though it says it failed:
#   FAIL: the link's program after a failed attach (sluice: cannot write
#   attach metadata: Cannot allocate memory): got 415319, want
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init af
need_sluice_fault
netns_setup

link_prog() { ip -n "$NS_RX" -j -d link show dev "$IF_RX" | jq -r '.[0].xdp.prog.id // empty'; }

for k in 1 2 3 4 5; do
	err=$(netns_tmp "err$k")
	rc=0
	SLUICE_TEST_FAULT=map_update:$k nsenter --net="/run/netns/$NS_RX" "$SLUICE_FAULT" attach "$IF_RX" \
		--mode native >/dev/null 2>"$err" || rc=$?
	assert_eq "$rc" 1 "attach with map write $k failing: exit status"
	assert_eq "$(wc -l <"$err")" 1 "attach with map write $k failing: lines on stderr"
	grep -q '^sluice: ' "$err" || fail "attach with map write $k failing: stderr: $(cat "$err")"
	assert_eq "$(link_prog)" "" "the link's program after a failed attach ($(cat "$err"))"
	[[ ! -e $SLUICE_PIN_ROOT/$IF_RX ]] ||
		fail "pins left after a failed attach ($(cat "$err")): $(ls -A "$SLUICE_PIN_ROOT/$IF_RX")"
	ok "map write $k failing: $(cat "$err"); nothing left"
done

sluice_attach >/dev/null
[[ -n $(link_prog) ]] || fail "no program on the link after a plain attach"
ok "a plain attach afterwards works"
