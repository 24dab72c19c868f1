# shellcheck shell=bash
# shellcheck disable=SC2034 # IF_F, SCALE_*: for the scripts that source this
# The cluster tests' topology at scale (tests/cluster/scale.sh, the bench's
# 50-host run): up to 99 hosts, each ONE namespace with ONE veth whose far
# end sits on the bridge of the load namespace. That veth carries both the
# agent's Redis traffic and the flood, and sluice is attached natively on
# its host end with the smallest tables (--max-sources and --max-bans 1024),
# so fifty attaches cost about 4 MB of map memory each. The load namespace
# holds the bridge, redis-server and the flood's own veth:
#
#   198.19.0.254  redis-server, on bridge $BR in $NS_REDIS (the load namespace)
#   198.19.0.N    host N: $IF_R[N] in $NS_H[N], sluice attached, and a netdev
#                 ingress nftables chain behind it that counts (and drops)
#                 what sluice passed of the flood; its peer $IF_B[N] on $BR
#                 has a static forwarding entry for $MAC_R[N], so a frame for
#                 one host never reaches another (no flooding of unknown MACs)
#   $IF_F         the flood's veth in $NS_REDIS (its peer $IF_FB on $BR):
#                 sluice-flood sends from there to host N's MAC
#
# Only the flood's sources (198.18.0.0/16) fall under the --cluster rule
# (SCALE_RULE_CIDR); Redis's replies (198.19.0.254) match no rule and pass.
#
# Source it (under set -euo pipefail), then:
#   scale_init TAG H      checks, names, EXIT trap (cluster_init's, for H hosts)
#   scale_setup           the namespaces, links and attaches
# and every helper of lib.sh that works per host: redis_start, hs, agent_start,
# cstatus, wait_cluster, set_rule, nft_count_add, run_phase (its flood_at
# sends from the load namespace: every $NS_C[N] is $NS_REDIS and every
# $IF_T[N] is $IF_F), accuracy_bound, ...
#
# Interface names are sl + TAG + PID + the host as two digits + h (host end)
# or p (bridge end): at most 15 characters with a 7-digit PID and a 2-letter
# tag, unique per PID, and unlike lib.sh's (which end in r, t, d or b).

# shellcheck source=tests/cluster/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The smallest tables attach accepts (SLUICE_MAX_SOURCES_MIN; the ban table's
# minimum): the test tracks one flood source and Redis per host.
SCALE_MAX_SOURCES=1024
SCALE_MAX_BANS=1024
SCALE_HOSTS_MAX=99
SCALE_RULE_CIDR=198.18.0.0/16
PH_NO_OPS=1
IF_F='' IF_FB=''

scale_init() { # TAG H
	local tag=${1:?scale_init needs a tag} h=${2:?scale_init needs a host count} n id cmd
	[[ $h =~ ^[1-9][0-9]?$ ]] || fail "scale_init: host count '$h' (1..$SCALE_HOSTS_MAX)"
	# cluster_init's checks, scratch directory and trap, with one host;
	# the names are this topology's.
	cluster_init "$tag" 1
	for cmd in bridge bpftool; do
		command -v "$cmd" >/dev/null || skip "$cmd not installed (tools/install-deps.sh)"
	done
	H=$h
	IF_D=()
	RULE_CIDR=$SCALE_RULE_CIDR
	local p=${NETNS_PREFIX:-slcl}-$tag-$$
	for ((n = 1; n <= H; n++)); do
		printf -v id %02d "$n"
		NS_H[n]=$p-h$n
		IF_R[n]=sl$tag$$${id}h
		IF_B[n]=sl$tag$$${id}p
	done
	IF_F=sl$tag$$f
	IF_FB=sl$tag$$fb
	# lib.sh's flood_at sends from "client N" at host N: here every host's
	# client is the load namespace's flood veth.
	for ((n = 1; n <= H; n++)); do
		NS_C[n]=$NS_REDIS
		IF_T[n]=$IF_F
	done
}

scale_setup() {
	local n
	redis_bridge
	ip -n "$NS_REDIS" link add "$IF_F" type veth peer name "$IF_FB" ||
		fail "cannot create veth $IF_F/$IF_FB"
	ip -n "$NS_REDIS" link set "$IF_FB" master "$BR" || fail "$IF_FB into $BR"
	ip -n "$NS_REDIS" link set "$IF_FB" up || fail "link up $IF_FB"
	ip -n "$NS_REDIS" link set "$IF_F" up || fail "link up $IF_F"
	for ((n = 1; n <= H; n++)); do
		ip netns add "${NS_H[n]}" || fail "cannot create namespace ${NS_H[n]}"
		netns_quiet "${NS_H[n]}"
		host_leg "$n" "${IF_R[n]}"
		host_chain "$n"
		bridge -n "$NS_REDIS" fdb replace "${MAC_R[n]}" dev "${IF_B[n]}" master static ||
			fail "static forwarding entry for host $n"
	done
	scale_attach_all
}

# sluice attached on every host, as many at once as there are CPUs: each
# attach spends 2 to 3 s of CPU in the kernel's verifier, which is most of
# the setup's time. The attaches are the cleanup's to stop (CL_PIDS).
scale_attach_all() {
	local n jobs running=() pid
	jobs=$(nproc)
	for ((n = 1; n <= H; n++)); do
		if ((${#running[@]} >= jobs)); then
			wait "${running[0]}" || scale_attach_failed
			running=("${running[@]:1}")
		fi
		hs "$n" attach --mode native --max-sources "$SCALE_MAX_SOURCES" \
			--max-bans "$SCALE_MAX_BANS" "${IF_R[n]}" >/dev/null 2>>"$NETNS_TMP/attach.log" &
		running+=($!)
		CL_PIDS+=($!)
	done
	for pid in "${running[@]}"; do
		wait "$pid" || scale_attach_failed
	done
}

scale_attach_failed() {
	cat "$NETNS_TMP/attach.log" >&2
	fail "sluice attach failed on a host (above)"
}

# Every agent up, one per host (from BIN, default build/sluice), until all
# H say up with H peers.
scale_agents() { # [BIN]
	local n
	for ((n = 1; n <= H; n++)); do
		agent_start "$n" "${1:-$SLUICE}"
	done
	wait_cluster up "$H" 30
}

# The map memory one attach holds (bytes_memlock of its pinned maps, summed).
attach_memlock() { # N
	local f sum=0 b
	for f in "$SLUICE_PIN_ROOT/${IF_R[$1]}"/*; do
		b=$(bpftool -j map show pinned "$f" 2>/dev/null | jq -r '.bytes_memlock // 0') || continue
		[[ $b =~ ^[0-9]+$ ]] && sum=$((sum + b))
	done
	echo "$sum"
}

# Failed syncs of every host's agent, summed (`cluster status`).
scale_sync_failures() {
	local n sum=0
	for ((n = 1; n <= H; n++)); do
		sum=$((sum + $(cfield "$n" sync_failures)))
	done
	echo "$sum"
}

# One sample of Redis's counters and the agents' CPU, as NAME=VALUE words:
# t (now()), cmds (total_commands_processed), evalsha (script runs: the
# agents' own commands, a heartbeat or a grant each), beats (ZADD calls:
# one per heartbeat, so one per sync of some agent), bytes (total_net_input
# + total_net_output), redis_cpu and agents_cpu (seconds, user + system).
scale_sample() {
	local info ticks=0 pid f hz
	info=$(redis_cli INFO all) || fail "INFO from Redis"
	hz=$(getconf CLK_TCK)
	for pid in "${AGENT_PID[@]}"; do
		[[ -n $pid && -r /proc/$pid/stat ]] || continue
		read -ra f <"/proc/$pid/stat"
		ticks=$((ticks + f[13] + f[14]))
	done
	awk -F'[:,=]' -v t="$(now)" -v at="$ticks" -v hz="$hz" '
		{ sub(/\r$/, "") }
		$1 == "total_commands_processed" { cmds = $2 }
		$1 == "total_net_input_bytes" { bytes += $2 }
		$1 == "total_net_output_bytes" { bytes += $2 }
		$1 == "used_cpu_sys" || $1 == "used_cpu_user" { cpu += $2 }
		$1 == "cmdstat_evalsha" { evalsha = $3 }
		$1 == "cmdstat_zadd" { beats = $3 }
		END { printf "t=%s cmds=%d evalsha=%d beats=%d bytes=%d redis_cpu=%.3f agents_cpu=%.3f\n",
			t, cmds, evalsha, beats, bytes, cpu, at / hz }' <<<"$info"
}

# What happened between two samples: Redis commands and agent commands per
# second, bytes per sync per agent (Redis's traffic both ways over the
# heartbeats: every sync of every agent sends one), and the CPU of Redis
# and of all agents together as a share of one CPU.
scale_delta() { # SAMPLE0 SAMPLE1
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, /[ =]/); for (i = 1; i < n; i += 2) s0[x[i]] = x[i + 1]
		n = split(b, x, /[ =]/); for (i = 1; i < n; i += 2) s1[x[i]] = x[i + 1]
		dt = s1["t"] - s0["t"]; syncs = s1["beats"] - s0["beats"]
		printf "over %.1f s: Redis %.0f commands/s (%.0f agent commands/s, %.0f syncs/s); %.0f bytes per sync per agent; Redis CPU %.1f %%, all agents %.1f %% of one CPU\n",
			dt, (s1["cmds"] - s0["cmds"]) / dt, (s1["evalsha"] - s0["evalsha"]) / dt, syncs / dt,
			syncs ? (s1["bytes"] - s0["bytes"]) / syncs : 0,
			100 * (s1["redis_cpu"] - s0["redis_cpu"]) / dt, 100 * (s1["agents_cpu"] - s0["agents_cpu"]) / dt
	}'
}

# run_phase's hook: a sample when the floods start and one when they end;
# scale_delta "$SCALE_AT_START" "$SCALE_AT_END" says what the phase cost.
SCALE_AT_START='' SCALE_AT_END=''
ph_mark() { # start|end
	if [[ $1 == start ]]; then
		SCALE_AT_START=$(scale_sample)
	else
		SCALE_AT_END=$(scale_sample)
	fi
}

# The RESULT lines of a phase run_phase just ran (RATE, BURST, SYNC_MS, DIV
# and PH_* as there): admitted against B + R x t and accuracy.sh's bound,
# and what Redis and the agents spent (scale_delta between ph_mark's
# samples: the agents' commands counted by Redis, not by 2 x H `cluster
# status` during the flood, hence PH_NO_OPS). Sets EXPECTED and BOUND.
EXPECTED=0 BOUND=0
scale_report() { # WHAT
	EXPECTED=$(calc "$BURST + $RATE * $PH_T" %.1f)
	BOUND=$(accuracy_bound "$H")
	echo "RESULT scale H=$H $1: t=${PH_T}s admitted=$PH_ADMITTED expected=$EXPECTED" \
		"ratio=$(calc "$PH_ADMITTED / $EXPECTED" %.4f) bound=$BOUND"
	echo "RESULT   $1: $(scale_delta "$SCALE_AT_START" "$SCALE_AT_END")"
}
