#!/usr/bin/env bash
# cluster/rcluster: two hosts joined to a real Redis Cluster (six
# redis-server, three primaries with a replica each, made by `redis-cli
# --cluster create`) with --redis-cluster, as doc/cluster.md's ACL user (its
# password in a file), one source flooding both under a --cluster rule.
# While it floods:
#   (a) the slot of the agents' hash tag is resharded to another primary
#       by hand, one key at a time (so the moved key answers ASK on the old
#       primary meanwhile), then handed over (MOVED from then on). The
#       agents must not fall back for it (in fallback for under a fifth
#       of the resharding's 4 s each: a sync may time out on a busy
#       machine, but one that fails at each ASK is in fallback all along),
#       ASKING must reach the new
#       primary, and both agents must say they sync with the new primary
#       within 5 s;
#   (b) that primary is killed (SIGKILL): its replica takes over after the
#       cluster-node-timeout (1 s). Both agents must fall back, then be up
#       again on the promoted replica within 15 s.
# Over the whole flood the cluster-wide admitted total (nftables, behind
# sluice on each host) must stay within
#
#   accuracy.sh's bound (B + R(t + 2S) + R S/2 + R S/D + H)
#   + R/N x (the time each host spent in fallback)
#   + B (what asynchronous replication may lose of the bucket at failover)
#
# and above 80 % of B + R t (the agents lease again after both events).
# Prints the times (ASK window, MOVED followed, fallback and rejoin after
# the kill) and the totals.
#
# RCLUSTER_AGENT_BIN=FILE runs FILE's `cluster join` as the agents:
# build/tests/sluice-rcluster-noredirect (MOVED and ASK plain errors, the
# first owner kept) fails here.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/cluster/lib_rcluster.sh
. "$(dirname "$0")/lib_rcluster.sh"

RATE=1000
BURST=500
SYNC_MS=100
PPS=5000	# per host: 5 x R
FLOOD_S=25
NH=2
DIV=8		# SLUICE_CLUSTER_LOCAL_DIV
SRC=198.18.0.1
TAG_SLOT=59	# redis-cli cluster keyslot sluice (tests/unit/test_keyslot.c)
ASK_PAUSE=2	# seconds between the slot's keys moved: the ASK window
AGENT_BIN=${RCLUSTER_AGENT_BIN:-$SLUICE}
[[ -x $AGENT_BIN ]] || fail "$AGENT_BIN not built (make $AGENT_BIN)"

# The port of the node host N's agent syncs with, from its status.
where_port() { # N
	local w
	w=$(cfield "$1" redis)
	[[ $w == *", slot $TAG_SLOT on "* ]] || { echo "?"; return 0; }
	echo "${w##*:}"
}

# Until every host is up on node PORT (at most SECS): the seconds it took.
wait_on() { # PORT SECS WHAT
	local start end n all
	start=$(now)
	end=$(calc "$start + $2")
	while :; do
		all=1
		for ((n = 1; n <= NH; n++)); do
			[[ $(cfield "$n" mode) == up && $(where_port "$n") == "$1" ]] || all=0
		done
		((all)) && break
		if past "$end"; then
			for ((n = 1; n <= NH; n++)); do
				echo "host $n: $(hs "$n" -j cluster status 2>&1)" >&2
			done
			fail "$3: the agents are not up on :$1 within $2 s"
		fi
		sleep 0.05
	done
	calc "$(now) - $start" %.2f
}

fallback_s() { # N: seconds host N spent in fallback so far
	cfield "$1" fallback_seconds
}

cluster_init rc "$NH"
cluster_setup
rc_start
rc_acl "rc-$$-password"
pwfile=$NETNS_TMP/redis-password
install -m 0600 /dev/null "$pwfile"
echo "rc-$$-password" >"$pwfile"
url=$(rc_url)
REDIS_URL=${url/redis:\/\//redis://sluice@}
set_rule "$RATE" "$BURST"
for ((n = 1; n <= NH; n++)); do
	agent_start "$n" "$AGENT_BIN" --redis-cluster "$(rc_seeds)" --redis-password-file "$pwfile"
done
wait_cluster up "$NH" 10
owner=$(rc_owner "$TAG_SLOT")
[[ $owner =~ ^[0-9]+$ ]] || fail "no owner of slot $TAG_SLOT: $(rc_cli "$RC_PORT0" CLUSTER NODES)"
wait_on "$owner" 5 "at start" >/dev/null
ok "both agents up with $NH peers, on :$owner (the owner of slot $TAG_SLOT)"

nft_count_add flood "$SRC"
declare -A fb0=() fb1=() fb2=()
for ((n = 1; n <= NH; n++)); do
	fb0[$n]=$(fallback_s "$n")
done
a=$(align_at 1)
for ((n = 1; n <= NH; n++)); do
	flood_at "$n" "$NETNS_TMP/flood.$n" --src "$SRC" --count $((PPS * FLOOD_S)) --pps "$PPS" \
		--seconds $((FLOOD_S + 5)) --align "$a"
done
sleep 2
window_rates flood 2 1 2
echo "RESULT rcluster steady: the cluster admits $RATE_SUM/s (hosts: ${RATE_OF[*]:1}; R = $RATE)"
assert_near "$RATE_SUM" "$RATE" 20 "steady: the cluster's admitted rate"

# (a) The tag's slot to another primary: ASK while its keys move, MOVED after.
to=$(rc_primaries | grep -vx "$owner" | head -n 1)
[[ $to =~ ^[0-9]+$ ]] || fail "no other primary than :$owner"
for ((n = 1; n <= NH; n++)); do
	fb1[$n]=$(fallback_s "$n")
done
ask0=$(rc_calls "$to" asking)
try0=$(rc_errors "$owner" TRYAGAIN)
t0=$(now)
rc_move_slot "$TAG_SLOT" "$owner" "$to" "$ASK_PAUSE"
t1=$(now)
ask_s=$(calc "$t1 - $t0" %.2f)
moved_s=$(wait_on "$to" 5 "after the slot moved")
asks=$(($(rc_calls "$to" asking) - ask0))
echo "RESULT rcluster reshard :$owner -> :$to: ASK window $ask_s s ($asks ASKING on :$to); both agents on :$to ${moved_s} s after SETSLOT NODE"
declare -A fbr=()
for ((n = 1; n <= NH; n++)); do
	fbr[$n]=$(calc "$(fallback_s "$n") - ${fb1[$n]}" %.3f)
	echo "RESULT rcluster reshard: host $n in fallback ${fbr[$n]} s"
done
for ((n = 1; n <= NH; n++)); do
	assert_le "${fbr[$n]}" "$(calc "$ask_s / 5" %.2f)" "host $n: seconds in fallback during the resharding (ASK and MOVED followed)"
done
assert_ge "$asks" 1 "ASKING calls on the importing primary :$to"
# TRYAGAIN while a bucket's key had moved and its hosts' key not: each
# answered grant skipped, never a sync failed over it.
assert_ge "$(($(rc_errors "$owner" TRYAGAIN) - try0))" 1 "TRYAGAIN answers of :$owner while a bucket's two keys were apart"
for ((n = 1; n <= NH; n++)); do
	assert_eq "$(grep -c 'TRYAGAIN' "${AGENT_LOG[n]}" || true)" 0 "host $n: syncs failed over TRYAGAIN"
done
sleep 2
window_rates flood 2 1 2
echo "RESULT rcluster after the reshard: the cluster admits $RATE_SUM/s (hosts: ${RATE_OF[*]:1})"
assert_near "$RATE_SUM" "$RATE" 20 "after the reshard: the cluster's admitted rate"

# (b) The slot's primary killed: its replica takes over.
t2=$(now)
rc_kill "$to"
end=$(calc "$t2 + 5")
for ((n = 1; n <= NH; n++)); do
	wait_field "$n" mode fallback "$end" 0.02 "host $n: not in fallback 5 s after :$to was killed"
done
fb_s=$(calc "$(now) - $t2" %.2f)
end=$(calc "$t2 + 15")
while :; do
	new=$(rc_owner "$TAG_SLOT" "$owner")
	[[ $new =~ ^[0-9]+$ && $new != "$to" ]] && break
	past "$end" && fail "no replica took slot $TAG_SLOT over within 15 s: $(rc_cli "$owner" CLUSTER NODES)"
	sleep 0.1
done
promoted_s=$(calc "$(now) - $t2" %.2f)
up_s=$(wait_on "$new" 15 "after the failover")
up_s=$(calc "$(now) - $t2" %.2f)
echo "RESULT rcluster failover: :$to killed; both in fallback after $fb_s s; :$new serves slot $TAG_SLOT after $promoted_s s; both agents up on :$new after $up_s s (cluster-node-timeout ${RC_NODE_TIMEOUT_MS} ms)"
ok "both agents follow the failover to :$new"

flood_wait
sleep 0.2
PH_T=0
for ((n = 1; n <= NH; n++)); do
	out=$(cat "$NETNS_TMP/flood.$n")
	[[ $(flood_field "$out" .sent) == $((PPS * FLOOD_S)) ]] || fail "client $n sent $(flood_field "$out" .sent)"
	PH_T=$(calc "($(flood_field "$out" .seconds) > $PH_T) ? $(flood_field "$out" .seconds) : $PH_T")
done
admitted=$(nft_sum flood)
fb_total=0
for ((n = 1; n <= NH; n++)); do
	fb2[$n]=$(calc "$(fallback_s "$n") - ${fb0[$n]}" %.3f)
	fb_total=$(calc "$fb_total + ${fb2[$n]}" %.3f)
done
expected=$(calc "$BURST + $RATE * $PH_T" %.1f)
bound=$(calc "$(accuracy_bound "$NH") + $RATE / $NH * $fb_total + $BURST" %.1f)
echo "RESULT rcluster total: t=${PH_T}s admitted=$admitted expected=$expected ratio=$(calc "$admitted / $expected" %.4f) bound=$bound (fallback s per host: ${fb2[*]})"
assert_le "$admitted" "$bound" "admitted over the flood vs the bound"
assert_ge "$admitted" "$(calc "0.8 * $expected" %.0f)" "admitted over the flood vs 80 % of B + R x t"
echo "RESULT rcluster failed syncs per host: $(for ((n = 1; n <= NH; n++)); do printf 'h%s=%s ' "$n" "$(cfield "$n" sync_failures)"; done)"
agent_logs
