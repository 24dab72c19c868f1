#!/usr/bin/env bash
# e2e/reattach_state: attaching again to an attached interface swaps the
# program but keeps the pinned maps: the policy reads back identical, the
# source's bucket is the same (counts, and it is still empty: no fresh
# burst), and allow/deny still act on traffic.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SRC=198.18.4.10
RATE=5
BURST=100
DPORT=5001

netns_init ra
netns_setup
sluice_attach
sluice_rx limit default --rate 1000 --burst 1000
sluice_rx limit set 198.18.4.0/24 --rate "$RATE" --burst "$BURST"
sluice_rx allow 198.18.5.0/24
sluice_rx deny 2001:2:0:d::/64
nft_rx_init
nft_rx_counter flood ip saddr "$SRC" udp dport "$DPORT"
prog0=$(sluice_jq '.interfaces[0].prog_id' status)

# Empty the bucket: 2000 packets in 0.2 s pass the burst, plus at most one
# refill (5/s x 0.2 s).
t_start=$(now)
out=$(flood --src "$SRC" --dport "$DPORT" --count 2000 --pps 10000 --seconds 5)
echo "flood: $out"
# Its last packet went out no earlier than this (the first one not before
# t_start): the bucket refills from about then.
t_drained=$(calc "$t_start + $(flood_field "$out" .seconds)")
q0=$(sluice_rx -j query "$SRC")
list0=$(sluice_rx -j limit list)
echo "before: $q0"
passed0=$(jq .passed <<<"$q0")
assert_ge "$passed0" "$BURST" "passed before re-attach"
assert_le "$passed0" $((BURST + 1)) "passed before re-attach"

out=$(sluice_attach)
echo "$out"
[[ $out == *"state kept"* ]] || fail "attach did not report keeping the state: $out"
prog1=$(sluice_jq '.interfaces[0].prog_id' status)
[[ $prog1 != "$prog0" ]] || fail "program id unchanged ($prog0): attach did not reload"
ok "program reloaded: id $prog0 -> $prog1"
assert_eq "$(sluice_jq '.interfaces[0].mode' status)" native "mode after re-attach"

q1=$(sluice_rx -j query "$SRC")
echo "after:  $q1"
for k in tracked policy action rate burst passed dropped; do
	assert_eq "$(jq -c ".$k" <<<"$q1")" "$(jq -c ".$k" <<<"$q0")" "query .$k after re-attach"
done
# The default's counters may have moved: the tx kernel's own IPv6 packets
# (MLD reports after link-up) fall under it. Everything else must match.
strip='map(if .cidr == "default" then del(.passed, .dropped) else . end)'
assert_eq "$(sluice_rx -j limit list | jq -cS "$strip")" "$(jq -cS "$strip" <<<"$list0")" \
	"limit list after re-attach"

# The same bucket, still drained: another 0.2 s flood passes only what the
# rate refilled since it was emptied (RATE per second, plus the one token
# the bucket may have had left), where a new bucket would pass its whole
# burst of 100 again.
flood --src "$SRC" --dport "$DPORT" --count 2000 --pps 10000 --seconds 5
t_end=$(now)
more=$(($(sluice_passed "$SRC") - passed0))
assert_le "$more" "$(calc "$RATE * ($t_end - $t_drained) + 2")" \
	"passes after re-attach (refill over $(calc "$t_end - $t_drained" %.2f)s at $RATE/s)"
assert_eq "$(nft_rx_packets flood)" "$(sluice_passed "$SRC")" "nftables counter equals sluice's pass count"

# The other rules still act on traffic.
# Allowed and denied sources take no bucket: their rules count them.
rule_count() { sluice_jq ".[] | select(.cidr == \"$1\") | .$2" limit list; }
allowed0=$(rule_count 198.18.5.0/24 passed)
denied0=$(rule_count 2001:2:0:d::/64 dropped)
flood --src 198.18.5.10 --dport "$DPORT" --count 200 --pps 10000 --seconds 5 >/dev/null
assert_eq $(($(rule_count 198.18.5.0/24 passed) - allowed0)) 200 \
	"allowed 198.18.5.10 after re-attach: passed"
flood --src 2001:2:0:d::10 --dst "$RX6" --dport "$DPORT" --count 200 --pps 10000 --seconds 5 >/dev/null
assert_eq $(($(rule_count 2001:2:0:d::/64 dropped) - denied0)) 200 \
	"denied 2001:2:0:d::10 after re-attach: dropped"
