# shellcheck shell=bash
# Helpers for tests and the demo that need real traffic: two network
# namespaces (tx, rx) joined by one veth pair with both ends inside them,
# sluice run for the rx end, a bounded flood from the tx end, an nftables
# counter behind sluice on the rx end, and a cleanup trap.
#
# Source it (under set -euo pipefail; a check that fails inside $(...)
# stops the script too, see fail), then:
#   netns_init TAG          # checks, names, EXIT trap (TAG: 1-4 of [a-z0-9])
#   netns_setup             # namespaces, veth, addresses; sets the names below
#   sluice_attach [OPTS]    # sluice attach --mode native [OPTS] $IF_RX
#   sluice_rx ARGS...       # build/sluice -i $IF_RX ARGS... for the rx end
#   as_nobody GROUPS CMD... # CMD in rx as uid nobody in GROUPS, no capabilities
#   need_nobody             # skip unless as_nobody can run
#   sluice_jq FILTER ARGS...  # the same with -j, piped through jq -r FILTER
#                             # (fails when it yields nothing or null)
#   sluice_passed ADDR, sluice_dropped ADDR   # one source's counts (query -j)
#   sluice_stat pass|drop REASON              # a packet counter of stats -j
#   flood ARGS...           # build/sluice-flood from tx towards rx (JSON line)
#   flood_bg FILE ARGS...   # the same in the background, output to FILE,
#                           # PID in FLOOD_PID (stopped by the cleanup)
#   flood_field JSON FILTER # a field of sluice-flood's JSON line
#   nft_rx_init             # netdev ingress chain on $IF_RX (behind XDP)
#   nft_rx_counter NAME MATCH...  # count (and drop) matching packets there
#   nft_rx_packets NAME     # that counter's packets
#   netns_tmp NAME, netns_track_pid PID       # scratch file; process to stop
#   daemon_users            # the servers' system users and the check
#                           # server's socket group, created as the package's
#                           # postinst does where missing (netns_init calls it)
#   ok, fail, skip, assert_eq/ge/le/near, calc, now   # checks and arithmetic
#
# Names set by netns_setup:
#   NS_TX NS_RX     namespaces (sle2e-TAG-PID-tx/-rx; $NETNS_PREFIX replaces sle2e)
#   IF_TX IF_RX     veth ends (slTAGPIDt/r, unique, so pins never collide)
#   TX_MAC RX_MAC   their MAC addresses
#   TX4 RX4 TX6 RX6 198.18.0.1, 198.18.0.2, 2001:2::1, 2001:2::2
#
# Network safety: nothing here touches an interface of the host. The veth is
# created inside the tx namespace with its peer moved straight into the rx
# one, every address is from 198.18.0.0/15 or 2001:2::/48, sluice-flood is
# bounded in count and time and refuses anything else, and the trap removes
# the namespaces, sluice's pins and every process these helpers started.

SLUICE_ROOT=${SLUICE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SLUICE=${SLUICE:-$SLUICE_ROOT/build/sluice}
# sluice with tests/fault/'s map writer and step hooks linked in: it honours
# SLUICE_TEST_FAULT=map_update:N and SLUICE_TEST_HOOK=STEP:kill|stop, which
# build/sluice ignores (make build/tests/sluice-fault).
SLUICE_FAULT=${SLUICE_FAULT:-$SLUICE_ROOT/build/tests/sluice-fault}
SLUICE_FLOOD=${SLUICE_FLOOD:-$SLUICE_ROOT/build/sluice-flood}
SLUICE_PIN_ROOT=/sys/fs/bpf/sluice

TX4=198.18.0.1
RX4=198.18.0.2
TX6=2001:2::1
RX6=2001:2::2

NETNS_PIDS=()
NETNS_TMP=
NS_TX=
NS_RX=
IF_TX=
IF_RX=
NFT_TABLE=sluice_e2e

# Test output: "ok - ..." per passed check, "FAIL: ..." and exit 1 on the first
# failed one; skip exits 77, which tests/run reports as SKIP.
ok() { echo "ok - $*"; }
# A check that fails inside $(...) stops the test too, even where the
# substitution is only an argument (assert_eq "$(helper)" ...), which errexit
# alone would let through: it signals the test's shell, whose trap exits.
fail() {
	echo "FAIL: $*" >&2
	[[ $BASHPID == "$$" ]] || kill -USR1 "$$" 2>/dev/null
	exit 1
}
trap 'exit 1' USR1

# Whether $1 is a decimal number (what the numeric asserts compare).
is_number() { [[ $1 =~ ^-?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?$ ]]; }
skip() {
	echo "SKIP: $*"
	exit 77
}

# Arithmetic on decimals, through awk: calc 'EXPR' [FORMAT] prints the value.
calc() { awk "BEGIN { printf \"${2:-%.6f}\", $1 }"; }

# Seconds since the epoch with microseconds, from bash's clock.
now() { echo "${EPOCHREALTIME/,/.}"; }

assert_eq() { # ACTUAL EXPECTED WHAT
	[[ $1 == "$2" ]] || fail "$3: got $1, want $2"
	ok "$3: $1"
}

assert_ge() { # ACTUAL MIN WHAT
	is_number "$1" || fail "$3: got '$1', not a number"
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }' || fail "$3: got $1, want >= $2"
	ok "$3: $1 >= $2"
}

assert_le() { # ACTUAL MAX WHAT
	is_number "$1" || fail "$3: got '$1', not a number"
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' || fail "$3: got $1, want <= $2"
	ok "$3: $1 <= $2"
}

# ACTUAL within PCT percent of EXPECTED.
assert_near() { # ACTUAL EXPECTED PCT WHAT
	is_number "$1" || fail "$4: got '$1', not a number"
	awk -v a="$1" -v e="$2" -v p="$3" \
		'BEGIN { d = a - e; if (d < 0) d = -d; exit !(d <= e * p / 100) }' ||
		fail "$4: got $1, want $2 within $3%"
	ok "$4: $1 (expected $(calc "$2" %.1f), within $3%)"
}

# Checks what the helpers need and installs the cleanup trap. Skips (77)
# where the machine cannot run these tests at all; fails when sluice is
# simply not built.
netns_init() {
	local tag=${1:?netns_init needs a tag} cmd
	[[ $tag =~ ^[a-z0-9]{1,4}$ ]] || fail "netns_init: tag '$tag' must be 1-4 of [a-z0-9]"
	((EUID == 0)) || skip "needs root (network namespaces, XDP)"
	for cmd in ip nsenter jq nft awk; do
		command -v "$cmd" >/dev/null || skip "$cmd not installed (tools/install-deps.sh)"
	done
	[[ -x $SLUICE ]] || fail "$SLUICE not built: run make"
	[[ -x $SLUICE_FLOOD ]] || fail "$SLUICE_FLOOD not built: run make build/sluice-flood"
	if ! mountpoint -q /sys/fs/bpf; then
		mount -t bpf bpf /sys/fs/bpf || skip "cannot mount bpffs at /sys/fs/bpf"
	fi
	NS_TX=${NETNS_PREFIX:-sle2e}-$tag-$$-tx
	NS_RX=${NETNS_PREFIX:-sle2e}-$tag-$$-rx
	IF_TX=sl$tag$$t
	IF_RX=sl$tag$$r
	NETNS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sle2e-$tag.XXXXXX") || fail "mktemp failed"
	daemon_users
	trap netns_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# The users the exporter and the check server run as by default and the
# group of the check server's socket, which the package creates (debian/
# postinst): made here where they are missing, so that the servers start
# with their defaults as installed. System accounts with no home and no
# shell; one test at a time (flock), so parallel tests do not race.
DAEMON_USERS=(sluice-exporter sluice-check)
DAEMON_GROUPS=(sluice-check-clients)
daemon_users() {
	local u g
	for u in "${DAEMON_USERS[@]}"; do
		getent passwd "$u" >/dev/null && continue
		flock /run/lock/sluice-test-users.lock sh -c 'getent passwd "$1" >/dev/null ||
			useradd --system --user-group --no-create-home --home-dir /nonexistent \
				--shell /usr/sbin/nologin "$1"' sh "$u" || fail "cannot create the system user $u"
	done
	for g in "${DAEMON_GROUPS[@]}"; do
		getent group "$g" >/dev/null && continue
		flock /run/lock/sluice-test-users.lock sh -c 'getent group "$1" >/dev/null ||
			groupadd --system "$1"' sh "$g" || fail "cannot create the system group $g"
	done
}

# A scratch file that the cleanup removes.
netns_tmp() { echo "$NETNS_TMP/$1"; }

# Remember a PID this test started so the cleanup stops it (and only it).
netns_track_pid() { NETNS_PIDS+=("$1"); }

netns_cleanup() {
	local rc=$? pid i
	trap - EXIT INT TERM
	set +e
	for pid in "${NETNS_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${NETNS_PIDS[@]}"; do
		for ((i = 0; i < 20; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	NETNS_PIDS=()
	if [[ -n $IF_RX && -d $SLUICE_PIN_ROOT/$IF_RX ]]; then
		if [[ -e /run/netns/$NS_RX ]]; then
			nsenter --net="/run/netns/$NS_RX" "$SLUICE" detach "$IF_RX" >/dev/null 2>&1
		fi
	fi
	[[ -n $NS_TX ]] && ip netns del "$NS_TX" 2>/dev/null
	[[ -n $NS_RX ]] && ip netns del "$NS_RX" 2>/dev/null
	# Interface gone with its namespace: detach now only removes the pins.
	if [[ -n $IF_RX && -d $SLUICE_PIN_ROOT/$IF_RX ]]; then
		"$SLUICE" detach --force "$IF_RX" >/dev/null 2>&1 || rm -rf "${SLUICE_PIN_ROOT:?}/$IF_RX"
	fi
	[[ -n $NETNS_TMP ]] && rm -rf "$NETNS_TMP"
	exit "$rc"
}

# In one namespace: quiet IPv6 (no DAD, no router solicitations) for devices
# created after this, and loopback up.
netns_quiet() {
	local ns=$1 k
	for k in accept_dad router_solicitations; do
		ip netns exec "$ns" sysctl -qw "net.ipv6.conf.all.$k=0" "net.ipv6.conf.default.$k=0" ||
			fail "sysctl $k in $ns"
	done
	ip -n "$ns" link set lo up || fail "lo up in $ns"
}

netns_setup() {
	[[ -n $NS_TX ]] || fail "call netns_init first"
	ip netns add "$NS_TX" || fail "cannot create namespace $NS_TX"
	ip netns add "$NS_RX" || fail "cannot create namespace $NS_RX"
	netns_quiet "$NS_TX"
	netns_quiet "$NS_RX"
	ip -n "$NS_TX" link add "$IF_TX" type veth peer name "$IF_RX" netns "$NS_RX" ||
		fail "cannot create veth $IF_TX/$IF_RX"
	ip -n "$NS_TX" addr add "$TX4/24" dev "$IF_TX" || fail "address on $IF_TX"
	ip -n "$NS_RX" addr add "$RX4/24" dev "$IF_RX" || fail "address on $IF_RX"
	ip -n "$NS_TX" addr add "$TX6/64" dev "$IF_TX" nodad || fail "IPv6 address on $IF_TX"
	ip -n "$NS_RX" addr add "$RX6/64" dev "$IF_RX" nodad || fail "IPv6 address on $IF_RX"
	ip -n "$NS_TX" link set "$IF_TX" up || fail "link up $IF_TX"
	ip -n "$NS_RX" link set "$IF_RX" up || fail "link up $IF_RX"
	# shellcheck disable=SC2034 # for the scripts that source this
	TX_MAC=$(ip -n "$NS_TX" -j link show dev "$IF_TX" | jq -r '.[0].address')
	RX_MAC=$(ip -n "$NS_RX" -j link show dev "$IF_RX" | jq -r '.[0].address')
	[[ $RX_MAC =~ ^[0-9a-f:]{17}$ ]] || fail "cannot read the MAC of $IF_RX"
}

# Fails unless build/tests/sluice-fault is built (tests that inject faults).
need_sluice_fault() {
	[[ -x $SLUICE_FAULT ]] || fail "$SLUICE_FAULT not built: run make build/tests/sluice-fault"
}

# sluice for the rx end. nsenter enters only the network namespace, so the
# host's /sys/fs/bpf (and sluice's pins) stay visible; under `ip netns exec`,
# which remounts /sys, sluice finds the host's bpffs itself (e2e/netns_exec).
sluice_rx() {
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" "$@"
}

# ARGS run in the rx namespace as uid nobody with supplementary GROUPS (a
# comma list) and no capabilities: a reader of the pins' group, or with
# nobody's own group only, no reader at all.
# Skips the test unless as_nobody can run: setpriv, and a user nobody.
need_nobody() {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	getent passwd nobody >/dev/null || skip "no user nobody"
}
as_nobody() { # GROUPS ARGS...
	local groups=$1
	shift
	nsenter --net="/run/netns/$NS_RX" setpriv --reuid nobody --regid "$(id -gn nobody)" \
		--groups "$groups" --inh-caps=-all --bounding-set=-all "$@"
}

# Extra attach options may follow, e.g. sluice_attach --max-sources 4096.
# shellcheck disable=SC2120 # callers may pass none
sluice_attach() {
	sluice_rx attach --mode native "$@" "$IF_RX"
}

sluice_jq() { # FILTER ARGS...
	local filter=$1 out val
	shift
	out=$(sluice_rx -j "$@") || fail "sluice $* failed"
	# false is a value; null (a missing key) is not
	val=$(jq -r "$filter" <<<"$out") || fail "sluice $*: bad filter '$filter'"
	[[ -n $val && $val != null ]] || fail "sluice $*: no '$filter' in: $out"
	printf '%s\n' "$val"
}

# Packets and drops of one source, from `sluice query ADDR -j`.
sluice_passed() { sluice_jq .passed query "$1"; }
sluice_dropped() { sluice_jq .dropped query "$1"; }

# `sluice stats -j` packet counter for ACTION REASON.
sluice_stat() { sluice_jq ".packets.$1.$2" stats; }

# A bounded flood from tx to rx's MAC; prints sluice-flood's JSON line.
flood() {
	ip netns exec "$NS_TX" "$SLUICE_FLOOD" --iface "$IF_TX" --dst-mac "$RX_MAC" "$@"
}

flood_bg() { # FILE ARGS...
	local out=$1
	shift
	ip netns exec "$NS_TX" "$SLUICE_FLOOD" --iface "$IF_TX" --dst-mac "$RX_MAC" "$@" >"$out" &
	FLOOD_PID=$!
	netns_track_pid "$FLOOD_PID"
}

# Skips the test when this kernel refuses BPF_PROG_TEST_RUN's live-frames
# mode (sluice-flood --xdp), as some hardened kernels do with EPERM even to
# root. One frame, before anything is attached; any other error fails.
need_xdp_live() {
	local err
	err=$(flood --xdp --count 1 --seconds 1 2>&1 >/dev/null) && return 0
	[[ $err == *"Operation not permitted"* ]] &&
		skip "this kernel refuses BPF_PROG_TEST_RUN live frames: $err"
	fail "sluice-flood --xdp cannot send one frame: $err"
}

# jq over a flood's JSON line: flood_field FILE_OR_JSON .sent
flood_field() {
	jq -er "$2" <<<"$1" || fail "bad sluice-flood output: $1"
}

# An nftables netdev ingress chain on the rx veth: it runs after XDP_PASS,
# so it sees exactly what sluice passed. Matching packets are counted and
# then dropped, which keeps the rx stack quiet (no ICMP port unreachable, no
# ARP or ND for the flood's made-up sources) without changing any count.
nft_rx_init() {
	ip netns exec "$NS_RX" nft -f - <<-EOF || fail "cannot create the nftables ingress chain"
		table netdev $NFT_TABLE {
			chain ingress {
				type filter hook ingress device "$IF_RX" priority 0; policy accept;
			}
		}
	EOF
}

nft_rx_counter() { # NAME MATCH...
	local name=$1
	shift
	ip netns exec "$NS_RX" nft add counter netdev "$NFT_TABLE" "$name" ||
		fail "cannot add nftables counter $name"
	ip netns exec "$NS_RX" nft add rule netdev "$NFT_TABLE" ingress "$@" \
		counter name "$name" drop || fail "cannot add nftables rule for $name ($*)"
}

nft_rx_packets() {
	ip netns exec "$NS_RX" nft -j list counter netdev "$NFT_TABLE" "$1" |
		jq -er '.nftables[] | select(.counter) | .counter.packets' ||
		fail "cannot read nftables counter $1"
}

# An XDP program that is nothing but `return ACTION`, compiled to FILE (the
# benchmarks' floors: XDP_DROP, and XDP_PASS where a driver builds the skb).
bare_prog() { # FILE ACTION
	printf '%s\n' '#include <linux/bpf.h>' \
		"__attribute__((section(\"xdp\"), used)) int bare(struct xdp_md *ctx) { return $2; }" \
		'char _license[] __attribute__((section("license"), used)) = "GPL";' |
		clang -O2 -target bpf -I "/usr/include/$(gcc -dumpmachine)" -x c -c -o "$1" - ||
		fail "cannot compile the bare $2 program"
}
