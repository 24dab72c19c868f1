#!/usr/bin/env bash
# soak/flood_10x: a random-source flood at over 10 times the source table's
# capacity. --max-sources 8192, no new-source budget (the worst case for
# the table: every flood frame of a source without an entry takes one and,
# the table full, evicts another); the flood comes from 130 816 distinct
# addresses of 198.18.0.0/15 (all but the clients' /24, 16 times the
# table) at sluice-flood --xdp's full speed for FLOOD_SECONDS. Twenty
# established clients (198.19.255.1-20, 20 packets/s each, under the
# default 100/s burst 200) send from a second before the flood to a second
# after it.
#
# Checks: the maps' memory is bounded (every map's id and memlock, the
# program's maps and the pins equal before and after, and tracked_sources
# never above the capacity at the samples); each client loses at most 1 %
# of its frames (nftables behind sluice, against what it sent); every frame
# is counted once (sent = sum of the stats -j reasons + dropped before XDP,
# less the kernel's own frames).
#
# Showing it can fail: FLOOD10X_BREAK=clients gives the clients a limit
# (5/s, burst 5) below their rate; FLOOD10X_BREAK=small floods from a /17
# (32 512 sources, 4 times the table); FLOOD10X_BREAK=memory pins an
# extra map in the pin directory during the flood. Each must fail.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"
# shellcheck source=tests/soak/lib.sh
. "$(dirname "$0")/lib.sh"

BREAK=${FLOOD10X_BREAK:-}
case $BREAK in
'' | clients | small | memory) ;;
*) fail "FLOOD10X_BREAK must be clients, small or memory" ;;
esac

MAX_SOURCES=8192
CLIENTS=20
CLIENT_PPS=20
CLIENT_NET=198.19.255.0/24
CLIENT_PORT=5201
FLOOD_NET=198.18.0.0/15
[[ $BREAK == small ]] && FLOOD_NET=198.19.128.0/17
FLOOD_PORT=5202
FLOOD_SECONDS=6
LEAD=1
LOSS_MAX_PCT=1
CLIENT_SECONDS=$((FLOOD_SECONDS + 2 * LEAD + 2))
CLIENT_COUNT=$((CLIENTS * CLIENT_PPS * CLIENT_SECONDS))

netns_init fx
netns_setup
quiet_tx
sluice_attach --max-sources "$MAX_SOURCES"
sluice_rx limit default --rate 100 --burst 200
[[ $BREAK == clients ]] && sluice_rx limit set "$CLIENT_NET" --rate 5 --burst 5
PIN_DIR=$SLUICE_PIN_ROOT/$IF_RX
nft_rx_init
for ((c = 1; c <= CLIENTS; c++)); do
	echo "add counter netdev $NFT_TABLE c$c"
	echo "add rule netdev $NFT_TABLE ingress ip saddr 198.19.255.$c udp dport $CLIENT_PORT counter name c$c drop"
done | ip netns exec "$NS_RX" nft -f - || fail "cannot add the clients' nftables counters"
nft_rx_counter flood udp dport "$FLOOD_PORT"
ip netns exec "$NS_RX" nft add counter netdev "$NFT_TABLE" other ||
	fail "cannot add the catch-all nftables counter"
ip netns exec "$NS_RX" nft add rule netdev "$NFT_TABLE" ingress counter name other ||
	fail "cannot add the catch-all nftables rule"

veth_lost() {
	ip -n "$NS_RX" -j -s link show dev "$IF_RX" | jq -er '.[0].stats64.rx.dropped'
}
stats_sum() { sluice_jq '[.packets[] | .[]] | add' stats; }
status_field() { sluice_jq ".interfaces[] | select(.interface == \"$IF_RX\") | $1" status; }

MEM0=$(mem_snapshot)
SUM0=$(stats_sum)
LOST0=$(veth_lost)
ADM0=$(status_field .new_sources.admitted)
cl_out=$(netns_tmp clients)
fl_out=$(netns_tmp flood)

t0=$(now_s)
flood_bg "$cl_out" --src 198.19.255.1 --sources "$CLIENTS" --dport "$CLIENT_PORT" \
	--pps $((CLIENTS * CLIENT_PPS)) --count "$CLIENT_COUNT" --seconds $((CLIENT_SECONDS + 5))
CLIENTS_PID=$FLOOD_PID
sleep "$LEAD"
flood_bg "$fl_out" --xdp --random "$FLOOD_NET" --skip "$CLIENT_NET" --dport "$FLOOD_PORT" \
	--count 100000000 --seconds "$FLOOD_SECONDS"
max_tracked=0
samples=0
broke=0
while kill -0 "$FLOOD_PID" 2>/dev/null; do
	sleep 0.5
	tr=$(status_field .tracked_sources)
	((tr > max_tracked)) && max_tracked=$tr
	samples=$((samples + 1))
	if [[ $BREAK == memory && $broke == 0 ]]; then
		bpftool map create "$PIN_DIR/leak" type array key 4 value 8 entries 1024 name leak ||
			fail "FLOOD10X_BREAK=memory: cannot pin the extra map"
		broke=1
	fi
done
flood_wait || fail "sluice-flood (flood) failed: $(cat "$fl_out")"
FLOOD=$(cat "$fl_out")
echo "flood: $FLOOD"
FLOOD_PID=$CLIENTS_PID
flood_wait || fail "sluice-flood (clients) failed: $(cat "$cl_out")"
CL=$(cat "$cl_out")
echo "clients: $CL"
sleep 0.3
t1=$(now_s)

MEM1=$(mem_snapshot)
distinct=$(flood_field "$FLOOD" .distinct_sources)
fsent=$(flood_field "$FLOOD" .sent)
csent=$(flood_field "$CL" .sent)
assert_eq "$csent" "$CLIENT_COUNT" "clients sent all their frames"
assert_ge "$distinct" $((10 * MAX_SOURCES)) "distinct flood sources (10 x the table's $MAX_SOURCES)"
assert_ge "$samples" 3 "samples of tracked_sources during the flood"
assert_le "$max_tracked" "$MAX_SOURCES" "tracked sources at the samples (most)"

# Clients: sluice-flood gives its sources one frame each in turn.
worst=0
for ((c = 1; c <= CLIENTS; c++)); do
	sent=$(((csent - c) / CLIENTS + 1))
	got=$(nft_rx_packets "c$c")
	lost=$(calc "100 * ($sent - $got) / $sent" %.3f)
	worst=$(awk -v a="$lost" -v b="$worst" 'BEGIN { print (a > b) ? a : b }')
	awk -v l="$lost" -v m="$LOSS_MAX_PCT" 'BEGIN { exit !(l <= m) }' ||
		fail "client 198.19.255.$c: sent $sent, $got behind sluice: $lost% lost (at most $LOSS_MAX_PCT%)"
done
ok "every client lost at most $LOSS_MAX_PCT% (worst $worst%)"
# Reported only: clients whose bucket was evicted at least once (their
# passed count in sluice, restarted with the new entry, below nftables').
evicted=0
for ((c = 1; c <= CLIENTS; c++)); do
	q=$(sluice_rx -j query "198.19.255.$c" | jq -r '.passed // 0')
	((q < $(nft_rx_packets "c$c"))) && evicted=$((evicted + 1))
done

# Conservation.
other=$(nft_rx_packets other)
seen=$(($(stats_sum) - SUM0))
lost=$(($(veth_lost) - LOST0))
assert_eq "$((fsent + csent + other))" "$((seen + lost))" \
	"frames sent + the kernel's own ($other) = sum of stats -j reasons + dropped before XDP ($lost)"

# Memory.
if [[ $MEM0 != "$MEM1" ]]; then
	diff <(echo "$MEM0") <(echo "$MEM1") || true
	fail "maps, memlock, program or pins changed during the flood"
fi
ok "every map's id and memlock ($(memlock_total "$MEM1") bytes in all), the program's maps and the pins are unchanged"
admitted=$(($(status_field .new_sources.admitted) - ADM0))

cat <<EOF

=== soak/flood_10x summary ===
table               --max-sources $MAX_SOURCES, no new-source budget, default 100/s burst 200
flood               $fsent frames in $(flood_field "$FLOOD" .seconds) s ($(flood_field "$FLOOD" .pps) pkt/s), $distinct distinct sources ($(calc "$distinct / $MAX_SOURCES" %.1f) x the table)
new table entries   $admitted during the run (each one past the first $MAX_SOURCES evicts one)
tracked sources     at most $max_tracked of $MAX_SOURCES at $samples samples
clients             $CLIENTS x $CLIENT_PPS pkt/s, $csent frames, worst loss $worst%, $evicted of $CLIENTS evicted at least once (a new, full bucket)
frames              sent $((fsent + csent)), seen by XDP $seen, dropped before XDP $lost
memlock             $(memlock_total "$MEM0") B before, $(memlock_total "$MEM1") B after
duration            $(calc "$t1 - $t0" %.1f) s
EOF
