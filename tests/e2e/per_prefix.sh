#!/usr/bin/env bash
# e2e/per_prefix: with --per /24, 256 sources inside one /24 share one
# bucket: between them they get the burst (plus the refill during the
# flood), not a burst each; nftables behind sluice and sluice's own
# counters (the rule's row, stats) agree.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NET=198.18.4.0/24
NSRC=256
PER_SRC=10
RATE=1
BURST=10
DPORT=5001

netns_init pp
netns_setup
sluice_attach
sluice_rx limit set "$NET" --per /24 --rate "$RATE" --burst "$BURST"
assert_eq "$(sluice_jq ".[] | select(.cidr == \"$NET\") | .action" limit list)" limit "rule installed"
nft_rx_init
nft_rx_counter pfx ip saddr "$NET" udp dport "$DPORT"

s0=$(stats_snap)
# 198.18.4.0 .. 198.18.4.255 in turn, 10 packets each: 2560 in about 0.5 s.
out=$(flood --src 198.18.4.0 --sources "$NSRC" --dport "$DPORT" \
	--count $((NSRC * PER_SRC)) --pps 5000 --seconds 10)
echo "flood: $out"
sleep 0.2 # the last frames leave the veth's ring
s1=$(stats_snap)
sent=$(flood_field "$out" .sent)
secs=$(flood_field "$out" .seconds)
assert_eq "$sent" $((NSRC * PER_SRC)) "flood sent all its packets"

passed=$(nft_rx_packets pfx)
# One bucket for the /24: its burst, plus at most what it refilled at RATE
# during the flood. Per-source buckets would pass all 2560.
assert_ge "$passed" "$BURST" "passed by the whole /24 (its burst)"
assert_le "$passed" "$(gcra_max "$BURST" "$RATE" "$secs")" \
	"passed by the whole /24 (burst + rate x ${secs}s + 1)"
assert_eq "$(rule_field "$NET" passed)" "$passed" "rule's passed equals nftables' count"
assert_eq "$(rule_field "$NET" dropped)" $((sent - passed)) "rule's dropped is the rest of the flood"
assert_eq "$(stats_delta "$s0" "$s1" packets drop rate_limited)" $((sent - passed)) \
	"stats rate_limited delta"
assert_eq "$(stats_delta "$s0" "$s1" packets pass within_limit)" "$passed" "stats within_limit delta"
