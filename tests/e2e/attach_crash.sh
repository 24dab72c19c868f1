#!/usr/bin/env bash
# e2e/attach_crash: an attach killed at any step leaves an interface that
# sluice still manages. After the kill, `status` tells the truth (attached
# exactly when a program is on the link, with that program's id, and the
# policy of the previous attach intact), and `detach` (or another attach,
# then detach) leaves no XDP program on the link and no pins: nothing is
# orphaned. The steps are the test-only SLUICE_TEST_HOOK points in attach:
#   detached  the old program is off the link, the new one not yet on
#             (under libxdp's dispatcher only: a mode change off it takes
#             the old one off and puts the new one on in one system call)
#   attached  the new program is on the link, not yet pinned
#   pinned    its pin is made under a temporary name, not yet renamed
#   renamed   the pin is in place, the attach metadata not yet written
# for a first attach, a re-attach in the same mode (swapped in place) and a
# re-attach in another mode (--force: off and on in one system call).
#
# Each scenario's time is mostly the verifier checking the program at each
# attach, on one CPU; so the scenarios that end in detach and those that
# attach again run side by side, each half on a veth pair of its own.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

# The id of the XDP program on the rx link, or nothing.
link_prog() { ip -n "$NS_RX" -j link show dev "$IF_RX" | jq -r '.[0].xdp.prog.id // empty'; }

# status -j of our interface, or null when it is not listed.
our_status() {
	sluice_rx -j status | jq -c --arg i "$IF_RX" '[.interfaces[] | select(.interface == $i)][0]'
}

check_status() { # WHAT [POLICY]
	local what=$1 policy=${2:-} prog st
	prog=$(link_prog)
	st=$(our_status) || fail "$what: sluice status failed"
	[[ $st != null ]] || fail "$what: status does not list $IF_RX"
	if [[ -n $prog ]]; then
		assert_eq "$(jq -r .attached <<<"$st")" true "$what: status says attached (link has $prog)"
		assert_eq "$(jq -r .prog_id <<<"$st")" "$prog" "$what: status program id"
	else
		assert_eq "$(jq -r .attached <<<"$st")" false "$what: status says not attached (link has none)"
	fi
	if [[ -n $policy ]]; then
		assert_eq "$(sluice_rx -j limit list | jq -c 'map(del(.passed, .dropped, .would_drop, .would_drop_bytes))')" "$policy" \
			"$what: policy kept"
	fi
}

check_detach() { # WHAT
	local what=$1 rc=0 err
	err=$(sluice_rx detach "$IF_RX" 2>&1 >/dev/null) || rc=$?
	assert_eq "$rc" 0 "$what: detach exit code ($err)"
	[[ -z $(link_prog) ]] || fail "$what: program $(link_prog) still on $IF_RX after detach"
	ok "$what: no XDP program on $IF_RX after detach"
	[[ ! -e $SLUICE_PIN_ROOT/$IF_RX ]] || fail "$what: pins left: $(ls "$SLUICE_PIN_ROOT/$IF_RX")"
	ok "$what: no pins after detach"
}

# KIND (first|same|skb) STEP THEN (detach|reattach)
scenario() {
	local kind=$1 step=$2 then=$3 what="$1 attach killed at $2, then $3" rc=0 policy=
	local -a mode=(--mode native)
	if [[ $kind != first ]]; then
		sluice_attach >/dev/null
		sluice_rx limit default --rate 777 --burst 888
		sluice_rx limit set 198.18.9.0/24 --rate 5 --burst 6
		policy=$(sluice_rx -j limit list | jq -c 'map(del(.passed, .dropped, .would_drop, .would_drop_bytes))')
	fi
	[[ $kind == skb ]] && mode=(--mode skb --force)
	SLUICE_TEST_HOOK="$step:kill" SLUICE=$SLUICE_FAULT sluice_rx attach "${mode[@]}" "$IF_RX" >/dev/null 2>&1 || rc=$?
	assert_eq "$rc" 137 "$what: attach was killed at the hook"
	check_status "$what" "$policy"
	if [[ $then == reattach ]]; then
		out=$(sluice_rx attach "${mode[@]}" "$IF_RX") || fail "$what: attach again failed"
		[[ -n $(link_prog) ]] || fail "$what: no program on the link after attach again"
		check_status "$what, attached again" "$policy"
	fi
	check_detach "$what"
}

# One half: every kind and step, then THEN; in a subshell with namespaces
# and a cleanup trap of its own (netns_init).
half() { # TAG THEN
	local then=$2 kind step
	netns_init "$1"
	netns_setup
	for kind in first same skb; do
		for step in attached pinned renamed; do
			scenario "$kind" "$step" "$then"
		done
	done
}

# A failed check signals this shell (fail): here that marks the test failed
# and it goes on waiting, so that each half finishes or fails on its own and
# removes its namespaces and pins before the test ends.
rc=0
trap 'rc=1' USR1
halves=()
(half akd detach) &
halves+=($!)
(half akr reattach) &
halves+=($!)
for pid in "${halves[@]}"; do
	# a trapped signal interrupts wait: wait again until the half is gone
	while :; do
		st=0
		wait "$pid" || st=$?
		kill -0 "$pid" 2>/dev/null || break
	done
	((st == 0)) || rc=1
done
exit "$rc"
