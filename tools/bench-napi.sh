#!/usr/bin/env bash
# tools/bench-napi.sh: what a limiter costs the receiving CPU per packet,
# measured on the receiver's own NAPI thread. Two
# namespaces joined by a veth pair; the rx veth runs an XDP program (veth
# has NAPI only then) in threaded NAPI mode, so its receive path is one
# kthread, napi/IF-N, pinned to CPU 0; the generator, sluice-flood --xdp
# (BPF_PROG_TEST_RUN live frames, XDP_TX into the peer), runs on CPU 1.
#   ns/packet = that thread's CPU time (/proc/PID/schedstat, field 1) over
#               the frames it took off the ring (the rx veth's rx_packets,
#               which veth counts per frame its NAPI poll ran XDP on)
# Every flood is checked: rx_packets + ring drops (the rx veth's rx_dropped,
# frames the generator found no room for) must equal what it sent.
#
# Configurations (BENCH_CONFIGS, names below), each limit 1/m burst 1 per
# source (BENCH_RATE=1/s for one per second), in the drop regime: passes
# over the sources first (warm-up, until every bucket is spent), then the
# measured flood. Why a minute: the receiver here takes 1-3 million frames
# a second, so at 1048576 sources each source's next packet comes later
# than a second after its last one, and 1/s would admit most of them (the
# script prints the share that passed). A spent bucket drops at the same
# cost whatever its rate.
#   bare      a bare XDP_DROP program (the floor)
#   min       the minimal XDP token bucket (tools/bench_min.bpf.c)
#   sluice    sluice attach --mode native, limit default --rate 1/m --burst 1
#   before    the same with BENCH_SLUICE_BEFORE=/path/to/sluice (an older build)
#   udp       limit set 0.0.0.0/0 --proto udp: every packet keyed (65536)
#   udp_before  the same with the older build (65536 sources)
#   per24 rule dport fixed sliding   sluice's other rule kinds (65536 sources)
#   nft       nftables meter in the netdev ingress hook (behind XDP_PASS)
#   ipt       iptables hashlimit in INPUT (behind XDP_PASS)
#   pass      a bare XDP_PASS program (random sources only: all pass there)
# Source counts (BENCH_SOURCES): 1, 1000, 65536 (IPv4 from 198.18.1.0),
# 1048576 (IPv6 from 2001:2:0:1::), random (sluice-flood --random
# 198.18.0.0/15, a table of 4096 for 130816 addresses: every packet a new
# source that evicts another).
#
# Environment: BENCH_ROUNDS (default 3; interleaved: round r runs every
# configuration once before round r+1), BENCH_COUNT frames per measured
# flood (default 2000000), BENCH_SECONDS bound of one flood (default 5),
# BENCH_RATE (N/s or N/m, default 1/m; burst 1), BENCH_JSON=FILE writes
# the medians as JSON. Before the rounds, sluice (and the older build) is
# attached at three --max-sources sizes with nothing sent, for its memory
# and its verifier count (the targets table at the end). BENCH_PPS=N paces the measured floods at N frames/s
# (the live-frames generator reaches about 500000 paced): every
# configuration then gets the same offered load below its capacity, so no
# ring fills and the producer and consumer do not fight over it, at the
# price of the thread's sleep and wake-up in every figure (bare included).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=SCRIPTDIR/../tests/lib/netns.sh
. tests/lib/netns.sh

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}
case ${1:-} in
-h | --help) usage; exit 0 ;;
'') ;;
*) echo "bench-napi.sh: takes no arguments (see --help): '$1'" >&2; exit 2 ;;
esac

ROUNDS=${BENCH_ROUNDS:-3}
COUNT=${BENCH_COUNT:-2000000}
FLOOD_SECONDS=${BENCH_SECONDS:-5}
BEFORE=${BENCH_SLUICE_BEFORE:-}
JSON_OUT=${BENCH_JSON:-}
RATE=${BENCH_RATE:-1/m}
ALL_CONFIGS="bare min sluice before udp udp_before per24 rule dport fixed sliding nft ipt pass"
read -ra CONFIGS <<<"${BENCH_CONFIGS:-$ALL_CONFIGS}"
read -ra SOURCES <<<"${BENCH_SOURCES:-1 1000 65536 1048576 random}"
WARM_MAX=5
NAPI_PRIO=50			# SCHED_FIFO priority of the napi thread
WARM_PPS=1000000		# warm-up pace (the runs' own overhead makes it ~500k)
WARM_SECONDS=20			# bound of one warm-up pass
SRC4=198.18.1.0			# off-link for the rx side: no ARP for replies
SRC6=2001:2:0:1::		# off-link too (2001:2::/64 is the veth's)
RANDOM_NET=198.18.0.0/15
RANDOM_SKIP=198.18.0.0/24	# the veth's own subnet
RANDOM_TABLE=4096		# far fewer than the sources the receiver sees per cycle
NFT_TABLE=slnapi

declare -A LABEL=(
	[bare]="bare XDP_DROP"
	[min]="minimal bucket"
	[sluice]="sluice"
	[before]="sluice (before)"
	[udp]="sluice --proto udp, 0.0.0.0/0"
	[udp_before]="sluice (before) --proto udp"
	[per24]="sluice --per /24"
	[rule]="sluice --per rule"
	[dport]="sluice --proto udp --dport 9"
	[fixed]="sluice --algo fixed-window"
	[sliding]="sluice --algo sliding-window"
	[nft]="nft meter, netdev ingress"
	[ipt]="iptables hashlimit, INPUT"
	[pass]="bare XDP_PASS"
)
# Which source counts each configuration runs at (bounds the time).
runs_at() { # CFG NSRC
	case $1 in
	bare | min | sluice | before) return 0 ;;
	udp | udp_before | per24 | rule | dport | fixed | sliding) [[ $2 == 65536 ]] ;;
	nft | ipt) [[ $2 == 1 || $2 == 1000 || $2 == 65536 ]] ;;
	pass) [[ $2 == random ]] ;;
	esac
}

die() { echo "bench-napi.sh: $*" >&2; exit 2; }
[[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || die "BENCH_ROUNDS must be 1..99, not '$ROUNDS'"
[[ $COUNT =~ ^[1-9][0-9]{0,7}$ ]] || die "BENCH_COUNT must be 1..99999999, not '$COUNT'"
[[ $FLOOD_SECONDS =~ ^[1-9][0-9]?$ ]] || die "BENCH_SECONDS must be 1..99, not '$FLOOD_SECONDS'"
[[ $RATE =~ ^([1-9][0-9]{0,5})/([sm])$ ]] || die "BENCH_RATE must be N/s or N/m (N 1..999999), not '$RATE'"
RATE_N=${BASH_REMATCH[1]}
case ${BASH_REMATCH[2]} in	# the unit in each limiter's words
s) NFT_UNIT=second IPT_UNIT=sec ;;
m) NFT_UNIT=minute IPT_UNIT=min ;;
esac
for c in "${CONFIGS[@]}"; do
	[[ -n ${LABEL[$c]:-} ]] || die "unknown config '$c' in BENCH_CONFIGS (give some of: $ALL_CONFIGS)"
done
for n in "${SOURCES[@]}"; do
	[[ $n =~ ^(1|1000|65536|1048576|random)$ ]] ||
		die "unknown source count '$n' in BENCH_SOURCES (give some of: 1 1000 65536 1048576 random)"
done
[[ $(id -u) -eq 0 ]] || { echo "bench-napi.sh: must run as root (sudo make bench)" >&2; exit 1; }
(($(nproc) >= 2)) || { echo "bench-napi.sh: needs 2 CPUs (receiver and generator apart): skipped"; exit 0; }
for b in build/sluice build/sluice-flood build/bench-min; do
	[[ -x $b ]] || { echo "bench-napi.sh: $b not built: run make bench" >&2; exit 1; }
done
have() { [[ " ${CONFIGS[*]} " == *" $1 "* ]]; }
drop_config() {
	local i
	for i in "${!CONFIGS[@]}"; do
		[[ ${CONFIGS[i]} == "$1" ]] && unset "CONFIGS[i]"
	done
	CONFIGS=("${CONFIGS[@]}")
}
if [[ -z $BEFORE ]]; then
	drop_config before	# no older build given: no rows
	drop_config udp_before
elif [[ ! -x $BEFORE ]]; then
	die "BENCH_SLUICE_BEFORE=$BEFORE is not an executable"
fi
if have ipt && ! command -v iptables >/dev/null; then
	echo "bench-napi.sh: iptables not installed (tools/install-deps.sh): no hashlimit row"
	drop_config ipt
fi
for c in taskset chrt bpftool; do
	command -v "$c" >/dev/null || { echo "bench-napi.sh: $c not installed" >&2; exit 1; }
done

netns_init bn
netns_setup
need_xdp_live	# 77 (a skip) where the kernel refuses live frames
RESULTS=$(netns_tmp results)
MEMORY=$(netns_tmp memory)
FLOOD_OUT=$(netns_tmp flood.json)
BUDGET=$(netns_tmp budget)
: >"$BUDGET"
: >"$RESULTS"
: >"$MEMORY"

rx() { ip netns exec "$NS_RX" "$@"; }

DROP_OBJ=$(netns_tmp bare_drop.o)
PASS_OBJ=$(netns_tmp bare_pass.o)
bare_prog "$DROP_OBJ" XDP_DROP
bare_prog "$PASS_OBJ" XDP_PASS

# sluice's table size for NSRC sources: a power of two, at least sluice's
# minimum (1024); random sources get a table smaller than their range.
table_size() { # NSRC
	local n=$1 m=1024
	[[ $n == random ]] && { echo "$RANDOM_TABLE"; return; }
	while ((m < n)); do m=$((m * 2)); done
	echo "$m"
}

# --- the configurations: setup_CFG TABLE, teardown_CFG -----------------------

xdp_on() { ip -n "$NS_RX" link set dev "$IF_RX" xdpdrv obj "$1" sec xdp; }
xdp_off() { ip -n "$NS_RX" link set dev "$IF_RX" xdpdrv off; }

setup_bare() { xdp_on "$DROP_OBJ"; }
teardown_bare() { xdp_off; }
setup_pass() { xdp_on "$PASS_OBJ"; }
teardown_pass() { xdp_off; }

MIN_INFO=
setup_min() { MIN_INFO=$(rx build/bench-min attach "$IF_RX" --max-sources "$1" --rate "$RATE" --burst 1); }
teardown_min() { rx build/bench-min detach "$IF_RX"; }

# sluice (BIN) with its policy: the remaining arguments, one edit each,
# separated by ';'.
sluice_with() { # BIN TABLE EDIT...
	local bin=$1 table=$2 edit=() w
	shift 2
	nsenter --net="/run/netns/$NS_RX" "$bin" attach --mode native --max-sources "$table" \
		"$IF_RX" >/dev/null || return 1
	for w in "$@" ';'; do
		if [[ $w == ';' ]]; then
			if ((${#edit[@]})); then
				nsenter --net="/run/netns/$NS_RX" "$bin" -i "$IF_RX" "${edit[@]}" >/dev/null ||
					return 1
			fi
			edit=()
		else
			edit+=("$w")
		fi
	done
}
sluice_off() { nsenter --net="/run/netns/$NS_RX" "${1:-$SLUICE}" detach "$IF_RX" >/dev/null; }

setup_sluice() { sluice_with "$SLUICE" "$1" limit default --rate "$RATE" --burst 1; }
teardown_sluice() { sluice_off; }
setup_before() { sluice_with "$BEFORE" "$1" limit default --rate "$RATE" --burst 1; }
teardown_before() { sluice_off "$BEFORE"; }
setup_per24() {
	sluice_with "$SLUICE" "$1" limit set 0.0.0.0/0 --rate "$RATE" --burst 1 --per /24
}
teardown_per24() { sluice_off; }
setup_udp() { sluice_with "$SLUICE" "$1" limit set 0.0.0.0/0 --proto udp --rate "$RATE" --burst 1; }
teardown_udp() { sluice_off; }
setup_udp_before() {
	sluice_with "$BEFORE" "$1" limit set 0.0.0.0/0 --proto udp --rate "$RATE" --burst 1
}
teardown_udp_before() { sluice_off "$BEFORE"; }
setup_rule() { sluice_with "$SLUICE" "$1" limit default --rate "$RATE" --burst 1 --per rule; }
teardown_rule() { sluice_off; }
setup_dport() {
	sluice_with "$SLUICE" "$1" limit set 0.0.0.0/0 --proto udp --dport 9 --rate "$RATE" --burst 1
}
teardown_dport() { sluice_off; }
setup_fixed() { sluice_with "$SLUICE" "$1" limit default --rate "$RATE" --algo fixed-window; }
teardown_fixed() { sluice_off; }
setup_sliding() { sluice_with "$SLUICE" "$1" limit default --rate "$RATE" --algo sliding-window; }
teardown_sliding() { sluice_off; }

# nftables: a dynamic set of one limit per source, sized for the table.
setup_nft() { # TABLE
	xdp_on "$PASS_OBJ"
	rx nft -f - <<-EOF
		table netdev $NFT_TABLE {
			set src4 { type ipv4_addr; size $1; flags dynamic; }
			chain c {
				type filter hook ingress device "$IF_RX" priority 0; policy accept;
				update @src4 { ip saddr limit rate over $RATE_N/$NFT_UNIT burst 1 packets } drop
			}
		}
	EOF
}
teardown_nft() { rx nft delete table netdev "$NFT_TABLE"; xdp_off; }

# iptables: a fresh hashlimit table per run, sized for the table.
IPT_RUN=0
setup_ipt() { # TABLE
	IPT_RUN=$((IPT_RUN + 1))
	xdp_on "$PASS_OBJ"
	rx iptables -w -A INPUT -m hashlimit --hashlimit-above "$RATE_N/$IPT_UNIT" --hashlimit-burst 1 \
		--hashlimit-mode srcip --hashlimit-name "slnapi$IPT_RUN" \
		--hashlimit-htable-size "$1" --hashlimit-htable-max "$1" -j DROP
}
teardown_ipt() { rx iptables -w -F INPUT; xdp_off; }

# --- measuring ------------------------------------------------------------------

# The rx veth's NAPI threads (one per rx queue; veth makes one here), found
# again for every run: veth deletes its NAPI when its XDP program goes and
# adds a new one (a new kthread) when one comes. Kernel thread names may be
# cut to 15 characters, "napi/IFNAME" then without its "-ID".
napi_threads() {
	local f comm pids=()
	for f in /proc/[0-9]*/comm; do
		{ read -r comm <"$f"; } 2>/dev/null || continue	# gone meanwhile
		if [[ $comm == "napi/$IF_RX-"* || $comm == "napi/$IF_RX" ]]; then
			f=${f%/comm}
			pids+=("${f#/proc/}")
		fi
	done
	echo "${pids[*]}"
}

napi_ns() { # PIDS: their CPU time so far, in ns
	local p r _rest sum=0
	for p in "$@"; do
		read -r r _rest <"/proc/$p/schedstat" || fail "napi thread $p is gone"
		sum=$((sum + r))
	done
	echo "$sum"
}

# rx_packets rx_dropped of the rx veth (veth adds the frames its NAPI ran
# XDP on, and the frames the peer's ndo_xdp_xmit found the ring full for).
veth_rx() {
	ip -n "$NS_RX" -s -j link show dev "$IF_RX" |
		jq -er '.[0].stats64.rx | "\(.packets) \(.dropped)"'
}

# UDP datagrams that reached the rx stack's UDP (all to port 9, where
# nothing listens): what the limiter let through. Both families.
stack_in() {
	# shellcheck disable=SC2016 # awk fields, not shell
	rx awk '$1 == "Udp:" && $2 !~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) h[i] = $i; next }
		$1 == "Udp:" { for (i = 2; i <= NF; i++) if (h[i] ~ /^(InDatagrams|NoPorts|InErrors)$/) s += $i }
		$1 ~ /^Udp6(InDatagrams|NoPorts|InErrors)$/ { s += $2 }
		END { print s + 0 }' /proc/net/snmp /proc/net/snmp6
}

flood_args() { # NSRC COUNT
	case $1 in
	random) echo "--random $RANDOM_NET --skip $RANDOM_SKIP --seed 1 --count $2" ;;
	1048576) echo "--src $SRC6 --dst $RX6 --sources $1 --count $2" ;;
	*) echo "--src $SRC4 --dst $RX4 --sources $1 --count $2" ;;
	esac
}

gen() { # NSRC COUNT [OPTION...]: one bounded flood from CPU 1; its JSON in FLOOD_OUT
	local args
	read -ra args <<<"$(flood_args "$1" "$2")"
	shift 2
	ip netns exec "$NS_TX" taskset -c 1 "$SLUICE_FLOOD" --xdp --iface "$IF_TX" \
		--dst-mac "$RX_MAC" "${args[@]}" "$@" --seconds "$WARM_SECONDS" >"$FLOOD_OUT" ||
		fail "flood failed: $(cat "$FLOOD_OUT")"
}

# Kernel memory (bpftool's bytes_memlock) of every map CFG uses, summed,
# with its table sized for TABLE sources: one line "CFG TABLE BYTES MAPS".
record_memory() { # CFG TABLE
	local cfg=$1 table=$2 id f ids=() total=0 n=0 b
	grep -q "^$cfg $table " "$MEMORY" && return 0
	case $cfg in
	min) mapfile -t ids < <(jq -r '.map_ids[]' <<<"$MIN_INFO") ;;
	sluice | before)
		for f in "$SLUICE_PIN_ROOT/$IF_RX"/*; do
			bpftool -j map show pinned "$f" 2>/dev/null | jq -r 'select(.id) | .id' || true
		done >"$(netns_tmp ids)"
		mapfile -t ids < <(sort -un "$(netns_tmp ids)")
		;;
	*) return 0 ;;
	esac
	for id in "${ids[@]}"; do
		b=$(bpftool -j map show id "$id" | jq -r '.bytes_memlock // 0')
		total=$((total + b))
		n=$((n + 1))
	done
	echo "$cfg $table $total $n" >>"$MEMORY"
}

# The budget of a sluice build: its memory and its verifier
# count, from sluice attached at --max-sources BUDGET_SIZES with the
# default policy and nothing sent. Per size: every map of the interface
# (the XDP program's map_ids and every pin under the interface, by id,
# each once), bytes_memlock summed; the max_entries of the keyed-bucket
# LRU (src_buckets) where the build has one; the program's verified_insns.
BUDGET_SIZES="1024 65536 524288"
budget_probe() { # BIN TABLE: "BYTES KEYED_ENTRIES VERIFIED_INSNS"
	local bin=$1 table=$2 prog f ids total=0 keyed=0 id info
	sluice_with "$bin" "$table" 2>"$(netns_tmp budget.err)" ||
		fail "cannot attach $bin with --max-sources $table: $(cat "$(netns_tmp budget.err)")"
	prog=$(rx bpftool -j net show dev "$IF_RX" | jq -er '.[0].xdp[0].id') ||
		fail "no XDP program on $IF_RX after $bin attach"
	ids=$({
		bpftool -j prog show id "$prog" | jq -r '.map_ids[]?'
		for f in "$SLUICE_PIN_ROOT/$IF_RX"/*; do
			bpftool -j map show pinned "$f" 2>/dev/null | jq -r 'select(.id) | .id' || true
		done
	} | sort -un)
	for id in $ids; do
		info=$(bpftool -j map show id "$id")
		total=$((total + $(jq -r '.bytes_memlock // 0' <<<"$info")))
		if [[ $(jq -r .name <<<"$info") == src_buckets ]]; then
			keyed=$(jq -r .max_entries <<<"$info")
		fi
	done
	echo "$total $keyed $(rx build/bench-min verified "$IF_RX")"
	sluice_off "$bin" 2>/dev/null
}
# Per tracked source: the growth between the two larger sizes over the
# sources added (65536 and up: a keyed-bucket LRU, capped at 65536, no
# longer grows). Per keyed bucket: the growth between the two smaller
# sizes less those sources' share, over the keyed entries added; with no
# keyed-bucket map, keyed buckets are slots of the source table and cost
# what a source does. One line: "WHO PER_SOURCE PER_KEYED VERIFIED MIB_AT_LARGEST".
record_budget() { # WHO BIN
	local who=$1 bin=$2 n b k v out sizes=() bytes=() keyed=() per_src per_key
	for n in $BUDGET_SIZES; do
		out=$(budget_probe "$bin" "$n")
		read -r b k v <<<"$out"
		sizes+=("$n") bytes+=("$b") keyed+=("$k")
	done
	per_src=$(calc "(${bytes[2]} - ${bytes[1]}) / (${sizes[2]} - ${sizes[1]})" %.1f)
	if ((keyed[1] > keyed[0])); then
		per_key=$(calc "(${bytes[1]} - ${bytes[0]} - $per_src * (${sizes[1]} - ${sizes[0]})) / (${keyed[1]} - ${keyed[0]})" %.1f)
	else
		per_key=$per_src
	fi
	echo "$who $per_src $per_key $v $(calc "${bytes[2]} / 1048576" %.1f)" >>"$BUDGET"
	printf '  %-16s %7s B per tracked source, %7s B per keyed bucket, verifier %s insns processed (%s MiB of maps at %s)\n' \
		"$who" "$per_src" "$per_key" "$v" "$(calc "${bytes[2]} / 1048576" %.1f)" "${sizes[2]}"
}

# Warm-up: passes over the sources until one reached the receiver whole
# (no more than 0.1% of it lost to a full ring), or let (almost) nothing
# through: then every source has a bucket with its burst spent. Paced, in
# runs of one ring's worth of frames: unpaced, the generator outruns the
# receiver and the same sources miss the ring pass after pass. At most
# WARM_MAX passes. Random sources churn the table whatever the warm-up: one
# pass fills it. A bare program has nothing to warm.
warm_up() { # CFG NSRC
	local i a b d0 d1 _r
	case $1 in
	bare | pass) return 0 ;;
	esac
	if [[ $2 == random ]]; then
		gen random 131072 --pps "$WARM_PPS"
		return 0
	fi
	for ((i = 0; i < WARM_MAX; i++)); do
		a=$(stack_in)
		read -r _r d0 < <(veth_rx)
		gen "$2" "$2" --pps "$WARM_PPS"
		b=$(stack_in)
		read -r _r d1 < <(veth_rx)
		if ((d1 - d0 <= $2 / 1000 || b - a <= $2 / 1000)); then
			break
		fi
	done
	return 0
}

run_one() { # CFG NSRC ROUND
	local cfg=$1 nsrc=$2 round=$3 table pids p t0 t1 r0 d0 r1 d1 i0 i1 sent secs rx drops pass ns
	table=$(table_size "$nsrc")
	T_START=$EPOCHREALTIME
	"setup_$cfg" "$table" || fail "cannot set up $cfg ($nsrc sources)"
	rx sh -c "echo 1 > /sys/class/net/$IF_RX/threaded" || fail "cannot set threaded NAPI on $IF_RX"
	pids=$(napi_threads)
	[[ -n $pids ]] || fail "no napi/$IF_RX thread after threaded=1 ($cfg)"
	for p in $pids; do
		taskset -p -c 0 "$p" >/dev/null || fail "cannot pin napi thread $p to CPU 0"
		# SCHED_FIFO: other work on CPU 0 waits for it instead of sharing
		chrt -f -p "$NAPI_PRIO" "$p" || fail "cannot make napi thread $p SCHED_FIFO"
	done
	((round == 1)) && record_memory "$cfg" "$table"
	T_SETUP=$EPOCHREALTIME
	warm_up "$cfg" "$nsrc"
	T_WARM=$EPOCHREALTIME
	# shellcheck disable=SC2086 # one or more PIDs
	t0=$(napi_ns $pids)
	read -r r0 d0 < <(veth_rx)
	i0=$(stack_in)
	WARM_SECONDS=$FLOOD_SECONDS gen "$nsrc" "$COUNT" ${BENCH_PPS:+--pps "$MEASURE_PPS"}
	# the last frames of the ring: wait until every frame sent is counted
	sent=$(jq -er .sent "$FLOOD_OUT")
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		read -r r1 d1 < <(veth_rx)
		((r1 - r0 + d1 - d0 >= sent)) && break
		sleep 0.02
	done
	# shellcheck disable=SC2086
	t1=$(napi_ns $pids)
	i1=$(stack_in)
	secs=$(jq -er .seconds "$FLOOD_OUT")
	"teardown_$cfg" || fail "cannot tear down $cfg"
	rx=$((r1 - r0))
	drops=$((d1 - d0))
	pass=$((i1 - i0))
	((rx > 0)) || fail "the napi thread took no frames ($cfg, $nsrc sources)"
	ns=$(calc "($t1 - $t0) / $rx" %.1f)
	echo "$cfg $nsrc $round $sent $rx $drops $pass $ns" >>"$RESULTS"
	printf '  round %d  %-8s %8s src  %8d sent %8d taken %8d ring drops %7d passed  %6s ns/pkt  napi busy %s%%  (%s+%s+%ss)%s\n' \
		"$round" "$cfg" "$nsrc" "$sent" "$rx" "$drops" "$pass" "$ns" \
		"$(calc "($t1 - $t0) / 1e7 / $secs" %.0f)" \
		"$(calc "$T_SETUP - $T_START" %.1f)" "$(calc "$T_WARM - $T_SETUP" %.1f)" "$(calc "$EPOCHREALTIME - $T_WARM" %.1f)" \
		"$( ((rx + drops == sent)) || echo "  (taken + ring drops - sent = $((rx + drops - sent)))")"
}

# --- run ------------------------------------------------------------------------

# Share of the machine busy with other work, over one quiet second.
background() {
	local _cpu user nice sys _rest b0 b1
	read -r _cpu user nice sys _rest </proc/stat
	b0=$((user + nice + sys))
	sleep 1
	read -r _cpu user nice sys _rest </proc/stat
	b1=$((user + nice + sys))
	calc "($b1 - $b0) * 100 / $(getconf CLK_TCK) / $(nproc)" %.0f
}

BG_BEFORE=$(background)
echo "== receiver's NAPI thread CPU per packet (threaded NAPI on CPU 0, generator on CPU 1) =="
echo "   $COUNT frames per measured flood (at most ${FLOOD_SECONDS}s), $ROUNDS interleaved rounds, limit $RATE burst 1"
echo "   configs: ${CONFIGS[*]}; sources: ${SOURCES[*]}"
echo "   sluice: $SLUICE${BEFORE:+; sluice (before): $BEFORE}"
if have sluice || have udp; then
	echo "   memory and verifier (attached at --max-sources ${BUDGET_SIZES// /, }, nothing sent):"
	record_budget now "$SLUICE"
	[[ -n $BEFORE ]] && record_budget before "$BEFORE"
fi
start=$SECONDS
for ((round = 1; round <= ROUNDS; round++)); do
	for nsrc in "${SOURCES[@]}"; do
		for cfg in "${CONFIGS[@]}"; do
			if runs_at "$cfg" "$nsrc"; then
				run_one "$cfg" "$nsrc" "$round"
			fi
		done
	done
done
elapsed=$((SECONDS - start))
BG_AFTER=$(background)

# --- report ---------------------------------------------------------------------

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v c="$1" -v n="$2" -v f="$3" '$1 == c && $2 == n { print $f }' "$RESULTS"; }
med() { col "$1" "$2" 8 | median; }
# share of the measured frames taken that reached the rx stack, in %
passed_pct() {
	local p r
	p=$(col "$1" "$2" 7 | awk '{ s += $1 } END { print s + 0 }')
	r=$(col "$1" "$2" 5 | awk '{ s += $1 } END { print s + 0 }')
	calc "100 * $p / $r" %.1f
}
ring_pct() {
	local d s
	d=$(col "$1" "$2" 6 | awk '{ s += $1 } END { print s + 0 }')
	s=$(col "$1" "$2" 4 | awk '{ s += $1 } END { print s + 0 }')
	calc "100 * $d / $s" %.0f
}
# CFG over REF in each round (their runs a few seconds apart, so a change
# of the machine's load between rounds cancels), in round order.
round_ratios() { # CFG REF NSRC
	paste -d' ' <(col "$1" "$3" 8) <(col "$2" "$3" 8) |
		awk 'NF == 2 && $2 > 0 { printf "%.2f\n", $1 / $2 }'
}
# Their median, or - where either did not run.
ratio() { # CFG REF NSRC
	local r
	r=$(round_ratios "$@" | median)
	echo "${r:--}"
}

echo
echo "== results: ns per packet on the NAPI thread, median of $ROUNDS rounds (${elapsed}s;" \
	"other work kept the machine ${BG_BEFORE}% busy before, ${BG_AFTER}% after) =="
printf '%-30s' "config \\ sources"
for nsrc in "${SOURCES[@]}"; do printf ' %9s' "$nsrc"; done
echo
for cfg in "${CONFIGS[@]}"; do
	printf '%-30s' "${LABEL[$cfg]}"
	for nsrc in "${SOURCES[@]}"; do
		v=$(med "$cfg" "$nsrc")
		printf ' %9s' "${v:--}"
	done
	echo
done
for ref in bare min; do
	have "$ref" || continue
	echo
	echo "ratio to the ${LABEL[$ref]} (median of the rounds' ratios):"
	for cfg in "${CONFIGS[@]}"; do
		[[ $cfg == "$ref" ]] && continue
		printf '%-30s' "${LABEL[$cfg]}"
		for nsrc in "${SOURCES[@]}"; do
			printf ' %9s' "$(ratio "$cfg" "$ref" "$nsrc")"
		done
		echo
	done
done
if have sluice && have min; then
	echo
	echo "sluice/minimal in each round, by sources (their spread is the run's noise):"
	for nsrc in "${SOURCES[@]}"; do
		r=$(round_ratios sluice min "$nsrc" | paste -sd' ')
		if [[ -n $r ]]; then
			printf '  %-8s %s\n' "$nsrc" "$r"
		fi
	done
fi
# The targets table: each figure before and now, its target, and
# whether now meets it. Ratios: to the minimal bucket, the median of the
# rounds' own ratios (the rule kinds' targets: 1.3 where every packet is
# keyed, as with --proto udp; 1.0 for the windows, which
# keep home buckets like the plain rule).
verdict() { # VALUE TARGET
	if [[ $1 == - ]]; then
		echo -
	elif awk -v r="$1" -v a="$2" 'BEGIN { exit !(r <= a) }'; then
		echo met
	else
		echo missed
	fi
}
item5_row() { # LABEL BEFORE NOW TARGET
	printf '%-40s %9s %9s %9s  %s\n' "$1" "$2" "$3" "<= $4" "$(verdict "$3" "$4")"
}
budget_of() { # WHO FIELD (2 per source, 3 per keyed, 4 verified)
	local v
	v=$(awk -v w="$1" -v f="$2" '$1 == w { print $f }' "$BUDGET")
	echo "${v:--}"
}
if have min; then
	echo
	echo "== sluice against its performance targets (ratios to the minimal bucket on" \
		"the NAPI thread, median of $ROUNDS interleaved rounds; memory and verifier as above) =="
	printf '%-40s %9s %9s %9s\n' "figure" "before" "now" "target"
	for nsrc in 1 65536 random; do
		case $nsrc in
		1) label="1 source" aim=1.0 ;;
		65536) label="65536 sources" aim=1.0 ;;
		random) label="random sources (never seen)" aim=0.9 ;;
		esac
		item5_row "$label" "$(ratio before min "$nsrc")" "$(ratio sluice min "$nsrc")" "$aim"
	done
	item5_row "--proto udp on 0.0.0.0/0, 65536 sources" "$(ratio udp_before min 65536)" \
		"$(ratio udp min 65536)" 1.3
	for cfg in dport per24 rule fixed sliding; do
		case $cfg in
		fixed | sliding) aim=1.0 ;;
		*) aim=1.3 ;;
		esac
		item5_row "${LABEL[$cfg]}, 65536" - "$(ratio "$cfg" min 65536)" "$aim"
	done
	item5_row "bytes per tracked source" "$(budget_of before 2)" "$(budget_of now 2)" 48
	item5_row "bytes per keyed bucket" "$(budget_of before 3)" "$(budget_of now 3)" 64
	pct() { if [[ $1 == - ]]; then echo -; else calc "$1 / 1e4" %.1f; fi; }
	item5_row "verifier: processed, % of 1,000,000" "$(pct "$(budget_of before 4)")" \
		"$(pct "$(budget_of now 4)")" 60
fi
echo
# A table of FN CFG NSRC for every configuration and source count run.
table_of() { # TITLE FN
	local cfg nsrc
	echo "$1"
	for cfg in "${CONFIGS[@]}"; do
		printf '%-30s' "${LABEL[$cfg]}"
		for nsrc in "${SOURCES[@]}"; do
			if [[ -n $(col "$cfg" "$nsrc" 5) ]]; then
				printf ' %9s' "$("$2" "$cfg" "$nsrc")"
			else
				printf ' %9s' -
			fi
		done
		echo
	done
}
table_of "passed to the rx stack, % of the frames taken (the drop regime: ~0 but random):" passed_pct
echo
table_of "ring drops, % of the frames sent (the generator outruns the receiver):" ring_pct
# The namespaces' own few frames (IPv6 neighbour discovery, MLD) may come
# on top; more than a few means a count is not what it claims to be.
read -r exact off worst < <(awk '{ d = $5 + $6 - $4; if (d < 0) d = -d; if (!d) e++; else if (d > 16) o++
	if (d > w) w = d } END { print e + 0, o + 0, w + 0 }' "$RESULTS")
echo "floods where frames taken + ring drops == frames sent: $exact of $(wc -l <"$RESULTS");" \
	"off by more than 16: $off (largest difference $worst)"
if [[ -s $MEMORY ]]; then
	echo
	echo "kernel memory of every map (bpftool map show: bytes_memlock, summed), by table size;"
	echo "per source: the growth from the next smaller table over the sources added:"
	sort -k1,1 -k2,2n "$MEMORY" | while read -r cfg table bytes maps; do
		if [[ ${prev_cfg:-} == "$cfg" ]]; then
			per=$(calc "($bytes - $prev_bytes) / ($table - $prev_table)" %.1f)
		else
			per=-
		fi
		printf '  %-18s %2s maps, table for %-8s %11s bytes %8s per source\n' \
			"${LABEL[$cfg]}" "$maps" "$table" "$bytes" "$per"
		prev_cfg=$cfg prev_table=$table prev_bytes=$bytes
	done
fi
cat <<EOF

How to read it: each figure is the CPU time of the rx veth's NAPI thread
(threaded NAPI, pinned to CPU 0) per frame it took off its ring, while
sluice-flood --xdp (pinned to CPU 1) sent it $COUNT frames of 60 bytes
(64 over IPv6) as fast as it could: XDP, and for the netfilter rows the
skb and the stack up to their hook, all run in that thread. Limit $RATE,
burst 1 per source; warm-up passes over the sources first spend every
bucket, so the measured flood is dropped (see 'passed'). 1048576 sources
are IPv6 (198.18.0.0/15 holds 131072 addresses): the minimal bucket then
uses its IPv6 table. 'random' sends from $RANDOM_NET (less
$RANDOM_SKIP) in a shuffled order that repeats an address only every
130816 frames, over tables of $RANDOM_TABLE, far fewer than the addresses
the receiver takes in one cycle even with ring drops: (nearly) every
packet is a source the table does not hold. An LRU table (the minimal
bucket, sluice before its source table v3) evicts the least recently
used entry for it and admits it on a fresh bucket, so it passes to the
stack ('passed'; 'bare XDP_PASS' is the floor of a flood that all
passes); sluice's source table, full of sources in debt, refuses it and
drops it as no_bucket. It measures a spoofed flood without a new-source
budget. Ring drops are frames the
generator found the veth's ring (256 frames) full for; they cost the
receiver nothing and are not in its count.
EOF

if [[ -n $JSON_OUT ]]; then
	{
		for cfg in "${CONFIGS[@]}"; do
			for nsrc in "${SOURCES[@]}"; do
				v=$(med "$cfg" "$nsrc")
				[[ -n $v ]] || continue
				rb=$(ratio "$cfg" bare "$nsrc") rm=$(ratio "$cfg" min "$nsrc")
				echo "$cfg $nsrc $v $(passed_pct "$cfg" "$nsrc") $(ring_pct "$cfg" "$nsrc")" \
					"${rb/#-/null} ${rm/#-/null}"
			done
		done
	} | jq -Rn --argjson rounds "$ROUNDS" --argjson count "$COUNT" --argjson secs "$elapsed" \
		--arg rate "$RATE" --argjson bg0 "$BG_BEFORE" --argjson bg1 "$BG_AFTER" \
		--rawfile mem "$MEMORY" '
		[inputs | split(" ") | {config: .[0], sources: .[1], ns: (.[2] | tonumber),
			passed_pct: (.[3] | tonumber), ring_drop_pct: (.[4] | tonumber),
			rb: (.[5] | fromjson), rm: (.[6] | fromjson)}] as $rows |
		{method: "napi-thread", rounds: $rounds, frames_per_flood: $count, seconds: $secs,
		 rate: $rate, machine_busy_pct: {before: $bg0, after: $bg1},
		 ns_per_packet: ($rows | group_by(.config) | map({key: .[0].config,
			value: (map({key: .sources, value: .ns}) | from_entries)}) | from_entries),
		 ratio_to_bare: ($rows | map(select(.config != "bare")) | group_by(.config) |
			map({key: .[0].config, value: (map({key: .sources, value: .rb}) | from_entries)})
			| from_entries),
		 ratio_to_min: ($rows | map(select(.config != "min")) | group_by(.config) |
			map({key: .[0].config, value: (map({key: .sources, value: .rm}) | from_entries)})
			| from_entries),
		 passed_pct: ($rows | group_by(.config) | map({key: .[0].config,
			value: (map({key: .sources, value: .passed_pct}) | from_entries)}) | from_entries),
		 ring_drop_pct: ($rows | group_by(.config) | map({key: .[0].config,
			value: (map({key: .sources, value: .ring_drop_pct}) | from_entries)}) | from_entries),
		 memory: ($mem | split("\n") | map(select(length > 0) | split(" ") |
			{config: .[0], table: (.[1] | tonumber), bytes_memlock: (.[2] | tonumber),
			 maps: (.[3] | tonumber)}))}' >"$JSON_OUT" ||
		fail "cannot write $JSON_OUT"
	echo "(medians written to $JSON_OUT)"
fi
