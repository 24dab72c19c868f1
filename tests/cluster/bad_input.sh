#!/usr/bin/env bash
# cluster/bad_input: every bad `cluster join` and `limit set --cluster` gets a
# clear answer and never hangs (each command under `timeout 5`):
# - `limit set --cluster` with no agent: a warning, exit 0, the rule listed
#   as cluster, `cluster status` mode none, and the host alone applies R
#   (N = 1: burst + R x t of a short flood);
# - bad URLs and options: one line, exit 2, and `cluster status -j` and
#   `limit list -j` unchanged; bad --cluster rules: the same;
# - a server that answers but is not Redis: one line, exit 1; nor is a
#   Redis without cluster support under --redis-cluster;
# - Redis unreachable at join (no such host; nothing listening): the agent
#   says so in one line, status is fallback with the agent alive, and it
#   stops on SIGTERM (exit 0, status stopped);
# - a sync longer than a --cluster rule's burst / rate: the agent warns,
#   naming the rule, and runs on (one at burst / rate does not);
# - a second agent on the same interface: one line, exit 1, the first up;
# - the interface detached under a running agent: the agent exits 1.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

SYNC_MS=100
RATE=1000
BURST=100
SRC=198.18.0.1

cluster_init cb 1
cluster_setup
redis_start
state() { hs 1 -j cluster status && hs 1 -j limit list; }

# --cluster with no agent ever run on the interface.
expect_exit 0 "limit set --cluster, no agent" hs 1 limit set "$RULE_CIDR" --rate "$RATE" --burst "$BURST" --cluster
[[ $ERR == *"no cluster agent runs on ${IF_R[1]}"*"limit / 1"* ]] ||
	fail "limit set --cluster with no agent: want the warning naming ${IF_R[1]} and limit / 1, got '$ERR'"
assert_eq "$(hs 1 -j limit list | jq -r --arg c "$RULE_CIDR" '.[] | select(.cidr == $c) | .cluster')" true \
	"limit list -j: the rule is a cluster rule"
assert_eq "$(cstatus 1 .mode)" none "cluster status with no agent: mode"
assert_eq "$(cstatus 1 .agent_alive)" false "cluster status with no agent: agent_alive"
hs 1 cluster status >/dev/null || fail "cluster status (text) with no agent"
nft_count_add f "$SRC"
flood_at 1 "$NETNS_TMP/flood" --src "$SRC" --count 10000 --pps 5000 --seconds 4
flood_wait
sleep 0.2
t=$(flood_field "$(cat "$NETNS_TMP/flood")" .seconds)
assert_near "$(nft_count 1 f)" "$(calc "$BURST + $RATE * $t")" 5 "no agent (N = 1): the host alone admits B + R x t"

before=$(state)
for url in "http://$REDIS_ADDR:6379" "redis://" "redis://:6379" "redis://$REDIS_ADDR:0" \
	"redis://$REDIS_ADDR:70000" "redis://$REDIS_ADDR:" "redis://$REDIS_ADDR:6379x" \
	"redis://$REDIS_ADDR:-1" "redis://[2001:2::1" "redis://$REDIS_ADDR/x" "redis://u:pw@$REDIS_ADDR" "junk" "" \
	"rediss://$REDIS_ADDR:6379/x" "unix://run/redis.sock"; do
	expect_exit 2 "join '$url'" hs 1 cluster join "$url" --node h1 --sync "$SYNC_MS"
done
for args in "--sync 0" "--sync 9" "--sync 10001" "--sync abc" "--sync" "--node" \
	"--node a/b" "--node $(printf 'n%.0s' {1..64})" "--bogus"; do
	# shellcheck disable=SC2086 # split on purpose
	expect_exit 2 "join $REDIS_URL $args" hs 1 cluster join "$REDIS_URL" $args
done
expect_exit 2 "join with no URL" hs 1 cluster join
expect_exit 2+ "cluster with no command (usage)" hs 1 cluster
expect_exit 2 "cluster bogus" hs 1 cluster bogus
expect_exit 2 "cluster status extra" hs 1 cluster status extra
for args in "--rate 10 --ban 10s" "--requests 10" "--rate 1000001" "--bytes 100000" \
	"--rate 10 --algo fixed-window --window 1s"; do
	# shellcheck disable=SC2086 # split on purpose
	expect_exit 2 "limit set --cluster $args" hs 1 limit set 198.18.4.0/24 $args --cluster
done
[[ $(state) == "$before" ]] || fail "rejected commands changed the state: before $before, after $(state)"
ok "cluster status -j and limit list -j unchanged by the rejected commands"

# A server that answers, but not as Redis: an HTTP-ish line, and +OK to PING.
PY=$(command -v /usr/bin/python3 python3 | head -n 1) || true
if [[ -n $PY ]]; then
	for reply in 'HTTP/1.0 400 Bad Request\r\n\r\n' '+OK\r\n' '$-5\r\n'; do
		ip netns exec "$NS_REDIS" "$PY" -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 6390)); s.listen(4); s.settimeout(8)
reply = sys.argv[2].encode().decode("unicode_escape").encode()
while True:
    try: c, _ = s.accept()
    except socket.timeout: break
    c.settimeout(2)
    try: c.recv(4096); c.sendall(reply)
    except OSError: pass
    c.close()
' "$REDIS_ADDR" "$reply" &
		CL_PIDS+=($!)
		wait_listen 1 "$REDIS_ADDR" 6390
		expect_exit 1 "join a server answering '$reply'" hs 1 cluster join "redis://$REDIS_ADDR:6390" --node h1 --sync "$SYNC_MS"
		assert_eq "$(cstatus 1 .agent_alive)" false "after the not-Redis server: agent_alive"
		[[ $(cstatus 1 .mode) != up ]] || fail "after the not-Redis server: mode up"
		kill -TERM "${CL_PIDS[-1]}" 2>/dev/null || true
		wait "${CL_PIDS[-1]}" 2>/dev/null || true
		unset 'CL_PIDS[-1]'
	done
else
	echo "python3 not installed: the not-Redis server case is not run"
fi
# --redis-cluster against a Redis without cluster support: one line, exit 1.
expect_exit 1 "join --redis-cluster a Redis that is no cluster node" hs 1 cluster join "$REDIS_URL" \
	--redis-cluster "$REDIS_ADDR:$REDIS_PORT" --node h1 --sync "$SYNC_MS"
[[ $ERR == *"CLUSTER SLOTS answered -ERR"*"not a Redis Cluster node"* ]] ||
	fail "join --redis-cluster a plain Redis: want CLUSTER SLOTS's error named, got '$ERR'"
assert_eq "$(cstatus 1 .agent_alive)" false "after --redis-cluster a plain Redis: agent_alive"

# Unreachable at join: no host at that address (connect times out), and
# nothing listening (refused). A visible fallback, never a hang.
# An agent on host 1 in the background (pid), its output in LOG; then
# up to 3 s for its status to say fallback, the agent still running.
join_to_fallback() { # URL SYNC_MS LOG
	local end t0
	nsenter --net="/run/netns/${NS_H[1]}" "$SLUICE" -i "${IF_R[1]}" cluster join "$1" \
		--node h1 --sync "$2" >"$3" 2>&1 &
	pid=$!
	CL_PIDS+=("$pid")
	t0=$(now)
	end=$(calc "$t0 + 3")
	while [[ $(cfield 1 mode) != fallback ]]; do
		kill -0 "$pid" 2>/dev/null || fail "join $1 --sync $2 exited: $(cat "$3")"
		past "$end" && fail "join $1 --sync $2: not in fallback after 3 s: $(hs 1 -j cluster status)"
		sleep 0.02
	done
	ok "join $1 --sync $2: status fallback after $(calc "($(now) - $t0) * 1000" %.0f) ms"
}
# SIGTERM to that agent: it exits 0 within 3 s.
stop_agent() { # WHAT
	local rc=0
	kill -TERM "$pid"
	timeout 3 tail --pid="$pid" -f /dev/null || fail "$1: still running 3 s after SIGTERM"
	wait "$pid" || rc=$?
	unset 'CL_PIDS[-1]'
	assert_eq "$rc" 0 "$1: exit status on SIGTERM"
}
for url in redis://198.19.0.200:6379 "redis://$REDIS_ADDR:6391"; do
	log=$NETNS_TMP/unreach.log
	join_to_fallback "$url" "$SYNC_MS" "$log"
	assert_eq "$(cstatus 1 .agent_alive)" true "join $url: agent alive in fallback"
	assert_eq "$(cstatus 1 .redis)" "$url" "join $url: status names the URL"
	grep -q "cannot reach $url" "$log" || fail "join $url: no 'cannot reach $url' line: $(cat "$log")"
	grep -q "fallback" "$log" || fail "join $url: the line does not say fallback: $(cat "$log")"
	ok "join $url: $(grep "cannot reach" "$log" | head -n 1)"
	sleep 0.5 # a few retries: still alive, still fallback, no second line per retry
	assert_eq "$(grep -c "cannot reach" "$log")" 1 "join $url: lines saying so after 5 retries"
	hs 1 -j status >/dev/null || fail "sluice status while the agent retries"
	stop_agent "join $url"
	assert_eq "$(cstatus 1 .mode)" stopped "join $url: mode after SIGTERM"
done

# A sync longer than burst / rate (200 ms > 100 / 1000 s; the agents above
# ran at exactly 100 ms and said nothing): the agent says so, naming the
# rule and what would do, and still runs.
log=$NETNS_TMP/short.log
join_to_fallback "redis://$REDIS_ADDR:6391" 200 "$log"
grep -q "rule $RULE_CIDR.*burst $BURST is under rate x sync (200).*--burst 200 or more, or --sync 100 or less" "$log" ||
	fail "join --sync 200: no warning about the rule's burst: $(cat "$log")"
ok "join --sync 200: $(grep "burst $BURST" "$log")"
stop_agent "join --sync 200"
! grep -q "under rate x sync" "$NETNS_TMP/unreach.log" ||
	fail "an agent at --sync 100 warned: $(cat "$NETNS_TMP/unreach.log")"

# A real agent, then a second one on the same interface.
agent_start 1
wait_cluster up 1 5
expect_exit 1 "a second agent on ${IF_R[1]}" hs 1 cluster join "$REDIS_URL" --node h1b --sync "$SYNC_MS"
assert_eq "$(cstatus 1 '"\(.mode) \(.node) \(.agent_alive)"')" "up h1 true" "the first agent after the second was refused"

# Detached under the agent: it exits 1.
hs 1 detach "${IF_R[1]}" >/dev/null || fail "detach ${IF_R[1]}"
rc=0
timeout 5 tail --pid="${AGENT_PID[1]}" -f /dev/null || fail "the agent still runs 5 s after its interface was detached"
wait "${AGENT_PID[1]}" || rc=$?
AGENT_PID[1]=
assert_eq "$rc" 1 "the agent's exit status once its interface is detached"
