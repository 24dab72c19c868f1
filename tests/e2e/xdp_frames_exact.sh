#!/usr/bin/env bash
# e2e/xdp_frames_exact: the same exactness as e2e/counter_exact at the rate
# a NIC delivers: sluice-flood --xdp hands the rx veth XDP frames at
# millions per second (BPF_PROG_TEST_RUN live frames), 64 sources in turn.
# sluice's pass count still equals the nftables counter behind it, every
# frame the veth delivered is counted once (at this rate the veth drops
# some when its ring is full, and counts them), and each source gets
# burst + rate x duration.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

NSRC=64
RATE=2000
BURST=500
DPORT=5002

netns_init xf
netns_setup
need_xdp_live
sluice_attach
sluice_rx limit set 198.18.7.0/24 --rate "$RATE" --burst "$BURST"
nft_rx_init
nft_rx_counter flood ip saddr 198.18.7.0/24 udp dport "$DPORT"

# Every frame the tx end delivers reaches sluice on the rx end.
tx_packets() { ip -n "$NS_TX" -j -s link show dev "$IF_TX" | jq -er '.[0].stats64.tx.packets'; }
tx_dropped() { ip -n "$NS_TX" -j -s link show dev "$IF_TX" | jq -er '.[0].stats64.tx.dropped'; }
seen() { sluice_rx -j stats | jq -er '[.packets.pass[], .packets.drop[]] | add'; }
tx0=$(tx_packets)
txd0=$(tx_dropped)
seen0=$(seen)
out=$(flood --xdp --src 198.18.7.0 --sources "$NSRC" --dport "$DPORT" --count 4000000 --seconds 3)
echo "flood: $out"
sent=$(flood_field "$out" .sent)
secs=$(flood_field "$out" .seconds)
# Above what e2e/counter_exact's socket sender reaches (about 260,000 a
# second), with room for a busy machine: this runs [serial] and sends about
# 1,000,000 a second alone, 500,000 to 900,000 beside other work.
assert_ge "$(flood_field "$out" .pps)" 400000 "XDP frames per second"

rows=$(sluice_rx -j top -n 100000 | jq -c '[.[] | select(.source | startswith("198.18.7."))]')
assert_eq "$(jq length <<<"$rows")" "$NSRC" "sources tracked"
passed=$(jq 'map(.passed) | add' <<<"$rows")
dropped=$(jq 'map(.dropped) | add' <<<"$rows")
assert_eq "$(nft_rx_packets flood)" "$passed" "nftables counter equals sluice's pass count"
# A frame the tx end has counted may still be in the rx end's queue: let
# the two settle, briefly. The tx counter also holds the kernel's own few
# frames (IPv6 ND and MLD), one of which now and then never reaches XDP;
# two is the slack for those, against millions of flood frames.
for ((i = 0; i < 20; i++)); do
	delivered=$(($(tx_packets) - tx0))
	counted=$(($(seen) - seen0))
	((counted == delivered)) && break
	sleep 0.1
done
assert_le "$counted" "$delivered" "frames sluice counted, against frames the veth delivered"
assert_ge "$counted" $((delivered - 2)) "frames sluice counted, all but the kernel's own"
# Exact for the flood's own frames: each was counted by sluice, or by the
# veth as one it could not deliver (its ring full).
assert_eq $((passed + dropped + $(tx_dropped) - txd0)) "$sent" \
	"the flood's frames sluice counted plus those the veth dropped"
assert_ge $((passed + dropped)) $((sent / 2)) "the flood's frames that arrived (most)"
expected=$(calc "$BURST + $RATE * $secs")
assert_near "$(jq 'map(.passed) | min' <<<"$rows")" "$expected" 3 "fewest passed by one source"
assert_near "$(jq 'map(.passed) | max' <<<"$rows")" "$expected" 3 "most passed by one source"
