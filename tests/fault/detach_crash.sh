#!/usr/bin/env bash
# fault/detach_crash: a detach killed at any step leaves an interface that
# sluice still manages (tests/e2e/attach_crash covers attach). The steps
# are sluice-fault's SLUICE_TEST_HOOK points in detach (user/cmd/attach.c):
#   found          the program is found, nothing changed yet
#   unlinked       the program is off the link, every pin still there
#   unpinning      the first map's pin is removed
#   maps_unpinned  every map's pin is removed, the program's not yet
#   unpinned       every pin is removed, the directory not yet
# After the kill:
#   - no program is orphaned: the link runs a program only if its pins are
#     all there and status says attached with that program's id;
#   - status tells the truth: attached exactly when a program is on the
#     link; where pins were half removed it says so in one line that says
#     to run detach (and, listed or not, does not claim a program runs);
#   - then detach exits 0 and leaves no program and no pins, or attach
#     works (a program on the link, status attached with its id, the
#     policy as before where the maps survived) and detach after it too.
#
# Can fail: with a detach that
# removes the pins before it takes the program off the link: killed after
# the pins went, it leaves a program on the link that nothing manages.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init fd
need_sluice_fault
netns_setup

link_prog() { ip -n "$NS_RX" -j link show dev "$IF_RX" | jq -r '.[0].xdp.prog.id // .[0].xdp.attached[0].prog.id // empty'; }
# shellcheck disable=SC2012 # pin names are plain
pins() { ls "$SLUICE_PIN_ROOT/$IF_RX" 2>/dev/null | tr '\n' ' '; }
policy_now() { sluice_rx -j limit list | jq -c 'map(del(.passed, .dropped, .would_drop, .would_drop_bytes))'; }

# After the kill: what the link runs agrees with the pins and status.
check_after_kill() { # WHAT
	local what=$1 prog st rc=0 err
	prog=$(link_prog)
	st=$(sluice_rx -j status 2>"$(netns_tmp err)") || rc=$?
	err=$(cat "$(netns_tmp err)")
	if [[ -n $prog ]]; then
		[[ $rc == 0 ]] || fail "$what: program $prog on the link but status fails: $err"
		st=$(jq -c --arg i "$IF_RX" '[.interfaces[] | select(.interface == $i)][0]' <<<"$st")
		[[ $st != null ]] || fail "$what: program $prog orphaned on the link: status does not list $IF_RX (pins: $(pins))"
		assert_eq "$(jq -r .attached <<<"$st")" true "$what: status says attached (link has $prog)"
		assert_eq "$(jq -r .prog_id <<<"$st")" "$prog" "$what: status program id"
	elif [[ -d $SLUICE_PIN_ROOT/$IF_RX ]]; then
		if ((rc == 0)); then
			st=$(jq -c --arg i "$IF_RX" '[.interfaces[] | select(.interface == $i)][0]' <<<"$st")
			[[ $st == null ]] || assert_eq "$(jq -r .attached <<<"$st")" false \
				"$what: status says not attached (the link has no program)"
		else
			# -j: on stdout, the interface's own entry in the list (or, with
			# no list, the lone error object)
			[[ -n $err ]] || err=$(jq -r --arg i "$IF_RX" \
				'([.interfaces[]? | select(.interface == $i)][0] // .) |
				 "sluice: \(.error): \(.hint)"' <<<"$st" 2>/dev/null)
			[[ $(wc -l <<<"$err") == 1 && $err == *"sluice detach"* ]] ||
				fail "$what: status failed without saying to detach: $err"
			ok "$what: status says: $err"
		fi
	else
		ok "$what: no program and no pins left"
	fi
}

check_detached() { # WHAT
	local what=$1 rc=0 err
	err=$(sluice_rx detach "$IF_RX" 2>&1 >/dev/null) || rc=$?
	# Nothing left to detach is fine too: detach says so and exits 2.
	if [[ $rc == 2 && $err == *"nothing to detach"* ]]; then
		ok "$what: nothing left to detach"
	else
		assert_eq "$rc" 0 "$what: detach exit code ($err)"
	fi
	[[ -z $(link_prog) ]] || fail "$what: program $(link_prog) still on $IF_RX after detach"
	[[ ! -e $SLUICE_PIN_ROOT/$IF_RX ]] || fail "$what: pins left after detach: $(pins)"
	ok "$what: no program and no pins after detach"
}

# STEP THEN(detach|reattach) [MODE]
scenario() {
	local step=$1 then=$2 what="detach killed at $1, then $2" rc=0 policy prog st
	sluice_attach >/dev/null
	sluice_rx limit default --rate 777 --burst 888 >/dev/null
	sluice_rx limit set 198.18.9.0/24 --rate 5 --burst 6 >/dev/null
	policy=$(policy_now)
	SLUICE_TEST_HOOK="$step:kill" nsenter --net="/run/netns/$NS_RX" "$SLUICE_FAULT" -i "$IF_RX" \
		detach "$IF_RX" >/dev/null 2>&1 || rc=$?
	assert_eq "$rc" 137 "$what: detach was killed at the hook"
	check_after_kill "$what"
	if [[ $then == reattach ]]; then
		sluice_attach >/dev/null || fail "$what: attach again failed"
		prog=$(link_prog)
		[[ -n $prog ]] || fail "$what: no program on the link after attach again"
		st=$(sluice_rx -j status | jq -c --arg i "$IF_RX" '[.interfaces[] | select(.interface == $i)][0]')
		assert_eq "$(jq -r '"\(.attached) \(.prog_id)"' <<<"$st")" "true $prog" \
			"$what, attached again: status"
		if [[ $step == found || $step == unlinked ]]; then
			assert_eq "$(policy_now)" "$policy" "$what, attached again: policy kept"
		fi
	fi
	check_detached "$what"
}

for then in detach reattach; do
	for step in found unlinked unpinning maps_unpinned unpinned; do
		scenario "$step" "$then"
	done
done
