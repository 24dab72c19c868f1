# shellcheck shell=bash
# Helpers for the check-server tests, over tests/lib/netns.sh: sluice is
# attached to the rx veth, the check server runs inside the rx namespace
# (nsenter --net, so it sees the pins) and listens on that namespace's
# loopback only; curl asks it from there too.
#
#   check_init TAG             netns_init TAG, netns_setup, sluice_attach
#   check_start [ARGS...]      sluice check-server ARGS in $NS_RX, on TCP
#                              $CHECK_URL unless ARGS has --listen or --socket
#                              or CHECK_UNIX names its socket (curl then asks there);
#                              waits until it answers; sets CHECK_PID, CHECK_LOG
#   check_stop                 SIGTERM; the exit status must be 0
#   check ADDR [CURL ARGS...]  GET /check$CHECK_QUERY for client ADDR (X-Real-IP);
#                              prints the status; headers in $CHECK_HDR
#   hdr NAME                   a header of the last check ("" when absent)
#   ask [CURL ARGS...]         curl the server's URL + the first argument's path
#   in_rx CMD...               CMD in $NS_RX (ip netns exec)
#
# SLUICE_CHECK picks the binary (default build/sluice).

. "$(dirname "${BASH_SOURCE[0]}")/../lib/netns.sh"

SLUICE_CHECK=${SLUICE_CHECK:-$SLUICE}
CHECK_PORT=9465
CHECK_URL=http://127.0.0.1:$CHECK_PORT
CHECK_PID=
CHECK_LOG=
CHECK_HDR=

in_rx() { ip netns exec "$NS_RX" "$@"; }

check_init() {
	netns_init "$1"
	command -v curl >/dev/null || skip "curl not installed (tools/install-deps.sh)"
	[[ -x $SLUICE_CHECK ]] || fail "$SLUICE_CHECK not built: run make"
	netns_setup
	sluice_attach >/dev/null || fail "sluice attach $IF_RX"
	CHECK_HDR=$(netns_tmp check.hdr)
}

check_start() {
	local deadline=$((SECONDS + 10)) where=(--listen "127.0.0.1:$CHECK_PORT")
	[[ -n ${CHECK_UNIX:-} || " $* " == *" --listen "* || " $* " == *" --socket "* ]] && where=()
	CHECK_LOG=$(netns_tmp check.log)
	nsenter --net="/run/netns/$NS_RX" "$SLUICE_CHECK" -i "$IF_RX" check-server "${where[@]}" \
		"$@" >"$CHECK_LOG" 2>&1 &
	CHECK_PID=$!
	netns_track_pid "$CHECK_PID"
	# Answering, and past its startup line.
	until [[ -s $CHECK_LOG ]] && in_rx curl -s --max-time 1 -o /dev/null ${CHECK_UNIX:+--unix-socket "$CHECK_UNIX"} "$CHECK_URL/metrics"; do
		kill -0 "$CHECK_PID" 2>/dev/null || fail "the check server exited at startup: $(cat "$CHECK_LOG")"
		((SECONDS < deadline)) || fail "the check server did not answer within 10 s: $(cat "$CHECK_LOG")"
		sleep 0.1
	done
	ok "check server up: $(head -n 1 "$CHECK_LOG")"
}

check_stop() {
	local rc=0 keep=() pid
	kill -TERM "$CHECK_PID" || fail "the check server is gone before SIGTERM"
	wait "$CHECK_PID" || rc=$?
	if ((rc != 0)); then
		cat "$CHECK_LOG" >&2
		fail "check server exit status after SIGTERM: $rc, want 0"
	fi
	for pid in "${NETNS_PIDS[@]}"; do
		[[ $pid == "$CHECK_PID" ]] || keep+=("$pid")
	done
	NETNS_PIDS=("${keep[@]}")
	CHECK_PID=
}

check() { # ADDR [CURL ARGS...]
	local addr=$1
	shift
	# shellcheck disable=SC2086 # CHECK_UNIX: a Unix socket's path, or nothing
	in_rx curl -sS --max-time 5 -o /dev/null -D "$CHECK_HDR" -w '%{http_code}' ${CHECK_UNIX:+--unix-socket "$CHECK_UNIX"} \
		-H "X-Real-IP: $addr" "$@" "$CHECK_URL/check${CHECK_QUERY:-}"
}

hdr() { # NAME
	awk -v n="$(tr '[:upper:]' '[:lower:]' <<<"$1"):" \
		'tolower($1) == n { sub(/^[^:]*: */, ""); sub(/\r$/, ""); print; exit }' "$CHECK_HDR"
}

ask() { # PATH [CURL ARGS...]
	local path=$1
	shift
	# shellcheck disable=SC2086
	in_rx curl -sS --max-time 5 ${CHECK_UNIX:+--unix-socket "$CHECK_UNIX"} "$@" "$CHECK_URL$path"
}

# The value of one series on /metrics, or "absent".
metric() { # 'NAME{...}'
	ask /metrics | SERIES=$1 awk '$1 == ENVIRON["SERIES"] { print $2; found = 1 }
		END { if (!found) print "absent" }'
}
