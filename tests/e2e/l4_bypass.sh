#!/usr/bin/env bash
# e2e/l4_bypass: breaking a header is no way around a rule that
# matches on L4. With `deny CIDR --proto tcp --dport PORT` and a listener on
# PORT in the rx namespace, two crafted SYNs from the tx namespace must not
# be answered: one behind 9 IPv6 destination-options headers (more than
# sluice walks), one cut into an 8-byte IPv4 first fragment (RFC 1858) and
# its rest. Both first frames are dropped as l4_unreadable; the SYN-ACKs
# the rx stack sends are counted by nftables at its output hook. Plain SYNs
# to a second, unruled port are answered (the sender and the count work).
#
# Can fail: with SLUICE=path/to/a/sluice whose datapath passes frames with
# an unreadable L4 header, tests/e2e/l4_bypass.sh answers both attacks with SYN-ACKs
# ("FAIL: SYN-ACKs to the 9-ext-header SYNs: got 3, want 0"; without that
# check, the same for the tiny-fragment SYNs).
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

L4_SEND=${L4_SEND:-$SLUICE_ROOT/build/tests/l4_send}
[[ -x $L4_SEND ]] || fail "$L4_SEND not built: run make build/tests/l4_send"
PORT=2222	# denied
OPEN=2223	# no rule: answered
N=3		# SYNs of each kind

netns_init l4b
netns_setup
sluice_attach
sluice_rx deny 198.18.0.0/24 --proto tcp --dport "$PORT"
sluice_rx deny 2001:2::/48 --proto tcp --dport "$PORT"

# The listener, bounded in time; the kernel answers SYNs for it.
out=$(netns_tmp listen)
ip netns exec "$NS_RX" "$L4_SEND" listen 15 "$PORT" "$OPEN" >"$out" &
netns_track_pid $!
for ((i = 0; i < 50; i++)); do
	[[ -s $out ]] && break
	sleep 0.1
done
[[ $(cat "$out") == listening ]] || fail "the listener did not start"

# SYN-ACKs the rx stack sends, per source port range and family.
ip netns exec "$NS_RX" nft -f - <<-EOF || fail "cannot create the output counters"
	table inet l4b_out {
		counter v6ext {}
		counter v4tiny {}
		counter v6open {}
		counter v4open {}
		chain out {
			type filter hook output priority 0; policy accept;
			tcp flags & (syn | ack) == (syn | ack) ip6 daddr $TX6 tcp sport $PORT counter name v6ext
			tcp flags & (syn | ack) == (syn | ack) ip daddr $TX4 tcp sport $PORT counter name v4tiny
			tcp flags & (syn | ack) == (syn | ack) ip6 daddr $TX6 tcp sport $OPEN counter name v6open
			tcp flags & (syn | ack) == (syn | ack) ip daddr $TX4 tcp sport $OPEN counter name v4open
		}
	}
EOF
synacks() {
	ip netns exec "$NS_RX" nft -j list counter inet l4b_out "$1" |
		jq -er '.nftables[] | select(.counter) | .counter.packets' ||
		fail "cannot read counter $1"
}
send() { # KIND SRC DST DPORT
	ip netns exec "$NS_TX" "$L4_SEND" send "$IF_TX" "$RX_MAC" "$1" "$2" "$3" "$4" "$N" >/dev/null ||
		fail "l4_send $1 failed"
}

s0=$(stats_snap)
send v6ext9 "$TX6" "$RX6" "$PORT"
send v4tiny "$TX4" "$RX4" "$PORT"
send syn "$TX6" "$RX6" "$OPEN"
send syn "$TX4" "$RX4" "$OPEN"
# Replies need the neighbours resolved; the answers come within a second.
for ((i = 0; i < 30; i++)); do
	(($(synacks v6open) >= N && $(synacks v4open) >= N)) && break
	sleep 0.1
done
sleep 0.3
s1=$(stats_snap)

assert_ge "$(synacks v6open)" "$N" "SYN-ACKs to plain IPv6 SYNs to the open port"
assert_ge "$(synacks v4open)" "$N" "SYN-ACKs to plain IPv4 SYNs to the open port"
assert_eq "$(synacks v6ext)" 0 "SYN-ACKs to the 9-ext-header SYNs"
assert_eq "$(synacks v4tiny)" 0 "SYN-ACKs to the tiny-fragment SYNs"
# The 9-ext-header SYNs and the first fragments; the later fragments have no
# port to match and pass (allowed) to a reassembly that never completes.
assert_eq "$(stats_delta "$s0" "$s1" packets drop l4_unreadable)" $((2 * N)) \
	"stats l4_unreadable delta"
assert_eq "$(stats_delta "$s0" "$s1" packets pass malformed)" 0 "stats malformed delta"
