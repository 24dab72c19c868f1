#!/usr/bin/env bash
# e2e/flood_limit: sluice attached natively on the receiving veth end limits
# a bounded IPv4 flood to burst + rate x duration, counts every packet once,
# and passes exactly what an independent nftables counter behind it sees.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

RATE=1000
BURST=200
FLOOD_PPS=20000
SRC=198.18.0.66
DPORT=5001

netns_init fl
netns_setup
sluice_attach
assert_eq "$(sluice_jq '.interfaces[0].mode' status)" native "attach mode"
sluice_rx limit default --rate "$RATE" --burst "$BURST"
nft_rx_init
nft_rx_counter flood ip saddr "$SRC" udp dport "$DPORT"

within0=$(sluice_stat pass within_limit)
limited0=$(sluice_stat drop rate_limited)

# 40000 packets at 20000/s: about 2 s, 20x the limit.
out=$(flood --src "$SRC" --dport "$DPORT" --count 40000 --pps "$FLOOD_PPS" --seconds 5)
echo "flood: $out"
sent=$(flood_field "$out" .sent)
secs=$(flood_field "$out" .seconds)
assert_eq "$sent" 40000 "flood sent all its packets"
assert_ge "$(flood_field "$out" .pps)" $((10 * RATE)) "flood rate stayed far above the limit"

passed=$(sluice_passed "$SRC")
dropped=$(sluice_dropped "$SRC")

# The expectation. GCRA admits a fresh source's first BURST packets back to
# back, then one per 1/RATE s for as long as the flood keeps the bucket
# empty, so passed = BURST + RATE x (t_last - t_first), where t_first and
# t_last are when the flood's first and last packet reached the program.
# sluice-flood's "seconds" is that same interval measured at the sender:
# the one-way delay through the veth is the same for every packet and cancels
# out, and queueing is bounded by the veth ring (256 frames, ~13 ms here;
# the veth pushes back rather than drop, so the sender cannot run ahead).
# Pauses of the sender on a busy VM do not matter either: a pause shorter
# than BURST/RATE (200 ms) refills fewer tokens than the bucket holds, and
# the following packets spend them, so the total is unchanged. A "few
# percent" (3%) covers the rest.
expected=$(calc "$BURST + $RATE * $secs")
assert_near "$passed" "$expected" 3 "passed for $SRC (burst + rate x ${secs}s)"
assert_eq $((passed + dropped)) "$sent" "passed + dropped for $SRC equals packets sent"
assert_eq "$(nft_rx_packets flood)" "$passed" "nftables counter behind sluice equals sluice's pass count"

# The interface counters agree with the per-source ones. Only the flood is
# rate limited; within_limit may also hold the kernel's own few IPv6 ND/MLD
# packets from the tx end, so allow a handful there.
within=$(($(sluice_stat pass within_limit) - within0))
limited=$(($(sluice_stat drop rate_limited) - limited0))
assert_eq "$limited" "$dropped" "stats rate_limited delta equals $SRC's drops"
assert_ge "$within" "$passed" "stats within_limit delta"
assert_le "$within" $((passed + 20)) "stats within_limit delta"

top=$(sluice_rx -j top -n 1)
assert_eq "$(jq -r '.[0].source' <<<"$top")" "$SRC" "top source"
assert_eq "$(jq -r '.[0].dropped' <<<"$top")" "$dropped" "top dropped"
