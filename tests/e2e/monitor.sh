#!/usr/bin/env bash
# e2e/monitor: a --monitor rule drops nothing (nftables behind sluice sees
# every packet) and counts as `monitored` exactly what the same rule
# without --monitor then drops (`rate_limited`) for the same traffic from a
# fresh source. The dry run is seen per rule and per source: limit list,
# query and top (ranked by them) show the would-drops, status a live
# --monitor rule, the exporter sluice_policy_monitored_packets_total. Once
# the rule enforces, the dry run's source still shows its would-drops as
# would-drops, and the drops of its next packets as drops (it failed so
# while both were one count labelled by the rule's mode now).
# A --monitor rule with --ban bans nobody, now or later: `ban list` shows
# no ban during the dry run, and once --monitor is removed the flooded
# source's next packet is rate limited (it starts a ban of its own), not
# dropped as banned by the dry run.
set -euo pipefail
# shellcheck source=tests/exporter/lib.sh
. "$(dirname "$0")/../exporter/lib.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

NET=198.18.9.0/24
# One packet a minute: within the test no token comes due after the burst,
# so both runs pass exactly BURST and the counts must match exactly.
RATE=1/m
BURST=50
COUNT=1000
DPORT=5001

exporter_init mon
netns_setup
sluice_attach
nft_rx_init

run() { # SRC: one flood, prints the stats before and after
	local out
	nft_rx_counter "c${1//./_}" ip saddr "$1" udp dport "$DPORT"
	S0=$(stats_snap)
	out=$(flood --src "$1" --dport "$DPORT" --count "$COUNT" --pps 5000 --seconds 10)
	echo "flood from $1: $out"
	sleep 0.2 # the last frames leave the veth's ring
	S1=$(stats_snap)
	assert_eq "$(flood_field "$out" .sent)" "$COUNT" "flood from $1 sent all its packets"
}

# Dry run.
sluice_rx limit set "$NET" --rate "$RATE" --burst "$BURST" --monitor
assert_eq "$(rule_field "$NET" monitor)" true "rule's monitor"
run 198.18.9.10
monitored=$(stats_delta "$S0" "$S1" packets pass monitored)
assert_eq "$(nft_rx_packets c198_18_9_10)" "$COUNT" "packets that arrived under --monitor (all)"
for r in rate_limited banned denied no_bucket; do
	assert_eq "$(stats_delta "$S0" "$S1" packets drop "$r")" 0 "stats $r delta under --monitor"
done
assert_eq "$monitored" $((COUNT - BURST)) "stats monitored delta (all but the burst)"
assert_eq "$(stats_delta "$S0" "$S1" packets pass within_limit)" "$BURST" \
	"stats within_limit delta under --monitor"
assert_eq "$(rule_field "$NET" passed)" "$COUNT" "rule's passed under --monitor (all)"
assert_eq "$(rule_field "$NET" dropped)" 0 "rule's dropped under --monitor"
# The dry run shows whom enforcing would hit: per rule, per source (query,
# top, ranked by would-drops), in text and -j, and status says it is live.
would=$((COUNT - BURST))
assert_eq "$(rule_field "$NET" would_drop)" "$would" "rule's would_drop under --monitor"
assert_eq "$(sluice_jq '[.passed, .dropped, .would_drop, .monitor] | join(" ")' query 198.18.9.10)" \
	"$COUNT 0 $would true" "query -j passed, dropped, would_drop, monitor"
out=$(sluice_rx query 198.18.9.10) || fail "query failed"
[[ $out == *"would drop $would (monitor)"* ]] || fail "query says: $out"
ok "query says would drop $would (monitor)"
assert_eq "$(sluice_jq '.[0] | [.source, .passed, .dropped, .would_drop, .monitor] | join(" ")' top -n 1)" \
	"198.18.9.10 $COUNT 0 $would true" "top -j first row under --monitor"
out=$(sluice_rx limit list) || fail "limit list failed"
[[ $out == *"monitor (would drop $would)"* ]] || fail "limit list says: $out"
ok "limit list says monitor (would drop $would)"
assert_eq "$(sluice_jq '.interfaces[0].monitor_rules' status)" 1 "status -j monitor_rules"
out=$(sluice_rx status) || fail "status failed"
[[ $out == *"1 under --monitor"* ]] || fail "status says: $out"
ok "status says a --monitor rule is live"
exporter_start -i "$IF_RX"
m=$(netns_tmp metrics.txt)
scrape /metrics >"$m" || fail "scrape failed"
exporter_stop
id="interface=\"$IF_RX\",policy=\"$NET\",proto=\"\",dport=\"\",syn=\"\",requests=\"\""
assert_eq "$(series "$m" "sluice_policy_monitored_packets_total{$id}")" "$would" \
	"exporter's sluice_policy_monitored_packets_total"

# The same rule enforcing (limit set with the same identity replaces it),
# the same traffic from a source with a fresh bucket.
sluice_rx limit set "$NET" --rate "$RATE" --burst "$BURST"
assert_eq "$(rule_field "$NET" monitor)" false "rule's monitor, replaced"
run 198.18.9.20
limited=$(stats_delta "$S0" "$S1" packets drop rate_limited)
assert_eq "$(nft_rx_packets c198_18_9_20)" "$BURST" "packets that arrived when enforced (the burst)"
assert_eq "$(stats_delta "$S0" "$S1" packets pass monitored)" 0 "stats monitored delta when enforced"
assert_eq "$limited" "$monitored" "dropped when enforced equals monitored in the dry run"
assert_eq "$(sluice_jq '[.dropped, .would_drop, .monitor] | join(" ")' query 198.18.9.20)" \
	"$would 0 false" "query -j dropped, would_drop, monitor when enforced"
assert_eq "$(sluice_jq '.interfaces[0].monitor_rules' status)" 0 "status -j monitor_rules when enforced"
# The dry run's source keeps its would-drops as would-drops under the
# enforcing rule, before and after it sends again: each packet is labelled
# by the mode it was judged in, not by the rule's mode now.
assert_eq "$(sluice_jq '[.passed, .dropped, .would_drop] | join(" ")' query 198.18.9.10)" \
	"$COUNT 0 $would" "query -j of the dry run's source once enforced: passed, dropped, would_drop"
out=$(flood --src 198.18.9.10 --dport "$DPORT" --count 10 --pps 1000 --seconds 5)
assert_eq "$(flood_field "$out" .sent)" 10 "flood of 10 from the dry run's source sent all"
sleep 0.2
assert_eq "$(sluice_jq '[.passed, .dropped, .would_drop] | join(" ")' query 198.18.9.10)" \
	"$COUNT 10 $would" "query -j of the dry run's source after 10 more, enforced"
out=$(sluice_rx query 198.18.9.10) || fail "query failed"
[[ $out == *"passed $COUNT, dropped 10, would drop $would (while monitored)"* ]] || fail "query says: $out"
ok "query says passed $COUNT, dropped 10, would drop $would (while monitored)"
assert_eq "$(sluice_jq '.[] | select(.source == "198.18.9.10") | [.passed, .dropped, .would_drop] | join(" ")' top)" \
	"$COUNT 10 $would" "top -j row of the dry run's source, enforced"

# --monitor --ban: the would-be ban is neither shown nor kept.
sluice_rx limit set 198.18.10.0/24 --rate "$RATE" --burst 5 --ban 1h --monitor
out=$(flood --src 198.18.10.10 --dport "$DPORT" --count 20 --pps 1000 --seconds 5)
assert_eq "$(flood_field "$out" .sent)" 20 "flood from 198.18.10.10 sent all its packets"
sleep 0.2
out=$(sluice_rx ban list) || fail "ban list failed"
[[ $out == "no bans on $IF_RX" ]] || fail "ban list during a --monitor --ban dry run: $out"
assert_eq "$(sluice_jq .banned query 198.18.10.10)" false "query's banned under --monitor --ban"
ok "a --monitor --ban dry run shows no ban"
sluice_rx limit set 198.18.10.0/24 --rate "$RATE" --burst 5 --ban 1h
S0=$(stats_snap)
out=$(flood --src 198.18.10.10 --dport "$DPORT" --count 1 --pps 1000 --seconds 5)
sleep 0.2
S1=$(stats_snap)
assert_eq "$(stats_delta "$S0" "$S1" packets drop banned)" 0 \
	"packets dropped as banned by the dry run's ban once enforced"
assert_eq "$(stats_delta "$S0" "$S1" packets drop rate_limited)" 1 \
	"the spent source's first packet once enforced: rate limited"
