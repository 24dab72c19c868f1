#!/usr/bin/env bash
# cluster/spoof_hot: spoofed sources that send two packets each, over a
# share burst of 1, become hot but leave the hot set at the first sync they
# send nothing more, while a real flooder keeps its lease. 500 sources of
# 198.18.128.0/17 (--rate 1 --burst 8: a share of burst 1) send 2 packets
# 0.1 s apart; over the next 1.5 s the agent may send Redis at most 2
# grants per spoofed source (the first, and the charge at its release) on
# top of a heartbeat and the flooder's grant per sync, not one per sync
# for 10 idle syncs. The flooder (198.18.0.1, --rate 1000 --burst 500)
# is admitted R (+-15 %) meanwhile.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

SYNC_MS=100
NSPOOF=500
SRC=198.18.0.1

cluster_init sp 1
cluster_setup
redis_start
hs 1 limit set 198.18.0.0/24 --rate 1000 --burst 500 --cluster >/dev/null 2>&1 ||
	fail "limit set of the flooder's rule"
hs 1 limit set 198.18.128.0/17 --rate 1 --burst 8 --cluster >/dev/null 2>&1 ||
	fail "limit set of the spoofed sources' rule"
agent_start 1
wait_cluster up 1 10
nft_count_add flood "$SRC"
flood_at 1 "$NETNS_TMP/flood.1" --src "$SRC" --count 20000 --pps 2000 --seconds 10
sleep 1.5

read -r ops0 syncs0 <<<"$(cfield 1 redis_ops syncs)"
ip netns exec "${NS_C[1]}" "$SLUICE_FLOOD" --iface "${IF_T[1]}" --dst-mac "${MAC_R[1]}" \
	--dport "$DPORT" --src 198.18.128.1 --sources "$NSPOOF" --count $((2 * NSPOOF)) \
	--pps $((10 * NSPOOF)) --seconds 5 >"$NETNS_TMP/spoof" || fail "the spoofed flood"
q=$(hs 1 -j query 198.18.128.9) || fail "query of a spoofed source"
assert_eq "$(jq -r '.passed, .dropped' <<<"$q" | paste -sd' ')" "1 1" "a spoofed source: passed, dropped"
window_rates flood 1.5 1
read -r ops1 syncs1 <<<"$(cfield 1 redis_ops syncs)"
syncs=$((syncs1 - syncs0))
spoof_ops=$((ops1 - ops0 - 2 * syncs))
echo "RESULT spoof_hot: $NSPOOF spoofed sources cost $spoof_ops Redis grants over $syncs syncs ($(calc "$spoof_ops / $NSPOOF" %.1f) each); the flooder admitted ${RATE_OF[1]}/s"
assert_le "$spoof_ops" $((2 * NSPOOF + 2 * syncs / 10)) "Redis grants for the spoofed sources (2 each at most)"
assert_near "${RATE_OF[1]}" 1000 15 "the flooder's admitted rate meanwhile"
assert_ge "$(cstatus 1 .leases)" 1 "the flooder holds a lease"
flood_stop
agent_logs
