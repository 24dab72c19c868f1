# shellcheck shell=bash
# Helpers for the Redis Sentinel tests, over tests/cluster/lib.sh (source
# that first): in the test's Redis namespace, three redis-server (a primary
# and two replicas, on $REDIS_ADDR at the ports of SN_DATA_PORT) and three
# sentinels (`redis-server --sentinel`, ports SN_PORT), configured with
# doc/cluster.md's "Production setup" lines: the ACL user on every data
# node, the sentinel lines of the doc with the test's address.
#
#   sn_start                   the data nodes, replication up, the ACL user
#                              on each (password $SN_PW), then the sentinels,
#                              until each sees the others and both replicas
#   sn_url                     the agents' sentinel:// URL
#   sn_master                  HOST:PORT the sentinels' first answer names
#   sn_kill_data I             SIGKILL of data node I (0 = the first primary)
#   sn_rc PORT ARGS...         redis-cli at $REDIS_ADDR:PORT in the namespace
#   sn_settled PORT MASTER     data node PORT is a replica of MASTER (HOST:PORT), linked
# On a failure, the cleanup shows the tail of every server's log.

SN_MASTER=sluice
SN_DATA_PORT=(6379 6381 6382)
SN_PORT=(26379 26380 26381)
SN_DATA_PID=()
SN_PW=
SN_DOC=$SLUICE_ROOT/doc/cluster.md

sn_rc() { # PORT ARGS...
	local port=$1
	shift
	timeout 5 ip netns exec "$NS_REDIS" redis-cli --no-auth-warning -h "$REDIS_ADDR" -p "$port" "$@"
}

# Starts redis-server (or the sentinel, with --sentinel) with config CONF in
# the background; its PID into SN_LAST_PID and CL_PIDS (stopped by the
# cleanup).
SN_LAST_PID=
sn_spawn() { # CONF LOG [--sentinel]
	ip netns exec "$NS_REDIS" redis-server "$1" "${@:3}" >>"$2" 2>&1 &
	SN_LAST_PID=$!
	CL_PIDS+=("$SN_LAST_PID")
}

# Polls CMD (a function and its arguments) every 0.1 s until it succeeds;
# fails with WHAT after SECS.
sn_until() { # SECS WHAT CMD...
	local end
	end=$(calc "$(now) + $1")
	local what=$2
	shift 2
	until "$@"; do
		past "$end" && fail "$what"
		sleep 0.1
	done
}

sn_data_up() { # I
	[[ $(sn_rc "${SN_DATA_PORT[$1]}" PING 2>/dev/null) == PONG ]]
}

sn_replicas_up() { # the primary lists both replicas online
	[[ $(sn_rc "${SN_DATA_PORT[0]}" INFO replication 2>/dev/null | grep -c 'state=online') == 2 ]]
}

# One field of `SENTINEL master sluice` at sentinel I.
sn_master_field() { # I FIELD
	sn_rc "${SN_PORT[$1]}" SENTINEL master "$SN_MASTER" 2>/dev/null |
		awk -v f="$2" 'prev == f { print; exit } { prev = $0 }'
}

sn_sentinel_ready() { # I: it sees the two other sentinels and both replicas
	[[ $(sn_master_field "$1" num-other-sentinels) == 2 &&
		$(sn_master_field "$1" num-slaves) == 2 ]]
}

# The ACL user of doc/cluster.md, as written, PASSWORD replaced, on data node I.
sn_acl() { # I
	doc_acl "$SN_PW"
	[[ $(sn_rc "${SN_DATA_PORT[$1]}" "${ACL_WORDS[@]}") == OK ]] ||
		fail "ACL SETUSER from $SN_DOC refused by data node $1"
}

# The sentinel lines of doc/cluster.md (`sentinel ... sluice ...`), the
# doc's master address 10.0.0.5 6379 replaced by the test's primary.
sn_doc_lines() {
	grep -E '^sentinel [a-z-]+ sluice ' "$SN_DOC" |
		sed "s/ 10\.0\.0\.5 6379 / $REDIS_ADDR ${SN_DATA_PORT[0]} /"
}

sn_start() {
	local i conf lines
	command -v openssl >/dev/null || skip "openssl not installed"
	SN_PW=$(openssl rand -hex 16)
	for i in 0 1 2; do
		conf=$NETNS_TMP/data$i.conf
		cat >"$conf" <<-CONF
			bind $REDIS_ADDR
			port ${SN_DATA_PORT[i]}
			save ""
			appendonly no
			protected-mode no
			dir $NETNS_TMP
			dbfilename dump$i.rdb
		CONF
		((i == 0)) || echo "replicaof $REDIS_ADDR ${SN_DATA_PORT[0]}" >>"$conf"
		sn_spawn "$conf" "$NETNS_TMP/data$i.log"
		SN_DATA_PID[i]=$SN_LAST_PID
		sn_until 5 "data node $i (port ${SN_DATA_PORT[i]}) did not answer within 5 s" sn_data_up "$i"
		sn_acl "$i"
	done
	sn_until 10 "the replicas did not sync with the primary within 10 s" sn_replicas_up
	lines=$(sn_doc_lines)
	[[ $lines == *"sentinel monitor $SN_MASTER $REDIS_ADDR ${SN_DATA_PORT[0]} 2"* ]] ||
		fail "no 'sentinel monitor sluice 10.0.0.5 6379 2' line in $SN_DOC: $lines"
	for i in 0 1 2; do
		conf=$NETNS_TMP/sentinel$i.conf
		printf 'bind %s\nport %s\ndir %s\n%s\n' "$REDIS_ADDR" "${SN_PORT[i]}" "$NETNS_TMP" \
			"$lines" >"$conf"
		sn_spawn "$conf" "$NETNS_TMP/sentinel$i.log" --sentinel
	done
	for i in 0 1 2; do
		sn_until 20 "sentinel $i does not see 2 sentinels and 2 replicas within 20 s" \
			sn_sentinel_ready "$i"
	done
	ok "3 data nodes (primary :${SN_DATA_PORT[0]}) and 3 sentinels, from $SN_DOC's lines"
}

sn_url() {
	local i list=
	for i in 0 1 2; do
		list+=${list:+,}$REDIS_ADDR:${SN_PORT[i]}
	done
	echo "sentinel://sluice@$list/$SN_MASTER"
}

# What sentinel I answers for the master: HOST:PORT ("" when it does not).
sn_master_at() { # I
	sn_rc "${SN_PORT[$1]}" SENTINEL get-master-addr-by-name "$SN_MASTER" 2>/dev/null | paste -sd: -
}

sn_kill_data() { # I: SIGKILL, by PID
	local pid=${SN_DATA_PID[$1]} keep=() p
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	for p in "${CL_PIDS[@]}"; do
		[[ $p == "$pid" ]] || keep+=("$p")
	done
	CL_PIDS=("${keep[@]}")
	SN_DATA_PID[$1]=
}

sn_settled() { # PORT MASTER
	local info
	info=$(sn_rc "$1" INFO replication 2>/dev/null | tr -d '\r')
	[[ $info == *role:slave* && $info == *"master_host:${2%:*}"* &&
		$info == *"master_port:${2##*:}"* && $info == *master_link_status:up* ]]
}

# lib.sh's cleanup calls it when the test failed.
cluster_fail_hook() {
	local f
	for f in "$NETNS_TMP"/data*.log "$NETNS_TMP"/sentinel*.log; do
		[[ -s $f ]] && { echo "--- $(basename "$f") (last 12 lines)"; tail -n 12 "$f"; }
	done >&2
	return 0
}
