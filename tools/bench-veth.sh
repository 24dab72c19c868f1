#!/usr/bin/env bash
# tools/bench-veth.sh: for the same flood over a veth pair, what each
# per-source limiter costs the receiving host per packet, and whether they
# all let the same number through. Side by side in one run, interleaved:
#   bare      a bare XDP program that drops everything (the floor)
#   bare-skb  the same program in generic (skb) mode
#   native    sluice, native XDP
#   skb       sluice, generic (skb) XDP
#   nft-ing   nftables meter in the netdev ingress hook of the rx veth
#   nft-in    nftables meter in the inet input hook (after routing)
#   ipt       iptables hashlimit in INPUT (iptables-nft + xt_hashlimit)
#   none      no limiter at all: every packet goes up the stack (reference)
#
# BENCH_GEN=xdp sends with sluice-flood --xdp instead (BPF_PROG_TEST_RUN
# live frames): the rx veth then receives XDP frames, as a NIC driver would,
# at several times the rate, and native XDP runs before any skb exists. The
# configurations without XDP then get a bare XDP_PASS program on the rx veth
# (veth accepts XDP frames only where one runs; it then builds the skb, as
# a NIC driver without XDP does), and the generic-XDP rows are left out.
#
# Environment: BENCH_COUNT packets per flood (default 600000), BENCH_REPS
# rounds (default 5), BENCH_SECONDS bound of one flood (default 10),
# BENCH_BUDGET seconds for the whole bench (default 170: no round starts
# that would end past it), BENCH_CONFIGS to run a subset (names above).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=SCRIPTDIR/../tests/lib/netns.sh
. tests/lib/netns.sh

GEN=${BENCH_GEN:-socket}
case $GEN in
socket)
	COUNT=${BENCH_COUNT:-600000}
	read -ra CONFIGS <<<"${BENCH_CONFIGS:-bare bare-skb native skb nft-ing nft-in ipt none}"
	GEN_OPTS=()
	;;
xdp)
	COUNT=${BENCH_COUNT:-2000000}
	read -ra CONFIGS <<<"${BENCH_CONFIGS:-bare native nft-ing nft-in ipt none}"
	GEN_OPTS=(--xdp)
	;;
*) echo "bench-veth.sh: BENCH_GEN must be socket or xdp, not '$GEN'" >&2; exit 2 ;;
esac
REPS=${BENCH_REPS:-5}
FLOOD_SECONDS=${BENCH_SECONDS:-10}
BUDGET=${BENCH_BUDGET:-170}
# One source, then 1000. The limit is the same in aggregate: 1000/s with a
# burst of 1000 split evenly over the sources (1000 sources at 1000/s each
# would never reach their burst within one flood, and nothing would be
# limited at all).
PATTERNS=(1 1000)
AGG_RATE=1000
AGG_BURST=1000
SRC=198.18.1.0			# 1000 sources: 198.18.1.0 .. 198.18.4.231
NFT_TABLE=slbench

declare -A LABEL=(
	[bare]="(0) bare XDP_DROP, native"
	[bare-skb]="(0s) bare XDP_DROP, skb"
	[native]="(1) sluice, native XDP"
	[skb]="(2) sluice, skb XDP"
	[nft-ing]="(3) nft meter, netdev ingress"
	[nft-in]="(4) nft meter, inet input"
	[ipt]="(5) iptables hashlimit, INPUT"
	[none]="(ref) no limiter at all"
)

[[ $(id -u) -eq 0 ]] || { echo "bench-veth.sh: must run as root (sudo make bench)" >&2; exit 1; }
[[ -x build/sluice ]] || { echo "bench-veth.sh: build/sluice not built: run make" >&2; exit 1; }
if [[ ! -x build/sluice-flood ]]; then
	make --no-print-directory build/sluice-flood >/dev/null ||
		{ echo "bench-veth.sh: cannot build build/sluice-flood" >&2; exit 1; }
fi
for c in "${CONFIGS[@]}"; do
	[[ -n ${LABEL[$c]:-} ]] || { echo "bench-veth.sh: unknown config '$c' in BENCH_CONFIGS" >&2; exit 2; }
done
if [[ " ${CONFIGS[*]} " == *" ipt "* ]] && ! command -v iptables >/dev/null; then
	echo "bench-veth.sh: iptables not installed (tools/install-deps.sh): skipping (5)"
	for i in "${!CONFIGS[@]}"; do
		[[ ${CONFIGS[i]} == ipt ]] && unset "CONFIGS[i]"
	done
	CONFIGS=("${CONFIGS[@]}")
fi

netns_init bv
netns_setup
[[ $GEN != xdp ]] || need_xdp_live	# 77 (a skip) where the kernel refuses live frames
RESULTS=$(netns_tmp results)
FLOOD_OUT=$(netns_tmp flood.json)
TIMES0=$(netns_tmp times0)
TIMES1=$(netns_tmp times1)
: >"$RESULTS"

# The floor: XDP_DROP. And what a NIC driver without an XDP program does,
# hand the frame to the stack: XDP_PASS.
BARE_OBJ=$(netns_tmp bare_drop.o)
PASS_OBJ=$(netns_tmp bare_pass.o)
bare_prog "$BARE_OBJ" XDP_DROP
bare_prog "$PASS_OBJ" XDP_PASS
# With XDP frames, the configurations that do not run XDP themselves.
needs_pass() { [[ $GEN == xdp && $1 != bare && $1 != native ]]; }

# --- CPU accounting, without forking inside the measured window ----------
#
# flood cost: CPU time of the generator process (bash `times`, children,
# from the scheduler's exact runtime) plus that of every ksoftirqd thread
# (/proc/PID/schedstat). veth hands each frame to the receiving side on the
# sending CPU, in softirq at the end of the send (or in ksoftirqd when that
# runs long), so the receiver's whole path, XDP or netfilter and the stack,
# is in those two, and other work on the machine is not.
# machine: busy jiffies of all CPUs from /proc/stat (user+nice+system+irq+
# softirq), which also counts whatever else the machine does meanwhile.
mapfile -t KSOFTIRQD < <(pgrep -x 'ksoftirqd/[0-9]+' || true)
HZ=$(getconf CLK_TCK)

machine_busy() { # sets BUSY (jiffies)
	local _cpu user nice sys _idle _iowait irq softirq _rest
	read -r _cpu user nice sys _idle _iowait irq softirq _rest </proc/stat
	BUSY=$((user + nice + sys + irq + softirq))
}

ksoftirqd_ns() { # sets KSI (ns)
	local p r _rest
	KSI=0
	for p in "${KSOFTIRQD[@]}"; do
		read -r r _rest <"/proc/$p/schedstat" || r=0
		KSI=$((KSI + r))
	done
}

times_ns() { # FILE: children's user+system time, in ns
	local _self user sys t ns=0
	{ read -r _self; read -r user sys; } <"$1"
	for t in "$user" "$sys"; do
		[[ $t =~ ^([0-9]+)m([0-9]+)\.([0-9]{3})s$ ]] || fail "cannot parse bash times: $t"
		ns=$((ns + BASH_REMATCH[1] * 60000000000 + 10#${BASH_REMATCH[2]} * 1000000000 + 10#${BASH_REMATCH[3]} * 1000000))
	done
	echo "$ns"
}

# --- the limiters ----------------------------------------------------------
# setup_CFG RATE BURST, passed_CFG (prints packets let through), teardown_CFG.

rx() { ip netns exec "$NS_RX" "$@"; }

setup_bare() { ip -n "$NS_RX" link set dev "$IF_RX" xdpdrv obj "$BARE_OBJ" sec xdp; }
passed_bare() { echo 0; }
teardown_bare() { ip -n "$NS_RX" link set dev "$IF_RX" xdpdrv off; }
setup_bare-skb() { ip -n "$NS_RX" link set dev "$IF_RX" xdpgeneric obj "$BARE_OBJ" sec xdp; }
passed_bare-skb() { echo 0; }
teardown_bare-skb() { ip -n "$NS_RX" link set dev "$IF_RX" xdpgeneric off; }

sluice_setup() { # MODE RATE BURST
	sluice_rx attach --mode "$1" "$IF_RX" >/dev/null
	sluice_rx limit default --rate "$2" --burst "$3" >/dev/null
}
setup_native() { sluice_setup native "$@"; }
setup_skb() { sluice_setup skb "$@"; }
passed_native() { sluice_jq .packets.pass.within_limit stats; }
passed_skb() { passed_native; }
# detach removes the pins, so every run starts with empty buckets.
teardown_native() { sluice_rx detach "$IF_RX" >/dev/null; }
teardown_skb() { teardown_native; }

# nftables: a dynamic set holds one limit per source address (what `meter`
# was before nft 0.9.x); counters count what the limiter dropped and passed.
nft_setup() { # FAMILY HOOK-LINE PROTO-MATCH RATE BURST
	rx nft -f - <<-EOF
		table $1 $NFT_TABLE {
			set src4 { type ipv4_addr; size 65535; flags dynamic; }
			counter dropped {}
			counter passed {}
			chain c {
				$2
				update @src4 { ip saddr limit rate over $4/second burst $5 packets } counter name dropped drop
				$3 counter name passed
			}
		}
	EOF
}
nft_passed() { # FAMILY
	rx nft -j list counter "$1" "$NFT_TABLE" passed |
		jq -er '.nftables[] | select(.counter) | .counter.packets'
}
setup_nft-ing() {
	nft_setup netdev "type filter hook ingress device \"$IF_RX\" priority 0; policy accept;" \
		"meta protocol ip" "$@"
}
passed_nft-ing() { nft_passed netdev; }
teardown_nft-ing() { rx nft delete table netdev "$NFT_TABLE"; }
setup_nft-in() {
	nft_setup inet "type filter hook input priority 0; policy accept;" "meta nfproto ipv4" "$@"
}
passed_nft-in() { nft_passed inet; }
teardown_nft-in() { rx nft delete table inet "$NFT_TABLE"; }

# iptables: the rule's own counters; the second, empty rule counts what
# passed. A fresh hashlimit table name per run, so no state carries over.
IPT_RUN=0
setup_ipt() { # RATE BURST
	IPT_RUN=$((IPT_RUN + 1))
	rx iptables -w -A INPUT -m hashlimit --hashlimit-above "$1/sec" --hashlimit-burst "$2" \
		--hashlimit-mode srcip --hashlimit-name "slbench$IPT_RUN" -j DROP
	rx iptables -w -A INPUT
}
passed_ipt() { rx iptables -w -nvxL INPUT | awk 'NR == 4 { print $1 }'; }
teardown_ipt() { rx iptables -w -F INPUT; }

setup_none() { :; }
passed_none() { echo -1; }	# everything: nothing counts it
teardown_none() { :; }

# --- one measured flood -----------------------------------------------------

run_one() { # CFG NSRC ROUND
	local cfg=$1 nsrc=$2 round=$3 rate burst b0 k0 b1 k1 t0 t1 sent secs pps passed
	rate=$((AGG_RATE / nsrc))
	burst=$((AGG_BURST / nsrc))
	if needs_pass "$cfg"; then
		ip -n "$NS_RX" link set dev "$IF_RX" xdpdrv obj "$PASS_OBJ" sec xdp ||
			fail "cannot attach the bare XDP_PASS program"
	fi
	"setup_$cfg" "$rate" "$burst" || fail "cannot set up $cfg"
	machine_busy; b0=$BUSY
	ksoftirqd_ns; k0=$KSI
	times >"$TIMES0"
	ip netns exec "$NS_TX" "$SLUICE_FLOOD" "${GEN_OPTS[@]}" --iface "$IF_TX" --dst-mac "$RX_MAC" \
		--dst "$RX4" --src "$SRC" --sources "$nsrc" --count "$COUNT" \
		--seconds "$FLOOD_SECONDS" >"$FLOOD_OUT" ||
		fail "flood failed ($cfg, $nsrc sources)"
	times >"$TIMES1"
	ksoftirqd_ns; k1=$KSI
	machine_busy; b1=$BUSY
	passed=$("passed_$cfg") || fail "cannot read what $cfg passed"
	"teardown_$cfg" || fail "cannot tear down $cfg"
	if needs_pass "$cfg"; then
		ip -n "$NS_RX" link set dev "$IF_RX" xdpdrv off || fail "cannot detach XDP_PASS"
	fi
	t0=$(times_ns "$TIMES0")
	t1=$(times_ns "$TIMES1")
	read -r sent secs pps < <(jq -er '"\(.sent) \(.seconds) \(.pps)"' "$FLOOD_OUT") ||
		fail "bad flood output: $(cat "$FLOOD_OUT")"
	((sent > 0)) || fail "flood sent nothing ($cfg)"
	echo "$cfg $nsrc $round $sent $secs $pps" \
		"$(calc "($t1 - $t0 + $k1 - $k0) / $sent" %.1f)" \
		"$(calc "($b1 - $b0) * 1e9 / $HZ / $sent" %.1f)" \
		"$passed $(calc "$nsrc * ($burst + int($rate * $secs))" %.0f)" >>"$RESULTS"
	printf '  round %d  %-8s %4d src  %8.0f pps  %6.0f ns/pkt  passed %s\n' \
		"$round" "$cfg" "$nsrc" "$pps" "$(tail -n1 "$RESULTS" | cut -d' ' -f7)" \
		"$([[ $passed == -1 ]] && echo all || echo "$passed")"
}

# Share of the machine busy with other work, over one quiet second.
background() {
	local b0
	machine_busy; b0=$BUSY
	sleep 1
	machine_busy
	calc "($BUSY - $b0) * 100 / $HZ / $(nproc)" %.0f
}

# --- run --------------------------------------------------------------------

if [[ $GEN == xdp ]]; then
	echo "== per-packet cost over veth, XDP frames as from a NIC: sluice vs nftables vs iptables =="
else
	echo "== per-packet cost over veth: sluice vs nftables vs iptables =="
fi
echo "   $COUNT packets per flood (at most ${FLOOD_SECONDS}s), ${CONFIGS[*]}, up to $REPS rounds"
BG_BEFORE=$(background)
start=$SECONDS
rounds=0
for ((round = 1; round <= REPS; round++)); do
	if ((round > 1)); then
		per_round=$(((SECONDS - start) / (round - 1)))
		if ((SECONDS - start + per_round > BUDGET)); then
			echo "  (stopping after $rounds rounds: one more would pass the ${BUDGET}s budget)"
			break
		fi
	fi
	for nsrc in "${PATTERNS[@]}"; do
		for cfg in "${CONFIGS[@]}"; do
			run_one "$cfg" "$nsrc" "$round"
		done
	done
	rounds=$round
done
BG_AFTER=$(background)

# --- report -------------------------------------------------------------------

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# field N of CFG NSRC's runs, one per line (in round order)
col() { awk -v c="$1" -v n="$2" -v f="$3" '$1 == c && $2 == n { print $f }' "$RESULTS"; }
# per round, field N of CFG minus that of the bare floor in the same round
extra() { paste <(col "$1" "$2" "$3") <(col bare "$2" "$3") | awk '{ print $1 - $2 }'; }

have() { [[ " ${CONFIGS[*]} " == *" $1 "* ]]; }

echo
echo "== results: median of $rounds rounds (per packet; 'extra' is over the bare XDP_DROP floor of the same round) =="
for nsrc in "${PATTERNS[@]}"; do
	echo
	echo "$nsrc source(s), limit $((AGG_RATE / nsrc))/s burst $((AGG_BURST / nsrc)) per source:"
	printf '%-31s %8s %9s %8s %9s | %9s %8s | %8s %9s\n' \
		config "pps" "cpu ns" "extra" "x native" "machine" "extra" passed expected
	native_extra=
	have native && have bare && native_extra=$(extra native "$nsrc" 7 | median)
	for cfg in "${CONFIGS[@]}"; do
		pps=$(col "$cfg" "$nsrc" 6 | median)
		cpu=$(col "$cfg" "$nsrc" 7 | median)
		mach=$(col "$cfg" "$nsrc" 8 | median)
		passed=$(col "$cfg" "$nsrc" 9 | median)
		expected=$(col "$cfg" "$nsrc" 10 | median)
		ex=- ratio=- mex=-
		if have bare && [[ $cfg != bare ]]; then
			ex=$(extra "$cfg" "$nsrc" 7 | median)
			mex=$(calc "$(extra "$cfg" "$nsrc" 8 | median)" %.0f)
			if [[ $cfg != bare-skb && -n $native_extra ]] && awk -v d="$native_extra" 'BEGIN { exit !(d > 0) }'; then
				ratio=$(calc "$ex / $native_extra" %.2f)
			fi
			ex=$(calc "$ex" %.0f)
		fi
		case $cfg in
		bare | bare-skb) passed=- expected=- ;;
		none) passed=all expected=all ;;
		*) passed=$(calc "$passed" %.0f) expected=$(calc "$expected" %.0f) ;;
		esac
		printf '%-31s %8.0f %9.0f %8s %9s | %9.0f %8s | %8s %9s\n' "${LABEL[$cfg]}" \
			"$pps" "$cpu" "$ex" "$ratio" "$mach" "$mex" "$passed" "$expected"
	done
done
if [[ $GEN == xdp ]]; then
	MODE_NOTE1="The frames came as XDP frames (sluice-flood --xdp): the rows
without XDP of their own ran a bare XDP_PASS first, which is where a NIC
driver without XDP would build the skb."
	MODE_NOTE2="This is the case XDP is for: sluice and the bare program
drop before any skb exists, while every netfilter row pays for the skb and
the stack up to its hook."
else
	MODE_NOTE1="The two bare rows show that on veth the native path itself
costs more than the skb one (see below), so a program's own cost is its
row minus the bare row of its mode."
	MODE_NOTE2="On veth even native XDP gets an skb from the sender (and
veth copies it to give XDP its headroom), so XDP's lead over netfilter is
smaller here than on a NIC, where XDP runs before any skb exists; the
BENCH_GEN=xdp run shows that case."
fi
cat <<EOF

How to read it: each round sent every configuration the same flood from the
same generator ($COUNT UDP packets of 60 bytes, from one source, then from
1000 in turn), one configuration after the other. 'cpu ns' is the CPU time
that flood cost per packet, generator included: the sender process plus the
ksoftirqd threads, which on veth also run the whole receive path (XDP,
netfilter, the stack). The generator's share is the same in every row, so
compare 'extra': the cost above a bare XDP_DROP program in the same round;
'x native' is each row's extra over sluice native's. $MODE_NOTE1 'machine' is the same
from /proc/stat (busy time of all CPUs), which also holds whatever else ran
meanwhile (other work kept the machine ${BG_BEFORE}% busy before the bench,
${BG_AFTER}% after): trust it only on a quiet machine. 'pps' is the
generator's rate; it falls as the receive path grows. 'passed' is what the
limiter let through (sluice: stats within_limit; nft: a counter after the
meter; iptables: the counter of a rule after the hashlimit one), 'expected'
what a token bucket admits, burst + floor(rate x flood seconds) per source:
the rows should agree. $MODE_NOTE2
Debian 12's iptables is iptables-nft: the rule sits in an nf_tables chain
and runs the xt_hashlimit match through nft_compat.
EOF
