#!/usr/bin/env bash
# exporter/metrics: after a bounded flood (rate-limited, denied and allowed
# sources, IPv4 and IPv6), /metrics passes `promtool check metrics`, has
# HELP and TYPE for every family of the reference, and every value equals
# what `sluice stats -j`, `limit list -j`, `status -j` and `version` print
# at the same moment; every rule has its sluice_rule_info, the reasons
# monitored and banned are there. A second interface whose name holds a quote and a
# backslash comes out escaped, and still passes promtool.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

exporter_init exm
command -v promtool >/dev/null || skip "promtool not installed (Debian package prometheus)"
netns_setup
sluice_attach
sluice_rx limit set 198.18.6.0/24 --rate 200 --burst 20 >/dev/null
sluice_rx deny 198.18.7.0/24 >/dev/null
sluice_rx allow 2001:2::100/120 >/dev/null
nft_rx_init
nft_rx_counter quiet meta l4proto udp
WEIRD="xq\"\\$$"
WEIRD=${WEIRD:0:12}
attach_extra "$WEIRD"

flood --src 198.18.6.1 --sources 4 --count 6000 --pps 30000 --seconds 5 >/dev/null
flood --src 198.18.7.1 --sources 2 --count 300 --pps 10000 --seconds 5 >/dev/null
flood --src 2001:2::101 --sources 3 --count 300 --pps 10000 --seconds 5 >/dev/null

exporter_start -i "$IF_RX"
m=$(netns_tmp metrics.txt)
# Counters may still move (a late neighbour packet): take the scrape that
# sits between two equal `stats -j`.
snapshot() { stats_json && sluice_rx -j limit list; }
for ((try = 0; try < 10; try++)); do
	before=$(snapshot)
	scrape /metrics >"$m" || fail "scrape failed"
	after=$(snapshot)
	[[ $before == "$after" ]] && break
	sleep 0.2
done
[[ $before == "$after" ]] || fail "counters never held still around a scrape"
stats=$(head -n 1 <<<"$after")
list=$(tail -n 1 <<<"$after")

out=$(promtool check metrics <"$m" 2>&1) || fail "promtool check metrics: $out"
[[ -z $out ]] || fail "promtool check metrics is not clean: $out"
ok "promtool check metrics: clean"

declare -A types=(
	[sluice_build_info]=gauge [sluice_program_info]=gauge
	[sluice_packets_total]=counter [sluice_bytes_total]=counter
	[sluice_tracked_sources]=gauge [sluice_tracked_sources_capacity]=gauge
	[sluice_policy_packets_total]=counter [sluice_policy_bytes_total]=counter
	[sluice_rule_info]=gauge
	[sluice_scrape_duration_seconds]=gauge [sluice_scrape_skipped_interfaces]=gauge
)
for fam in "${!types[@]}"; do
	grep -q "^# HELP $fam " "$m" || fail "no HELP for $fam"
	grep -qx "# TYPE $fam ${types[$fam]}" "$m" || fail "no '# TYPE $fam ${types[$fam]}'"
done
ok "HELP and TYPE for all ${#types[@]} families"
# -i: only the picked interface, none of the host's other attachments.
others=$(grep -v '^#' "$m" | grep 'interface="' | grep -vc "interface=\"$IF_RX\"" || true)
assert_eq "$others" 0 "series of other interfaces with -i $IF_RX"

L="interface=\"$IF_RX\""
drops=0
for unit in packets bytes; do
	for action in pass drop; do
		for reason in $(jq -r ".$unit.$action | keys[]" <<<"$stats"); do
			want=$(jq -r ".$unit.$action.$reason" <<<"$stats")
			got=$(series "$m" "sluice_${unit}_total{$L,action=\"$action\",reason=\"$reason\"}")
			[[ $got == "$want" ]] ||
				fail "sluice_${unit}_total $action/$reason: exporter $got, stats -j $want"
			[[ $unit/$action == packets/drop ]] && drops=$((drops + want))
		done
	done
done
ok "sluice_packets_total and sluice_bytes_total equal stats -j for every action and reason"
# The v2 reasons, whether or not this version's stats -j lists them.
for r in pass/monitored drop/banned; do
	got=$(series "$m" "sluice_packets_total{$L,action=\"${r%/*}\",reason=\"${r#*/}\"}")
	[[ $got =~ ^[0-9]+$ ]] || fail "no sluice_packets_total for action ${r%/*}, reason ${r#*/}: $got"
done
ok "reasons monitored (pass) and banned (drop) are exported"
assert_ge "$(jq .packets.drop.rate_limited <<<"$stats")" 1000 "rate-limited drops in the flood"
assert_ge "$(jq .packets.drop.denied <<<"$stats")" 300 "denied drops in the flood"
assert_ge "$(jq .packets.pass.allowed <<<"$stats")" 300 "allowed passes in the flood"
assert_eq "$(awk '/^sluice_packets_total\{.*action="drop"/ { s += $2 } END { print s }' "$m")" \
	"$drops" "sum of drop series"
assert_eq "$(series "$m" "sluice_tracked_sources{$L}")" "$(jq .tracked_sources <<<"$stats")" \
	"sluice_tracked_sources equals stats -j"
# The flood's 9 sources, plus whatever neighbour discovery the veth sent.
# Only limited sources take a bucket; the denied and allowed ones do not.
assert_ge "$(series "$m" "sluice_tracked_sources{$L}")" 4 "sources tracked (the 4 limited ones)"
assert_eq "$(series "$m" "sluice_tracked_sources_capacity{$L}")" "$(jq .capacity <<<"$stats")" \
	"sluice_tracked_sources_capacity equals stats -j"

# These rules have no match: the match labels are there, empty.
NOMATCH='proto="",dport="",syn="",requests=""'
npol=0
while IFS=$'\t' read -r cidr action rate burst passed dropped; do
	P="$L,policy=\"$cidr\",$NOMATCH"
	for a in pass drop; do
		want=$passed
		[[ $a == drop ]] && want=$dropped
		got=$(series "$m" "sluice_policy_packets_total{$P,action=\"$a\"}")
		[[ $got == "$want" ]] || fail "policy $cidr $a: exporter $got, limit list -j $want"
	done
	if [[ $action == limit ]]; then
		what="unit=\"packets\",rate=\"$rate/s\",burst=\"$burst\",per=\"source\",algo=\"token-bucket\",window_seconds=\"\",ban_seconds=\"0\""
	else
		what='unit="",rate="",burst="",per="",algo="",window_seconds="",ban_seconds=""'
	fi
	info="sluice_rule_info{$P,kind=\"$action\",$what,monitor=\"false\"}"
	assert_eq "$(series "$m" "$info")" 1 "$info"
	npol=$((npol + 1))
done < <(jq -r '.[] | [.cidr, .action, .rate, .burst, .passed, .dropped] | @tsv' <<<"$list")
assert_eq "$npol" 4 "policies in limit list (default and three rules)"
assert_eq "$(grep -c "^sluice_policy_packets_total{$L" "$m")" $((npol * 2)) \
	"policy packet series (pass and drop per policy)"
assert_eq "$(grep -c "^sluice_policy_bytes_total{$L" "$m")" $((npol * 2)) \
	"policy byte series (pass and drop per policy)"
assert_eq "$(grep -c "^sluice_rule_info{$L" "$m")" "$npol" "rule info series (one per policy)"
ok "sluice_policy_packets_total equals limit list -j for every policy"

st=$(sluice_rx -j status | jq -c ".interfaces[] | select(.interface == \"$IF_RX\")")
info="sluice_program_info{$L,mode=\"$(jq -r .mode <<<"$st")\",prog_id=\"$(jq -r .prog_id <<<"$st")\",libxdp=\"$(jq -r .libxdp <<<"$st")\"}"
assert_eq "$(series "$m" "$info")" 1 "$info"
version=$("$SLUICE" version | awk '{ print $2 }')
assert_eq "$(series "$m" "sluice_build_info{version=\"$version\"}")" 1 "sluice_build_info"
assert_eq "$(series "$m" sluice_scrape_skipped_interfaces)" 0 "interfaces skipped"
dur=$(series "$m" sluice_scrape_duration_seconds)
assert_le "$dur" 5 "sluice_scrape_duration_seconds is a plausible number of seconds"

# Without -i: every attached interface, the odd name escaped as the text
# format wants (\" and \\), and promtool still happy.
exporter_stop TERM
exporter_start
scrape /metrics >"$m" || fail "scrape failed"
out=$(promtool check metrics <"$m" 2>&1) || fail "promtool check metrics: $out"
[[ -z $out ]] || fail "promtool check metrics is not clean: $out"
esc=${WEIRD//\\/\\\\}
esc=${esc//\"/\\\"}
assert_eq "$(series "$m" "sluice_tracked_sources_capacity{interface=\"$esc\"}")" 262144 \
	"capacity of '$WEIRD', label escaped as $esc"
assert_eq "$(series "$m" "sluice_tracked_sources{$L}")" "$(stats_json | jq .tracked_sources)" \
	"$IF_RX still there beside it"
exporter_stop TERM
