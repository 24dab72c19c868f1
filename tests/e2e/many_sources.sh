#!/usr/bin/env bash
# e2e/many_sources: 200 distinct IPv4 sources flooding at once each get
# their own bucket: all are tracked, and each passes its own burst.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

NSRC=200
PER_SRC=40
BURST=10
DPORT=5001

netns_init ms
netns_setup
sluice_attach
# Rate 1/s: within the ~1 s flood a source earns at most one or two tokens
# beyond its burst, so a shared bucket (≈ 11 passes in all) and per-source
# buckets (≥ 10 each, 2000+ in all) are far apart.
sluice_rx limit default --rate 1 --burst "$BURST"
nft_rx_init
nft_rx_counter many ip saddr 198.18.1.0/24 udp dport "$DPORT"

# 198.18.1.0 .. 198.18.1.199 in turn, 40 packets each.
out=$(flood --src 198.18.1.0 --sources "$NSRC" --dport "$DPORT" \
	--count $((NSRC * PER_SRC)) --pps 8000 --seconds 5)
echo "flood: $out"
assert_eq "$(flood_field "$out" .sent)" $((NSRC * PER_SRC)) "flood sent all its packets"
secs=$(flood_field "$out" .seconds)

assert_ge "$(sluice_jq .tracked_sources stats)" "$NSRC" "tracked sources"
rows=$(sluice_rx -j top -n 100000 | jq -c '[.[] | select(.source | startswith("198.18.1."))]')
assert_eq "$(jq length <<<"$rows")" "$NSRC" "sources of 198.18.1.0/24 in top"
assert_eq "$(jq "[.[] | select(.passed + .dropped != $PER_SRC)] | length" <<<"$rows")" 0 \
	"sources that did not see exactly their $PER_SRC packets"
assert_ge "$(jq 'map(.passed) | min' <<<"$rows")" "$BURST" "fewest passed by one source (its burst)"
assert_le "$(jq 'map(.passed) | max' <<<"$rows")" "$(calc "$BURST + 1 + $secs")" \
	"most passed by one source (burst + 1 + rate x ${secs}s)"
total=$(jq 'map(.passed) | add' <<<"$rows")
assert_eq "$(nft_rx_packets many)" "$total" "nftables counter equals the sources' passes"

# query agrees with top for one of them.
q=$(sluice_rx -j query 198.18.1.123)
assert_eq "$(jq -r .tracked <<<"$q")" true "198.18.1.123 tracked"
assert_eq "$(jq -r .passed <<<"$q")" \
	"$(jq -r '.[] | select(.source == "198.18.1.123") | .passed' <<<"$rows")" "query and top agree"
