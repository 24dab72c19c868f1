#!/usr/bin/env bash
# e2e/flood_limit_v6: the same limit for IPv6. One flooding source passes
# burst + rate x duration (and exactly what nftables sees behind sluice);
# many sources in one /112 each get their own /128 bucket.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

RATE=1000
BURST=200
SRC=2001:2::66
MANY=2001:2::1:0	# sources 2001:2::1:0 .. 2001:2::1:31
NMANY=50
DPORT=5001

netns_init f6
netns_setup
sluice_attach
sluice_rx limit default --rate "$RATE" --burst "$BURST"
nft_rx_init
nft_rx_counter flood ip6 saddr "$SRC" udp dport "$DPORT"
nft_rx_counter many ip6 saddr 2001:2::1:0/112 udp dport "$DPORT"

# As in e2e/flood_limit: passed = burst + rate x (t_last - t_first), the
# interval that sluice-flood measures at the sender (see there for why).
out=$(flood --src "$SRC" --dst "$RX6" --dport "$DPORT" --count 40000 --pps 20000 --seconds 5)
echo "flood: $out"
sent=$(flood_field "$out" .sent)
secs=$(flood_field "$out" .seconds)
assert_eq "$sent" 40000 "flood sent all its packets"
passed=$(sluice_passed "$SRC")
dropped=$(sluice_dropped "$SRC")
assert_near "$passed" "$(calc "$BURST + $RATE * $secs")" 3 "passed for $SRC (burst + rate x ${secs}s)"
assert_eq $((passed + dropped)) "$sent" "passed + dropped for $SRC equals packets sent"
assert_eq "$(nft_rx_packets flood)" "$passed" "nftables counter behind sluice equals sluice's pass count"
assert_eq "$(sluice_jq .policy query "$SRC")" default "policy of $SRC"

# Many sources under one rule, rate 1/s and burst 10: each /128 passes its
# own burst (10, plus at most one refill per second of flood); one shared
# bucket would let only ~11 through in all.
sluice_rx limit set 2001:2::1:0/112 --rate 1 --burst 10
out=$(flood --src "$MANY" --sources "$NMANY" --dst "$RX6" --dport "$DPORT" \
	--count $((NMANY * 40)) --pps 4000 --seconds 5)
echo "flood: $out"
secs=$(flood_field "$out" .seconds)
max=$(calc "10 + 1 + $secs")
rows=$(sluice_rx -j top -n 100000 | jq -c '[.[] | select(.source | startswith("2001:2::1:"))]')
assert_eq "$(jq length <<<"$rows")" "$NMANY" "tracked sources in 2001:2::1:0/112"
assert_eq "$(jq '[.[] | select(.passed + .dropped != 40)] | length' <<<"$rows")" 0 \
	"sources that did not see exactly their 40 packets"
assert_ge "$(jq 'map(.passed) | min' <<<"$rows")" 10 "fewest passed by one source (its burst)"
assert_le "$(jq 'map(.passed) | max' <<<"$rows")" "$max" "most passed by one source"
assert_eq "$(jq -r '[.[].policy] | unique | join(",")' <<<"$rows")" 2001:2::1:0/112 "policy of the sources"
assert_eq "$(nft_rx_packets many)" "$(jq 'map(.passed) | add' <<<"$rows")" \
	"nftables counter equals the sources' passes"
