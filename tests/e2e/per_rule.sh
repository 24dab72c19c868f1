#!/usr/bin/env bash
# e2e/per_rule: with --per rule, a /16 rule is one shared bucket: 256
# sources spread over the whole /16 together get burst + rate x t, as one
# source would; nftables behind sluice and sluice's counters agree.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NET=198.19.0.0/16
NSRC=256
PER_SRC=20
STEP=257	# 198.19.0.0, 198.19.1.1, ... 198.19.255.255: one in each /24 of the /16
RATE=100
BURST=50
DPORT=5001

netns_init pr
netns_setup
sluice_attach
sluice_rx limit set "$NET" --per rule --rate "$RATE" --burst "$BURST"
nft_rx_init
nft_rx_counter agg ip saddr "$NET" udp dport "$DPORT"

s0=$(stats_snap)
# 5120 packets at 5000/s, about 1 s: 50 times the rule's rate, the sources
# taking turns packet by packet.
out=$(flood --src 198.19.0.0 --sources "$NSRC" --src-step "$STEP" --dport "$DPORT" \
	--count $((NSRC * PER_SRC)) --pps 5000 --seconds 10)
echo "flood: $out"
sleep 0.2 # the last frames leave the veth's ring
s1=$(stats_snap)
sent=$(flood_field "$out" .sent)
secs=$(flood_field "$out" .seconds)
assert_eq "$sent" $((NSRC * PER_SRC)) "flood sent all its packets"

passed=$(nft_rx_packets agg)
# One bucket for the rule, kept empty by a flood far above its rate: burst +
# rate x seconds (see e2e/flood_limit). A bucket per source would pass all.
assert_near "$passed" "$(calc "$BURST + $RATE * $secs")" 5 \
	"passed by the whole /16 (burst + rate x ${secs}s)"
assert_eq "$(rule_field "$NET" passed)" "$passed" "rule's passed equals nftables' count"
assert_eq "$(rule_field "$NET" dropped)" $((sent - passed)) "rule's dropped is the rest of the flood"
assert_eq "$(stats_delta "$s0" "$s1" packets drop rate_limited)" $((sent - passed)) \
	"stats rate_limited delta"
assert_eq "$(stats_delta "$s0" "$s1" packets pass within_limit)" "$passed" "stats within_limit delta"
