# shellcheck shell=bash
# Helpers of the soak tests (tests/soak/), on top of tests/lib/netns.sh:
#   mem_snapshot        # the maps and program of $PIN_DIR, one fact a line
#   memlock_total SNAP  # the maps' memlock bytes summed
#   now_s               # seconds since the epoch, microseconds
#   quiet_tx            # the tx end sends nothing of its own (no IPv6, no ARP)
#   flood_loop OUT PAUSE ARGS...  # bounded floods in a loop until END

now_s() { echo "${EPOCHREALTIME/,/.}"; }

# The maps and the program, for the memory check: one line per pinned map
# "name id memlock", then the program's id and map ids, the pins' names and
# the XDP program on the interface.
mem_snapshot() {
	local f
	for f in "$PIN_DIR"/*; do
		# the program, and the writers' lock (a directory, not a map)
		[[ $(basename "$f") == prog || -d $f ]] && continue
		bpftool -j map show pinned "$f" | jq -r --arg n "$(basename "$f")" '"map \($n) id \(.id) memlock \(.bytes_memlock) max_entries \(.max_entries)"' ||
			fail "bpftool cannot read pinned map $f"
	done
	bpftool -j prog show pinned "$PIN_DIR/prog" | jq -r '"prog id \(.id) memlock \(.bytes_memlock) maps \(.map_ids | sort | map(tostring) | join(","))"' ||
		fail "bpftool cannot read the pinned program"
	echo "pins $(cd "$PIN_DIR" && echo *)"
	echo "xdp $(ip -n "$NS_RX" -j link show dev "$IF_RX" | jq -r '.[0].xdp.prog.id // "none"')"
}
memlock_total() { awk '$1 == "map" { s += $6 } END { print s }' <<<"$1"; }

# The floods send raw frames, so the tx end needs neither IPv6 nor ARP;
# without them its kernel sends nothing (no MLD reports, no ARP replies),
# and every frame XDP sees, or the veth drops before it, is a flood's.
quiet_tx() {
	ip netns exec "$NS_TX" sysctl -qw "net.ipv6.conf.$IF_TX.disable_ipv6=1" ||
		fail "cannot disable IPv6 on $IF_TX"
	ip -n "$NS_TX" link set dev "$IF_TX" arp off || fail "cannot turn ARP off on $IF_TX"
}

# A loop of bounded floods until END (seconds since the epoch), each at
# most FLOOD_CHUNK seconds (sluice-flood's own bound, and `timeout -s KILL`
# 10 s past it), each flood's JSON line appended to OUT, PAUSE seconds
# between two; the loop's PID is tracked for the cleanup and appended to
# LOOP_PIDS. The loop stops its current flood when it is told to stop.
flood_loop() { # OUT PAUSE ARGS...
	local out=$1 pause=$2
	shift 2
	(
		child=
		trap '[[ -n $child ]] && kill -TERM "$child" 2>/dev/null; exit 0' TERM
		while :; do
			left=$(calc "$END - $(now_s)" %.2f)
			awk -v l="$left" 'BEGIN { exit !(l >= 0.2) }' || break
			secs=$(awk -v l="$left" -v c="$FLOOD_CHUNK" 'BEGIN { printf "%.2f", (l < c) ? l : c }')
			timeout -s KILL "$(calc "$secs + 10" %.2f)" \
				ip netns exec "$NS_TX" "$SLUICE_FLOOD" --iface "$IF_TX" --dst-mac "$RX_MAC" \
				--seconds "$secs" "$@" >>"$out" &
			child=$!
			wait "$child" || { echo "flood $* failed" >&2; exit 1; }
			child=
			[[ $pause == 0 ]] || sleep "$pause"
		done
	) &
	netns_track_pid $!
	LOOP_PIDS+=($!)
}
