#!/usr/bin/env bash
# tools/demo.sh: sluice at work in a few seconds (what `sudo make demo` runs
# after building). Two network namespaces joined by a veth pair, sluice on
# the receiving end, one source flooding and one behaving; stats before and
# after. Everything it creates lives in its own namespaces and goes away on
# exit; it never touches an interface of this machine.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if ((EUID != 0)); then
	echo "demo: needs root for network namespaces and XDP: run 'sudo make demo'" >&2
	exit 1
fi
[[ -x build/sluice-flood ]] || make -s build/sluice-flood
[[ -x build/sluice ]] || make -s

RATE=100
BURST=50
FLOOD_SRC=198.18.0.66
FLOOD_PPS=20000
CLIENT_SRC=198.18.0.20
CLIENT_PPS=20
DURATION=3
DPORT=9
EXPORTER=127.0.0.1:9464

NETNS_PREFIX=sldemo	# read by netns.sh
export NETNS_PREFIX
# shellcheck source=tests/lib/netns.sh
. tests/lib/netns.sh
# Not a test: say what is missing instead of exiting 77.
skip() {
	echo "demo: $*" >&2
	exit 1
}

if [[ -t 1 ]]; then
	B=$'\e[1m' D=$'\e[2m' N=$'\e[0m'
else
	B='' D='' N=''
fi
step() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
# Show a sluice command as an operator would type it, then run it.
run() {
	printf '%s$ sluice %s%s\n' "$D" "$*" "$N"
	sluice_rx "$@" | sed 's/^/  /'
}

netns_init d
netns_setup

step "1. Two network namespaces joined by a veth pair"
echo "  $NS_TX: $IF_TX $TX4  --veth-->  $NS_RX: $IF_RX $RX4"
echo "  sluice runs on $IF_RX, the receiving end; traffic comes from $NS_TX."

step "2. Attach sluice natively (XDP in the veth driver) and set a default limit"
run attach --mode native "$IF_RX"
run limit default --rate "$RATE" --burst "$BURST"
echo "  Every source address now gets its own bucket: $BURST packets at once, then $RATE/s."

have_exporter=0
if "$SLUICE" exporter --help >/dev/null 2>&1; then
	have_exporter=1
	# Inside the rx namespace, on its own loopback; nsenter keeps the
	# host's /sys/fs/bpf, where the pinned maps live.
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" exporter --listen "$EXPORTER" \
		>"$(netns_tmp exporter.log)" 2>&1 &
	netns_track_pid $!
fi

step "3. Before any traffic"
run stats
run top -n 5

step "4. Traffic for ${DURATION} s, both at once"
echo "  flood:       $FLOOD_SRC sends $FLOOD_PPS packets/s (UDP, 60-byte frames)"
echo "  good client: $CLIENT_SRC sends $CLIENT_PPS packets/s"
flood_bg "$(netns_tmp flood.json)" --src "$FLOOD_SRC" --dport "$DPORT" \
	--count $((FLOOD_PPS * DURATION)) --pps "$FLOOD_PPS" --seconds $((DURATION + 1))
flood_pid=$FLOOD_PID	# set by flood_bg
flood_bg "$(netns_tmp client.json)" --src "$CLIENT_SRC" --dport "$DPORT" \
	--count $((CLIENT_PPS * DURATION)) --pps "$CLIENT_PPS" --seconds $((DURATION + 1))
client_pid=$FLOOD_PID
sleep 1.5
echo "  ...halfway:"
run top -n 5
wait "$flood_pid" || fail "the flood failed"
wait "$client_pid" || fail "the client failed"
flood_out=$(cat "$(netns_tmp flood.json)")
client_out=$(cat "$(netns_tmp client.json)")
echo "  flood sent:  $flood_out"
echo "  client sent: $client_out"

step "5. After"
run stats
run top -n 5
run query "$FLOOD_SRC"
run query "$CLIENT_SRC"

flood_sent=$(jq -r .sent <<<"$flood_out")
flood_secs=$(jq -r .seconds <<<"$flood_out")
client_sent=$(jq -r .sent <<<"$client_out")
flood_passed=$(sluice_passed "$FLOOD_SRC")
flood_dropped=$(sluice_dropped "$FLOOD_SRC")
client_passed=$(sluice_passed "$CLIENT_SRC")
client_dropped=$(sluice_dropped "$CLIENT_SRC")
limited=$(sluice_stat drop rate_limited)
expected=$(calc "$BURST + $RATE * $flood_secs" %.0f)
client_got=$client_passed
((client_passed != client_sent)) || client_got="all $client_passed"

step "What the numbers show"
fmt -w 76 <<EOF | sed 's/^/  /'
The flood sent $flood_sent packets in $(calc "$flood_secs" %.2f) s. sluice let $flood_passed of them through: its burst of $BURST at once, then $RATE per second, $BURST + $RATE x $(calc "$flood_secs" %.2f) s = $expected. The other $flood_dropped were dropped by the XDP program as rate_limited (stats: $limited), before the receiving host's IP stack, firewall or sockets saw them; on a real NIC in native mode that is before the kernel even allocates an skb. The well-behaved client sent $client_sent packets at $CLIENT_PPS/s, below its limit, and $client_got got through ($client_dropped dropped): it has a bucket of its own, so the flood next to it cost it nothing.
EOF

if ((have_exporter)); then
	step "6. The same numbers for Prometheus (sluice exporter on $EXPORTER in $NS_RX)"
	for ((i = 0; i < 30; i++)); do
		ip netns exec "$NS_RX" curl -sf "http://$EXPORTER/metrics" >/dev/null 2>&1 && break
		sleep 0.1
	done
	printf "%s\$ curl -s %s/metrics | grep '^sluice_'%s\n" "$D" "$EXPORTER" "$N"
	if metrics=$(ip netns exec "$NS_RX" curl -sf "http://$EXPORTER/metrics" | grep '^sluice_'); then
		# One exporter covers every attached interface; show only the demo's.
		grep -v 'interface="' <<<"$metrics" | sed 's/^/  /' || true
		grep "interface=\"$IF_RX\"" <<<"$metrics" | sed 's/^/  /' || true
		others=$(grep 'interface="' <<<"$metrics" | grep -vc "interface=\"$IF_RX\"" || true)
		((others == 0)) || echo "  ($others lines about other interfaces sluice is attached to left out)"
	else
		echo "  (the exporter did not answer: $(tail -n 1 "$(netns_tmp exporter.log)"))"
	fi
fi

echo
if ((flood_dropped > 0 && client_passed == client_sent && client_dropped == 0)); then
	echo "${B}OK${N}: the flood was cut to its limit and the well-behaved client got through."
	echo "Cleaning up (namespaces, pins, processes)."
else
	echo "${B}UNEXPECTED${N}: the flood was not limited, or the client lost packets (see above)." >&2
	exit 1
fi
