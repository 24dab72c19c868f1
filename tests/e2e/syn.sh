#!/usr/bin/env bash
# e2e/syn: a `--proto tcp --syn` rule limits new connections (SYN without
# ACK) per source, while ACK segments from the same sources, sent at the
# same time as from established flows, all pass; nftables behind sluice
# and sluice's counters agree.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NET=198.18.8.0/24
NSRC=16
PER_SRC=50
RATE=10
BURST=20
PPS=1000	# each flood: 800 segments in 0.8 s, 6 times the sources' SYN rate
DPORT=80

netns_init syn
netns_setup
sluice_attach
sluice_rx limit set "$NET" --proto tcp --syn --rate "$RATE" --burst "$BURST"
assert_eq "$(rule_field "$NET" syn)" true "rule's syn"
nft_rx_init
nft_rx_counter syn ip saddr "$NET" tcp dport "$DPORT" tcp flags '&' '(syn|ack)' == syn
nft_rx_counter ack ip saddr "$NET" tcp dport "$DPORT" tcp flags '&' '(syn|ack)' == ack

s0=$(stats_snap)
ackout=$(netns_tmp ack.json)
count=$((NSRC * PER_SRC))
flood_bg "$ackout" --src 198.18.8.0 --sources "$NSRC" --proto tcp --tcp-flags ack \
	--dport "$DPORT" --count "$count" --pps "$PPS" --seconds 10
out=$(flood --src 198.18.8.0 --sources "$NSRC" --proto tcp --tcp-flags syn \
	--dport "$DPORT" --count "$count" --pps "$PPS" --seconds 10)
flood_wait || fail "ACK flood failed: $(cat "$ackout")"
echo "flood SYN: $out"
echo "flood ACK: $(cat "$ackout")"
sleep 0.2 # the last frames leave the veth's ring
s1=$(stats_snap)
assert_eq "$(flood_field "$out" .sent)" "$count" "SYN flood sent all its segments"
assert_eq "$(flood_field "$(cat "$ackout")" .sent)" "$count" "ACK flood sent all its segments"
secs=$(flood_field "$out" .seconds)

syn=$(nft_rx_packets syn)
assert_eq "$(nft_rx_packets ack)" "$count" "ACK segments that arrived (all)"
assert_ge "$syn" $((NSRC * BURST)) "SYNs that arrived (a burst per source)"
assert_le "$syn" $((NSRC * $(gcra_max "$BURST" "$RATE" "$secs"))) \
	"SYNs that arrived (per source burst + rate x ${secs}s + 1)"
assert_eq "$(rule_field "$NET" passed)" "$syn" "SYN rule's passed equals nftables' SYN count"
assert_eq "$(rule_field "$NET" dropped)" $((count - syn)) "SYN rule's dropped is the rest of the SYNs"
assert_eq "$(stats_delta "$s0" "$s1" packets drop rate_limited)" $((count - syn)) \
	"stats rate_limited delta (SYNs only)"

# Each source has its own SYN bucket (top lists it under the rule) that
# passed its burst and no more than its rate allows.
rows=$(sluice_rx -j top -n 100000) || fail "sluice top -j failed"
rows=$(jq -c --arg p "$NET --syn" '[.[] | select(.policy == $p)]' <<<"$rows")
assert_eq "$(jq length <<<"$rows")" "$NSRC" "SYN buckets in top"
assert_eq "$(jq 'map(.passed + .dropped) | unique' -c <<<"$rows")" "[$PER_SRC]" \
	"SYNs judged per source (each $PER_SRC)"
assert_ge "$(jq 'map(.passed) | min' <<<"$rows")" "$BURST" "fewest SYNs passed by one source"
assert_le "$(jq 'map(.passed) | max' <<<"$rows")" "$(gcra_max "$BURST" "$RATE" "$secs")" \
	"most SYNs passed by one source"
assert_eq "$(jq 'map(.passed) | add' <<<"$rows")" "$syn" "the SYN buckets' passes add up to nftables' count"
