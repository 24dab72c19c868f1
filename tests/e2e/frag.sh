#!/usr/bin/env bash
# e2e/frag: a port rule's byte limit holds for datagrams the kernel
# fragments. The tx namespace sends 6,000-byte UDP datagrams from a plain
# socket over the veth's 1,500-byte MTU (5 IPv4 fragments each), 40 of them
# evenly over 2 s (about 124,000 frame bytes a second); under
# `limit set 198.18.0.0/24 --proto udp --dport 9999 --bytes 20000 --burst
# 20000` the frame bytes reaching the stack (an nftables counter behind
# XDP) stay within burst + rate x t, plus one frame. IPv6 the same, with a
# `--proto tcp --dport 443` rule beside the `--proto udp` one (more
# specific, so the source's first L4 rule). Every later fragment's first
# was seen: no frag_orphan.
#
# Can fail: with SLUICE=path/to/a/sluice whose datapath judges a later
# fragment without its first's ports (today's before this test), about
# 160,000 B of IPv4 fragments pass, and IPv6's later fragments go to the
# TCP rule.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

UDP_SEND=${UDP_SEND:-$SLUICE_ROOT/build/tests/udp_send}
[[ -x $UDP_SEND ]] || fail "$UDP_SEND not built: run make build/tests/udp_send"
N=40		# datagrams a family
SIZE=6000	# UDP payload bytes
SECS=2		# over which they are sent
RATE=20000	# bytes per second, and the burst
MTU_FRAME=1514	# the longest frame: one more may pass at the end

netns_init frag
netns_setup
# No ARP or neighbour discovery: the nftables rules drop what they count.
ip -n "$NS_TX" neigh replace "$RX4" lladdr "$RX_MAC" dev "$IF_TX" nud permanent ||
	fail "cannot add the IPv4 neighbour"
ip -n "$NS_TX" neigh replace "$RX6" lladdr "$RX_MAC" dev "$IF_TX" nud permanent ||
	fail "cannot add the IPv6 neighbour"
sluice_attach
sluice_rx limit set 198.18.0.0/24 --proto udp --dport 9999 --bytes "$RATE" --burst "$RATE"
sluice_rx limit set 2001:2::/48 --proto tcp --dport 443 --rate 1000 --burst 1000
sluice_rx limit set 2001:2::/48 --proto udp --bytes "$RATE" --burst "$RATE"
nft_rx_init
nft_rx_counter v4 ip saddr "$TX4"
nft_rx_counter v6 ip6 saddr "$TX6"

run() { # NAME DST: sends, then checks what reached the stack
	local name=$1 dst=$2 r secs bytes bound
	r=$(ip netns exec "$NS_TX" "$UDP_SEND" sock "$dst" 9999 "$N" "$SIZE" "$SECS") ||
		fail "udp_send sock $dst failed: $r"
	[[ $r =~ ^sent\ $N\ ([0-9.]+)$ ]] || fail "udp_send sock $dst: $r"
	secs=${BASH_REMATCH[1]}
	sleep 0.2 # the last fragments leave the veth's ring
	bytes=$(nft_rx_frame_bytes "$name")
	bound=$(calc "$RATE + $RATE * ($secs + 0.05) + $MTU_FRAME" %d)
	echo "$name: $N datagrams in ${secs}s, $bytes frame bytes reached the stack ($(nft_rx_packets "$name") fragments), bound $bound"
	assert_le "$bytes" "$bound" "$name frame bytes passed (burst + rate x t + one frame)"
	assert_ge "$bytes" "$RATE" "$name frame bytes passed (at least the burst)"
}

s0=$(stats_snap)
run v4 "$RX4"
run v6 "$RX6"
s1=$(stats_snap)
assert_eq "$(stats_delta "$s0" "$s1" packets drop frag_orphan)" 0 "frag_orphan drops"
assert_ge "$(stats_delta "$s0" "$s1" packets drop rate_limited)" $((N * 5)) \
	"fragments dropped as rate_limited"
