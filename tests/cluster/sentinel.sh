#!/usr/bin/env bash
# cluster/sentinel: two hosts joined through Redis Sentinel
# (sentinel://sluice@S1,S2,S3/sluice: three redis-server, a primary and two
# replicas, three sentinels with quorum 2, set up with doc/cluster.md's
# ACL line and sentinel lines) hold one --cluster limit while one source
# floods both. The primary is killed (SIGKILL) under load. Asserts: both
# hosts enter fallback within S + S/2 (+ slack) of the kill; once the
# sentinels name the new primary, both are up again within REJOIN_MS, each
# agent having said on stderr which master it now uses, and the cluster
# admits R again (+-15 %); over the whole flood the cluster admitted no
# more than doc/cluster.md's failover bound (the accuracy bound, plus B/N +
# R/N per second in fallback + 1 per host, plus one burst B that
# asynchronous replication may lose). Last, an agent whose sentinel names
# a replica refuses it (ROLE) and stays in fallback. Prints the fallback time (kill ->
# fallback), the failover time (kill -> the sentinels name the new
# primary) and the rejoin time (that -> both up).
#
# SENTINEL_BREAK=sticky runs the agents of build/tests/sluice-sticky-sentinel,
# which ask the sentinels once and keep the first primary's address: the
# test must fail (the hosts never rejoin).
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/cluster/lib_sentinel.sh
. "$(dirname "$0")/lib_sentinel.sh"

RATE=1000
BURST=500
SYNC_MS=100
DIV=8
PPS=4000
NH=2
SRC=198.18.0.1
# Scheduling slack on a busy 2-CPU machine (as redis_stop.sh).
SLACK_MS=50
# The agents ask the sentinels at every attempt, one sync apart; a sentinel
# that has not heard of the failover yet gives the old address, and the
# next attempt asks the next one: at most 3 attempts, then the connect.
REJOIN_MS=1500
# The sentinels fail over about 1 s (down-after-milliseconds) after the
# kill, plus the vote; a split vote is tried again after up to 2 x
# failover-timeout (20 s).
FAILOVER_SECS=45

case ${SENTINEL_BREAK:-} in
'') BIN=$SLUICE ;;
sticky) BIN=$SLUICE_ROOT/build/tests/sluice-sticky-sentinel ;;
*) fail "SENTINEL_BREAK='$SENTINEL_BREAK': give sticky or nothing" ;;
esac
[[ -x $BIN ]] || fail "$BIN not built: make $BIN"

cluster_init sn "$NH"
cluster_setup
sn_start
set_rule "$RATE" "$BURST"
# The password file, as the doc's "Production setup" says.
PWFILE=$NETNS_TMP/redis-password
install -m 0600 -o root /dev/null "$PWFILE"
printf '%s\n' "$SN_PW" >"$PWFILE"
REDIS_URL=$(sn_url)
old=$(sn_master_at 0)
assert_eq "$old" "$REDIS_ADDR:${SN_DATA_PORT[0]}" "the sentinels' master before the kill"
for ((n = 1; n <= NH; n++)); do
	agent_start "$n" "$BIN" --redis-password-file "$PWFILE"
done
wait_cluster up "$NH" 10
for ((n = 1; n <= NH; n++)); do
	assert_eq "$(cstatus "$n" .redis)" "$REDIS_URL" "host $n: cluster status shows the URL"
	grep -q "the master $SN_MASTER is $old " "${AGENT_LOG[n]}" ||
		fail "host $n: no 'the master $SN_MASTER is $old' line: $(cat "${AGENT_LOG[n]}")"
done
ok "both hosts up through $REDIS_URL, master $old"

nft_count_add flood "$SRC"
for ((n = 1; n <= NH; n++)); do
	flood_at "$n" "$NETNS_TMP/flood.$n" --src "$SRC" --count $((PPS * 60)) --pps "$PPS" --seconds 60
done
sleep 2
window_rates flood 2 1 2
echo "RESULT sentinel connected: cluster admits $RATE_SUM/s (hosts: ${RATE_OF[*]:1})"
assert_near "$RATE_SUM" "$RATE" 15 "connected: the cluster's admitted rate"

# --- the primary killed under load
t_kill=$(now)
sn_kill_data 0
end=$(calc "$t_kill + 3")
for ((n = 1; n <= NH; n++)); do
	wait_field "$n" mode fallback "$end" 0.01 "host $n not in fallback 3 s after the primary was killed"
done
worst=0
for ((n = 1; n <= NH; n++)); do
	read -r lat lo hi <<<"$(fallback_after "$n" "$t_kill")"
	echo "RESULT sentinel host $n: fallback ${lat} ms after the kill (between $lo and $hi)"
	assert_le "$lat" $((SYNC_MS + SYNC_MS / 2 + SLACK_MS)) "host $n: fallback within S + S/2 (+${SLACK_MS} ms) of the kill"
	((lat > worst)) && worst=$lat
done

# --- the sentinels' failover: the first moment any of them names another master
new='' t_new=''
end=$(calc "$t_kill + $FAILOVER_SECS")
while [[ -z $new ]]; do
	for i in 0 1 2; do
		got=$(sn_master_at "$i")
		if [[ -n $got && $got != "$old" ]]; then
			t_new=$(now) new=$got
			break
		fi
	done
	[[ -n $new ]] && break
	past "$end" && fail "the sentinels named no new master within ${FAILOVER_SECS} s of the kill"
	sleep 0.02
done
failover_ms=$(calc "($t_new - $t_kill) * 1000" %.0f)
echo "RESULT sentinel failover: the sentinels name $new ${failover_ms} ms after the kill"
[[ $(sn_rc "${new##*:}" ROLE | head -n 1) == master ]] || fail "$new does not say ROLE master"

# --- the agents follow: up, each on the new master
end=$(calc "$t_new + $REJOIN_MS / 1000")
for ((n = 1; n <= NH; n++)); do
	wait_field "$n" mode up "$end" 0.01 "host $n not up ${REJOIN_MS} ms after the sentinels named $new"
done
rejoin_ms=$(calc "($(now) - $t_new) * 1000" %.0f)
echo "RESULT sentinel rejoin: both hosts up ${rejoin_ms} ms after the sentinels named $new (S = $SYNC_MS ms)"
for ((n = 1; n <= NH; n++)); do
	line=$(grep "the master $SN_MASTER is $new " "${AGENT_LOG[n]}") ||
		fail "host $n: no 'the master $SN_MASTER is $new' line: $(cat "${AGENT_LOG[n]}")"
	[[ $line == *", was $old"* ]] || fail "host $n: the line does not say the old master: $line"
done
ok "both agents say they use $new, was $old"
wait_cluster up "$NH" 10
sleep 1
window_rates flood 2 1 2
echo "RESULT sentinel after failover: cluster admits $RATE_SUM/s (hosts: ${RATE_OF[*]:1})"
assert_near "$RATE_SUM" "$RATE" 15 "after the failover: the cluster's admitted rate"
flood_stop

# --- the whole flood against the failover bound
sleep 0.2 # the last frames leave the veths' rings
PH_T=0 admitted=0 fb_term=0
for ((n = 1; n <= NH; n++)); do
	out=$(cat "$NETNS_TMP/flood.$n")
	echo "host $n flood: $out"
	t=$(flood_field "$out" .seconds)
	PH_T=$(calc "($t > $PH_T) ? $t : $PH_T")
	c=$(nft_count "$n" flood)
	assert_eq "$(hs "$n" -j query "$SRC" | jq -r .passed)" "$c" "host $n: sluice's passed count equals nftables'"
	admitted=$((admitted + c))
	fb=$(cstatus "$n" .fallback_seconds)
	echo "RESULT sentinel host $n: ${fb} s in fallback, admitted $c"
	fb_term=$(calc "$fb_term + $BURST / $NH + $RATE * $fb / $NH + 1" %.1f)
done
expected=$(calc "$BURST + $RATE * $PH_T" %.0f)
bound=$(calc "$(accuracy_bound "$NH") + $fb_term + $BURST" %.1f)
echo "RESULT sentinel total: t=${PH_T}s admitted=$admitted B+R*t=$expected bound=$bound (accuracy $(accuracy_bound "$NH") + fallback $fb_term + replication $BURST)"
assert_le "$admitted" "$bound" "the flood's admitted total vs the failover bound"

# --- a sentinel that names a replica: the agent checks ROLE and stays in
# fallback. Sentinel 0 also monitors, as "stale", the replica that was not
# promoted (it goes on naming what it was given); host 2 joins through it.
for i in 1 2; do
	[[ $REDIS_ADDR:${SN_DATA_PORT[i]} == "$new" ]] || replica=${SN_DATA_PORT[i]}
done
# Settled first: a replica of the new primary, its link up.
sn_until 20 "$REDIS_ADDR:$replica is not a replica of $new within 20 s" sn_settled "$replica" "$new"
[[ $(sn_rc "${SN_PORT[0]}" SENTINEL MONITOR stale "$REDIS_ADDR" "$replica" 2) == OK ]] ||
	fail "SENTINEL MONITOR stale refused"
agent_stop 2
REDIS_URL=sentinel://sluice@$REDIS_ADDR:${SN_PORT[0]}/stale agent_start 2 "$BIN" --redis-password-file "$PWFILE"
sleep 1
assert_eq "$(cfield 2 mode)" fallback "host 2 through a sentinel that names a replica: mode"
grep -q "$REDIS_ADDR:$replica is no master: ROLE answered the string 'slave'" "${AGENT_LOG[2]}" ||
	fail "host 2: no 'is no master' line: $(tail -n 3 "${AGENT_LOG[2]}")"
sn_settled "$replica" "$new" || fail "$REDIS_ADDR:$replica is no longer a replica of $new"
ok "host 2 refuses the replica $REDIS_ADDR:$replica: $(grep -m1 -o "is no master: .*" "${AGENT_LOG[2]}")"
agent_logs
