#!/usr/bin/env bash
# cluster/peers: N, the hosts the shares divide by, is what the agent has
# seen beat in Redis, never what Redis says alone (doc/cluster.md, "Keys"):
# - 1,000,000 members written into sluice:{nodes} with a time in the future,
#   and 1,000 written once with the current time: N stays 2 on both hosts,
#   and a source within the 10/s rule passes as before (at least 14 of 20;
#   before: N = 1,000,002 and 0 of 20 passed);
# - 1,000 members rewritten every 100 ms (they beat): N is capped at
#   SLUICE_CLUSTER_HOSTS_MAX (256), and back to 2 once they stop;
# - the key deleted 4 times (N = 1 for an instant): the peers an agent saw
#   beat stay counted for the heartbeat's window, so from phase 2 on no
#   agent says "1 peer" (before: each delete made one say it);
# - the agent stopped: N forgotten (1), and the rule admits its whole limit,
#   B + R x t, not limit / N;
# - a member named with control characters ("\x1b[2J") is never printed raw:
#   not in `cluster status` (plain or -j), and the agent's log line about it
#   shows it escaped.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

SYNC_MS=200	# the heartbeat's window: 5 S = 1 s
RATE=10
BURST=10
HOSTS_MAX=$(awk '$2 == "SLUICE_CLUSTER_HOSTS_MAX" { sub("U", "", $3); print $3 }' \
	"$SLUICE_ROOT/include/sluice/bounds.h")
[[ $HOSTS_MAX =~ ^[0-9]+$ ]] || fail "cannot read SLUICE_CLUSTER_HOSTS_MAX from bounds.h"

cluster_init pe 2
cluster_setup
redis_start
set_rule "$RATE" "$BURST"
agent_start 1
agent_start 2
wait_cluster up 2 10

# A source within the rule (10 packets/s for 2 s) from client 1: PASSED.
PASSED=0
within_rule() { # NAME SRC
	nft_count_add "$1" "$2"
	flood_at 1 "$NETNS_TMP/$1" --src "$2" --count 20 --pps 10 --seconds 5
	flood_wait
	sleep 0.2
	PASSED=$(nft_count 1 "$1")
}

# --- 1. fake members: far in the future, and written once -------------------------
for ((b = 0; b < 10; b++)); do
	redis_cli EVAL "local t = redis.call('TIME')
		local now = tonumber(t[1]) * 1000
		for i = ARGV[1], ARGV[1] + 99999 do
			redis.call('ZADD', KEYS[1], now + 1e9, string.format('fake%d#%016x', i, i))
		end
		return 0" 1 'sluice:{nodes}' $((b * 100000)) >/dev/null || fail "ZADD of fake peers (batch $b)"
done
redis_cli EVAL "local t = redis.call('TIME')
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	for i = 1, 1000 do redis.call('ZADD', KEYS[1], now, string.format('once%d#%016x', i, i)) end
	return 0" 1 'sluice:{nodes}' >/dev/null || fail "ZADD of one-time peers"
ok "1,000,000 members with a future time and 1,000 written once are in sluice:{nodes}"
sleep 2 # the window (1 s) and a few syncs
within_rule fake 198.18.0.10
passed=$PASSED
echo "RESULT peers: with 1,001,000 fake members, N = $(cfield 1 peers) on host 1, $(cfield 2 peers) on host 2; a source within the rule passed $passed of 20"
assert_ge "$passed" 14 "a source within the rule (10/s, 20 packets) with fake members in Redis"
wait_cluster up 2 5

# --- 2. members that beat: N capped -------------------------------------------------
# From here no agent may say "1 peer": the peers seen stay counted.
declare -A lines0
for n in 1 2; do lines0[$n]=$(grep -c ': 1 peer (' "${AGENT_LOG[n]}" || true); done
(for ((i = 0; i < 40; i++)); do
	redis_cli EVAL "local t = redis.call('TIME')
		local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
		for i = 1, 1000 do redis.call('ZADD', KEYS[1], now, string.format('busy%d#%016x', i, i)) end
		return 0" 1 'sluice:{nodes}' >/dev/null || exit 1
	sleep 0.1
done) &
CL_PIDS+=($!)
wait_field 1 peers "$HOSTS_MAX" "$(calc "$(now) + 4")" 0.1 "host 1: N not at the cap ($HOSTS_MAX) with 1,000 beating members"
maxp=0
for ((i = 0; i < 10; i++)); do
	p=$(cfield 1 peers)
	((p > maxp)) && maxp=$p
	sleep 0.1
done
echo "RESULT peers: with 1,000 members beating, N = $maxp at most (the cap: $HOSTS_MAX)"
assert_le "$maxp" "$HOSTS_MAX" "N with 1,000 beating members"
wait "${CL_PIDS[-1]}" || fail "the loop of beating members failed"
unset 'CL_PIDS[-1]'
wait_cluster up 2 5
ok "N back to 2 once the fake members stopped beating"

# --- 3. the key deleted: N = 1 for an instant ----------------------------------------
for ((i = 0; i < 4; i++)); do
	redis_cli DEL 'sluice:{nodes}' >/dev/null || fail "DEL sluice:{nodes}"
	sleep 1.5
done
for n in 1 2; do
	l=$(grep -c ': 1 peer (' "${AGENT_LOG[n]}" || true)
	echo "RESULT peers: host $n said '1 peer' $((l - lines0[$n])) times while 1,000 members came and went and sluice:{nodes} was deleted 4 times"
	assert_eq "$((l - lines0[$n]))" 0 "host $n: lines saying 1 peer (members gone, the key deleted 4 times)"
done
wait_cluster up 2 1

# --- 4. a member named with control characters ---------------------------------------
(for ((i = 0; i < 15; i++)); do
	redis_cli EVAL "local t = redis.call('TIME')
		local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
		redis.call('ZADD', KEYS[1], now, string.char(27) .. '[2J' .. string.char(7) .. '#0123456789abcdef')
		return 0" 1 'sluice:{nodes}' >/dev/null || exit 1
	sleep 0.1
done) &
CL_PIDS+=($!)
sleep 1
for n in 1 2; do
	text=$(hs "$n" cluster status) || fail "host $n: cluster status"
	json=$(hs "$n" -j cluster status) || fail "host $n: cluster status -j"
	! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' <<<"$text$json" ||
		fail "host $n: cluster status prints a control character: $(cat -v <<<"$text$json")"
	jq -e . <<<"$json" >/dev/null || fail "host $n: cluster status -j is not JSON: $json"
	assert_eq "$(jq -r '.peers' <<<"$json")" 2 "host $n: N with a member named with control characters"
	grep -qF '\x1b[2J\x07#0123456789abcdef' "${AGENT_LOG[n]}" ||
		fail "host $n: the agent's log does not show the member escaped: $(cat -v "${AGENT_LOG[n]}" | tail -n 5)"
	! LC_ALL=C grep -q $'\x1b' "${AGENT_LOG[n]}" || fail "host $n: the agent's log holds a raw escape"
done
ok "a member named '\\x1b[2J\\x07': never printed raw, the agents' logs show it escaped"
echo "RESULT peers: $(grep -hF '\x1b' "${AGENT_LOG[1]}" | head -n 1)"
wait "${CL_PIDS[-1]}" || fail "the loop of the odd member failed"
unset 'CL_PIDS[-1]'

# --- 5. the agent stopped: N forgotten ----------------------------------------------
agent_stop 1
assert_eq "$(cfield 1 mode peers leased_shares)" "stopped 1 false" "host 1 after its agent stopped: mode, N, leased"
nft_count_add stopped 198.18.0.30
flood_at 1 "$NETNS_TMP/stopped" --src 198.18.0.30 --count 80 --pps 40 --seconds 5
flood_wait
sleep 0.2
t=$(flood_field "$(cat "$NETNS_TMP/stopped")" .seconds)
passed=$(nft_count 1 stopped)
whole=$(calc "$BURST + $RATE * $t" %.1f)
echo "RESULT peers: agent stopped: 80 packets in ${t} s, $passed passed (the whole limit: $whole; limit / 2: $(calc "$whole / 2" %.1f))"
assert_ge "$passed" "$(calc "$whole - 3" %.0f)" "agent stopped: passed vs the whole limit B + R x t"
assert_le "$passed" "$(calc "$whole + 1" %.0f)" "agent stopped: passed vs the whole limit B + R x t"
agent_logs
