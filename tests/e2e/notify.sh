#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# e2e/notify: the daemons speak sd_notify(3) to a service manager's notify
# socket (one this test binds, tests/lib/notify_listen.py, named by
# NOTIFY_SOCKET), as a unit with Type=notify and WatchdogSec= expects:
#  1. the exporter: READY=1 with a STATUS= line once it serves; with
#     WATCHDOG_USEC set, WATCHDOG=1 again and again; STOPPING=1 on SIGTERM,
#     and exit 0;
#  2. the exporter without WATCHDOG_USEC: READY=1, and no WATCHDOG=1;
#  3. the check server: the same as 1 (its WATCHDOG=1 waits for its own
#     request to /metrics);
#  4. the cluster agent (`cluster join`, with a Redis of the test's own on
#     the rx namespace's loopback): READY=1 once it has joined, its STATUS=
#     saying up, WATCHDOG=1, STOPPING=1 on SIGTERM.
# Each daemon runs in the rx namespace and drops its privileges (the
# exporter and the check server) before it says READY=1.
set -euo pipefail
. "$(dirname "$0")/../lib/netns.sh"

LISTEN=$SLUICE_ROOT/tests/lib/notify_listen.py
WATCHDOG_USEC=300000	# a WATCHDOG=1 every 100 ms
PORT_EXPORTER=9481
PORT_CHECK=9482
PORT_REDIS=6399

netns_init nt
for cmd in python3 curl redis-server redis-cli; do
	command -v "$cmd" >/dev/null || skip "$cmd not installed (tools/install-deps.sh)"
done
netns_setup
sluice_attach >/dev/null || fail "sluice attach $IF_RX"
# The daemons send as nobody once they dropped root: the socket's
# directory must let them reach it.
chmod 755 "$NETNS_TMP"

in_rx() { nsenter --net="/run/netns/$NS_RX" "$@"; }

# A notify socket of its own for daemon NAME: SOCK and GOT (what it got).
listen() { # NAME
	local said i
	SOCK=$(netns_tmp "$1.sock")
	GOT=$(netns_tmp "$1.notify")
	said=$(netns_tmp "$1.listen")
	: >"$GOT"
	python3 "$LISTEN" "$SOCK" "$GOT" >"$said" 2>&1 &
	LISTENER_OF[$1]=$!
	netns_track_pid "$!"
	for ((i = 0; i < 100; i++)); do
		[[ $(cat "$said") == listening ]] && return 0
		kill -0 "${LISTENER_OF[$1]}" 2>/dev/null || fail "$1: the notify socket: $(cat "$said")"
		sleep 0.05
	done
	fail "$1: the notify socket did not start within 5 s"
}
declare -A LISTENER_OF=()

# Waits up to 10 s until GOT has a line LINE (grep -x) COUNT times.
wait_line() { # WHAT LINE [COUNT]
	local i
	for ((i = 0; i < 100; i++)); do
		(($(grep -cx -- "$2" "$GOT" || true) >= ${3:-1})) && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || fail "$1 exited: $(cat "$LOG")"
		sleep 0.1
	done
	fail "$1: no '$2' (x${3:-1}) on the notify socket within 10 s; got: $(tr '\n' '|' <"$GOT" | head -c 300); log: $(head -c 300 "$LOG")"
}

# Starts daemon NAME (sluice ARGS) under the socket; DAEMON_PID, LOG.
start() { # NAME WATCHDOG_USEC|- ARGS...
	local name=$1 wd=$2
	shift 2
	listen "$name"
	LOG=$(netns_tmp "$name.log")
	# nsenter itself, not a function: $! is then the daemon.
	if [[ $wd == - ]]; then
		NOTIFY_SOCKET=$SOCK nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" "$@" \
			>"$LOG" 2>&1 &
	else
		NOTIFY_SOCKET=$SOCK WATCHDOG_USEC=$wd nsenter --net="/run/netns/$NS_RX" "$SLUICE" \
			-i "$IF_RX" "$@" >"$LOG" 2>&1 &
	fi
	DAEMON_PID=$!
	netns_track_pid "$DAEMON_PID"
}

# SIGTERM: STOPPING=1 arrives and the daemon exits 0.
stop() { # NAME
	local rc=0 i
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID" || rc=$?
	assert_eq "$rc" 0 "$1: exit status on SIGTERM"
	for ((i = 0; i < 20; i++)); do	# the datagram was sent before the exit
		grep -qx STOPPING=1 "$GOT" && break
		sleep 0.05
	done
	grep -qx STOPPING=1 "$GOT" || fail "$1: no STOPPING=1 on SIGTERM; got: $(tr '\n' '|' <"$GOT")"
	ok "$1: STOPPING=1 on SIGTERM"
	kill "${LISTENER_OF[$1]}" 2>/dev/null || true
}

# READY=1 comes once the daemon answers: asked right after, it does.
ready() { # NAME URL
	wait_line "$1" READY=1
	in_rx curl -sf --max-time 5 -o /dev/null "$2" || fail "$1: said READY=1 but $2 does not answer"
	grep -q '^STATUS=.' "$GOT" || fail "$1: READY=1 without a STATUS= line"
	ok "$1: READY=1 ($(grep -m1 '^STATUS=' "$GOT")), and $2 answers"
}

# --- 1. the exporter under a watchdog ----------------------------------------
start exporter "$WATCHDOG_USEC" exporter --listen "127.0.0.1:$PORT_EXPORTER"
ready exporter "http://127.0.0.1:$PORT_EXPORTER/metrics"
wait_line exporter WATCHDOG=1 3
ok "exporter: WATCHDOG=1 every 100 ms or so (WATCHDOG_USEC=$WATCHDOG_USEC)"
stop exporter

# --- 2. the exporter with no watchdog asked for ------------------------------
start exporter_nowd - exporter --listen "127.0.0.1:$PORT_EXPORTER"
ready exporter_nowd "http://127.0.0.1:$PORT_EXPORTER/metrics"
sleep 0.5	# five intervals of the watchdog above
assert_eq "$(grep -cx WATCHDOG=1 "$GOT" || true)" 0 "exporter without WATCHDOG_USEC: WATCHDOG=1 lines"
stop exporter_nowd

# --- 3. the check server -----------------------------------------------------
sluice_rx limit set 198.18.0.0/24 --requests 10 --burst 10 >/dev/null 2>&1 ||
	fail "limit set --requests"
start check "$WATCHDOG_USEC" check-server --listen "127.0.0.1:$PORT_CHECK"
ready check "http://127.0.0.1:$PORT_CHECK/metrics"
wait_line check WATCHDOG=1 3
ok "check server: WATCHDOG=1 every 100 ms or so"
stop check

# --- 4. the cluster agent ----------------------------------------------------
nsenter --net="/run/netns/$NS_RX" redis-server --bind 127.0.0.1 --port "$PORT_REDIS" --save '' --appendonly no \
	--daemonize no --dir "$NETNS_TMP" >"$(netns_tmp redis.log)" 2>&1 &
netns_track_pid $!
for ((i = 0; i < 100; i++)); do
	[[ $(in_rx redis-cli -p "$PORT_REDIS" PING 2>/dev/null) == PONG ]] && break
	sleep 0.05
done
[[ $(in_rx redis-cli -p "$PORT_REDIS" PING 2>/dev/null) == PONG ]] || fail "redis-server did not start"
start agent "$WATCHDOG_USEC" cluster join "redis://127.0.0.1:$PORT_REDIS" --node nt --sync 1000
wait_line agent READY=1
grep -q "^STATUS=$IF_RX: up" "$GOT" || fail "agent: READY=1 without STATUS=... up: $(tr '\n' '|' <"$GOT")"
ok "agent: READY=1 ($(grep -m1 '^STATUS=' "$GOT"))"
# --sync 1000 is longer than the watchdog's interval: the agent still pings.
wait_line agent WATCHDOG=1 3
ok "agent: WATCHDOG=1 between syncs a second apart"
stop agent
