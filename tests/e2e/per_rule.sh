#!/usr/bin/env bash
# e2e/per_rule: with --per rule, a /16 rule is one shared bucket: 256
# sources spread over the whole /16 together get burst + rate x t, as one
# source would; so does `--per rule` on 0.0.0.0/0, the interface-wide
# limit, for sources spread over two /16s. nftables behind sluice and
# sluice's counters agree.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NSRC=256
PER_SRC=20
RATE=100
BURST=50

netns_init pr
netns_setup
sluice_attach
nft_rx_init

check() { # NAME NET FIRST_SOURCE STEP DPORT (each check its own, for nftables) ONE_SOURCE
	local name=$1 net=$2 first=$3 step=$4 dport=$5 one=$6 s0 s1 out sent secs passed q
	sluice_rx limit set "$net" --per rule --rate "$RATE" --burst "$BURST"
	assert_eq "$(rule_field "$net" per)" rule "rule for $net: per"
	nft_rx_counter "$name" ip saddr "$net" udp dport "$dport"
	s0=$(stats_snap)
	# 5120 packets at 5000/s, about 1 s: 50 times the rule's rate, the
	# sources taking turns packet by packet.
	out=$(flood --src "$first" --sources "$NSRC" --src-step "$step" --dport "$dport" \
		--count $((NSRC * PER_SRC)) --pps 5000 --seconds 10)
	echo "flood over $net: $out"
	sleep 0.2 # the last frames leave the veth's ring
	s1=$(stats_snap)
	sent=$(flood_field "$out" .sent)
	secs=$(flood_field "$out" .seconds)
	assert_eq "$sent" $((NSRC * PER_SRC)) "flood over $net sent all its packets"

	passed=$(nft_rx_packets "$name")
	# One bucket for the rule, kept empty by a flood far above its rate:
	# burst + rate x seconds (see e2e/flood_limit). A bucket per source
	# would pass all.
	assert_near "$passed" "$(calc "$BURST + $RATE * $secs")" 5 \
		"passed by all of $net (burst + rate x ${secs}s)"
	assert_eq "$(rule_field "$net" passed)" "$passed" "$net rule's passed equals nftables' count"
	assert_eq "$(rule_field "$net" dropped)" $((sent - passed)) \
		"$net rule's dropped is the rest of the flood"
	assert_eq "$(stats_delta "$s0" "$s1" packets drop rate_limited)" $((sent - passed)) \
		"stats rate_limited delta"
	assert_eq "$(stats_delta "$s0" "$s1" packets pass within_limit)" "$passed" \
		"stats within_limit delta"
	# Any address the rule covers is judged by its one bucket.
	q=$(sluice_rx -j query "$one") || fail "sluice query $one failed"
	assert_eq "$(jq -r .bucket <<<"$q")" "$net" "query $one: its bucket"
	assert_eq "$(jq -r .passed <<<"$q")/$(jq -r .dropped <<<"$q")" "$passed/$((sent - passed))" \
		"query $one: the bucket's passed/dropped"
}

# 198.19.0.0, 198.19.1.1, ... 198.19.255.255: one in each /24 of the /16.
check net 198.19.0.0/16 198.19.0.0 257 5001 198.19.77.77
# The whole interface: 198.18.0.0, 198.18.2.1, ... 198.19.254.255, over
# both /16s of the benchmarking range (the /16 rule deleted first, for it
# would decide its half).
sluice_rx limit del 198.19.0.0/16
check global 0.0.0.0/0 198.18.0.0 513 5002 198.19.48.2
