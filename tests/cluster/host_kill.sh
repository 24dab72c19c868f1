#!/usr/bin/env bash
# cluster/host_kill: four hosts flood one source under a --cluster rule;
# host 1's agent is killed (SIGKILL: no goodbye, its cluster state still
# says up). The other three see 3 peers once its heartbeat ages out (TTL
# max(500, 5S) ms; measured), stay up, and together keep admitting the
# cluster rate R (+-10 % over 3 s). Host 1's status says its agent is not
# alive and that its shares are still R/(N x D); its leases expire (2S): it
# admits no more than that share. `cluster leave` (what a unit's
# ExecStopPost runs) puts host 1 to the whole limit R, stopped (N is
# forgotten with the agent that saw it); a second leave has
# nothing to do, and host 2's, whose agent runs, is refused. A new agent
# may join in its place and all four are up again.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

RATE=1000
BURST=500
SYNC_MS=100
PPS=5000
NH=4
DIV=8
SRC=198.18.0.1
TTL_MS=500

cluster_up_flooding ck "$NH" host_kill

t_kill=$(now)
agent_kill 1
# Its process is gone: status says the agent is not alive (the pid check).
wait_field 1 agent_alive false "$(calc "$t_kill + 7")" 0.05 \
	"host 1: agent_alive still true 7 s after its agent was killed"
echo "RESULT host_kill: host 1's status says agent_alive false $(calc "($(now) - $t_kill) * 1000" %.0f) ms after the kill"
# The peers' count: host 2 polled alone (one status read per ~50 ms), then all three.
wait_field 2 peers $((NH - 1)) "$(calc "$t_kill + 5")" 0.02 \
	"host 2 does not see $((NH - 1)) peers 5 s after host 1's agent was killed"
lat=$(calc "($(now) - $t_kill) * 1000" %.0f)
wait_cluster up $((NH - 1)) 2 2 3 4
echo "RESULT host_kill: host 2 sees $((NH - 1)) peers ${lat} ms after host 1's agent was killed"
# The last heartbeat ages out after TTL; the next sync of host 2 sees it.
assert_le "$lat" $((TTL_MS + 2 * SYNC_MS + 300)) "peer count drop within TTL + 2S (+300 ms for the polling)"
for n in 2 3 4; do
	assert_eq "$(cstatus "$n" '.peer_names | sort | join(",")')" h2,h3,h4 "host $n: peer names"
done

window_rates flood 3 "${hosts[@]}"
others=$(calc "${RATE_OF[2]} + ${RATE_OF[3]} + ${RATE_OF[4]}" %.1f)
local_share=$(calc "$RATE / ($NH * $DIV)" %.2f)
echo "RESULT host_kill rates: host 1 (agent killed) ${RATE_OF[1]}/s (local share $local_share/s), hosts 2-4 $others/s"
assert_near "$others" "$RATE" 10 "hosts 2-4: admitted/s together vs R"
assert_le "${RATE_OF[1]}" "$(calc "$local_share * 1.1 + 2")" "host 1 after its leases expired: admitted/s vs R/(N x D)"
for n in 2 3 4; do
	# one may fail on a busy machine (no answer within S/2); a lasting
	# trouble would fail them all
	assert_le "$(cstatus "$n" .sync_failures)" 1 "host $n: failed syncs"
done

# Its shares stay limit / 8N until a commit: status says so, with the way
# out; `cluster leave` is that commit (the whole limit, the leases cleared).
text=$(hs 1 cluster status) || fail "host 1: cluster status failed"
grep -q "NOT RUNNING" <<<"$text" || fail "host 1: status does not say the agent is not running: $text"
grep -q "STILL limit / $((NH * DIV)) .*cluster leave" <<<"$text" ||
	fail "host 1: status does not say its shares are still limit / $((NH * DIV)): $text"
assert_eq "$(cstatus 1 .leased_shares)" true "host 1: leased_shares before leave"
text=$(hs 1 cluster leave) || fail "host 1: cluster leave failed: $text"
echo "host 1: $text"
assert_eq "$(cfield 1 mode leased_shares leases)" "stopped false 0" "host 1 after leave: mode, leased_shares, leases"
text=$(hs 1 cluster leave) || fail "host 1: a second cluster leave failed: $text"
grep -q "nothing to do" <<<"$text" || fail "host 1: a second leave: $text"
expect_exit 1 "leave while host 2's agent runs" hs 2 cluster leave
sleep 1 # the new share's burst, spent
window_rates flood 3 1
echo "RESULT host_kill rates: host 1 after cluster leave ${RATE_OF[1]}/s (the whole limit: $RATE/s)"
assert_near "${RATE_OF[1]}" "$RATE" 10 "host 1 after leave: admitted/s vs R (N forgotten)"

agent_start 1
wait_cluster up "$NH" 5
ok "a new agent on host 1 joins: all four up with $NH peers"
flood_stop
agent_logs
