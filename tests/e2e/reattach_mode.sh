#!/usr/bin/env bash
# e2e/reattach_mode: a re-attach that changes the XDP mode (native <-> skb)
# cannot be one step (the kernel refuses a generic program beside a native
# one), so without --force it is refused: exit 2, nothing changed, the old
# program still attached and enforcing under a denied source's flood. With
# --force the new program is loaded and verified first; only the
# detach->attach pair is unprotected, and the flood gets at most a few
# packets through each switch (doc/commands/attach.rst says how many).
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SRC=198.18.4.4
DPORT=5004
SWITCHES=4
# At most 1/MAX_SHARE of the denied source's packets during the forced
# switches may get through: the unprotected moment is two netlink requests,
# a small part of an attach that loads and verifies first.
MAX_SHARE=5

netns_init rm
netns_setup
sluice_attach
sluice_rx deny 198.18.4.0/24
nft_rx_init
nft_rx_counter gap ip saddr "$SRC" udp dport "$DPORT"
id0=$(sluice_jq '.interfaces[0].prog_id' status)
denied() { sluice_jq '.[] | select(.cidr == "198.18.4.0/24") | .dropped' limit list; }

out=$(netns_tmp flood)
err=$(netns_tmp err)
flood_bg "$out" --src "$SRC" --dst "$RX4" --dport "$DPORT" --count 24000000 --pps 200000 --seconds 120
for ((i = 0; i < 50; i++)); do
	(($(denied) > 1000)) && break
	sleep 0.1
done
assert_ge "$(denied)" 1000 "packets denied before the mode change"

# Refused: exit 2, one line that says why and what to do, nothing changed.
d0=$(denied)
rc=0
sluice_rx attach --mode skb "$IF_RX" >/dev/null 2>"$err" || rc=$?
sleep 0.5
assert_eq "$(nft_rx_packets gap)" 0 "packets of the denied source past a mode change without --force"
assert_eq "$rc" 2 "exit code of a mode change without --force"
cat "$err"
assert_eq "$(wc -l <"$err")" 1 "lines on stderr"
grep -q -- '--force' "$err" || fail "the refusal does not say how to go on: $(cat "$err")"
assert_eq "$(sluice_jq '.interfaces[0].mode' status)" native "mode after the refusal"
assert_eq "$(sluice_jq '.interfaces[0].prog_id' status)" "$id0" "program after the refusal"
assert_ge "$(($(denied) - d0))" 1000 "packets denied by the old program after the refusal"

# Forced: load and verify first, then the two requests back to back. What
# leaks is what arrives while the kernel takes one program off and puts the
# other on (an RCU grace period, code patching: milliseconds, tens on a busy
# machine); the load and verification (seconds here) are no longer inside.
mode=native
d1=$(denied)
for ((i = 0; i < SWITCHES; i++)); do
	[[ $mode == native ]] && mode=skb || mode=native
	t0=$(now)
	said=$(sluice_rx attach --force --mode "$mode" "$IF_RX") || fail "forced switch $i to $mode failed"
	echo "$said ($(calc "$(now) - $t0" %.2f) s)"
	[[ $said == *"changed from "*" mode (unprotected for "* ]] ||
		fail "switch $i does not say the mode changed and for how long: $said"
	assert_eq "$(sluice_jq '.interfaces[0].mode' status)" "$mode" "mode after switch $i"
	echo "# after switch $i: $(nft_rx_packets gap) packets of the denied source got through"
done
sleep 0.5
leaked=$(nft_rx_packets gap)
arrived=$(($(denied) - d1 + leaked))
kill -TERM "$FLOOD_PID" 2>/dev/null || true
wait "$FLOOD_PID" 2>/dev/null || true
echo "flood: $(cat "$out")"
assert_ge "$arrived" 10000 "packets of the denied source during the switches (the flood ran throughout)"
# Before the fix each switch left the link bare for the whole load and
# verification: most of what arrived got through (1,134,872 in one switch).
assert_le "$leaked" $((arrived / MAX_SHARE)) \
	"packets of the denied source past $SWITCHES forced mode changes (of $arrived)"
assert_eq "$(ip -n "$NS_RX" -d link show dev "$IF_RX" | grep -c 'prog/xdp')" 1 "XDP programs on the link"
