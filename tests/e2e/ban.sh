#!/usr/bin/env bash
# e2e/ban: under `--ban 2s`, a source that hits its limit is dropped whole
# (counted `banned`) for 2 s, `ban list -j` shows the ban with its time
# left while it lasts, and afterwards the source is admitted again; the
# nftables counter behind sluice sees exactly what sluice passed.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NET=198.18.3.0/24
SRC=198.18.3.7
RATE=10
BURST=5
BAN=2	# seconds

netns_init ban
netns_setup
sluice_attach
sluice_rx limit set "$NET" --rate "$RATE" --burst "$BURST" --ban "${BAN}s"
assert_eq "$(rule_field "$NET" ban_ms)" $((BAN * 1000)) "rule's ban_ms"
nft_rx_init
for p in 1 2 3; do
	nft_rx_counter "p$p" ip saddr "$SRC" udp dport "500$p"
done

# This source's entry in `ban list -j` (empty when it has none).
ban_entry() {
	sluice_rx -j ban list | jq -c --arg a "$SRC" '[.[] | select(.source == $a)] | .[0] // empty' ||
		fail "sluice ban list -j failed or printed no array"
}

flood_phase() { # WHAT DPORT COUNT PPS: prints the flood's JSON after checking it sent all
	local out
	out=$(flood --src "$SRC" --dport "$2" --count "$3" --pps "$4" --seconds 10)
	echo "flood $1: $out" >&2
	[[ $(flood_field "$out" .sent) == "$3" ]] || fail "flood $1 sent $(flood_field "$out" .sent) of $3"
	echo "$out"
}

# 1. Over the limit: the burst passes, the next packet is rate limited and
# starts the ban, everything after it is banned. 2. Right after, within the
# ban, even at a rate far below the limit, nothing passes, and ban list
# shows the ban. Each phase to its own port, so nftables tells them apart;
# the checks wait until both are done, for the ban is short.
entry=$(ban_entry)
assert_eq "$entry" "" "no ban before the flood"
s0=$(stats_snap)
t0=$(now)
out=$(flood_phase "over the limit" 5001 50 1000)
flood_phase "during the ban" 5002 20 100 >/dev/null
entry=$(ban_entry)
q=$(sluice_rx -j query "$SRC") || fail "sluice query $SRC failed"
elapsed=$(calc "$(now) - $t0")
awk -v e="$elapsed" -v b="$BAN" 'BEGIN { exit !(e < b - 0.1) }' ||
	fail "the machine was too slow: the ban list was read ${elapsed}s after the ban began"
sleep 0.2 # the last frames leave the veth's ring
s1=$(stats_snap)

secs=$(flood_field "$out" .seconds)
passed=$(nft_rx_packets p1)
assert_ge "$passed" "$BURST" "passed before the ban (the burst)"
assert_le "$passed" "$(gcra_max "$BURST" "$RATE" "$secs")" "passed before the ban (burst + rate x ${secs}s + 1)"
assert_eq "$(nft_rx_packets p2)" 0 "passed during the ban (none of 20 at 100/s)"
assert_eq "$(stats_delta "$s0" "$s1" packets drop rate_limited)" 1 "rate limited (the one that started the ban)"
assert_eq "$(stats_delta "$s0" "$s1" packets drop banned)" $((50 - passed - 1 + 20)) \
	"banned (the rest of the flood and all 20 during the ban)"
[[ -n $entry ]] || fail "ban list -j showed no ban for $SRC during the ban"
echo "ban list entry: $entry"
left=$(jq -er .left_seconds <<<"$entry") || fail "no left_seconds in the ban entry: $entry"
assert_eq "$(jq -r .policy <<<"$entry")" "$NET" "the ban's rule"
assert_eq "$(jq -r .dropped <<<"$entry")" $((50 - passed + 20)) "the ban entry's dropped"
assert_eq "$(jq -r .banned <<<"$q")" true "query $SRC during the ban: banned"
assert_ge "$(jq -r .ban_left_ms <<<"$q")" 1 "query $SRC during the ban: ban_left_ms"
ms_off=$(jq -er '(.left_ms - .left_seconds * 1000) | fabs' <<<"$entry") ||
	fail "no left_ms next to left_seconds in the ban entry: $entry"
assert_le "$ms_off" 1 \
	"left_ms and left_seconds agree (within 1 ms)"
assert_le "$left" "$BAN" "time left of the ban"
assert_ge "$left" "$(calc "$BAN - $elapsed - 0.05")" \
	"time left of the ban (${BAN}s less the ${elapsed}s since the flood began)"

# 3. After the ban (and half a second's refill): admitted again, within the limit.
wait_s=$(calc "$t0 + $BAN + 0.6 - $(now)")
awk -v w="$wait_s" 'BEGIN { exit !(w > 0) }' && sleep "$wait_s"
entry=$(ban_entry)
assert_eq "$entry" "" "no ban left after ${BAN}s"
flood_phase "after the ban" 5003 8 8 >/dev/null
sleep 0.2 # the last frames leave the veth's ring
s2=$(stats_snap)
assert_eq "$(nft_rx_packets p3)" 8 "passed after the ban (all 8, below the limit)"
assert_eq "$(stats_delta "$s1" "$s2" packets drop banned)" 0 "banned after the ban"
assert_eq "$(stats_delta "$s1" "$s2" packets drop rate_limited)" 0 "rate limited after the ban"
assert_eq "$(sluice_passed "$SRC")" $((passed + 8)) "query $SRC: passed equals nftables' count"
assert_eq "$(sluice_dropped "$SRC")" $((50 - passed + 20)) "query $SRC: dropped (limited and banned)"

# 4. ban del lifts a ban before its time: a second source under a 1-hour ban
# is listed, lifted, no longer listed nor banned, and, once its bucket (left
# empty by the lift) refills for 0.3 s at 10/s, admitted again.
SRC2=198.18.4.9
sluice_rx limit set 198.18.4.0/24 --rate "$RATE" --burst "$BURST" --ban 1h >/dev/null
nft_rx_counter p4 ip saddr "$SRC2" udp dport 5004
ban_entry2() {
	sluice_rx -j ban list | jq -c --arg a "$SRC2" '[.[] | select(.source == $a)] | .[0] // empty' ||
		fail "sluice ban list -j failed or printed no array"
}
out=$(flood --src "$SRC2" --dport 5004 --count 20 --pps 1000 --seconds 10)
[[ $(flood_field "$out" .sent) == 20 ]] || fail "flood of $SRC2 sent $(flood_field "$out" .sent) of 20"
sleep 0.2 # the last frames leave the veth's ring
entry=$(ban_entry2)
[[ -n $entry ]] || fail "ban list -j showed no 1-hour ban for $SRC2"
assert_ge "$(jq -r .left_seconds <<<"$entry")" 3500 "the ban of $SRC2 has most of its hour left"
sluice_rx ban del "$SRC2" >/dev/null
entry=$(ban_entry2)
assert_eq "$entry" "" "ban del lifted the ban of $SRC2"
assert_eq "$(sluice_jq .banned query "$SRC2")" false "query $SRC2 after ban del: not banned"
sleep 0.3
before=$(nft_rx_packets p4)
out=$(flood --src "$SRC2" --dport 5004 --count 2 --pps 100 --seconds 10)
sleep 0.2 # the last frames leave the veth's ring
assert_eq $(($(nft_rx_packets p4) - before)) 2 "$SRC2 admitted again after ban del"
