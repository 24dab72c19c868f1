#!/usr/bin/env bash
# cluster/partition: three hosts flood one source under a --cluster rule;
# then nftables in host 1's namespace drops its traffic to Redis. Host 1
# falls back (within S + S/2, measured) to R/N alone; hosts 2 and 3 stay up,
# see 2 peers once host 1's heartbeat ages out, fail no sync, and together
# keep admitting the cluster rate R (+-10 % over 3 s). The drop removed,
# host 1 rejoins and the three see 3 peers again.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

RATE=1000
BURST=500
SYNC_MS=100
PPS=5000
NH=3
SRC=198.18.0.1
SLACK_MS=50	# as in cluster/redis_stop
TTL_MS=500	# the heartbeat's: max(500, 5 x S)

cluster_up_flooding cp "$NH" partition
declare -A fails0=([2]=$(cstatus 2 .sync_failures) [3]=$(cstatus 3 .sync_failures))

t_cut=$(now)
ip netns exec "${NS_H[1]}" nft -f - <<EOF || fail "cannot add the partition on host 1"
table inet sluice_cl_part {
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr $REDIS_ADDR tcp dport $REDIS_PORT counter drop
	}
}
EOF
wait_field 1 mode fallback "$(calc "$t_cut + 3")" 0.01 "host 1 not in fallback 3 s after the partition"
read -r lat lo hi <<<"$(fallback_after 1 "$t_cut")"
echo "RESULT partition: host 1 in fallback ${lat} ms after its traffic to Redis was dropped (between $lo and $hi)"
assert_le "$lat" $((SYNC_MS + SYNC_MS / 2 + SLACK_MS)) "host 1: fallback within S + S/2 (+${SLACK_MS} ms slack)"
assert_eq "$(cfield 1 peers)" "$NH" "host 1 in fallback: N (peers last seen)"

# The others: up, and down to 2 peers after host 1's heartbeat ages out.
wait_cluster up $((NH - 1)) $(((TTL_MS + 3 * SYNC_MS) / 100 + 20)) 2 3
echo "RESULT partition: hosts 2 and 3 see $((NH - 1)) peers $(calc "($(now) - $t_cut) * 1000" %.0f) ms after the partition"
sleep 0.5
window_rates flood 3 "${hosts[@]}"
echo "RESULT partition rates: host 1 (fallback) ${RATE_OF[1]}/s, hosts 2+3 (up) $(calc "${RATE_OF[2]} + ${RATE_OF[3]}" %.1f)/s"
assert_near "${RATE_OF[1]}" "$(calc "$RATE / $NH")" 10 "host 1 in fallback: admitted/s vs R/N"
assert_near "$(calc "${RATE_OF[2]} + ${RATE_OF[3]}")" "$RATE" 10 "hosts 2 and 3: admitted/s together vs R"
for n in 2 3; do
	assert_eq "$(cstatus "$n" .mode)" up "host $n during the partition"
done
# A lone failed sync can happen on a busy machine (no answer within S/2);
# a partition that reached them would fail every sync (~30 here).
for n in 2 3; do
	assert_le $(($(cstatus "$n" .sync_failures) - fails0[$n])) 1 "host $n: failed syncs during the partition"
done
dropped=$(ip netns exec "${NS_H[1]}" nft -j list chain inet sluice_cl_part out |
	jq -r '[.nftables[] | select(.rule) | .rule.expr[] | select(.counter) | .counter.packets] | add')
assert_ge "$dropped" 1 "packets to Redis dropped on host 1"

t_heal=$(now)
ip netns exec "${NS_H[1]}" nft delete table inet sluice_cl_part || fail "cannot remove the partition"
wait_cluster up "$NH" 5
echo "RESULT partition: all up with $NH peers $(calc "($(now) - $t_heal) * 1000" %.0f) ms after the partition healed"
flood_stop
agent_logs
