#!/usr/bin/env bash
# e2e/attach_l3: a device whose XDP frames start at the IP header (tun, and
# the tunnels ipip, gre, sit, wireguard where this kernel has them) is
# refused: exit 2, one line naming the kind of device, no program on it and
# no pins. sluice parses Ethernet frames; before this it attached and
# passed every packet there as non_ip. A veth beside them still attaches.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init l3
netns_setup
base=${IF_RX%r}
DEVS=()

# An attach that wrongly succeeded leaves pins keyed by the device's name.
l3_cleanup() {
	local rc=$? d
	for d in "${DEVS[@]}"; do
		[[ -d $SLUICE_PIN_ROOT/$d ]] || continue
		nsenter --net="/run/netns/$NS_RX" "$SLUICE" detach "$d" >/dev/null 2>&1 ||
			"$SLUICE" detach --force "$d" >/dev/null 2>&1 || rm -rf "${SLUICE_PIN_ROOT:?}/$d"
	done
	(exit "$rc")
	netns_cleanup
}
trap l3_cleanup EXIT

# NAME WORDS KIND...: make the device in the rx namespace (skipped where this
# kernel lacks the kind), then check that attach refuses it.
refused() {
	local dev=$1 words=$2 rc=0 err
	shift 2
	if ! ip -n "$NS_RX" link add "$dev" "$@" 2>/dev/null &&
		! ip -n "$NS_RX" tuntap add dev "$dev" "$@" 2>/dev/null; then
		echo "# no $words device on this kernel: not checked"
		return 0
	fi
	DEVS+=("$dev")
	ip -n "$NS_RX" link set "$dev" up || fail "cannot bring $dev up"
	err=$(netns_tmp "err-$dev")
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" attach "$dev" >/dev/null 2>"$err" || rc=$?
	cat "$err"
	assert_eq "$rc" 2 "exit code of attach to a $words device"
	assert_eq "$(wc -l <"$err")" 1 "lines on stderr for a $words device"
	grep -q "$dev is .*attach to an Ethernet device" "$err" ||
		fail "the refusal does not name $dev and what to do: $(cat "$err")"
	grep -q "$words" "$err" || fail "the refusal does not name the kind '$words': $(cat "$err")"
	assert_eq "$(ip -n "$NS_RX" -d link show dev "$dev" | grep -c 'prog/xdp' || true)" 0 \
		"XDP programs on the $words device"
	[[ ! -e $SLUICE_PIN_ROOT/$dev ]] || fail "pins made for $dev: $(ls -A "$SLUICE_PIN_ROOT/$dev")"
	ok "no pins for the $words device"
}

refused "${base}u" "raw-IP" mode tun
refused "${base}i" "IPIP" type ipip local 198.18.0.1 remote 198.18.0.2
refused "${base}g" "GRE" type gre local 198.18.0.1 remote 198.18.0.2
refused "${base}s" "SIT" type sit local 198.18.0.1 remote 198.18.0.2
refused "${base}w" "raw-IP" type wireguard

# An Ethernet device (the veth) still attaches, and sluice judges there.
sluice_attach >/dev/null || fail "attach to the veth failed"
assert_eq "$(sluice_jq '.interfaces[0].attached' status)" true "the veth attached"
