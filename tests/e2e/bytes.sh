#!/usr/bin/env bash
# e2e/bytes: a --bytes limit admits burst + rate x t bytes (of whole
# Ethernet frames) within a few percent, whether the frames are 60 or 1500
# bytes long; nftables behind sluice counts the same packets, and its bytes
# (IP packets, 14 fewer per frame) agree with sluice's stats.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NET=198.18.6.0/24
RATE=120000	# bytes per second: 2000 60-byte frames, 80 1500-byte frames
BURST=60000	# bytes: half a second's worth
DPORT=5001

netns_init by
netns_setup
sluice_attach
sluice_rx limit set "$NET" --bytes "$RATE" --burst "$BURST"
assert_eq "$(rule_field "$NET" unit)" bytes "rule's unit"
nft_rx_init

# One source per frame size (each has its own bucket): about 1.5 s at ten
# times the byte rate, so the bucket stays empty after its burst.
run() { # SRC SIZE PPS COUNT
	local src=$1 size=$2 pps=$3 count=$4 name=s$2 out s0 s1 sent secs pkts bytes expected
	nft_rx_counter "$name" ip saddr "$src" udp dport "$DPORT"
	s0=$(stats_snap)
	out=$(flood --src "$src" --dport "$DPORT" --size "$size" --pps "$pps" --count "$count" --seconds 10)
	echo "flood ${size}-byte frames: $out"
	sleep 0.2 # the last frames leave the veth's ring
	s1=$(stats_snap)
	sent=$(flood_field "$out" .sent)
	secs=$(flood_field "$out" .seconds)
	assert_eq "$sent" "$count" "flood sent all its ${size}-byte frames"
	assert_ge "$(calc "$size * $(flood_field "$out" .pps)")" $((5 * RATE)) \
		"${size}-byte flood at five times the byte rate or more"

	pkts=$(nft_rx_packets "$name")
	assert_eq "$(nft_rx_bytes "$name")" $((pkts * (size - NFT_ETH_HLEN))) \
		"nftables bytes are IP packets of $((size - NFT_ETH_HLEN)) bytes"
	bytes=$(nft_rx_frame_bytes "$name")
	expected=$(calc "$BURST + $RATE * $secs")
	assert_near "$bytes" "$expected" 3 "frame bytes passed with ${size}-byte frames (burst + rate x ${secs}s)"
	assert_le "$bytes" "$(calc "$expected + $size" %d)" "frame bytes passed with ${size}-byte frames, at most"
	assert_eq "$(stats_delta "$s0" "$s1" bytes pass within_limit)" "$bytes" \
		"stats within_limit bytes equal nftables' frame bytes"
	assert_eq "$(stats_delta "$s0" "$s1" packets pass within_limit)" "$pkts" \
		"stats within_limit packets equal nftables' packets"
	assert_eq "$(stats_delta "$s0" "$s1" bytes drop rate_limited)" $(((sent - pkts) * size)) \
		"stats rate_limited bytes are the rest of the flood"
	assert_eq "$(sluice_passed "$src")" "$pkts" "query $src: passed equals nftables' packets"
}

run 198.18.6.60 60 20000 30000
run 198.18.6.150 1500 800 1200
assert_eq "$(rule_field "$NET" passed)" $(($(nft_rx_packets s60) + $(nft_rx_packets s1500))) \
	"rule's passed equals nftables' packets of both floods"
