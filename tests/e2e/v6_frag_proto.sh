#!/usr/bin/env bash
# e2e/v6_frag_proto: a --proto udp limit holds for whole fragmented UDP
# datagrams, whatever the later IPv6 fragments' headers say. The stack takes
# a datagram's protocol from its first fragment; so does sluice, which
# judges a later fragment by its first fragment's facts (doc/rules.rst,
# "Fragments"; e2e/frag has a TCP rule beside the UDP one). Under `limit set 2001:2::/48 --proto udp --bytes 20000 --burst
# 20000`, 20 UDP datagrams of 6,000 bytes, each sent at once as 1,232-byte
# IPv6 fragments (6,380 frame bytes a datagram), reach the rx socket only as
# far as the byte budget goes: 3 datagrams from the burst, plus what the
# rate refills while they are sent. Sent once with later fragments saying
# next header 6 (TCP) from 2001:2::1, once honest from 2001:2::3 (each
# source has its own bucket): the counts must agree with that bound.
#
# Can fail: with SLUICE=path/to/a/sluice whose datapath charges only first
# fragments, tests/e2e/v6_frag_proto.sh receives 16 of the lying datagrams.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

UDP_SEND=${UDP_SEND:-$SLUICE_ROOT/build/tests/udp_send}
[[ -x $UDP_SEND ]] || fail "$UDP_SEND not built: run make build/tests/udp_send"
N=20		# datagrams
SIZE=6000	# UDP payload bytes
FRAG=1232	# IPv6 bytes a fragment
RATE=20000	# bytes per second, and the burst
# Frame bytes of one datagram: 6,008 UDP bytes in fragments of 1,184 data
# bytes, each behind Ethernet, IPv6 and the fragment header.
per=$(((FRAG - 48) / 8 * 8))
frames=$((((SIZE + 8) + per - 1) / per))
cost=$(((SIZE + 8) + frames * (14 + 48)))
LIAR=2001:2::1
HONEST=2001:2::3

netns_init v6fp
netns_setup
sluice_attach
sluice_rx limit set 2001:2::/48 --proto udp --bytes "$RATE" --burst "$RATE"

out=$(netns_tmp recv)
ip netns exec "$NS_RX" "$UDP_SEND" recv 5 5000 5001 >"$out" &
recv_pid=$!
netns_track_pid "$recv_pid"
for ((i = 0; i < 50; i++)); do
	[[ -s $out ]] && break
	sleep 0.1
done
[[ $(head -1 "$out") == listening ]] || fail "the receiver did not start"

send() { # SRC DPORT LATER_NH: prints the seconds the send took
	local r
	r=$(ip netns exec "$NS_TX" "$UDP_SEND" frag "$IF_TX" "$RX_MAC" "$1" "$RX6" "$2" "$N" \
		"$SIZE" "$FRAG" "$3") || fail "udp_send frag $1 failed"
	[[ $r =~ ^sent\ $N\ ([0-9.]+)$ ]] || fail "udp_send frag $1: $r"
	echo "${BASH_REMATCH[1]}"
}
t_liar=$(send "$LIAR" 5000 6)
t_honest=$(send "$HONEST" 5001 17)
wait "$recv_pid" || fail "the receiver failed"

received() { awk -v p="$1" '$1 == p { print $2 }' "$out"; }
# Whole datagrams the budget allows: the burst and the refill while the
# datagrams were being sent (with 5 ms for the clocks' distance).
bound() { calc "int(($RATE + $RATE * ($1 + 0.005)) / $cost)" %d; }
got=$(received 5000)
echo "cost $cost bytes a datagram; liar sent in ${t_liar}s, honest in ${t_honest}s"
assert_ge "$got" 3 "datagrams with later fragments saying TCP"
assert_le "$got" "$(bound "$t_liar")" "datagrams with later fragments saying TCP"
got=$(received 5001)
assert_ge "$got" 3 "datagrams with honest later fragments"
assert_le "$got" "$(bound "$t_honest")" "datagrams with honest later fragments"
