# shellcheck shell=bash
# Helpers for a Redis Cluster in the cluster tests' Redis namespace (source
# it after lib.sh, after cluster_init and cluster_setup):
#
#   rc_start               RC_NODES redis-server, cluster-enabled, on
#                          $REDIS_ADDR ports RC_PORT0.., made one cluster
#                          by `redis-cli --cluster create --cluster-replicas 1`
#   rc_cli PORT ARGS...    redis-cli against node PORT
#   rc_owner SLOT          the port of the primary that serves SLOT (as node RC_PORT0... sees it)
#   rc_id PORT             node PORT's cluster id
#   rc_primaries           the ports of the primaries, one a line
#   rc_move_slot SLOT FROM TO PAUSE   resharding by hand: IMPORTING on TO,
#                          MIGRATING on FROM, the slot's keys MIGRATEd one
#                          at a time PAUSE seconds apart (ASK meanwhile; a
#                          bucket's :hosts key RC_SPLIT s after it: TRYAGAIN),
#   rc_errors PORT ERR     errors ERR node PORT answered (INFO errorstats)
#                          then SETSLOT NODE on every primary (MOVED after)
#   rc_kill PORT           SIGKILL of node PORT (by its PID)
#   rc_acl PASSWORD        doc/cluster.md's ACL user (its Redis Cluster
#                          commands included), on every node (ACLs are per node)
#   rc_seeds               the agents' --redis-cluster list (every node but the first)
#   rc_url                 the agents' URL (the first node)
#
# Every server is started here, in the background, its PID in CL_PIDS
# (lib.sh's cleanup stops it); each keeps its files in $NETNS_TMP/rcN.

RC_NODES=6
RC_PORT0=7000
RC_SPLIT=${RC_SPLIT:-0.5}	# seconds a bucket's key moves before its :hosts key
RC_NODE_TIMEOUT_MS=${RC_NODE_TIMEOUT_MS:-1000}
declare -A RC_PID_IDX=()

rc_cli() { # PORT ARGS...
	local port=$1
	shift
	timeout 10 ip netns exec "$NS_REDIS" redis-cli -h "$REDIS_ADDR" -p "$port" "$@"
}

rc_url() { echo "redis://$REDIS_ADDR:$RC_PORT0"; }

rc_seeds() {
	local i s=
	for ((i = 1; i < RC_NODES; i++)); do
		s+="${s:+,}$REDIS_ADDR:$((RC_PORT0 + i))"
	done
	echo "$s"
}

# One node on PORT: replicas may take over from any primary whatever their
# lag (cluster-replica-validity-factor 0), so a kill always fails over.
rc_node_start() { # PORT
	local port=$1 dir=$NETNS_TMP/rc$1 i
	mkdir -p "$dir"
	ip netns exec "$NS_REDIS" redis-server --bind "$REDIS_ADDR" --port "$port" \
		--cluster-enabled yes --cluster-config-file "$dir/nodes.conf" \
		--cluster-node-timeout "$RC_NODE_TIMEOUT_MS" --cluster-replica-validity-factor 0 \
		--save '' --appendonly no --protected-mode no --daemonize no \
		--dir "$dir" >>"$dir/log" 2>&1 &
	RC_PID_IDX[$port]=${#CL_PIDS[@]}
	CL_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[[ $(rc_cli "$port" PING 2>/dev/null) == PONG ]] && return 0
		kill -0 "${CL_PIDS[${RC_PID_IDX[$port]}]}" 2>/dev/null ||
			{ cat "$dir/log" >&2; fail "redis-server :$port exited at startup"; }
		sleep 0.05
	done
	fail "redis-server :$port did not answer within 5 s"
}

# Until every node says cluster_state:ok and sees SLOT served by the same
# primary (at most SECS).
rc_wait_ok() { # SECS
	local end i state
	end=$(calc "$(now) + $1")
	while :; do
		state=ok
		for ((i = 0; i < RC_NODES; i++)); do
			[[ -n ${CL_PIDS[${RC_PID_IDX[$((RC_PORT0 + i))]}]} ]] || continue
			rc_cli $((RC_PORT0 + i)) CLUSTER INFO 2>/dev/null | grep -q '^cluster_state:ok' ||
				state=not
		done
		[[ $state == ok ]] && return 0
		past "$end" && fail "the Redis Cluster is not ok within $1 s"
		sleep 0.1
	done
}

rc_start() {
	local i nodes=()
	for ((i = 0; i < RC_NODES; i++)); do
		rc_node_start $((RC_PORT0 + i))
		nodes+=("$REDIS_ADDR:$((RC_PORT0 + i))")
	done
	timeout 60 ip netns exec "$NS_REDIS" redis-cli --cluster create "${nodes[@]}" \
		--cluster-replicas 1 --cluster-yes >"$NETNS_TMP/rc-create.log" 2>&1 ||
		{ cat "$NETNS_TMP/rc-create.log" >&2; fail "redis-cli --cluster create"; }
	rc_wait_ok 20
}

rc_id() { rc_cli "$1" CLUSTER MYID; }

# The primaries, as node ASK (default the first live one) lists them.
rc_primaries() { # [ASK]
	rc_cli "${1:-$RC_PORT0}" CLUSTER NODES |
		awk '$3 ~ /master/ && $3 !~ /fail/ { split($2, a, "[:@]"); print a[2] }'
}

# The primary serving SLOT, as node ASK (default RC_PORT0) sees it (CLUSTER
# NODES: a primary's line ends with its slots, "A-B" or "A" each).
rc_owner() { # SLOT [ASK]
	rc_cli "${2:-$RC_PORT0}" CLUSTER NODES | awk -v s="$1" '
		$3 ~ /master/ && $3 !~ /fail/ {
			for (i = 9; i <= NF; i++) {
				if ($i ~ /^\[/) continue
				n = split($i, r, "-"); lo = r[1]; hi = n > 1 ? r[2] : r[1]
				if (lo + 0 <= s + 0 && s + 0 <= hi + 0) { split($2, a, "[:@]"); print a[2]; exit }
			}
		}'
}

# Resharding SLOT from primary FROM to primary TO by hand, as
# `redis-cli --cluster reshard` does it, but one key at a time with PAUSE
# seconds between: meanwhile a key already moved answers ASK on FROM.
rc_move_slot() { # SLOT FROM TO PAUSE
	local slot=$1 from=$2 to=$3 pause=$4 from_id to_id key keys p k
	from_id=$(rc_id "$from")
	to_id=$(rc_id "$to")
	[[ $(rc_cli "$to" CLUSTER SETSLOT "$slot" IMPORTING "$from_id") == OK ]] || fail "SETSLOT IMPORTING on :$to"
	[[ $(rc_cli "$from" CLUSTER SETSLOT "$slot" MIGRATING "$to_id") == OK ]] || fail "SETSLOT MIGRATING on :$from"
	mapfile -t keys < <(rc_cli "$from" CLUSTER GETKEYSINSLOT "$slot" 100)
	((${#keys[@]})) || fail "no key in slot $slot on :$from"
	echo "rc_move_slot: ${#keys[@]} keys of slot $slot: ${keys[*]}"
	# A bucket's key moves RC_SPLIT seconds before its hosts' key
	# (KEY:hosts), as two batches of a resharding tool may move them: the
	# grant script, finding one moved and the other not, is answered
	# TRYAGAIN meanwhile (the agent skips that grant, it does not fall back).
	for key in "${keys[@]}"; do
		[[ $key == *:hosts ]] && continue
		for k in "$key" "$key:hosts"; do
			# NOKEY: it expired since GETKEYSINSLOT (a hosts' key lives
			# 3 S after its bucket's last ask).
			p=$(rc_cli "$from" MIGRATE "$REDIS_ADDR" "$to" "" 0 5000 KEYS "$k")
			[[ $p == OK || $p == NOKEY ]] || fail "MIGRATE $k from :$from to :$to: $p"
			[[ $k == *:hosts ]] || sleep "$RC_SPLIT"
		done
		sleep "$pause"
	done
	# Keys made on FROM meanwhile (none expected: a new key goes to TO by ASK).
	mapfile -t keys < <(rc_cli "$from" CLUSTER GETKEYSINSLOT "$slot" 100)
	for key in "${keys[@]}"; do
		rc_cli "$from" MIGRATE "$REDIS_ADDR" "$to" "" 0 5000 KEYS "$key" >/dev/null
	done
	[[ $(rc_cli "$to" CLUSTER SETSLOT "$slot" NODE "$to_id") == OK ]] || fail "SETSLOT NODE on :$to"
	[[ $(rc_cli "$from" CLUSTER SETSLOT "$slot" NODE "$to_id") == OK ]] || fail "SETSLOT NODE on :$from"
	for p in $(rc_primaries "$to"); do
		[[ $p == "$from" || $p == "$to" ]] || rc_cli "$p" CLUSTER SETSLOT "$slot" NODE "$to_id" >/dev/null
	done
}

rc_kill() { # PORT
	local i=${RC_PID_IDX[$1]}
	[[ -n ${CL_PIDS[i]} ]] || fail "rc_kill: node :$1 is not running"
	kill -KILL "${CL_PIDS[i]}"
	wait "${CL_PIDS[i]}" 2>/dev/null || true
	CL_PIDS[i]=
}

# The agent's ACL user of doc/cluster.md's Production setup (CLUSTER
# SLOTS and ASKING included), as written, on every node.
rc_acl() { # PASSWORD
	local i
	doc_acl "$1"
	for ((i = 0; i < RC_NODES; i++)); do
		[[ $(rc_cli $((RC_PORT0 + i)) "${ACL_WORDS[@]}") == OK ]] ||
			fail "ACL SETUSER on :$((RC_PORT0 + i))"
	done
}

# Errors ERR (TRYAGAIN, MOVED, ...) node PORT answered, from INFO errorstats.
rc_errors() { # PORT ERR
	rc_cli "$1" INFO errorstats | tr -d '\r' |
		awk -F'[:=,]' -v e="errorstat_$2" '$1 == e { print $3; found = 1 } END { if (!found) print 0 }'
}

# Calls of COMMAND (lower case) node PORT served, from INFO commandstats.
rc_calls() { # PORT COMMAND
	rc_cli "$1" INFO commandstats | tr -d '\r' |
		awk -F'[:=,]' -v c="cmdstat_$2" '$1 == c { print $3; found = 1 } END { if (!found) print 0 }'
}
