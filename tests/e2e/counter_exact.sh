#!/usr/bin/env bash
# e2e/counter_exact: under a flood as fast as the sender can go, from 32
# sources at once, sluice's pass count equals an independent nftables
# counter behind it exactly, every packet sent is counted once as passed or
# dropped, and each source still gets burst + rate x duration.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

NSRC=32
RATE=1000
BURST=200
DPORT=5001

netns_init ce
netns_setup
sluice_attach
sluice_rx limit set 198.18.6.0/24 --rate "$RATE" --burst "$BURST"
nft_rx_init
nft_rx_counter flood ip saddr 198.18.6.0/24 udp dport "$DPORT"

# --pps 0: as fast as possible, bounded to 2 s and a million packets.
out=$(flood --src 198.18.6.0 --sources "$NSRC" --dport "$DPORT" --count 1000000 --pps 0 --seconds 2)
echo "flood: $out"
sent=$(flood_field "$out" .sent)
secs=$(flood_field "$out" .seconds)
# Each source must stay above its rate for the formula below to hold.
assert_ge "$(flood_field "$out" .pps)" $((NSRC * RATE * 2)) "flood rate (twice the sources' total limit)"

rows=$(sluice_rx -j top -n 100000 | jq -c '[.[] | select(.source | startswith("198.18.6."))]')
assert_eq "$(jq length <<<"$rows")" "$NSRC" "sources tracked"
passed=$(jq 'map(.passed) | add' <<<"$rows")
dropped=$(jq 'map(.dropped) | add' <<<"$rows")
assert_eq "$(nft_rx_packets flood)" "$passed" "nftables counter equals sluice's pass count"
assert_eq $((passed + dropped)) "$sent" "passed + dropped equals packets sent"
assert_eq "$(sluice_jq '.[] | select(.cidr == "198.18.6.0/24") | .passed' limit list)" "$passed" \
	"policy counter of 198.18.6.0/24 equals the sources' passes"
# Every source sees the whole flood interval (they take turns packet by
# packet), so each passes burst + rate x seconds, as in e2e/flood_limit.
expected=$(calc "$BURST + $RATE * $secs")
assert_near "$(jq 'map(.passed) | min' <<<"$rows")" "$expected" 3 "fewest passed by one source"
assert_near "$(jq 'map(.passed) | max' <<<"$rows")" "$expected" 3 "most passed by one source"
