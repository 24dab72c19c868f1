#!/usr/bin/env bash
# cluster/redis_blip: a source flooding one of two hosts gets its cluster
# share back after a short Redis outage that came while Redis granted it
# nothing. The source's Redis bucket is put in debt (its TAT set 60 s
# ahead), so every sync grants it 0; then Redis is killed for about two
# sync intervals and started again, empty. The flooded host must admit R
# again (+-15 % over 2 s, within 3 s of the rejoin), not its share R/(8N):
# a grant of 0 leaves no lease behind that would keep the bucket from
# telling the agent. When the flood stops, the host's leases map empties
# (the agent stops leasing after its idle syncs): no lease is left over.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

RATE=1000
BURST=500
SYNC_MS=100
PPS=5000
NH=2
SRC=198.18.0.1
KEY="sluice:{$RULE_CIDR|$SRC/32}"

# Entries in host N's leases map.
leases_in() { # N
	bpftool -j map dump pinned "$SLUICE_PIN_ROOT/${IF_R[$1]}/leases" | jq length
}

command -v bpftool >/dev/null || skip "bpftool not installed"
cluster_init bl "$NH"
cluster_setup
redis_start
set_rule "$RATE" "$BURST"
for ((n = 1; n <= NH; n++)); do
	agent_start "$n"
done
wait_cluster up "$NH" 10
nft_count_add flood "$SRC"
flood_at 1 "$NETNS_TMP/flood.1" --src "$SRC" --count $((PPS * 20)) --pps "$PPS" --seconds 20
sleep 1.5
window_rates flood 1 1
echo "RESULT redis_blip connected: host 1 admits ${RATE_OF[1]}/s (R = $RATE)"
assert_near "${RATE_OF[1]}" "$RATE" 15 "connected: the flooded host's admitted rate"

# Redis grants the source nothing from now on: its TAT 60 s ahead.
[[ $(redis_cli EXISTS "$KEY") == 1 ]] || fail "no Redis key $KEY: $(redis_cli KEYS 'sluice:*')"
t=$(redis_cli TIME | head -n 1)
redis_cli SET "$KEY" "$(((t + 60) * 1000000))" PX 120000 >/dev/null || fail "SET $KEY"
sleep 0.5
window_rates flood 1 1
echo "RESULT redis_blip in debt: host 1 admits ${RATE_OF[1]}/s (share R/(8N) = $((RATE / (8 * NH))))"
assert_le "${RATE_OF[1]}" $((2 * RATE / (8 * NH))) "in debt: the flooded host admits about its share"

# The blip: about two sync intervals without Redis.
redis_kill
wait_cluster fallback - 3 1
sleep 0.2
t_start=$(now)
redis_start
wait_cluster up "$NH" 5
echo "RESULT redis_blip: both up $(calc "($(now) - $t_start) * 1000" %.0f) ms after Redis restarted"
# The fresh bucket holds B: spent within the first second of the rejoin.
sleep 1
window_rates flood 2 1
echo "RESULT redis_blip after the blip: host 1 admits ${RATE_OF[1]}/s (R = $RATE, R/(8N) = $((RATE / (8 * NH))))"
assert_near "${RATE_OF[1]}" "$RATE" 15 "after the blip: the flooded host's admitted rate"
flood_stop

# Idle: released after SLUICE_CLUSTER_IDLE_SYNCS (10) syncs without a drop.
sleep 2
for ((n = 1; n <= NH; n++)); do
	assert_eq "$(leases_in "$n")" 0 "host $n: leases left 2 s after the flood stopped"
	assert_eq "$(cstatus "$n" .leases)" 0 "host $n: leases held (cluster status)"
done
agent_logs
