#!/usr/bin/env bash
# cluster/slow_redis: a Redis whose answers end after S/2 writes no lease.
# The agent talks to Redis through a small TCP proxy (python3) that, once
# told to, sends the last grant of each answer (":N\r\n"; the whole answer
# when it holds none) one byte at a time, 15 ms apart: every read of the
# agent gets a byte well within its wait, but the round trip ends 60 ms or
# more after it began, past S/2 = 50 ms (PING's and SCRIPT LOAD's answers
# pass straight through, so a reconnect is quick). While a source floods the host, the proxy passes everything
# straight through (the agent up, grants written), then slows it: from
# then on at most the one sync already under way may write a grant, every
# later one must fail (the host in fallback, failed syncs counted, the
# reason on stderr) and the leases map must end empty; fast again, the
# agent is up and grants again.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

RATE=1000
BURST=500
SYNC_MS=100
PPS=5000
SRC=198.18.0.1
PROXY_PORT=6381

PY=$(command -v /usr/bin/python3 python3 | head -n 1) || skip "python3 not installed"
command -v bpftool >/dev/null || skip "bpftool not installed"
cluster_init sr 1
cluster_setup
redis_start
set_rule "$RATE" "$BURST"

SLOW=$NETNS_TMP/slow
ip netns exec "$NS_REDIS" "$PY" -c '
import os, socket, sys, threading, time
addr, port, rport, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def pump(a, b, trickle):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            k = d.rfind(b":")
            if k < 0:
                k = len(d) if d[:1] in (b"+", b"$") else 0
            if trickle and k < len(d) and os.path.exists(slow):
                b.sendall(d[:k])
                for i in range(k, len(d)):
                    time.sleep(0.015)
                    b.sendall(d[i:i + 1])
            else:
                b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, port)); ls.listen(8)
while True:
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    r = socket.create_connection((addr, rport))
    r.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=pump, args=(c, r, False), daemon=True).start()
    threading.Thread(target=pump, args=(r, c, True), daemon=True).start()
' "$REDIS_ADDR" "$PROXY_PORT" "$REDIS_PORT" "$SLOW" &
CL_PIDS+=($!)
wait_listen 1 "$REDIS_ADDR" "$PROXY_PORT"

REDIS_URL=redis://$REDIS_ADDR:$PROXY_PORT agent_start 1
wait_cluster up 1 10
nft_count_add flood "$SRC"
flood_at 1 "$NETNS_TMP/flood.1" --src "$SRC" --count $((PPS * 12)) --pps "$PPS" --seconds 12
sleep 1
g0=$(cstatus 1 .grants)
assert_ge "$g0" 1 "through the proxy, fast: grants written"

# One status read (cfield: no jq start-up) right before the switch.
read -r g1 s1 f1 <<<"$(cfield 1 grants syncs sync_failures)"
touch "$SLOW"
sleep 2
read -r g2 s2 f2 <<<"$(cfield 1 grants syncs sync_failures)"
echo "RESULT slow_redis: over 2 s of answers ending 60 ms or more late: $((f2 - f1)) failed syncs, $((s2 - s1)) ok, $((g2 - g1)) grants written"
assert_le "$((g2 - g1))" 1 "slow answers: grants written (the sync under way at the switch may)"
assert_le "$((s2 - s1))" 1 "slow answers: successful syncs"
assert_eq "$(cstatus 1 .mode)" fallback "slow answers: mode"
assert_ge "$((f2 - f1))" 5 "slow answers: failed syncs in 2 s (a slow one skips the ticks it overran)"
assert_eq "$(bpftool -j map dump pinned "$SLUICE_PIN_ROOT/${IF_R[1]}/leases" | jq length)" 0 \
	"slow answers: entries in the leases map"
grep -q "answer within 50 ms" "${AGENT_LOG[1]}" ||
	fail "the agent did not say why: $(cat "${AGENT_LOG[1]}")"
ok "the agent said why it fell back"

rm -f "$SLOW"
wait_cluster up 1 3
sleep 0.5
assert_ge "$(($(cstatus 1 .grants) - g2))" 1 "fast again: grants written"
flood_stop
agent_logs
