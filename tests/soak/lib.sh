# shellcheck shell=bash
# Helpers of the soak tests (tests/soak/), on top of tests/lib/netns.sh:
#   mem_snapshot        # the maps and program of $PIN_DIR, one fact a line
#   memlock_total SNAP  # the maps' memlock bytes summed
#   now_s               # seconds since the epoch, microseconds
#   quiet_tx            # the tx end sends nothing of its own (no IPv6, no ARP)

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
