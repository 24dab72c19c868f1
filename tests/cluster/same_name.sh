#!/usr/bin/env bash
# cluster/same_name: two hosts whose agents run with the same --node (cloned
# images with one host name) are two peers: N = 2 on both, each shows the
# name twice, and the shares divide by 16 (8N). One of them stopped: N = 1
# on the other within the heartbeat's time to live.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

SYNC_MS=100

cluster_init sn 2
cluster_setup
redis_start
set_rule 1000 500
for n in 1 2; do
	AGENT_LOG[n]=$NETNS_TMP/agent$n.log
	nsenter --net="/run/netns/${NS_H[n]}" "$SLUICE" -i "${IF_R[n]}" cluster join "$REDIS_URL" \
		--node clone --sync "$SYNC_MS" >>"${AGENT_LOG[n]}" 2>&1 &
	AGENT_PID[n]=$!
done
wait_cluster up 2 10
for n in 1 2; do
	assert_eq "$(cstatus "$n" .peers)" 2 "host $n: peers with one --node on both"
	assert_eq "$(cstatus "$n" '.peer_names | join(" ")')" "clone clone" "host $n: peer names"
	assert_eq "$(cstatus "$n" .node)" clone "host $n: its node name"
done
echo "RESULT same_name: two agents named 'clone' count as $(cstatus 1 .peers) peers"
agent_stop 2
wait_cluster up 1 5 1
ok "host 1: one peer once the other left"
agent_logs
