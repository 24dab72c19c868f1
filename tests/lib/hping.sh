# shellcheck shell=bash
# hping3 as a spoofed-source flood for the end-to-end tests, on top of
# netns.sh (source that first, and call netns_setup before these):
#
#   hping_sender PORT FIRST SPAN  # the tx namespace's rewrite and guard
#   hping_flood_bg SECONDS FILE ARGS...  # hping3 in the background, killed
#                                 # after SECONDS; PID in HPING_PID
#   hping_wait                    # wait for it; fails unless the timeout ended it
#   hping_counter TABLE_FAMILY TABLE NAME  # a counter of the sender's tables
#   hping_check_guard             # the guard dropped nothing, every flood
#                                 # frame was rewritten (prints the counts)
#
# Network safety: hping3 --rand-source draws sources from all of IPv4, so
# hping3 runs only inside the sender namespace the test makes, whose one
# interface is a veth whose peer lies in the receiver namespace. There an
# nftables postrouting rule rewrites the source of every frame to the
# flood's PORT into FIRST .. FIRST+SPAN-1 (numgen random, before the frame
# reaches the device; hping_sender refuses a range outside 198.18.0.0/15),
# and a netdev egress chain on the veth, the last hook before it, drops and
# counts any IPv4 frame with a source or destination outside 198.18.0.0/15,
# any ARP outside it, and anything else (the sender has IPv6 off and a
# permanent neighbour entry for the receiver, so it sends nothing but the
# test's frames). hping_check_guard asserts that the guard dropped nothing
# (the rewrite alone kept every address inside) and that every flood frame
# it counted had been rewritten. hping3 (3.a2.ds2) ignores -c under
# --flood, so `timeout -s KILL` alone bounds it, in time; the trap deletes
# both namespaces.

# 198.18.0.0 and the address past 198.19.255.255, as integers.
HPING_NET_FIRST=3323068416
HPING_NET_END=$((HPING_NET_FIRST + 131072))

hping_sender() { # PORT FIRST SPAN
	local port=$1 first=$2 span=$3
	command -v hping3 >/dev/null || skip "hping3 not installed (tools/install-deps.sh)"
	((first >= HPING_NET_FIRST && span >= 1 && first + span <= HPING_NET_END)) ||
		fail "hping_sender: $first + $span is not inside 198.18.0.0/15"
	HPING_PORT=$port
	ip netns exec "$NS_TX" sysctl -qw "net.ipv6.conf.$IF_TX.disable_ipv6=1" ||
		fail "cannot disable IPv6 on $IF_TX"
	ip -n "$NS_TX" neigh replace "$RX4" lladdr "$RX_MAC" dev "$IF_TX" nud permanent ||
		fail "cannot add the permanent neighbour entry for $RX4"
	ip netns exec "$NS_TX" nft -f - <<-EOF || fail "cannot create the sender's nftables rewrite and guard"
		table ip sluice_hping {
			counter rewritten {}
			chain postrouting {
				type filter hook postrouting priority 0; policy accept;
				udp dport $port ip saddr set numgen random mod $span offset $first counter name rewritten
			}
		}
		table netdev sluice_hping_guard {
			counter outside {}
			counter other {}
			counter flood_out {}
			chain egress {
				type filter hook egress device "$IF_TX" priority 0; policy accept;
				meta protocol ip ip saddr != 198.18.0.0/15 counter name outside drop
				meta protocol ip ip daddr != 198.18.0.0/15 counter name outside drop
				meta protocol ip udp dport $port counter name flood_out accept
				meta protocol ip accept
				meta protocol arp arp saddr ip 198.18.0.0/15 arp daddr ip 198.18.0.0/15 accept
				counter name other drop
			}
		}
	EOF
}

hping_counter() { # FAMILY TABLE NAME
	ip netns exec "$NS_TX" nft -j list counter "$1" "$2" "$3" |
		jq -er '.nftables[] | select(.counter) | .counter.packets' ||
		fail "cannot read the sender's nftables counter $3"
}

hping_flood_bg() { # SECONDS FILE [HPING3 ARGS...]
	local secs=$1 out=$2
	shift 2
	ip netns exec "$NS_TX" timeout -s KILL "$secs" \
		hping3 -q -n -I "$IF_TX" --flood --rand-source --udp -p "$HPING_PORT" "$@" "$RX4" \
		>"$out" 2>&1 &
	HPING_PID=$!
	HPING_OUT=$out
	netns_track_pid "$HPING_PID"
}

hping_wait() {
	local rc=0 pid keep=()
	# 137: timeout -s KILL ended hping3 (and itself), as planned; bash then
	# reports the job "Killed" on stderr.
	wait "$HPING_PID" || rc=$?
	# Forget the PID: the cleanup must not signal one the system may reuse.
	for pid in "${NETNS_PIDS[@]}"; do [[ $pid == "$HPING_PID" ]] || keep+=("$pid"); done
	NETNS_PIDS=("${keep[@]}")
	[[ $rc == 137 || $rc == 124 ]] ||
		fail "hping3 ended with status $rc before its time: $(cat "$HPING_OUT")"
}

hping_check_guard() {
	local outside fsent rewritten
	outside=$(hping_counter netdev sluice_hping_guard outside)
	fsent=$(hping_counter netdev sluice_hping_guard flood_out)
	rewritten=$(hping_counter ip sluice_hping rewritten)
	assert_eq "$outside" 0 "frames the sender's egress guard dropped for an address outside 198.18.0.0/15"
	assert_eq "$fsent" "$rewritten" "hping3 frames out of the sender, all through the source rewrite"
}
