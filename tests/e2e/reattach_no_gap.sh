#!/usr/bin/env bash
# e2e/reattach_no_gap: re-attaching (a program reload) while a denied
# source floods never lets one of its packets through: the new program
# replaces the old one in a single step, with no moment unprotected.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SRC=198.18.4.4
DPORT=5004
RELOADS=10

netns_init rg
netns_setup
sluice_attach
sluice_rx deny 198.18.4.0/24
nft_rx_init
nft_rx_counter gap ip saddr "$SRC" udp dport "$DPORT"

out=$(netns_tmp flood)
flood_bg "$out" --src "$SRC" --dst "$RX4" --dport "$DPORT" --count 3000000 --pps 0 --seconds 20
ids=()
for ((i = 0; i < RELOADS; i++)); do
	sluice_rx attach "$IF_RX" >/dev/null || fail "re-attach $i failed"
	ids+=("$(sluice_jq '.interfaces[0].prog_id' status)")
done
kill -TERM "$FLOOD_PID" 2>/dev/null || true
wait "$FLOOD_PID" 2>/dev/null || true

assert_eq "$(printf '%s\n' "${ids[@]}" | sort -u | wc -l)" "$RELOADS" "distinct programs loaded"
# Denied sources take no bucket: their drops are counted by their rule.
assert_ge "$(sluice_jq '.[] | select(.cidr == "198.18.4.0/24") | .dropped' limit list)" 1000 \
	"packets denied during the reloads"
assert_eq "$(nft_rx_packets gap)" 0 "packets of the denied source that got past sluice"
assert_eq "$(ip -n "$NS_RX" -d link show dev "$IF_RX" | grep -c 'prog/xdp')" 1 "XDP programs on the link"
