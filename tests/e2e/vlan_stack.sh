#!/usr/bin/env bash
# e2e/vlan_stack: a deny rule holds however many VLAN priority tags (VLAN ID
# 0) a frame carries. Linux strips nested priority tags one after another
# and delivers the packet inside, so sluice judges that packet for up to
# SLUICE_MAX_VLAN_TAGS (8) tags and drops a frame tagged deeper as
# vlan_too_deep. UDP datagrams from a denied source behind 1, 3, 4, 8 and
# 9 tags must reach no socket in the rx namespace; the same from an
# undenied source behind 1, 3, 4 and 8 tags must all arrive (the sender and
# the receiver work, and the stack does strip that many tags).
#
# Can fail: with SLUICE=path/to/a/sluice whose datapath walks fewer tags,
# tests/e2e/vlan_stack.sh delivers the denied datagrams behind
# 3 and more tags ("FAIL: denied source behind 3 tags: datagrams received:
# got 20, want 0").
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

UDP_SEND=${UDP_SEND:-$SLUICE_ROOT/build/tests/udp_send}
[[ -x $UDP_SEND ]] || fail "$UDP_SEND not built: run make build/tests/udp_send"
DENIED=198.18.0.66
OPEN=198.18.0.67
N=20		# datagrams per depth and source
DEPTHS=(1 3 4 8 9)

netns_init vlst
netns_setup
sluice_attach
sluice_rx deny "$DENIED/32"

# One port per depth and source: 5000 + depth for the denied source, 6000 +
# depth for the other. The receiver runs for a bounded time.
ports=()
for d in "${DEPTHS[@]}"; do ports+=($((5000 + d)) $((6000 + d))); done
out=$(netns_tmp recv)
ip netns exec "$NS_RX" "$UDP_SEND" recv 6 "${ports[@]:0:8}" >"$out" &
netns_track_pid $!
out2=$(netns_tmp recv2)
ip netns exec "$NS_RX" "$UDP_SEND" recv 6 "${ports[@]:8}" >"$out2" &
netns_track_pid $!
for ((i = 0; i < 50; i++)); do
	[[ -s $out && -s $out2 ]] && break
	sleep 0.1
done
[[ $(head -1 "$out") == listening && $(head -1 "$out2") == listening ]] ||
	fail "the receivers did not start"

send() { # TAGS SRC DPORT
	ip netns exec "$NS_TX" "$UDP_SEND" vlan "$IF_TX" "$RX_MAC" "$1" "$2" "$RX4" "$3" "$N" \
		>/dev/null || fail "udp_send vlan $1 $2 failed"
}

s0=$(stats_snap)
for d in "${DEPTHS[@]}"; do
	send "$d" "$DENIED" $((5000 + d))
	send "$d" "$OPEN" $((6000 + d))
done
s1=$(stats_snap)
wait "${NETNS_PIDS[@]}" 2>/dev/null || true

received() { # PORT
	awk -v p="$1" '$1 == p { print $2; f = 1 } END { if (!f) print "none" }' "$out" "$out2"
}
for d in "${DEPTHS[@]}"; do
	assert_eq "$(received $((5000 + d)))" 0 "denied source behind $d tags: datagrams received"
done
for d in "${DEPTHS[@]}"; do
	((d <= 8)) || continue
	assert_eq "$(received $((6000 + d)))" "$N" "other source behind $d tags: datagrams received"
done
assert_eq "$(received 6009)" 0 "other source behind 9 tags: datagrams received"
# Denied: 4 depths of the denied source; vlan_too_deep: both sources at 9.
assert_eq "$(stats_delta "$s0" "$s1" packets drop denied)" $((4 * N)) "stats denied delta"
assert_eq "$(stats_delta "$s0" "$s1" packets drop vlan_too_deep)" $((2 * N)) \
	"stats vlan_too_deep delta"
