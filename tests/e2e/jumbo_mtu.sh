#!/usr/bin/env bash
# e2e/jumbo_mtu: on a veth with a 9000-byte MTU sluice still attaches in
# native mode (its program is multi-buffer aware), limits 9000-byte frames
# like any other, and counts their bytes whole, not just the first buffer.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SIZE=9014		# Ethernet frame without FCS at MTU 9000
RATE=100
BURST=20
COUNT=300
DPORT=5009

netns_init jm
netns_setup
ip -n "$NS_TX" link set dev "$IF_TX" mtu 9000 || fail "MTU on $IF_TX"
ip -n "$NS_RX" link set dev "$IF_RX" mtu 9000 || fail "MTU on $IF_RX"
sluice_attach
sluice_rx limit set 198.18.9.0/24 --rate "$RATE" --burst "$BURST"
nft_rx_init
nft_rx_counter jumbo ip saddr 198.18.9.9 udp dport "$DPORT"

out=$(flood --src 198.18.9.9 --dport "$DPORT" --size "$SIZE" --count "$COUNT" --pps 3000 --seconds 5)
assert_eq "$(flood_field "$out" .sent)" "$COUNT" "jumbo frames sent"
passed=$(sluice_passed 198.18.9.9)
dropped=$(sluice_dropped 198.18.9.9)
assert_eq $((passed + dropped)) "$COUNT" "jumbo frames counted"
assert_le "$passed" $((BURST + RATE)) "jumbo frames passed (burst + rate x 0.1 s)"
assert_ge "$dropped" 200 "jumbo frames dropped"
assert_eq "$(nft_rx_packets jumbo)" "$passed" "nftables counter equals sluice's pass count"
stats=$(sluice_rx -j stats)
assert_eq "$(jq '.bytes.drop.rate_limited' <<<"$stats")" $((dropped * SIZE)) \
	"bytes of the dropped jumbo frames, whole"
