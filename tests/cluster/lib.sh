# shellcheck shell=bash
# shellcheck disable=SC2034 # PH_*, RATE_*, OUT, ERR: for the scripts that source this
# Helpers for the cluster tests: a Redis namespace and H "hosts",
# each a namespace with sluice attached natively on the veth facing its own
# client namespace, joined to Redis by a second veth on a bridge inside the
# Redis namespace. Every client floods the SAME source at its host, so the
# hosts together see one source, as behind a load balancer.
#
#   198.19.0.254  redis-server, on bridge $BR in $NS_REDIS
#   198.19.0.N    host N's leg to Redis ($IF_D[N] in $NS_H[N]; $IF_B[N] on the bridge)
#   $IF_R[N]      host N's client-facing veth, sluice attached (native XDP), and
#                 a netdev ingress nftables chain behind it that counts (and
#                 drops) what sluice passed
#   $IF_T[N]      its peer in client namespace $NS_C[N], where sluice-flood runs
#
# Source it (under set -euo pipefail), then:
#   cluster_init TAG H         checks, names, EXIT trap (TAG: 1-2 of [a-z0-9])
#   cluster_setup              namespaces, links, sluice attached on every host
#   (redis_bridge, host_leg N DEV, host_chain N: its steps, for lib_scale.sh)
#   redis_start, redis_kill, redis_cli ARGS...
#   hs N ARGS...               build/sluice -i $IF_R[N] ARGS in host N's namespace
#   agent_start N [BIN] [ARGS...]  `cluster join` in the background (AGENT_PID[N])
#   agent_stop N, agent_kill N     SIGTERM (must exit 0) / SIGKILL
#   cstatus N FILTER           jq -r FILTER over `cluster status -j` of host N
#   wait_cluster MODE PEERS SECS [HOSTS...]   until every host says so
#   wait_field N KEY VALUE END POLL WHAT   until host N's status says KEY VALUE
#   wait_listen N ADDR PORT    until host N can connect to ADDR:PORT
#   past END                   whether now() is past END
#   accuracy_bound H           accuracy.sh's bound for H hosts over $PH_T s
#   nft_count_add NAME SRC     a counter on every host for UDP from SRC
#   nft_count N NAME           host N's counter
#   flood_at N FILE ARGS...    bounded sluice-flood from client N at host N (bg)
#   flood_wait                 waits for every flood started, each must exit 0
#   mono                       CLOCK_MONOTONIC, seconds (what --align uses)
#   exporter_at N              sluice exporter -i $IF_R[N] in host N's namespace
#   scrape_at N                its /metrics
# and tests/lib/netns.sh's ok/fail/skip/assert_*/calc/now/netns_tmp.

# shellcheck source=tests/lib/netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/netns.sh"

REDIS_ADDR=198.19.0.254
REDIS_PORT=6379
REDIS_URL=redis://$REDIS_ADDR:$REDIS_PORT
SLUICE_RACY_CLUSTER=${SLUICE_RACY_CLUSTER:-$SLUICE_ROOT/build/tests/sluice-racy-cluster}
DPORT=5001
EXPORTER_PORT=9464

H=0
NS_REDIS=
BR=
REDIS_PID=
NS_H=() NS_C=() IF_R=() IF_T=() IF_D=() IF_B=() MAC_R=()
AGENT_PID=() AGENT_LOG=() EXPORTER_PIDS=() FLOOD_PIDS=()
CL_PIDS=()

cluster_init() { # TAG H
	local tag=${1:?cluster_init needs a tag} cmd n
	H=${2:?cluster_init needs a host count}
	[[ $tag =~ ^[a-z0-9]{1,2}$ ]] || fail "cluster_init: tag '$tag' must be 1-2 of [a-z0-9]"
	[[ $H =~ ^[1-9]$ ]] || fail "cluster_init: host count '$H'"
	((EUID == 0)) || skip "needs root (network namespaces, XDP)"
	for cmd in ip nsenter jq nft awk perl redis-server redis-cli timeout curl; do
		command -v "$cmd" >/dev/null || skip "$cmd not installed (tools/install-deps.sh)"
	done
	[[ -x $SLUICE ]] || fail "$SLUICE not built: run make"
	[[ -x $SLUICE_FLOOD ]] || fail "$SLUICE_FLOOD not built: run make build/sluice-flood"
	if ! mountpoint -q /sys/fs/bpf; then
		mount -t bpf bpf /sys/fs/bpf || skip "cannot mount bpffs at /sys/fs/bpf"
	fi
	local p=${NETNS_PREFIX:-slcl}-$tag-$$
	NS_REDIS=$p-redis
	BR=sl$tag$$br
	for ((n = 1; n <= H; n++)); do
		NS_H[n]=$p-h$n
		NS_C[n]=$p-c$n
		IF_R[n]=sl$tag$$${n}r
		IF_T[n]=sl$tag$$${n}t
		IF_D[n]=sl$tag$$${n}d
		IF_B[n]=sl$tag$$${n}b
	done
	NETNS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/slcl-$tag.XXXXXX") || fail "mktemp failed"
	trap cluster_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# The agent's ACL user as doc/cluster.md's Production setup writes it,
# >PASSWORD replaced by the test's: its words into ACL_WORDS (for
# redis-cli, after the connection's options).
ACL_DOC=$SLUICE_ROOT/doc/cluster.md
ACL_WORDS=()
doc_acl() { # PASSWORD
	local acl
	acl=$(grep -m1 '^ACL SETUSER sluice ' "$ACL_DOC") || fail "no 'ACL SETUSER sluice' line in $ACL_DOC"
	read -ra ACL_WORDS <<<"${acl//>PASSWORD/>$1}"
}

# Stops (by PID) what the test started, in order: floods, agents (while
# their pins exist, so they can write STOPPED), exporters, Redis; then
# detaches sluice and removes the namespaces and pins.
cluster_cleanup() {
	local rc=$? pid n i
	trap - EXIT INT TERM
	set +e
	for pid in "${FLOOD_PIDS[@]}" "${AGENT_PID[@]}" "${EXPORTER_PIDS[@]}" "${CL_PIDS[@]}" $REDIS_PID; do
		[[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${FLOOD_PIDS[@]}" "${AGENT_PID[@]}" "${EXPORTER_PIDS[@]}" "${CL_PIDS[@]}" $REDIS_PID; do
		[[ -n $pid ]] || continue
		for ((i = 0; i < 30; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	for ((n = 1; n <= H; n++)); do
		if [[ -d $SLUICE_PIN_ROOT/${IF_R[n]} && -e /run/netns/${NS_H[n]} ]]; then
			nsenter --net="/run/netns/${NS_H[n]}" "$SLUICE" detach "${IF_R[n]}" >/dev/null 2>&1
		fi
		ip netns del "${NS_C[n]}" 2>/dev/null
		ip netns del "${NS_H[n]}" 2>/dev/null
		if [[ -d $SLUICE_PIN_ROOT/${IF_R[n]} ]]; then
			"$SLUICE" detach --force "${IF_R[n]}" >/dev/null 2>&1 || rm -rf "${SLUICE_PIN_ROOT:?}/${IF_R[n]}"
		fi
	done
	[[ -n $NS_REDIS ]] && ip netns del "$NS_REDIS" 2>/dev/null
	if ((rc != 0)) && [[ -n $NETNS_TMP ]]; then
		# A test's own logs (lib_sentinel.sh's servers), before they go.
		declare -F cluster_fail_hook >/dev/null && cluster_fail_hook
		for f in "$NETNS_TMP"/agent*.log; do
			[[ -s $f ]] && { echo "--- $(basename "$f") (last 15 lines)"; tail -n 15 "$f"; }
		done >&2
	fi
	[[ -n $NETNS_TMP ]] && rm -rf "$NETNS_TMP"
	exit "$rc"
}

cluster_setup() {
	local n
	redis_bridge
	for ((n = 1; n <= H; n++)); do
		ip netns add "${NS_H[n]}" || fail "cannot create namespace ${NS_H[n]}"
		ip netns add "${NS_C[n]}" || fail "cannot create namespace ${NS_C[n]}"
		netns_quiet "${NS_H[n]}"
		netns_quiet "${NS_C[n]}"
		# client <-> host: the flood's path, sluice on the host end
		ip -n "${NS_C[n]}" link add "${IF_T[n]}" type veth peer name "${IF_R[n]}" netns "${NS_H[n]}" ||
			fail "cannot create veth ${IF_T[n]}/${IF_R[n]}"
		ip -n "${NS_C[n]}" link set "${IF_T[n]}" up || fail "link up ${IF_T[n]}"
		ip -n "${NS_H[n]}" link set "${IF_R[n]}" up || fail "link up ${IF_R[n]}"
		host_leg "$n" "${IF_D[n]}"
		hs "$n" attach --mode native "${IF_R[n]}" >/dev/null || fail "sluice attach on host $n"
		host_chain "$n"
	done
}

# The Redis namespace and its bridge, Redis's address on it.
redis_bridge() {
	ip netns add "$NS_REDIS" || fail "cannot create namespace $NS_REDIS"
	netns_quiet "$NS_REDIS"
	ip -n "$NS_REDIS" link add "$BR" type bridge || fail "cannot create bridge $BR"
	ip -n "$NS_REDIS" addr add "$REDIS_ADDR/24" dev "$BR" || fail "address on $BR"
	ip -n "$NS_REDIS" link set "$BR" up || fail "link up $BR"
}

# Host N's leg to Redis: veth DEV in host N (198.19.0.N) to $IF_B[N] on
# the bridge.
host_leg() { # N DEV
	local n=$1 dev=$2
	ip -n "${NS_H[n]}" link add "$dev" type veth peer name "${IF_B[n]}" netns "$NS_REDIS" ||
		fail "cannot create veth $dev/${IF_B[n]}"
	ip -n "${NS_H[n]}" addr add "198.19.0.$n/24" dev "$dev" || fail "address on $dev"
	ip -n "${NS_H[n]}" link set "$dev" up || fail "link up $dev"
	ip -n "$NS_REDIS" link set "${IF_B[n]}" master "$BR" || fail "${IF_B[n]} into $BR"
	ip -n "$NS_REDIS" link set "${IF_B[n]}" up || fail "link up ${IF_B[n]}"
}

# MAC_R[N], and the netdev ingress chain on $IF_R[N] (behind sluice) that
# nft_count_add's counters go into.
host_chain() { # N
	local n=$1
	MAC_R[n]=$(ip -n "${NS_H[n]}" -j link show dev "${IF_R[n]}" | jq -r '.[0].address')
	[[ ${MAC_R[n]} =~ ^[0-9a-f:]{17}$ ]] || fail "cannot read the MAC of ${IF_R[n]}"
	ip netns exec "${NS_H[n]}" nft -f - <<-EOF || fail "nftables ingress chain on host $n"
		table netdev sluice_cl {
			chain ingress {
				type filter hook ingress device "${IF_R[n]}" priority 0; policy accept;
			}
		}
	EOF
}

# sluice on host N (nsenter: the host's bpffs stays visible).
hs() { # N ARGS...
	local n=$1
	shift
	nsenter --net="/run/netns/${NS_H[n]}" "$SLUICE" -i "${IF_R[n]}" "$@"
}

# CLOCK_MONOTONIC in seconds, the clock of sluice-flood's --align.
mono() { perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e 'printf "%.6f\n", clock_gettime(CLOCK_MONOTONIC)'; }

redis_start() {
	local i log=$NETNS_TMP/redis.log
	ip netns exec "$NS_REDIS" redis-server --bind "$REDIS_ADDR" --port "$REDIS_PORT" \
		--save '' --appendonly no --protected-mode no --daemonize no \
		--dir "$NETNS_TMP" >>"$log" 2>&1 &
	REDIS_PID=$!
	for ((i = 0; i < 100; i++)); do
		[[ $(redis_cli PING 2>/dev/null) == PONG ]] && return 0
		kill -0 "$REDIS_PID" 2>/dev/null || { cat "$log" >&2; fail "redis-server exited at startup"; }
		sleep 0.05
	done
	fail "redis-server did not answer within 5 s"
}

redis_kill() {
	[[ -n $REDIS_PID ]] || fail "redis_kill: Redis is not running"
	kill -KILL "$REDIS_PID"
	wait "$REDIS_PID" 2>/dev/null || true
	REDIS_PID=
}

redis_cli() { timeout 5 ip netns exec "$NS_REDIS" redis-cli -h "$REDIS_ADDR" -p "$REDIS_PORT" "$@"; }

# The agent on host N: `cluster join` with --node hN --sync $SYNC_MS, from
# BIN (default build/sluice), in the background; extra ARGS follow.
agent_start() { # N [BIN [ARGS...]]
	local n=$1 bin=${2:-$SLUICE}
	shift 2 || shift
	AGENT_LOG[n]=$NETNS_TMP/agent$n.log
	nsenter --net="/run/netns/${NS_H[n]}" "$bin" -i "${IF_R[n]}" cluster join "$REDIS_URL" \
		--node "h$n" --sync "${SYNC_MS:?}" "$@" >>"${AGENT_LOG[n]}" 2>&1 &
	AGENT_PID[n]=$!
}

agent_stop() { # N: SIGTERM, must exit 0
	local n=$1 rc=0
	[[ -n ${AGENT_PID[n]} ]] || fail "agent_stop: no agent on host $n"
	kill -TERM "${AGENT_PID[n]}" || fail "the agent of host $n is gone before SIGTERM"
	wait "${AGENT_PID[n]}" || rc=$?
	AGENT_PID[n]=
	((rc == 0)) || { cat "${AGENT_LOG[n]}" >&2; fail "agent of host $n exited $rc on SIGTERM, want 0"; }
}

agent_kill() { # N: SIGKILL
	local n=$1
	[[ -n ${AGENT_PID[n]} ]] || fail "agent_kill: no agent on host $n"
	kill -KILL "${AGENT_PID[n]}"
	wait "${AGENT_PID[n]}" 2>/dev/null || true
	AGENT_PID[n]=
}

cstatus() { # N FILTER
	local out
	out=$(hs "$1" -j cluster status) || fail "cluster status on host $1 failed"
	jq -r "$2" <<<"$out" || fail "cluster status on host $1: bad filter '$2' for $out"
}

# One scalar of `cluster status -j` without jq (whose start-up costs tens of
# ms on a busy machine): for the polling loops, which time transitions.
cfield() { # N KEY...: their values, space-separated
	local out re k v vals=() n=$1
	shift
	out=$(hs "$n" -j cluster status) || fail "cluster status on host $n failed"
	for k in "$@"; do
		re="\"$k\":(\"[^\"]*\"|[^,}]*)"
		[[ $out =~ $re ]] || fail "cluster status on host $n: no '$k' in $out"
		v=${BASH_REMATCH[1]}
		v=${v#\"}
		vals+=("${v%\"}")
	done
	echo "${vals[*]}"
}

# Waits up to SECS until every host (default all) has mode MODE and, unless
# PEERS is -, that many peers.
wait_cluster() { # MODE PEERS SECS [HOSTS...]
	local mode=$1 peers=$2 secs=$3 n got end
	shift 3
	local hosts=("$@")
	((${#hosts[@]})) || mapfile -t hosts < <(seq 1 "$H")
	end=$(calc "$(now) + $secs")
	while :; do
		local all=1
		for n in "${hosts[@]}"; do
			got=$(cfield "$n" mode peers)
			if [[ ${got% *} != "$mode" || ($peers != - && ${got#* } != "$peers") ]]; then
				all=0
				break
			fi
		done
		((all)) && return 0
		if past "$end"; then
			for n in "${hosts[@]}"; do
				echo "host $n: $(hs "$n" -j cluster status 2>&1)" >&2
			done
			fail "hosts ${hosts[*]} not '$mode' with $peers peers within ${secs}s (host $n: $got)"
		fi
		sleep 0.05
	done
}

# Whether now() is past END (seconds, now()'s clock).
past() { # END
	awk -v a="$(now)" -v b="$1" 'BEGIN { exit !(a > b) }'
}

# Polls host N's `cluster status` (cfield) every POLL seconds until KEY is
# VALUE; fails with WHAT and the status once now() is past END.
wait_field() { # N KEY VALUE END POLL WHAT
	while [[ $(cfield "$1" "$2") != "$3" ]]; do
		past "$4" && fail "$6: $(hs "$1" -j cluster status)"
		sleep "$5"
	done
	return 0
}

# Waits (at most 50 tries) until host N can connect to ADDR:PORT, a server
# the test started in the background.
wait_listen() { # N ADDR PORT
	local i
	for ((i = 0; i < 50; i++)); do
		ip netns exec "${NS_H[$1]}" timeout 1 bash -c "echo >/dev/tcp/$2/$3" 2>/dev/null && break
		sleep 0.1
	done
	return 0
}

nft_count_add() { # NAME SRC: on every host
	local name=$1 src=$2 n
	for ((n = 1; n <= H; n++)); do
		ip netns exec "${NS_H[n]}" nft add counter netdev sluice_cl "$name" ||
			fail "nftables counter $name on host $n"
		ip netns exec "${NS_H[n]}" nft add rule netdev sluice_cl ingress \
			ip saddr "$src" udp dport "$DPORT" counter name "$name" drop ||
			fail "nftables rule $name on host $n"
	done
}

nft_count() { # N NAME
	ip netns exec "${NS_H[$1]}" nft -j list counter netdev sluice_cl "$2" |
		jq -er '.nftables[] | select(.counter) | .counter.packets' ||
		fail "cannot read nftables counter $2 on host $1"
}

# Sum of counter NAME over hosts 1..H.
nft_sum() { # NAME
	local n s=0
	for ((n = 1; n <= H; n++)); do
		s=$((s + $(nft_count "$n" "$1")))
	done
	echo "$s"
}

# sluice-flood from client N at host N, in the background, JSON line to FILE.
flood_at() { # N FILE ARGS...
	local n=$1 out=$2
	shift 2
	ip netns exec "${NS_C[n]}" "$SLUICE_FLOOD" --iface "${IF_T[n]}" --dst-mac "${MAC_R[n]}" \
		--dport "$DPORT" "$@" >"$out" &
	FLOOD_PIDS+=($!)
}

flood_wait() {
	local pid rc
	for pid in "${FLOOD_PIDS[@]}"; do
		rc=0
		wait "$pid" || rc=$?
		((rc == 0)) || fail "a flood exited $rc"
	done
	FLOOD_PIDS=()
}

# An --align argument for sluice-flood that starts every flood at the same
# CLOCK_MONOTONIC moment, LEAD seconds from now.
align_at() { # LEAD
	awk -v t="$(mono)" -v l="$1" 'BEGIN { s = t + l; printf "60+%.3f", s - 60 * int(s / 60) }'
}

exporter_at() { # N
	local n=$1 i pid log=$NETNS_TMP/exporter$1.log
	nsenter --net="/run/netns/${NS_H[n]}" "$SLUICE" exporter -i "${IF_R[n]}" \
		--listen "127.0.0.1:$EXPORTER_PORT" >"$log" 2>&1 &
	pid=$!
	EXPORTER_PIDS+=("$pid")
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "the exporter on host $n exited"; }
		scrape_at "$n" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "the exporter on host $n did not answer within 10 s"
}

scrape_at() { # N
	ip netns exec "${NS_H[$1]}" curl -sS --max-time 5 "http://127.0.0.1:$EXPORTER_PORT/metrics"
}

# Value of one series (the line's first field exactly) in a scrape, or "absent".
metric() { # TEXT SERIES
	SERIES=$2 awk '$1 == ENVIRON["SERIES"] { print $2; found = 1 }
		END { if (!found) print "absent" }' <<<"$1"
}

# The --cluster rule of these tests (CLUSTER_PLAIN=1: the same rule without
# --cluster, and no agent; how a test's arithmetic is checked on one host).
RULE_CIDR=198.18.0.0/15
set_rule() { # RATE BURST: on every host
	local n out
	for ((n = 1; n <= H; n++)); do
		if [[ ${CLUSTER_PLAIN:-0} == 1 ]]; then
			hs "$n" limit set "$RULE_CIDR" --rate "$1" --burst "$2" >/dev/null ||
				fail "limit set on host $n"
		else
			out=$(hs "$n" limit set "$RULE_CIDR" --rate "$1" --burst "$2" --cluster 2>&1) ||
				fail "limit set --cluster on host $n: $out"
		fi
	done
}

# accuracy.sh's bound on what H hosts admit over $PH_T s of a flood
# (RATE, BURST, SYNC_MS, DIV as the test sets them): see there.
accuracy_bound() { # H
	calc "$BURST + $RATE * ($PH_T + 2 * $SYNC_MS / 1000) + $RATE * $SYNC_MS / 2000 + $RATE * $SYNC_MS / 1000 / $DIV + $1" %.1f
}

# The rule's passed count on host N (limit list -j).
rule_passed() { # N
	local out
	out=$(hs "$1" -j limit list) || fail "limit list on host $1"
	jq -er --arg c "$RULE_CIDR" '.[] | select(.cidr == $c) | .passed' <<<"$out" ||
		fail "no rule $RULE_CIDR on host $1: $out"
}

# One measured flood: client N (for each N of HOSTS) floods source SRC at its
# host at PPS packets/s for SECS seconds, all starting at the same moment.
# Checks on every flooding host that sluice's per-source and per-rule counts
# equal the nftables counter behind it and that passed + dropped = sent.
# Sets PH_T (seconds from the first packet to the last, cluster-wide),
# PH_ADMITTED (nftables, summed), PH_SENT, PH_PASSED[N] (N flooding) and
# PH_OPS[N] (Redis commands per second of host N's agent over the flood, from
# `cluster status -j`, for every host 1..H). PH_LEAD (seconds, default 1):
# how long before the floods' common start they are launched (more hosts
# need longer: a flood launched after it fails the phase). A function
# ph_mark, where defined, is called with "start" about when the floods
# start and "end" when they are done (a bench samples Redis there).
# PH_NO_OPS=1 skips PH_OPS (two `cluster status` per host: many hosts
# would spend a CPU on them while the floods run).
PH_T=0 PH_ADMITTED=0 PH_SENT=0
PH_OPS=() PH_PASSED=()
run_phase() { # NAME SRC PPS SECS HOSTS...
	local name=$1 src=$2 pps=$3 secs=$4 n a p0 p1 out q passed dropped sent
	shift 4
	local hosts=("$@")
	local -A rp0 ops0
	nft_count_add "$name" "$src"
	for n in "${hosts[@]}"; do
		rp0[$n]=$(rule_passed "$n")
	done
	a=$(align_at "${PH_LEAD:-1}")
	for n in "${hosts[@]}"; do
		flood_at "$n" "$NETNS_TMP/$name.$n" --src "$src" --count $((pps * secs)) \
			--pps "$pps" --seconds $((secs + 3)) --align "$a"
	done
	# The agents' Redis commands from (about) the floods' start to their end.
	sleep "${PH_LEAD:-1}"
	p0=$(now)
	[[ $(type -t ph_mark) != function ]] || ph_mark start
	PH_OPS=() PH_PASSED=()
	for ((n = 1; n <= H; n++)); do
		ops0[$n]=0
		[[ ${CLUSTER_PLAIN:-0} == 1 || ${PH_NO_OPS:-0} == 1 ]] || ops0[$n]=$(cfield "$n" redis_ops)
	done
	flood_wait
	p1=$(now)
	[[ $(type -t ph_mark) != function ]] || ph_mark end
	for ((n = 1; n <= H; n++)); do
		PH_OPS[n]=0
		[[ ${CLUSTER_PLAIN:-0} == 1 || ${PH_NO_OPS:-0} == 1 ]] ||
			PH_OPS[n]=$(calc "($(cfield "$n" redis_ops) - ${ops0[$n]}) / ($p1 - $p0)" %.1f)
	done
	sleep 0.2 # the last frames leave the veths' rings
	PH_T=0 PH_ADMITTED=0 PH_SENT=0
	for n in "${hosts[@]}"; do
		out=$(cat "$NETNS_TMP/$name.$n")
		echo "$name: host $n flood: $out"
		sent=$(flood_field "$out" .sent)
		[[ $sent == $((pps * secs)) ]] || fail "$name: client $n sent $sent of $((pps * secs))"
		PH_T=$(calc "($(flood_field "$out" .seconds) > $PH_T) ? $(flood_field "$out" .seconds) : $PH_T")
		q=$(hs "$n" -j query "$src") || fail "query $src on host $n"
		passed=$(jq -r .passed <<<"$q")
		dropped=$(jq -r .dropped <<<"$q")
		PH_PASSED[n]=$(nft_count "$n" "$name")
		[[ $passed == "${PH_PASSED[n]}" ]] ||
			fail "$name: host $n: sluice passed $passed, nftables counted ${PH_PASSED[n]}"
		[[ $((passed + dropped)) == "$sent" ]] ||
			fail "$name: host $n: passed $passed + dropped $dropped != sent $sent"
		q=$(($(rule_passed "$n") - rp0[$n]))
		[[ $q == "$passed" ]] ||
			fail "$name: host $n: the rule's passed grew by $q, the source passed $passed"
		PH_ADMITTED=$((PH_ADMITTED + passed))
		PH_SENT=$((PH_SENT + sent))
	done
	ok "$name: sluice's per-source and per-rule counts equal nftables' on hosts ${hosts[*]}"
}

# Stops every flood started (SIGTERM: sluice-flood stops and prints its line).
flood_stop() {
	local pid
	for pid in "${FLOOD_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	flood_wait
}

# Counter NAME on each of HOSTS over SECS seconds: sets RATE_OF[N] (packets/s
# admitted by host N, from two reads of its counter, each timed) and
# RATE_SUM (their sum).
RATE_OF=() RATE_SUM=0
window_rates() { # NAME SECS HOSTS...
	local name=$1 secs=$2 n c1 w1
	shift 2
	local -A wc0 wt0
	for n in "$@"; do
		wt0[$n]=$(now)
		wc0[$n]=$(nft_count "$n" "$name")
	done
	sleep "$secs"
	RATE_SUM=0
	for n in "$@"; do
		w1=$(now)
		c1=$(nft_count "$n" "$name")
		RATE_OF[n]=$(calc "($c1 - ${wc0[$n]}) / ($w1 - ${wt0[$n]})" %.1f)
		RATE_SUM=$(calc "$RATE_SUM + ${RATE_OF[n]}" %.1f)
	done
}

# Every host's status and exporter agree that the cluster is (or is not) up.
exporter_up() { # N: sluice_cluster_up of host N's exporter
	local m
	m=$(scrape_at "$1") || fail "scrape of host $1's exporter"
	metric "$m" "sluice_cluster_up{interface=\"${IF_R[$1]}\"}"
}

# Runs CMD (or `hs N ARGS...`) under `timeout 5` and checks its exit status
# RC; a failure must say so in exactly one line on stderr and print nothing
# on stdout (RC+: a usage text, any number of lines). Sets OUT, ERR.
OUT='' ERR=''
expect_exit() { # RC WHAT CMD...
	local want=$1 what=$2 rc=0 lines n usage=0
	shift 2
	[[ $want == *+ ]] && { usage=1; want=${want%+}; }
	if [[ $1 == hs ]]; then # hs is a function: timeout(1) needs a program
		n=$2
		shift 2
		set -- nsenter --net="/run/netns/${NS_H[n]}" "$SLUICE" -i "${IF_R[n]}" "$@"
	fi
	timeout 5 "$@" >"$NETNS_TMP/out" 2>"$NETNS_TMP/err" </dev/null || rc=$?
	OUT=$(cat "$NETNS_TMP/out")
	ERR=$(cat "$NETNS_TMP/err")
	((rc != 124)) || fail "$what: still running after 5 s (a hang)"
	((rc == want)) || fail "$what: exit $rc, want $want (stderr: $ERR)"
	if ((want != 0 && !usage)); then
		lines=$(wc -l <"$NETNS_TMP/err")
		[[ $lines == 1 && -z $OUT ]] ||
			fail "$what: want one line on stderr and nothing on stdout, got stdout '$OUT', stderr '$ERR'"
	fi
	ok "$what: exit $rc${ERR:+: $ERR}"
}

# Every agent's stderr (one line per transition): for the record.
agent_logs() {
	local n
	for ((n = 1; n <= H; n++)); do
		[[ -s ${AGENT_LOG[n]:-} ]] && sed "s/^/agent h$n: /" "${AGENT_LOG[n]}"
	done
	return 0
}

# When host N entered fallback, in ms after the moment T (seconds, now()'s
# clock): `in_fallback_since_ms` counts back from the moment the status
# command read its clock, somewhere between our reads before and after it.
# Prints "MID LO HI" (ms); MID errs by at most (HI - LO)/2.
fallback_after() { # N T
	local a b since
	a=$(now)
	since=$(cfield "$1" in_fallback_since_ms)
	b=$(now)
	[[ $since =~ ^[0-9]+$ ]] || fail "host $1: in_fallback_since_ms is '$since' in fallback"
	awk -v a="$a" -v b="$b" -v s="$since" -v t="$2" 'BEGIN {
		lo = (a - s / 1000 - t) * 1000; hi = (b - s / 1000 - t) * 1000
		printf "%.0f %.0f %.0f\n", (lo + hi) / 2, lo, hi }'
}

# The start of the fault tests: H hosts with Redis and the rule RATE/BURST,
# every agent up (hosts=(1..H)), then SRC flooding every host at PPS for
# 20 s and the cluster admitting RATE (+-10 % over 2 s); WHAT names the
# RESULT line. Needs RATE BURST SYNC_MS PPS SRC.
cluster_up_flooding() { # TAG H WHAT
	local n
	cluster_init "$1" "$2"
	cluster_setup
	redis_start
	set_rule "$RATE" "$BURST"
	hosts=()
	for ((n = 1; n <= $2; n++)); do
		hosts+=("$n")
		agent_start "$n"
	done
	wait_cluster up "$2" 10
	nft_count_add flood "$SRC"
	for n in "${hosts[@]}"; do
		flood_at "$n" "$NETNS_TMP/flood.$n" --src "$SRC" --count $((PPS * 20)) --pps "$PPS" --seconds 20
	done
	sleep 2
	window_rates flood 2 "${hosts[@]}"
	echo "RESULT $3 connected: cluster admits $RATE_SUM/s (hosts: ${RATE_OF[*]:1})"
	assert_near "$RATE_SUM" "$RATE" 10 "connected: the cluster's admitted rate"
}
