#!/usr/bin/env bash
# e2e/spoofed_flood: a flood from 130 816 distinct sources of 198.18.0.0/15
# (all but the clients' /24, each once per cycle in a shuffled order), at
# sluice-flood --xdp's full speed for 5+ s, against 50 well-behaved clients
# (198.19.255.1-50, 20 packets/s each) on a 65 536-entry table.
#
# With the new-source budget on: each client loses at most 1 % of its
# packets, its query -j passed count grows from sample to sample (its bucket
# is never reset) and equals its nftables counter at the end, the flood's
# sources enter the table at most at the budget, and what the flood gets
# through stays within (budget burst + rate x t) x (bucket burst + rate x t),
# and the nftables counter behind sluice equals the passed counts of the
# flood's sources in top -j, summed.
# The same flood with the budget off is then only reported (no assertion
# beyond sanity): the summary block at the end gives both runs' figures.
#
# SPOOFED_FLOOD_BUDGET=off runs the first part without the budget: the
# assertions must then fail (how the test was shown to be able to fail).
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

MAX_SOURCES=65536
# Everyone: 100/s, burst 200. A client sends 20/s, a fifth of it; a flood
# source comes back once per cycle of 2^17 frames (about 30 times a second
# at 4 Mpps), so it never runs out either: the limit alone does nothing
# against this flood.
RATE=100
BURST=200
# The budget: 1000 new sources/s, burst 2000. A real edge sees far fewer new
# clients a second than that, and at this pace the flood needs over a minute
# to fill the 65 536 entries, far longer than it lasts: no client is evicted.
# The bound on what the flood gets through scales with it, so it stays low.
NEW_RATE=1000
NEW_BURST=2000
BUDGET=${SPOOFED_FLOOD_BUDGET:-on}
[[ $BUDGET == on || $BUDGET == off ]] || fail "SPOOFED_FLOOD_BUDGET must be on or off"

CLIENTS=50
CLIENT_PPS=20
CLIENT_NET=198.19.255.0/24	# clients 198.19.255.1 .. .50
FLOOD_NET=198.18.0.0/15		# all of it but CLIENT_NET
FLOOD_DISTINCT=$((131072 - 256))
FLOOD_SECONDS=5.5
FLOOD_COUNT=100000000		# the time bound ends it first
CLIENT_PORT=5101
FLOOD_PORT=5102
LEAD=1		# clients alone before the flood, and after it
LOSS_MAX_PCT=1
# The clients run until the test stops them, LEAD after the sample that
# follows the flood: a sample of a 65 536-entry table can take seconds on a
# busy machine, so no fixed client duration can be sure to cover it. The
# count and the time bound are only a backstop (a minute past the flood).
CLIENT_SECONDS=$(calc "$LEAD + $FLOOD_SECONDS + 60")
CLIENT_COUNT=$(calc "$CLIENTS * $CLIENT_PPS * $CLIENT_SECONDS" %d)
# Fewest frames the clients must have sent by then (LEAD, the flood, LEAD).
CLIENT_MIN_SENT=$(calc "$CLIENTS * $CLIENT_PPS * (2 * $LEAD + $FLOOD_SECONDS)" %d)

netns_init sf
netns_setup
need_xdp_live
sluice_attach --max-sources "$MAX_SOURCES"
sluice_rx limit default --rate "$RATE" --burst "$BURST"
nft_rx_init
# One counter per client and one for the flood, in one nft run (a hundred
# nft calls would take seconds); nft_rx_packets reads them.
for ((c = 1; c <= CLIENTS; c++)); do
	echo "add counter netdev $NFT_TABLE c$c"
	echo "add rule netdev $NFT_TABLE ingress ip saddr 198.19.255.$c udp dport $CLIENT_PORT counter name c$c drop"
done | ip netns exec "$NS_RX" nft -f - || fail "cannot add the clients' nftables counters"
nft_rx_counter flood udp dport "$FLOOD_PORT"

client_addr() { echo "198.19.255.$1"; }

# Frames the tx veth could not hand to the rx end (its ring full): these
# never reached XDP, the flood's or the clients'.
veth_dropped() { ip -n "$NS_TX" -j -s link show dev "$IF_TX" | jq -er '.[0].stats64.tx.dropped'; }

# Every client's passed count, one line, in client order; a client that is
# not tracked reads 0. One top -j reads them all at once (50 queries take
# seconds while the flood runs); the end of the test checks that query -j
# agrees with it.
client_counts() {
	local top
	top=$(sluice_rx -j top -n 100000) || fail "sluice top -j failed"
	jq -er --argjson n "$CLIENTS" '
		(map(select(.source | startswith("198.19.255."))
		     | {key: .source, value: .passed}) | from_entries) as $p
		| [range(1; $n + 1) | $p["198.19.255.\(.)"] // 0] | map(tostring) | join(" ")' \
		<<<"$top" || fail "bad top -j output"
}

nft_clients() {
	local c line=()
	for ((c = 1; c <= CLIENTS; c++)); do
		line+=("$(nft_rx_packets "c$c")")
	done
	echo "${line[*]}"
}

# The frames client c (1-based) was sent: sluice-flood gives its sources
# one frame each in turn, from the first.
client_sent() { # TOTAL C
	if (($1 >= $2)); then
		echo $((($1 - $2) / CLIENTS + 1))
	else
		echo 0
	fi
}

# A field of this interface's status -j.
status_field() { sluice_jq ".interfaces[] | select(.interface == \"$IF_RX\") | $1" status; }

# One run: clients alone, then the flood with them, then clients alone.
# Sets RUN_* for the checks and the summary.
run_flood() { # LABEL
	local label=$1 cl_out fl_out samples=() pressure=false
	local cl_sent n0 nft0 adm0 stats0 vd0 prev cur resets c i
	cl_out=$(netns_tmp "clients-$label")
	fl_out=$(netns_tmp "flood-$label")
	nft0=$(nft_clients)
	n0=$(nft_rx_packets flood)
	vd0=$(veth_dropped)

	# The clients send paced until stopped (SIGTERM, below).
	flood_bg "$cl_out" --src 198.19.255.1 --sources "$CLIENTS" --dport "$CLIENT_PORT" \
		--pps $((CLIENTS * CLIENT_PPS)) --count "$CLIENT_COUNT" --seconds "$CLIENT_SECONDS"
	CLIENTS_PID=$FLOOD_PID
	sleep "$LEAD"
	samples+=("$(client_counts)")
	# From here on every new source is one of the flood's.
	adm0=$(status_field .new_sources.admitted)
	stats0=$(stats_snap)
	flood_bg "$fl_out" --xdp --random "$FLOOD_NET" --skip "$CLIENT_NET" \
		--dport "$FLOOD_PORT" --count "$FLOOD_COUNT" --seconds "$FLOOD_SECONDS"
	sleep 0.5
	RUN_DURING=0
	while kill -0 "$FLOOD_PID" 2>/dev/null; do
		[[ $(status_field .under_pressure) == true ]] && pressure=true
		samples+=("$(client_counts)")
		RUN_DURING=$((RUN_DURING + 1))
		sleep 0.3
	done
	flood_wait || fail "$label: sluice-flood (flood) failed: $(cat "$fl_out")"
	RUN_FLOOD=$(cat "$fl_out")
	echo "$label: flood: $RUN_FLOOD"
	samples+=("$(client_counts)")
	kill -0 "$CLIENTS_PID" 2>/dev/null ||
		fail "$label: the clients stopped before the sample after the flood (their $CLIENT_SECONDS s backstop)"
	sleep "$LEAD"
	kill -TERM "$CLIENTS_PID"
	FLOOD_PID=$CLIENTS_PID
	flood_wait || fail "$label: sluice-flood (clients) failed: $(cat "$cl_out")"
	RUN_CLIENTS=$(cat "$cl_out")
	echo "$label: clients: $RUN_CLIENTS"
	sleep 0.2	# the last frames through the rx queue
	samples+=("$(client_counts)")

	RUN_SAMPLES=("${samples[@]}")
	RUN_PRESSURE=$pressure
	RUN_FLOOD_PASSED=$(($(nft_rx_packets flood) - n0))
	RUN_VETH_DROPPED=$(($(veth_dropped) - vd0))
	RUN_ADMITTED=$(($(status_field .new_sources.admitted) - adm0))
	RUN_STATS0=$stats0
	RUN_STATS1=$(stats_snap)
	RUN_TOP=$(sluice_rx -j top -n 100000)

	# Per client: frames sent, received behind sluice (nftables), lost.
	cl_sent=$(flood_field "$RUN_CLIENTS" .sent)
	read -r -a before <<<"$nft0"
	read -r -a after <<<"$(nft_clients)"
	RUN_SENT=()
	RUN_RECV=()
	for ((c = 1; c <= CLIENTS; c++)); do
		RUN_SENT+=("$(client_sent "$cl_sent" "$c")")
		RUN_RECV+=($((after[c - 1] - before[c - 1])))
	done
	# Resets: a client's passed count going down (or to untracked) between
	# two samples; a client whose count did not grow between two samples
	# (0.3 s or more apart, 20 packets/s) is stalled. The last sample comes
	# after the clients stopped: it only counts for resets.
	RUN_RESETS=0
	RUN_RESET_CLIENTS=0
	RUN_STALLS=0
	for ((c = 0; c < CLIENTS; c++)); do
		resets=0
		for ((i = 1; i < ${#samples[@]}; i++)); do
			read -r -a prev <<<"${samples[i - 1]}"
			read -r -a cur <<<"${samples[i]}"
			if ((cur[c] < prev[c])); then
				resets=$((resets + 1))
			elif ((cur[c] == prev[c] && i < ${#samples[@]} - 1)); then
				RUN_STALLS=$((RUN_STALLS + 1))
			fi
		done
		RUN_RESETS=$((RUN_RESETS + resets))
		if ((resets > 0)); then
			RUN_RESET_CLIENTS=$((RUN_RESET_CLIENTS + 1))
		fi
	done
}

# Loss figures of the last run: worst client's percent, and all clients'.
loss_max_pct() {
	local c worst=0 l
	for ((c = 0; c < CLIENTS; c++)); do
		l=$(calc "100 * (${RUN_SENT[c]} - ${RUN_RECV[c]}) / ${RUN_SENT[c]}" %.3f)
		worst=$(awk -v a="$l" -v b="$worst" 'BEGIN { print (a > b) ? a : b }')
	done
	echo "$worst"
}
loss_total_pct() {
	local s=0 r=0 c
	for ((c = 0; c < CLIENTS; c++)); do
		s=$((s + RUN_SENT[c]))
		r=$((r + RUN_RECV[c]))
	done
	calc "100 * ($s - $r) / $s" %.3f
}

# The flood's sources in the table after a run (every source of the /15
# but the clients'), and what they passed.
flood_rows() {
	jq -c '[.[] | select(.source | startswith("198.19.255.") | not)
		| select(.source | test("^198\\.1[89]\\."))]' <<<"$RUN_TOP"
}

summary_line() { # LABEL
	printf '%-11s %9.0f %10s %9s %8ss %10s %12s %9s %10s %9s %9s %7s\n' "$1" \
		"$(flood_field "$RUN_FLOOD" .pps)" "$(flood_field "$RUN_FLOOD" .sent)" \
		"$(flood_field "$RUN_FLOOD" .distinct_sources)" \
		"$(calc "$(flood_field "$RUN_FLOOD" .seconds)" %.1f)" "$RUN_VETH_DROPPED" "$RUN_FLOOD_PASSED" \
		"$RUN_ADMITTED" "$(loss_max_pct)%" "$(loss_total_pct)%" \
		"$RUN_RESET_CLIENTS/$CLIENTS" "$RUN_RESETS"
}

# --- The flood with the new-source budget on ---------------------------------
if [[ $BUDGET == on ]]; then
	sluice_rx limit new-sources --rate "$NEW_RATE" --burst "$NEW_BURST"
else
	echo "SPOOFED_FLOOD_BUDGET=off: the checks below run without the budget and must fail"
fi
run_flood budget-on
ON_SUMMARY=$(summary_line "budget $BUDGET")

secs=$(flood_field "$RUN_FLOOD" .seconds)
assert_ge "$secs" 5 "the flood lasted (seconds, first frame to last)"
assert_ge "$(flood_field "$RUN_FLOOD" .distinct_sources)" 130000 "distinct flood sources"
assert_eq "$(flood_field "$RUN_FLOOD" .distinct_sources)" "$FLOOD_DISTINCT" \
	"distinct flood sources (all of $FLOOD_NET but $CLIENT_NET)"
assert_ge "$(flood_field "$RUN_CLIENTS" .sent)" "$CLIENT_MIN_SENT" "clients' frames (paced, until stopped)"

# Clients: loss, counts never reset and growing, and equal to nftables.
for ((c = 0; c < CLIENTS; c++)); do
	if ((100 * (RUN_SENT[c] - RUN_RECV[c]) > LOSS_MAX_PCT * RUN_SENT[c])); then
		fail "client $(client_addr $((c + 1))): sent ${RUN_SENT[c]}, ${RUN_RECV[c]} behind sluice: over $LOSS_MAX_PCT% lost"
	fi
done
ok "every client lost at most $LOSS_MAX_PCT% (worst $(loss_max_pct)%, all $(loss_total_pct)%)"
assert_eq "$RUN_RESETS" 0 "clients' passed counts that went down between samples (resets)"
assert_eq "$RUN_STALLS" 0 "samples in which a client's passed count did not grow"
assert_ge "$RUN_DURING" 2 "samples of the clients' counts during the flood (one before, two after)"
read -r -a last <<<"${RUN_SAMPLES[-1]}"
for ((c = 0; c < CLIENTS; c++)); do
	q=$(sluice_passed "$(client_addr $((c + 1)))")
	[[ $q == "${RUN_RECV[c]}" && $q == "${last[c]}" ]] ||
		fail "client $(client_addr $((c + 1))): query -j passed $q, top -j ${last[c]}, nftables ${RUN_RECV[c]}"
done
ok "each client's query -j passed count equals its nftables counter (and top -j's)"
assert_eq "$RUN_PRESSURE" true "status -j said under_pressure during the flood"

# The flood: sources admitted at most at the budget, what passed bounded.
# t: the flood's first frame to its last, and 50 ms for the frames still
# in the rx veth's ring when the sender's clock stopped.
t=$(calc "$secs + 0.05")
admit_max=$(gcra_max "$NEW_BURST" "$NEW_RATE" "$t")
bucket_max=$(gcra_max "$BURST" "$RATE" "$t")
rows=$(flood_rows)
assert_le "$RUN_ADMITTED" "$admit_max" "new sources admitted during the run (status -j; budget burst + rate x t)"
assert_le "$(jq length <<<"$rows")" "$admit_max" "flood sources in the table"
assert_le "$(jq 'map(.passed) | max // 0' <<<"$rows")" "$bucket_max" "most one flood source passed (its bucket)"
assert_le "$RUN_FLOOD_PASSED" "$((admit_max * bucket_max))" \
	"flood frames through (nftables; bound (budget burst + rate x t) x (bucket burst + rate x t))"
assert_eq "$(jq 'map(.passed) | add // 0' <<<"$rows")" "$RUN_FLOOD_PASSED" \
	"flood frames through: sluice's flood sources' passed counts, against nftables"
limited=$(stats_delta "$RUN_STATS0" "$RUN_STATS1" packets drop new_source_limited)
# What XDP saw of the flood: every packet counted, less the clients'. (Of
# what the generator sent, the rx veth drops part before XDP when its ring
# is full.)
seen_total() { jq '[.packets[] | .[]] | add' <<<"$1"; }
seen=$(($(seen_total "$RUN_STATS1") - $(seen_total "$RUN_STATS0") -
	$(flood_field "$RUN_CLIENTS" .sent)))
assert_ge "$limited" "$(calc "$seen / 2" %d)" \
	"flood frames dropped as new_source_limited (most of the $seen XDP saw)"
# Last, so that a run without the budget fails on what matters first: a
# flood below this rate would not mean much (a NIC delivers millions).
assert_ge "$(flood_field "$RUN_FLOOD" .pps)" 500000 "flood frames per second (sluice-flood --xdp)"

# --- The same flood with the budget off: reported only ----------------------
sluice_rx limit new-sources off
run_flood budget-off
OFF_SUMMARY=$(summary_line "budget off")
assert_ge "$(flood_field "$RUN_FLOOD" .sent)" 1 "budget off: the flood sent frames"
assert_ge "${#RUN_SAMPLES[@]}" 3 "budget off: samples of the clients' counts"

cat <<EOF

=== e2e/spoofed_flood summary: $CLIENTS clients x $CLIENT_PPS pkt/s, --max-sources $MAX_SOURCES, default $RATE/s burst $BURST, budget $NEW_RATE/s burst $NEW_BURST ===
$(printf '%-11s %9s %10s %9s %9s %10s %12s %9s %10s %9s %9s %7s' run flood_pps flood_sent distinct flood_t veth_drop flood_passed admitted loss_worst loss_all reset_cl resets)
$ON_SUMMARY
$OFF_SUMMARY
(veth_drop: frames the veth dropped before XDP, its ring full (flood's and clients');
 flood_passed: the flood's frames behind sluice (nftables); admitted: new table entries
 taken during the run; loss: clients' frames sent but not behind sluice; reset_cl: clients
 whose query passed count went down at least once, i.e. whose bucket was evicted and taken anew)
EOF
