# shellcheck shell=bash
# Shared by the CLI tests: which binary to run (the ASan/UBSan build when it
# exists), a namespace with veth ends that carry no traffic, one sluice run
# captured into rc/stdout/stderr, sanitizer detection, and the cleanup trap.
#
# Source it, then:
#   cli_init TAG        checks, names, EXIT trap
#   cli_setup           namespaces rx/tx, veth $IF (rx) <-> $PEER (tx),
#                       veth $NA <-> $NA2 (both in rx), bridges $BR, $BR2
#                       (rx; no native XDP there)
#   sl ARGS...          run sluice in rx; sets RC, OUT, ERR (file paths)
#   sl_ok ARGS...       sl, and stop the test unless it exited 0 with
#                       nothing on stderr but notices (quiet_err)
#   quiet_err           whether $ERR holds nothing but the notices of a
#                       change a command made (attached, detached, policy
#                       committed, a ban added or removed: doc/logging.md)
#   check MSG CMD...    count a check (passes when CMD does); test goes on
#   cli_finish          summary line, exit 1 if any check failed
#
# Nothing here sends a packet: IPv6 is disabled in both namespaces before
# any interface exists, no address is assigned and the links stay down, so
# sluice's counters are still and any change to them is the CLI's doing.

SLUICE_ROOT=${SLUICE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SLUICE_PIN_ROOT=/sys/fs/bpf/sluice
CLI_DIR=$SLUICE_ROOT/tests/cli

# The sanitizer build is preferred; SLUICE_BIN overrides both.
if [[ -n ${SLUICE_BIN:-} ]]; then
	SLUICE=$SLUICE_BIN
elif [[ -x $SLUICE_ROOT/build/asan/sluice ]]; then
	SLUICE=$SLUICE_ROOT/build/asan/sluice
else
	SLUICE=$SLUICE_ROOT/build/sluice
fi

# Leaks and UB fail the run they happen in: distinct exit codes, and the
# report's text is looked for on stderr as well (sl below).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=86:strip_path_prefix=$SLUICE_ROOT/"
export LSAN_OPTIONS=print_suppressions=0
[[ -r $CLI_DIR/lsan.supp ]] && LSAN_OPTIONS+=":suppressions=$CLI_DIR/lsan.supp"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87"

CHECKS=0
FAILED=0
SANITIZER_REPORTS=0
NS_RX=
NS_TX=
IF=
PEER=
NA=
NA2=
BR=
BR2=
CLI_TMP=
OUT=
ERR=
RC=

skip() {
	echo "SKIP: $*"
	exit 77
}

# Setup trouble: stop at once.
die() {
	echo "FAIL: $*" >&2
	exit 1
}

check() { # MSG COMMAND...
	local msg=$1
	shift
	CHECKS=$((CHECKS + 1))
	if "$@" >/dev/null; then
		echo "ok - $msg"
	else
		echo "FAIL - $msg"
		FAILED=$((FAILED + 1))
	fi
}

# A failed check with the details on the following lines.
fail_check() { # MSG DETAILS...
	CHECKS=$((CHECKS + 1))
	FAILED=$((FAILED + 1))
	echo "FAIL - $1"
	shift
	local d
	for d in "$@"; do
		printf '    %s\n' "$d"
	done
}

pass_check() {
	CHECKS=$((CHECKS + 1))
	echo "ok - $1"
}

cli_init() {
	local tag=${1:?cli_init needs a tag} cmd
	[[ $tag =~ ^[a-z0-9]{1,3}$ ]] || die "cli_init: tag '$tag' must be 1-3 of [a-z0-9]"
	((EUID == 0)) || skip "needs root (network namespaces, BPF)"
	for cmd in ip nsenter jq; do
		command -v "$cmd" >/dev/null || skip "$cmd not installed (tools/install-deps.sh)"
	done
	[[ -x $SLUICE ]] || die "$SLUICE not built: run make"
	if ! mountpoint -q /sys/fs/bpf; then
		mount -t bpf bpf /sys/fs/bpf || skip "cannot mount bpffs at /sys/fs/bpf"
	fi
	# Interface names: "sc" TAG PID and one letter, at most 2+3+7+1 = 13.
	local p=sc$tag$$
	NS_RX=slcli-$tag-$$-rx
	NS_TX=slcli-$tag-$$-tx
	IF=${p}a
	PEER=${p}b
	NA=${p}n
	NA2=${p}m
	BR=${p}r
	BR2=${p}s
	CLI_TMP=$(mktemp -d "${TMPDIR:-/tmp}/slcli-$tag.XXXXXX") || die "mktemp failed"
	OUT=$CLI_TMP/stdout
	ERR=$CLI_TMP/stderr
	trap cli_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	echo "# sluice binary: $SLUICE"
	[[ $SLUICE == */asan/* ]] ||
		echo "# NOTE: not the sanitizer build; 'make build/asan/sluice' to run under ASan/UBSan"
}

cli_cleanup() {
	local rc=$? name
	trap - EXIT INT TERM
	set +e
	if [[ -n $NS_RX && -e /run/netns/$NS_RX ]]; then
		for name in "$IF" "$NA" "$BR" "$BR2"; do
			[[ -d $SLUICE_PIN_ROOT/$name ]] &&
				nsenter --net="/run/netns/$NS_RX" "$SLUICE" detach "$name" >/dev/null 2>&1
		done
	fi
	[[ -n $NS_TX ]] && ip netns del "$NS_TX" 2>/dev/null
	[[ -n $NS_RX ]] && ip netns del "$NS_RX" 2>/dev/null
	# Only pins of this test's own interface names.
	for name in "$IF" "$NA" "$NA2" "$BR" "$BR2" "$PEER"; do
		[[ -n $name && -d $SLUICE_PIN_ROOT/$name ]] && rm -rf "${SLUICE_PIN_ROOT:?}/$name"
	done
	[[ -n $CLI_TMP ]] && rm -rf "$CLI_TMP"
	exit "$rc"
}

cli_setup() {
	local ns
	ip netns add "$NS_RX" || die "cannot create namespace $NS_RX"
	ip netns add "$NS_TX" || die "cannot create namespace $NS_TX"
	for ns in "$NS_RX" "$NS_TX"; do
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 || die "cannot disable IPv6 in $ns"
	done
	ip -n "$NS_RX" link add "$IF" type veth peer name "$PEER" netns "$NS_TX" ||
		die "cannot create veth $IF/$PEER"
	ip -n "$NS_RX" link add "$NA" type veth peer name "$NA2" ||
		die "cannot create veth $NA/$NA2"
	# A bridge has no native XDP: attaching in native mode is a runtime failure.
	ip -n "$NS_RX" link add "$BR" type bridge || die "cannot create bridge $BR"
	ip -n "$NS_RX" link add "$BR2" type bridge || die "cannot create bridge $BR2"
}

# Runs sluice for the rx namespace; RC is its exit status, OUT and ERR the
# files holding stdout and stderr. A sanitizer report anywhere is counted.
# SL_AS, when set, is the command sluice runs under (e.g. setpriv).
SL_AS=()
sl() {
	nsenter --net="/run/netns/$NS_RX" "${SL_AS[@]}" "$SLUICE" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	if ((RC == 86 || RC == 87)) ||
		{ [[ -s $ERR ]] && grep -qE 'Sanitizer|runtime error:|SUMMARY: ' "$ERR"; }; then
		SANITIZER_REPORTS=$((SANITIZER_REPORTS + 1))
		fail_check "sanitizer report from: sluice $(printf '%q ' "$@")(exit $RC)"
		sed 's/^/    | /' "$ERR" | head -n 60
	fi
	return 0
}

# The log lines a command that succeeded prints for what it changed
# (doc/logging.md), plain as on a terminal: never a warning nor an error.
LOG_NOTICE_ERE='^sluice: [^ :]+: (attached in [a-z]+ mode|detached|policy committed: |ban (added|removed|expired|load): |[0-9]+ bans expired \(list )'
quiet_err() { ! grep -qvE "$LOG_NOTICE_ERE" "$ERR"; }

# sl that must succeed quietly (exit 0, nothing on stderr but notices),
# else the test stops: for setup steps. Call it in the main shell, not in $(...), so the
# sanitizer count and the exit reach the test; read its output from $OUT.
sl_ok() {
	sl "$@"
	if ((RC != 0)) || ! quiet_err; then
		die "sluice $(printf '%q ' "$@")exited $RC: $(head -c 400 "$ERR")"
	fi
}

cli_attach() { # IFACE [OPTIONS...]
	local ifc=$1
	shift
	sl_ok attach "$@" "$ifc" >/dev/null
}

cli_finish() {
	echo "# $CHECKS checks, $FAILED failed, $SANITIZER_REPORTS sanitizer reports"
	((FAILED == 0)) || exit 1
	exit 0
}
