#!/usr/bin/env bash
# e2e/v4_mapped: an IPv6 packet is judged by IPv6 rules whatever its source
# looks like. UDPv6 from ::ffff:198.18.0.60 under 'deny ::/0' (with IPv4
# allowed) reaches nothing behind sluice, and is counted as denied; it
# takes no bucket and leaves the IPv4 source 198.18.0.60 untouched. `query
# ::ffff:198.18.0.60` names the IPv4 source (as a dual-stack gateway means it).
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

COUNT=1000
DPORT=5001
SRC=::ffff:198.18.0.60

netns_init v4m
netns_setup
sluice_attach
sluice_rx limit default --rate 10 --burst 10
sluice_rx allow 0.0.0.0/0
sluice_rx deny ::/0
nft_rx_init
nft_rx_counter mapped ip6 saddr "$SRC" udp dport "$DPORT"
nft_rx_counter v4 ip saddr 198.18.0.60 udp dport "$DPORT"

denied0=$(sluice_stat drop denied)
out=$(flood --src "$SRC" --dst "$RX6" --dport "$DPORT" --count "$COUNT" --pps 10000 --seconds 5)
assert_eq "$(flood_field "$out" .sent)" "$COUNT" "flood from $SRC sent all its packets"
assert_eq "$(nft_rx_packets mapped)" 0 "packets from $SRC that got past sluice"
# The tx end's own IPv6 packets (neighbour discovery, MLD) fall under
# ::/0 as well, so these may count a few more than the flood.
assert_ge $(($(sluice_stat drop denied) - denied0)) "$COUNT" "dropped as denied"
assert_ge "$(sluice_jq '.[] | select(.cidr == "::/0") | .dropped' limit list)" "$COUNT" \
	"policy counter of ::/0"
# `query` takes the text ::ffff:198.18.0.60 as a gateway means it, the IPv4
# client: it answers for 198.18.0.60, not for these IPv6 packets.
q=$(sluice_rx -j query "$SRC")
assert_eq "$(jq -r .policy <<<"$q")" "0.0.0.0/0" "query $SRC answers for the IPv4 source"
q=$(sluice_rx -j query 198.18.0.60)
assert_eq "$(jq -r .policy <<<"$q")" "0.0.0.0/0" "198.18.0.60 is judged by the IPv4 rule"

# The IPv4 source itself is allowed, all of it.
out=$(flood --src 198.18.0.60 --dst "$RX4" --dport "$DPORT" --count "$COUNT" --pps 10000 --seconds 5)
assert_eq "$(flood_field "$out" .sent)" "$COUNT" "flood from 198.18.0.60 sent all its packets"
assert_eq "$(nft_rx_packets v4)" "$COUNT" "packets from 198.18.0.60 behind sluice"
