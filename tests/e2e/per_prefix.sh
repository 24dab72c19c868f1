#!/usr/bin/env bash
# e2e/per_prefix: with --per /24, 256 sources inside one /24 share one
# bucket: between them they get the burst (plus the refill during the
# flood), not a burst each; so do 256 IPv6 sources of one /64 under
# --per /64. nftables behind sluice and sluice's own counters (the rule's
# row, stats) agree.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NSRC=256
PER_SRC=10
RATE=1
BURST=10
DPORT=5001

netns_init pp
netns_setup
sluice_attach
nft_rx_init

check() { # NAME NET PER FIRST_SOURCE STEP NFT_FAMILY ONE_SOURCE
	local name=$1 net=$2 per=$3 first=$4 step=$5 fam=$6 one=$7 s0 s1 out sent secs passed q
	sluice_rx limit set "$net" --per "$per" --rate "$RATE" --burst "$BURST"
	assert_eq "$(rule_field "$net" per)/$(rule_field "$net" per_len)" "prefix/${per#/}" \
		"rule for $net: per and per_len"
	nft_rx_counter "$name" "$fam" saddr "$net" udp dport "$DPORT"
	s0=$(stats_snap)
	# FIRST, FIRST+STEP, ... FIRST+255xSTEP in turn, 10 packets each: 2560
	# in about 0.5 s.
	out=$(flood --src "$first" --sources "$NSRC" --src-step "$step" --dport "$DPORT" \
		--count $((NSRC * PER_SRC)) --pps 5000 --seconds 10)
	echo "flood from $net: $out"
	sleep 0.2 # the last frames leave the veth's ring
	s1=$(stats_snap)
	sent=$(flood_field "$out" .sent)
	secs=$(flood_field "$out" .seconds)
	assert_eq "$sent" $((NSRC * PER_SRC)) "flood from $net sent all its packets"

	passed=$(nft_rx_packets "$name")
	# One bucket for the prefix: its burst, plus at most what it refilled at
	# RATE during the flood. Per-source buckets would pass all 2560.
	assert_ge "$passed" "$BURST" "passed by the whole $net (its burst)"
	assert_le "$passed" "$(gcra_max "$BURST" "$RATE" "$secs")" \
		"passed by the whole $net (burst + rate x ${secs}s + 1)"
	assert_eq "$(rule_field "$net" passed)" "$passed" "$net rule's passed equals nftables' count"
	assert_eq "$(rule_field "$net" dropped)" $((sent - passed)) \
		"$net rule's dropped is the rest of the flood"
	assert_eq "$(stats_delta "$s0" "$s1" packets drop rate_limited)" $((sent - passed)) \
		"stats rate_limited delta"
	assert_eq "$(stats_delta "$s0" "$s1" packets pass within_limit)" "$passed" \
		"stats within_limit delta"
	# Any one of the sources is judged by the prefix's bucket.
	q=$(sluice_rx -j query "$one") || fail "sluice query $one failed"
	assert_eq "$(jq -r .bucket <<<"$q")" "$net" "query $one: its bucket"
	assert_eq "$(jq -r .passed <<<"$q")/$(jq -r .dropped <<<"$q")" "$passed/$((sent - passed))" \
		"query $one: the bucket's passed/dropped"
}

check v4 198.18.4.0/24 /24 198.18.4.0 1 ip 198.18.4.77
# 2001:2:0:4::1, 2001:2:0:4::100:1, ... 2001:2:0:4::ff00:1
check v6 2001:2:0:4::/64 /64 2001:2:0:4::1 16777216 ip6 2001:2:0:4::4d00:1
