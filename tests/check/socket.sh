#!/usr/bin/env bash
# check/socket: with its defaults the check server is reachable only by
# root and the gateway's group. It serves on the Unix socket
# /run/sluice/check.sock (root, group sluice-check-clients, its own, which
# the package creates and nginx's user joins; mode 0660; the startup line
# says unix:PATH) and not on TCP: a process running as nobody gets no
# answer from TCP loopback (nothing listens on 127.0.0.1:9465) and its
# connect to the socket is refused by permission, and nothing is charged;
# so is a process of www-data's (PHP-FPM and web applications on Debian
# share that group with nginx); root and a member of sluice-check-clients
# are answered, /metrics too. Twenty idle
# connections of the gateway all stay open (Unix peers have no address:
# the per-address waiting limit of 8 must not cut them) and a check still
# gets in. SIGTERM: exit 0, the socket removed; SIGKILL: removed as well.
# A stale socket left behind is replaced; a live one, or a file that is not
# a socket, is refused (exit 1); bad combinations are usage errors.
# Can fail: a server that listens on TCP loopback answers nobody with 200
# from 127.0.0.1:9465.
# Shown to fail on the build whose default group was www-data: "the socket's
# group: www-data, want sluice-check-clients".
set -euo pipefail
# The ASan/UBSan build: a leak or overflow on any path here fails the test.
SLUICE_CHECK=${SLUICE_CHECK:-$(dirname "$0")/../../build/asan/sluice}
# shellcheck source=tests/check/lib.sh
. "$(dirname "$0")/lib.sh"

SOCK=/run/sluice/check.sock
GROUP=sluice-check-clients	# created by check_init where missing, as the package does
getent group www-data >/dev/null || skip "no group www-data (base-passwd)"
command -v setpriv >/dev/null || skip "setpriv not installed (util-linux)"
[[ -x /usr/bin/python3 ]] || skip "python3 not installed"
as_nobody() { in_rx setpriv --reuid nobody --regid nogroup --clear-groups "$@"; }
as_gateway() { in_rx setpriv --reuid nobody --regid nogroup --groups "$GROUP" "$@"; }
as_www() { in_rx setpriv --reuid www-data --regid www-data --clear-groups "$@"; }

check_init cks
sluice_rx limit set 198.18.0.0/15 --requests 1/s --burst 3 >/dev/null
# A check server of the host's own would be in the way (a stale socket is
# fine: it is replaced).
if [[ -e $SOCK ]] && /usr/bin/python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$SOCK" 2>/dev/null; then
	skip "$SOCK is in use by a running check server"
fi

# --- with the defaults ---
CHECK_LOG=$(netns_tmp check.log)
nsenter --net="/run/netns/$NS_RX" "$SLUICE_CHECK" -i "$IF_RX" check-server >"$CHECK_LOG" 2>&1 &
CHECK_PID=$!
netns_track_pid "$CHECK_PID"
for ((i = 0; i < 100; i++)); do
	[[ -s $CHECK_LOG ]] && break
	kill -0 "$CHECK_PID" 2>/dev/null || fail "the check server exited at startup: $(cat "$CHECK_LOG")"
	sleep 0.1
done
[[ -s $CHECK_LOG ]] || fail "no startup line after 10 s"
sleep 0.2

# nobody over TCP loopback: the server listens on its Unix socket only.
code=$(as_nobody curl -s --max-time 3 -o /dev/null -w '%{http_code}' -H 'X-Real-IP: 198.18.0.9' \
	"http://127.0.0.1:$CHECK_PORT/check") || true
assert_eq "$code" 000 "a process running as nobody asking 127.0.0.1:$CHECK_PORT (no TCP listener)"

line=$(head -n 1 "$CHECK_LOG")
[[ $line == *"unix:$SOCK "* ]] || fail "the startup line does not say unix:$SOCK: $line"
ok "startup line: $line"
assert_eq "$(stat -c '%G' "$SOCK")" sluice-check-clients "the socket's group"
assert_eq "$(stat -c '%F %U %G %a' "$SOCK")" "socket root $GROUP 660" "$SOCK: type, owner, group, mode"
assert_eq "$(stat -c '%U %a' "$(dirname "$SOCK")")" "root 755" "$(dirname "$SOCK"): owner, mode"

# nobody's connect to the socket: refused by permission.
err=$(as_nobody /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(e.strerror); sys.exit(0)
s.sendall(b"GET /check HTTP/1.1\r\nHost: x\r\nX-Real-IP: 198.18.0.9\r\n\r\n")
print("answered: " + s.recv(64).decode(errors="replace").splitlines()[0])' "$SOCK")
assert_eq "$err" "Permission denied" "a process running as nobody connecting to $SOCK"
code=$(as_nobody curl -s --max-time 3 -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
	-H 'X-Real-IP: 198.18.0.9' http://localhost/check) || true
assert_eq "$code" 000 "curl as nobody over $SOCK"
code=$(as_www curl -s --max-time 3 -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
	-H 'X-Real-IP: 198.18.0.9' http://localhost/check) || true
assert_eq "$code" 000 "curl as www-data (PHP-FPM's user) over $SOCK"

CHECK_UNIX=$SOCK
CHECK_URL=http://localhost
assert_eq "$(metric 'sluice_check_answers_total{interface="'"$IF_RX"'",outcome="ok"}')" 0 \
	"checks answered before root asked (nobody charged nothing)"
assert_eq "$(check 198.18.0.9)" 200 "root over $SOCK"
code=$(as_gateway curl -sS --max-time 3 -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
	-H 'X-Real-IP: 198.18.0.9' http://localhost/check)
assert_eq "$code" 200 "a member of $GROUP (running as nobody) over $SOCK"
assert_eq "$(metric 'sluice_check_answers_total{interface="'"$IF_RX"'",outcome="ok"}')" 2 \
	"/metrics over $SOCK: the two checks"

# The gateway's idle keep-alive connections: 20 of them, then a check, then
# each of the 20 still answers.
out=$(as_gateway /usr/bin/python3 -c '
import socket, subprocess, sys
path = sys.argv[1]
conns = []
for i in range(20):
    s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(path); conns.append(s)
r = subprocess.run(["curl", "-s", "--max-time", "3", "-o", "/dev/null", "-w", "%{http_code}",
                    "--unix-socket", path, "http://localhost/metrics"], capture_output=True, text=True)
ok = 0
for s in conns:
    try:
        s.sendall(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        if s.recv(64).startswith(b"HTTP/1.1 200"):
            ok += 1
    except OSError:
        pass
print(r.stdout, ok)' "$SOCK")
assert_eq "$out" "200 20" "a request beside 20 idle connections, and the idle ones answered after it"

# Clean exit: the socket goes.
check_stop
[[ ! -e $SOCK ]] || fail "$SOCK is still there after SIGTERM"
ok "SIGTERM: exit 0, $SOCK removed"

# Killed: removed too; and a stale socket (no server behind it) is replaced.
check_start
kill -KILL "$CHECK_PID"
wait "$CHECK_PID" 2>/dev/null || true
for ((i = 0; i < 20; i++)); do
	[[ -e $SOCK ]] || break
	sleep 0.1
done
[[ ! -e $SOCK ]] || fail "$SOCK is still there 2 s after SIGKILL"
ok "SIGKILL: $SOCK removed"
/usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCK"
[[ -S $SOCK ]] || fail "could not leave a stale socket at $SOCK"
check_start
assert_eq "$(check 198.18.0.9)" 200 "served after replacing a stale $SOCK"

# --- refusals ---
usage() { # WANT ARGS...
	local want=$1 rc=0 err
	shift
	err=$(timeout 5 nsenter --net="/run/netns/$NS_RX" "$SLUICE_CHECK" -i "$IF_RX" check-server "$@" 2>&1 >/dev/null) || rc=$?
	[[ $rc == "$want" && $(wc -l <<<"$err") == 1 && $err == "sluice: "* ]] ||
		fail "check-server $*: exit $rc, want $want and one 'sluice: ' line, got: $err"
	ok "check-server $*: exit $rc: $err"
}
usage 1
usage 1 --socket "$SOCK"
[[ -S $SOCK ]] || fail "a refused second server removed the live $SOCK"
check_stop
notsock=$(netns_tmp not-a-socket)
: >"$notsock"
usage 1 --socket "$notsock"
[[ -f $notsock ]] || fail "$notsock was removed"
usage 2 --socket "$(netns_tmp s.sock)" --listen "127.0.0.1:$CHECK_PORT"
usage 2 --socket-group no-such-group-sluice
usage 2 --socket relative.sock
usage 2 --trust 127.0.0.0/8
usage 2 --listen "127.0.0.1:$CHECK_PORT" --socket-group "$GROUP"
[[ ! -e $SOCK ]] || fail "$SOCK exists after the refusals"

# Elsewhere with another group.
CHECK_UNIX=$(netns_tmp other.sock)
check_start --socket "$CHECK_UNIX" --socket-group nogroup
assert_eq "$(stat -c '%G %a' "$CHECK_UNIX")" "nogroup 660" "--socket-group nogroup: group, mode"
assert_eq "$(check 198.18.0.9)" 200 "root over --socket $CHECK_UNIX"
check_stop
[[ ! -e $CHECK_UNIX ]] || fail "$CHECK_UNIX is still there after SIGTERM"
ok "--socket PATH removed on exit"
