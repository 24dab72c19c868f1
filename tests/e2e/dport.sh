#!/usr/bin/env bash
# e2e/dport: a `--proto udp --dport 53` rule limits one source's packets to
# port 53 to its own limit and leaves its packets to port 9 to the default
# limit (so does TCP to port 53, from a second source), each counted by
# nftables behind sluice and by the deciding rule's row in limit list -j.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NET=198.18.7.0/24
SRC=198.18.7.53
SRC2=198.18.7.54	# TCP to port 53
DNS_RATE=10
DNS_BURST=20
DEF_RATE=100
DEF_BURST=200
PPS=1000
COUNT=500	# per flood: half a second, 5 and 50 times the two rates

netns_init dp
netns_setup
sluice_attach
sluice_rx limit default --rate "$DEF_RATE" --burst "$DEF_BURST"
sluice_rx limit set "$NET" --proto udp --dport 53 --rate "$DNS_RATE" --burst "$DNS_BURST"
assert_eq "$(rule_field "$NET" match)" "--proto udp --dport 53" "rule's match"
nft_rx_init
nft_rx_counter dns ip saddr "$SRC" udp dport 53
nft_rx_counter discard ip saddr "$SRC" udp dport 9
nft_rx_counter tcpdns ip saddr "$SRC2" tcp dport 53

def_passed() { rule_field default passed; }
def0=$(def_passed)
s0=$(stats_snap)

check() { # NAME WHAT BURST RATE FLOOD_ARGS...
	local name=$1 what=$2 burst=$3 rate=$4 out secs passed
	shift 4
	out=$(flood --count "$COUNT" --pps "$PPS" --seconds 10 "$@")
	echo "flood $what: $out"
	sleep 0.2 # the last frames leave the veth's ring
	assert_eq "$(flood_field "$out" .sent)" "$COUNT" "flood $what sent all its packets"
	secs=$(flood_field "$out" .seconds)
	passed=$(nft_rx_packets "$name")
	assert_ge "$passed" "$burst" "$what passed (its rule's burst)"
	assert_le "$passed" "$(gcra_max "$burst" "$rate" "$secs")" \
		"$what passed (burst + rate x ${secs}s + 1)"
}

check dns "UDP to port 53" "$DNS_BURST" "$DNS_RATE" --src "$SRC" --dport 53
check discard "UDP to port 9" "$DEF_BURST" "$DEF_RATE" --src "$SRC" --dport 9
check tcpdns "TCP SYN to port 53" "$DEF_BURST" "$DEF_RATE" --src "$SRC2" --proto tcp --dport 53
s1=$(stats_snap)

dns=$(nft_rx_packets dns)
other=$(($(nft_rx_packets discard) + $(nft_rx_packets tcpdns)))
assert_eq "$(rule_field "$NET" passed)" "$dns" "port 53 rule's passed equals nftables' port 53 count"
assert_eq "$(rule_field "$NET" dropped)" $((COUNT - dns)) "port 53 rule's dropped is the rest of its flood"
# The default also decides the tx end's own few IPv6 ND/MLD packets.
def=$(($(def_passed) - def0))
assert_ge "$def" "$other" "default's passed delta (port 9 and TCP port 53)"
assert_le "$def" $((other + 20)) "default's passed delta (port 9 and TCP port 53)"
assert_eq "$(stats_delta "$s0" "$s1" packets drop rate_limited)" $((3 * COUNT - dns - other)) \
	"stats rate_limited delta"

# The source has two buckets, one per deciding rule, each with its own counts.
rows=$(sluice_rx -j top -n 100000) || fail "sluice top -j failed"
rows=$(jq -c --arg s "$SRC" '[.[] | select(.source == $s)]' <<<"$rows")
assert_eq "$(jq -r --arg p "$NET --proto udp --dport 53" '.[] | select(.policy == $p) | .passed' <<<"$rows")" \
	"$dns" "top: $SRC's port 53 bucket passed"
assert_eq "$(jq -r '.[] | select(.policy == "default") | .passed' <<<"$rows")" \
	"$(nft_rx_packets discard)" "top: $SRC's default bucket passed"
