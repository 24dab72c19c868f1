# shellcheck shell=bash
# Helpers for the exporter tests, over tests/lib/netns.sh: the exporter and
# (for one test) Prometheus run inside the test's rx namespace and listen on
# its loopback only, so their ports never collide with anything else.
#
#   exporter_start [ARGS...]   sluice exporter ARGS in $NS_RX, waits until it
#                              answers; sets EXPORTER_PID, EXPORTER_LOG
#   exporter_stop              SIGTERM, and the exit status must be 0
#   scrape [PATH]              curl the exporter (default /metrics) from $NS_RX
#   series FILE 'NAME{...}'    the value of one series in a scrape, or "absent"
#   in_rx CMD...               CMD in $NS_RX (ip netns exec)
#   stats_json                 `sluice stats -j` for $IF_RX
#   attach_extra IFACE         a second veth pair inside $NS_RX with sluice on
#                              IFACE; detached and removed by the cleanup
#
# SLUICE_EXPORTER picks the binary (default build/sluice; the robustness
# tests use the ASan/UBSan build, build/asan/sluice).

. "$(dirname "${BASH_SOURCE[0]}")/../lib/netns.sh"

HTTP_RAW=${HTTP_RAW:-$SLUICE_ROOT/build/tests/http_raw}
FILL_SOURCES=${FILL_SOURCES:-$SLUICE_ROOT/build/tests/fill_sources}
SLUICE_EXPORTER=${SLUICE_EXPORTER:-$SLUICE}
EXPORTER_PORT=9464
EXPORTER_URL=http://127.0.0.1:$EXPORTER_PORT
EXPORTER_PID=
EXPORTER_LOG=
EXTRA_IFACES=()

in_rx() { ip netns exec "$NS_RX" "$@"; }

stats_json() { sluice_rx -j stats; }

# netns_init plus what these tests need; chains its own cleanup in front of
# netns_cleanup (extra interfaces first, while their namespace exists).
exporter_init() {
	netns_init "$1"
	command -v curl >/dev/null || skip "curl not installed (tools/install-deps.sh)"
	[[ -x $SLUICE_EXPORTER ]] || fail "$SLUICE_EXPORTER not built: run make"
	trap exporter_cleanup EXIT
}

exporter_cleanup() {
	local rc=$? ifc
	set +e
	for ifc in "${EXTRA_IFACES[@]}"; do
		if [[ -e /run/netns/$NS_RX ]]; then
			nsenter --net="/run/netns/$NS_RX" "$SLUICE" detach "$ifc" >/dev/null 2>&1
		fi
		[[ -d $SLUICE_PIN_ROOT/$ifc ]] &&
			{ "$SLUICE" detach --force "$ifc" >/dev/null 2>&1 || rm -rf "${SLUICE_PIN_ROOT:?}/$ifc"; }
	done
	(exit "$rc")
	netns_cleanup
}

attach_extra() { # IFACE
	local ifc=$1
	in_rx ip link add "$ifc" type veth peer name "${ifc:0:12}p" ||
		fail "cannot create veth $ifc in $NS_RX"
	EXTRA_IFACES+=("$ifc")
	in_rx ip link set "$ifc" up || fail "link up $ifc"
	in_rx ip link set "${ifc:0:12}p" up || fail "link up ${ifc:0:12}p"
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" attach --mode native "$ifc" >/dev/null ||
		fail "sluice attach $ifc"
}

scrape() { # [PATH] [CURL ARGS...]
	local path=${1:-/metrics}
	shift || true
	in_rx curl -sS --max-time 5 "$@" "$EXPORTER_URL$path"
}

series() { # FILE SERIES
	# Through the environment: awk -v would eat the backslashes of escapes.
	SERIES=$2 awk '$1 == ENVIRON["SERIES"] { print $2; found = 1 }
		END { if (!found) print "absent" }' "$1"
}

exporter_start() {
	local i
	EXPORTER_LOG=$(netns_tmp exporter.log)
	nsenter --net="/run/netns/$NS_RX" "$SLUICE_EXPORTER" exporter "$@" >"$EXPORTER_LOG" 2>&1 &
	EXPORTER_PID=$!
	netns_track_pid "$EXPORTER_PID"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$EXPORTER_PID" 2>/dev/null || {
			cat "$EXPORTER_LOG" >&2
			fail "the exporter exited at startup"
		}
		# Answering, and past its startup line.
		in_rx curl -s --max-time 1 -o /dev/null "$EXPORTER_URL/" && [[ -s $EXPORTER_LOG ]] && {
			ok "exporter up: $(head -n 1 "$EXPORTER_LOG")"
			return 0
		}
		sleep 0.1
	done
	cat "$EXPORTER_LOG" >&2
	fail "the exporter did not answer within 10 s"
}

exporter_stop() { # [SIGNAL]
	local rc
	kill -"${1:-TERM}" "$EXPORTER_PID" || fail "the exporter is gone before SIG${1:-TERM}"
	rc=0
	wait "$EXPORTER_PID" || rc=$?
	if ((rc != 0)); then
		cat "$EXPORTER_LOG" >&2
		fail "exporter exit status after SIG${1:-TERM}: $rc, want 0"
	fi
	ok "exporter exits 0 on SIG${1:-TERM}"
	# Reaped: forget the PID so the cleanup never signals a reused one.
	local keep=() pid
	for pid in "${NETNS_PIDS[@]}"; do
		[[ $pid == "$EXPORTER_PID" ]] || keep+=("$pid")
	done
	NETNS_PIDS=("${keep[@]}")
	EXPORTER_PID=
}
