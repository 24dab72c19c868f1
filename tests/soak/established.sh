#!/usr/bin/env bash
# soak/established: SOAK_SECONDS (default 60; `make soak` runs 600) of a
# spoofed flood at the sender's full rate beside 50 established clients,
# some steady, some idle for long stretches: no client frame within its
# limit may be refused.
#
# The table is the smallest (attach --max-sources 1024), no new-source
# budget, `limit default --rate 1/m --burst 1`: a flood source that passes
# one frame stays in debt for a minute, so the flood keeps the table full.
# The clients (198.19.255.1-50, each its own source) are under `limit set
# 198.19.255.0/24 --rate 100 --burst 100` (ten seconds of a client's
# 10 frames/s: a client's sender that falls behind its schedule and
# catches up at once, as on a busy machine, stays within it); the flood's sources are all of
# 198.18.0.0/16 (sluice-flood --xdp --random, each address once per 65 536
# frames), none of them a client's.
#
#   establish  every client sends 6 frames over 2.5 s, all of which pass,
#              before the flood starts
#   steady     198.19.255.1-25: 10 frames/s each, all along (idle between
#              two frames: its bucket is full again 10 ms after each)
#   idle       198.19.255.26-37: 3 frames each over a second, then idle
#              for IDLE seconds, again and again; 198.19.255.38-50 the
#              same with IDLE/4. IDLE is SOAK_IDLE_SECONDS (default 120:
#              `make soak` idles them two minutes), at most a third of the
#              run; it must stay below the time an established source may
#              idle before a new source may take its slot (10 minutes by
#              default).
#   flood      sluice-flood --xdp --random 198.18.0.0/16 at full speed.
# Every flood runs at most FLOOD_CHUNK seconds (its count and time bounds,
# and `timeout -s KILL`), in a loop until the run ends.
#
# Checks, once the floods have stopped: every client's slot lived through
# the whole run (its passed count in sluice, query -j, equals its nftables
# counter behind sluice, over all its frames) and sluice dropped none of
# its frames (query -j dropped 0): no client frame within its limit was
# refused. Every client sent frames in the run, and at most 1% of the
# clients' frames went missing before XDP (a raw socket's frame is sent
# again after ENOBUFS: none are expected). The flood filled the table
# (every slot held at a sample) and sent each of its sources 10 times at
# least; the maps' memory is the same at the end as at the start.
#
# What the client checks need (source table v4): an established source is
# never evicted or refused because fresh sources press for room. Source
# table v3 reclaims the slot of any client whose bucket is full (idle, or
# steady below its rate) for a fresh source, then refuses the client
# (no_bucket) while every other slot holds a source in debt.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"
# shellcheck source=tests/soak/lib.sh
. "$(dirname "$0")/lib.sh"

SOAK_SECONDS=${SOAK_SECONDS:-60}
SOAK_IDLE_SECONDS=${SOAK_IDLE_SECONDS:-120}
[[ $SOAK_SECONDS =~ ^[0-9]+$ && $SOAK_SECONDS -ge 20 ]] ||
	fail "SOAK_SECONDS must be a whole number of seconds, at least 20"
[[ $SOAK_IDLE_SECONDS =~ ^[0-9]+$ && $SOAK_IDLE_SECONDS -ge 4 ]] ||
	fail "SOAK_IDLE_SECONDS must be a whole number of seconds, at least 4"
IDLE=$SOAK_IDLE_SECONDS
((IDLE <= SOAK_SECONDS / 3)) || IDLE=$((SOAK_SECONDS / 3))
IDLE_SHORT=$((IDLE / 4))

MAX_SOURCES=1024
CLIENTS=50
CLIENT_NET=198.19.255.0/24
CLIENT_RATE=100
CLIENT_BURST=100
CLIENT_PORT=6101
FLOOD_NET=198.18.0.0/16
FLOOD_PORT=6102
FLOOD_CHUNK=30		# seconds per flood run
FLOOD_SOURCES=65536	# of FLOOD_NET
LOSS_MAX_PCT=1
SAMPLE_EVERY=5
# The client groups: first address (last octet), how many, frames a second
# each, frames each per run, pause between two runs.
CL_GROUPS=(steady idle idle_short)
G_FIRST=(1 26 38)
G_N=(25 12 13)
G_PPS=(10 3 3)
G_COUNT=(0 3 3)		# 0: as many as the run's seconds allow
G_PAUSE=(0 "$IDLE" "$IDLE_SHORT")

netns_init sest
netns_setup
need_xdp_live
quiet_tx
sluice_attach --max-sources "$MAX_SOURCES"
sluice_rx limit default --rate 1/m --burst 1
sluice_rx limit set "$CLIENT_NET" --rate "$CLIENT_RATE" --burst "$CLIENT_BURST"
PIN_DIR=$SLUICE_PIN_ROOT/$IF_RX
nft_rx_init
for ((c = 1; c <= CLIENTS; c++)); do
	echo "add counter netdev $NFT_TABLE c$c"
	echo "add rule netdev $NFT_TABLE ingress ip saddr 198.19.255.$c udp dport $CLIENT_PORT counter name c$c drop"
done | ip netns exec "$NS_RX" nft -f - || fail "cannot add the clients' nftables counters"
nft_rx_counter flood udp dport "$FLOOD_PORT"

status_field() { sluice_jq ".interfaces[] | select(.interface == \"$IF_RX\") | $1" status; }

# Every client's nftables counter, in client order, one line.
nft_clients() {
	ip netns exec "$NS_RX" nft -j list counters table netdev "$NFT_TABLE" |
		jq -er --argjson n "$CLIENTS" '
			[.nftables[] | select(.counter) | {key: .counter.name, value: .counter.packets}]
			| from_entries as $c | [range(1; $n + 1) | $c["c\(.)"]] | map(tostring) | join(" ")' ||
		fail "cannot read the clients' nftables counters"
}

# The frames client i (0-based in its group of n) was sent by runs whose
# JSON lines are in FILE: sluice-flood gives its sources one frame each in
# turn, from the first.
group_sent() { # FILE N I
	jq -s --argjson n "$2" --argjson i "$3" \
		'map(if .sent > $i then ((.sent - $i - 1) / $n | floor) + 1 else 0 end) | add // 0' "$1"
}

TMP=$NETNS_TMP
MEM0=$(mem_snapshot)
SLOTS=$(status_field .slots)

# --- The clients establish themselves --------------------------------------
est=$(flood --src 198.19.255.1 --sources "$CLIENTS" --dport "$CLIENT_PORT" \
	--pps $((CLIENTS * 2)) --count $((CLIENTS * 6)) --seconds 30) || fail "sluice-flood (clients) failed"
echo "clients (establishing): $est"
sleep 0.2
read -r -a n0 <<<"$(nft_clients)"
for ((c = 0; c < CLIENTS; c++)); do
	[[ ${n0[c]} == 6 ]] || fail "client 198.19.255.$((c + 1)) passed ${n0[c]} of its 6 frames within its limit"
done
ok "every client passed its 6 frames (within $CLIENT_RATE/s burst $CLIENT_BURST)"

# --- The run -----------------------------------------------------------------
START=$(now_s)
END=$(calc "$START + $SOAK_SECONDS")
LOOP_PIDS=()
: >"$TMP/flood"
flood_loop "$TMP/flood" 0 --xdp --random "$FLOOD_NET" --dport "$FLOOD_PORT" --count 100000000
for g in "${!CL_GROUPS[@]}"; do
	: >"$TMP/${CL_GROUPS[g]}"
	count=${G_COUNT[g]}
	((count > 0)) || count=$((G_PPS[g] * FLOOD_CHUNK))
	flood_loop "$TMP/${CL_GROUPS[g]}" "${G_PAUSE[g]}" --src "198.19.255.${G_FIRST[g]}" \
		--sources "${G_N[g]}" --dport "$CLIENT_PORT" --pps $((G_N[g] * G_PPS[g])) \
		--count $((G_N[g] * count))
done
samples=0
full=0
max_live=0
while :; do
	left=$(calc "$END - $(now_s)" %.2f)
	awk -v l="$left" 'BEGIN { exit !(l > 0) }' || break
	sleep "$(awk -v l="$left" -v s="$SAMPLE_EVERY" 'BEGIN { printf "%.2f", (l < s) ? l : s }')"
	live=$(status_field .slots_live)
	samples=$((samples + 1))
	((live > max_live)) && max_live=$live
	((live >= SLOTS)) && full=$((full + 1))
	for pid in "${LOOP_PIDS[@]}"; do
		kill -0 "$pid" 2>/dev/null || wait "$pid" || fail "a flood loop failed"
	done
done
for pid in "${LOOP_PIDS[@]}"; do
	wait "$pid" || fail "a flood loop failed"
done
NETNS_PIDS=()
sleep 0.3	# the last frames through the rx ring
RUN_S=$(calc "$(now_s) - $START" %.1f)

# --- Checks --------------------------------------------------------------------
read -r -a n1 <<<"$(nft_clients)"
sent_total=0
recv_total=0
slot_lost=()
refused=0
idle_sent=()
for g in "${!CL_GROUPS[@]}"; do
	for ((i = 0; i < G_N[g]; i++)); do
		c=$((G_FIRST[g] + i))
		addr=198.19.255.$c
		s=$(group_sent "$TMP/${CL_GROUPS[g]}" "${G_N[g]}" "$i")
		((s > 0)) || fail "client $addr sent nothing in the run"
		r=$((n1[c - 1] - n0[c - 1]))
		sent_total=$((sent_total + s))
		recv_total=$((recv_total + r))
		q=$(sluice_rx -j query "$addr") || fail "sluice query $addr failed"
		read -r tracked passed dropped <<<"$(jq -r '"\(.tracked) \(.passed // 0) \(.dropped // 0)"' <<<"$q")"
		if [[ $tracked != true || $passed != "${n1[c - 1]}" ]]; then
			slot_lost+=("$addr:$passed/${n1[c - 1]}")
		fi
		refused=$((refused + dropped))
	done
	idle_sent+=("${CL_GROUPS[g]} $(jq -s 'map(.sent) | add // 0' "$TMP/${CL_GROUPS[g]}")")
done
STATUS=$(sluice_rx -j status | jq -c ".interfaces[] | select(.interface == \"$IF_RX\")")
FLOOD_SENT=$(jq -s 'map(.sent) | add // 0' "$TMP/flood")
FLOOD_PPS=$(calc "$FLOOD_SENT / $RUN_S" %.0f)
echo "status at the end: $STATUS"
echo "clients whose slot did not live through the run (query passed/nftables): ${#slot_lost[@]}: ${slot_lost[*]}"
assert_eq "${#slot_lost[@]}" 0 "clients whose passed count in sluice is not their nftables counter (their slot was taken)"
assert_eq "$refused" 0 "client frames sluice dropped (query -j), all within their limit"
lost_pct=$(calc "100 * ($sent_total - $recv_total) / $sent_total" %.3f)
assert_le "$lost_pct" "$LOSS_MAX_PCT" "clients' frames sent but not behind sluice (%; $recv_total of $sent_total)"
assert_ge "$full" 1 "samples at which every slot was held (the flood filled the table; most held $max_live of $SLOTS)"
assert_ge "$FLOOD_SENT" $((FLOOD_SOURCES * 10)) "flood frames (each of its $FLOOD_SOURCES sources back 10 times at least; $FLOOD_PPS/s)"
MEM1=$(mem_snapshot)
if [[ $MEM0 != "$MEM1" ]]; then
	diff <(echo "$MEM0") <(echo "$MEM1") || true
	fail "maps, memlock, program or pins changed during the soak"
fi
ok "every map's id and memlock, the program's maps, the pins and the XDP program are unchanged"

cat <<EOF

=== soak/established summary ===
duration     $RUN_S s (SOAK_SECONDS=$SOAK_SECONDS), --max-sources $MAX_SOURCES ($SLOTS slots), default 1/m burst 1, no budget
flood        $FLOOD_SENT frames from $FLOOD_NET ($FLOOD_PPS pkt/s); every slot held at $full of $samples samples
clients      $CLIENTS under $CLIENT_RATE/s burst $CLIENT_BURST: 25 steady at 10/s, 12 idle ${IDLE} s and 13 idle ${IDLE_SHORT} s between 3-frame wakes
             frames sent: ${idle_sent[*]}; $recv_total of $sent_total behind sluice; $refused dropped by sluice; ${#slot_lost[@]} lost their slot
table        $(jq -r '"\(.slots_live) held, \(.refused_sources) new sources refused, \(.new_sources.admitted) admitted"' <<<"$STATUS")
memlock      $(memlock_total "$MEM1") B
EOF
