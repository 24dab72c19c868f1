#!/usr/bin/env bash
# soak/flood_10x: a random-source flood at over 10 times the source table's
# capacity. --max-sources 8192, no new-source budget (the worst case for
# the table: every flood frame of a source without a slot wants one); the
# flood comes from 130 816 distinct addresses of 198.18.0.0/15 (all but the
# clients' /24, 16 times the table) at sluice-flood --xdp's full speed for
# FLOOD_SECONDS, each source limited to 1/s burst 1, so every slot it takes
# stays in debt for a second, and on probation: it never comes back to it
# an emission interval later. Twenty established clients (198.19.255.1-20,
# 20 packets/s each) send over their own limit (10/s, burst 5) from a
# second before the flood to a second after it.
#
# Checks: the maps' memory is bounded (every map's id and memlock, the
# program's maps and the pins equal before and after, and the slots held
# never above the table's slots at the samples); the flood makes room
# from its own sources on probation (slots reclaimed, counted), never from
# an established one, and no new source is refused; no client is
# displaced: each keeps its slot, so its passed count in sluice equals its
# nftables counter behind sluice, and it passes what its limit allows
# (burst + rate x t + 1 at most, and all but one second's worth at least);
# every frame is counted once (sent = sum of the stats -j reasons +
# dropped before XDP, less the kernel's own frames).
#
# Showing it can fail: FLOOD10X_BREAK=evict runs sluice built with an
# eviction that takes established sources as probation ones (make
# build/tests/sluice-evict), so the flood takes the clients' slots, the
# clients in the least debt first; FLOOD10X_BREAK=small floods from a /17 (32 512
# sources, 4 times the table); FLOOD10X_BREAK=memory pins an extra map in
# the pin directory during the flood. Each must fail.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"
# shellcheck source=tests/soak/lib.sh
. "$(dirname "$0")/lib.sh"

BREAK=${FLOOD10X_BREAK:-}
case $BREAK in
'' | evict | small | memory) ;;
*) fail "FLOOD10X_BREAK must be evict, small or memory" ;;
esac
if [[ $BREAK == evict ]]; then
	SLUICE=$SLUICE_ROOT/build/tests/sluice-evict
	[[ -x $SLUICE ]] || fail "$SLUICE not built: run make build/tests/sluice-evict"
fi

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
CLIENT_SECONDS=$((FLOOD_SECONDS + 2 * LEAD + 2))
CLIENT_COUNT=$((CLIENTS * CLIENT_PPS * CLIENT_SECONDS))

netns_init fx
netns_setup
need_xdp_live
quiet_tx
sluice_attach --max-sources "$MAX_SOURCES"
CLIENT_RATE=10
CLIENT_BURST=5
sluice_rx limit default --rate 1 --burst 1
sluice_rx limit set "$CLIENT_NET" --rate "$CLIENT_RATE" --burst "$CLIENT_BURST"
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
RECL0=$(status_field .reclaimed_sources)
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
	tr=$(status_field .slots_live)
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
SLOTS=$(status_field .slots)
assert_le "$max_tracked" "$SLOTS" "slots held at the samples (most)"
refused=$(status_field .refused_sources)
reclaimed=$(($(status_field .reclaimed_sources) - RECL0))
est_reclaimed=$(status_field .reclaimed_established)
assert_ge "$reclaimed" "$MAX_SOURCES" "slots reclaimed from the flood's own sources on probation (the churn, counted)"
assert_eq "$est_reclaimed" 0 "slots of established sources reclaimed"
assert_eq "$refused" 0 "new sources refused (room is made from probation)"

# Clients: sluice-flood gives its sources one frame each in turn, paced;
# each sent for csent / (CLIENTS x CLIENT_PPS) seconds.
dur=$(calc "$csent / ($CLIENTS * $CLIENT_PPS)")
most=$(calc "$CLIENT_BURST + $CLIENT_RATE * $dur + 1" %d)
least=$(calc "$CLIENT_RATE * ($dur - 1)" %d)
reset=0
for ((c = 1; c <= CLIENTS; c++)); do
	got=$(nft_rx_packets "c$c")
	q=$(sluice_rx -j query "198.19.255.$c" | jq -r '.passed // 0')
	((q == got)) || reset=$((reset + 1))
	((got <= most && got >= least)) ||
		fail "client 198.19.255.$c: $got passed, its limit allows $least to $most in $dur s"
done
assert_eq "$reset" 0 "clients whose passed count in sluice is not nftables' (their slot was taken)"
ok "every client passed what its limit allows ($least to $most) and kept its slot"

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
table               --max-sources $MAX_SOURCES ($SLOTS slots), no new-source budget, default 1/s burst 1
flood               $fsent frames in $(flood_field "$FLOOD" .seconds) s ($(flood_field "$FLOOD" .pps) pkt/s), $distinct distinct sources ($(calc "$distinct / $MAX_SOURCES" %.1f) x the table)
new table entries   $admitted during the run; $reclaimed slots reclaimed from probation, $est_reclaimed from established sources; $refused new sources refused
slots held          at most $max_tracked of $SLOTS at $samples samples
clients             $CLIENTS x $CLIENT_PPS pkt/s over $CLIENT_RATE/s burst $CLIENT_BURST, $csent frames, $reset of $CLIENTS displaced
frames              sent $((fsent + csent)), seen by XDP $seen, dropped before XDP $lost
memlock             $(memlock_total "$MEM0") B before, $(memlock_total "$MEM1") B after
duration            $(calc "$t1 - $t0" %.1f) s
EOF
