#!/usr/bin/env bash
# exporter/robust: on the ASan/UBSan build, with 40 clients that connect,
# send half a request and never finish it (more than the server has
# threads), scrapes still succeed, each well within curl's 5 s limit, and
# the server closes the stalled connections itself by the request deadline
# (exporter/slowloris tests clients that trickle instead). 20
# scrapes at once all get 200 and bodies promtool accepts, and so do 20
# that connect while the server is stopped (SIGSTOP) and are accepted in
# one burst on SIGCONT, more than the 8 waiting connections an address may
# keep: a request not yet read is not a stalled client. An interface
# attached while it runs shows up at the next scrape; one detached and
# attached again five times while scrapes run back to back disappears from
# the output after its last detach, with every scrape still a 200. A pin
# directory without its maps is skipped and counted, not fatal.
set -euo pipefail
SLUICE_EXPORTER=${SLUICE_EXPORTER:-$(dirname "$0")/../../build/asan/sluice}
. "$(dirname "$0")/lib.sh"

STALLED=40
DEADLINE=5		# HTTP_DEADLINE_S in user/daemon/exporter.c

exporter_init exr
[[ -x $HTTP_RAW ]] || fail "$HTTP_RAW not built: run make build/tests/http_raw"
command -v promtool >/dev/null || skip "promtool not installed (Debian package prometheus)"
netns_setup
sluice_attach
exporter_start

# --- stalled clients ---
stall_out=$(netns_tmp stall.json)
ip netns exec "$NS_RX" "$HTTP_RAW" --stall "$STALLED" --hold $((DEADLINE + 8)) \
	127.0.0.1 "$EXPORTER_PORT" >"$stall_out" &
STALL_PID=$!
netns_track_pid "$STALL_PID"
sleep 1
for ((i = 0; i < 10; i++)); do
	code=$(scrape /metrics -o /dev/null -w '%{http_code}') || fail "scrape $i with $STALLED stalled clients failed"
	[[ $code == 200 ]] || fail "scrape $i with $STALLED stalled clients: $code"
done
ok "10 scrapes answered (curl --max-time 5) while $STALLED clients stall"

# --- concurrent scrapes ---
dir=$(netns_tmp concurrent)
mkdir "$dir"
pids=()
for ((i = 0; i < 20; i++)); do
	ip netns exec "$NS_RX" curl -sS --max-time 10 -o "$dir/$i.txt" -w '%{http_code}' \
		"$EXPORTER_URL/metrics" >"$dir/$i.code" 2>"$dir/$i.err" &
	pids+=($!)
done
for pid in "${pids[@]}"; do
	wait "$pid" || true
done
for ((i = 0; i < 20; i++)); do
	[[ $(cat "$dir/$i.code") == 200 ]] || fail "concurrent scrape $i: $(cat "$dir/$i.code" "$dir/$i.err")"
	out=$(promtool check metrics <"$dir/$i.txt" 2>&1) || fail "concurrent scrape $i: $out"
	[[ -z $out ]] || fail "concurrent scrape $i does not lint clean: $out"
	grep -q "^sluice_tracked_sources{interface=\"$IF_RX\"}" "$dir/$i.txt" ||
		fail "concurrent scrape $i lacks $IF_RX"
done
ok "20 concurrent scrapes: all 200, all pass promtool"

# --- a burst the server has not read yet ---
# The exporter stopped (SIGSTOP) while 20 scrapes from one address connect
# and send their requests: on SIGCONT it accepts them all at once, before
# it has read any. Not one of them is stalled (each request waits whole in
# its socket), so none may be closed to make room: all 20 get a 200.
burst=$(netns_tmp burst)
mkdir "$burst"
kill -STOP "$EXPORTER_PID"
pids=()
for ((i = 0; i < 20; i++)); do
	ip netns exec "$NS_RX" curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
		"$EXPORTER_URL/metrics" >"$burst/$i.code" 2>"$burst/$i.err" &
	pids+=($!)
done
deadline=$((SECONDS + 5))
until (($(in_rx ss -Htn state established "( dport = :$EXPORTER_PORT )" | wc -l) >= 20)); do
	((SECONDS < deadline)) || { kill -CONT "$EXPORTER_PID"; fail "20 scrapes did not connect within 5 s"; }
	sleep 0.05
done
sleep 0.2	# their requests are sent
kill -CONT "$EXPORTER_PID"
for pid in "${pids[@]}"; do
	wait "$pid" || true
done
bad=0
for ((i = 0; i < 20; i++)); do
	[[ $(cat "$burst/$i.code") == 200 ]] || { echo "  burst scrape $i: $(cat "$burst/$i.code" "$burst/$i.err")"; bad=$((bad + 1)); }
done
assert_eq "$bad" 0 "scrapes of a burst accepted at once that did not get a 200"

# The server, not the client, ends the stalled connections.
wait "$STALL_PID" || fail "http_raw --stall failed"
echo "stalled clients: $(cat "$stall_out")"
assert_eq "$(jq .closed "$stall_out")" "$STALLED" "stalled connections closed by the server"
assert_le "$(jq .max_closed_after "$stall_out")" $((DEADLINE + 1)) \
	"seconds until the last stalled connection was closed (deadline ${DEADLINE} s)"

# --- attach and detach while running ---
m=$(netns_tmp m.txt)
EXTRA=slexr$$x
EXTRA=${EXTRA:0:12}
attach_extra "$EXTRA"
scrape /metrics >"$m" || fail "scrape failed"
assert_eq "$(series "$m" "sluice_tracked_sources_capacity{interface=\"$EXTRA\"}")" 262144 \
	"$EXTRA attached while running shows up"

loop_out=$(netns_tmp loop)
(
	end=$((SECONDS + 30))
	n=0
	while ((SECONDS < end)) && [[ ! -e $loop_out.stop ]]; do
		code=$(ip netns exec "$NS_RX" curl -sS --max-time 5 -o "$loop_out.body" \
			-w '%{http_code}' "$EXPORTER_URL/metrics" 2>&1) || code="curl failed: $code"
		[[ $code == 200 ]] || { echo "scrape $n: $code" >"$loop_out.bad"; }
		n=$((n + 1))
	done
	echo "$n" >"$loop_out.count"
) &
LOOP_PID=$!
netns_track_pid "$LOOP_PID"
# Detach and attach again five times under the scrapes, then detach for good.
for ((c = 0; c < 5; c++)); do
	sleep 0.2
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" detach "$EXTRA" >/dev/null || fail "detach $EXTRA"
	sleep 0.2
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" attach --mode native "$EXTRA" >/dev/null ||
		fail "attach $EXTRA again"
done
nsenter --net="/run/netns/$NS_RX" "$SLUICE" detach "$EXTRA" >/dev/null || fail "detach $EXTRA"
sleep 0.5
touch "$loop_out.stop"
wait "$LOOP_PID" || true
[[ ! -e $loop_out.bad ]] || fail "a scrape during the detach failed: $(cat "$loop_out.bad")"
assert_ge "$(cat "$loop_out.count")" 10 "scrapes around the detaches and attaches, all 200"
scrape /metrics >"$m" || fail "scrape failed"
assert_eq "$(grep -c "interface=\"$EXTRA\"" "$m" || true)" 0 "series of $EXTRA after its detach"
assert_eq "$(series "$m" "sluice_tracked_sources_capacity{interface=\"$IF_RX\"}")" 262144 \
	"$IF_RX still exported"
exporter_stop TERM
! grep -q 'Sanitizer' "$EXPORTER_LOG" || fail "sanitizer report: $(cat "$EXPORTER_LOG")"
ok "no sanitizer report"

# Pins half gone (a directory without its maps): skipped, not fatal. With
# -i, so that other attachments on this host cannot change the count.
mkdir "$SLUICE_PIN_ROOT/$EXTRA"
exporter_start -i "$EXTRA"
scrape /metrics >"$m" || fail "scrape with an empty pin directory failed"
assert_eq "$(series "$m" sluice_scrape_skipped_interfaces)" 1 "an empty pin directory is skipped"
rmdir "$SLUICE_PIN_ROOT/$EXTRA"
scrape /metrics >"$m" || fail "scrape failed"
assert_eq "$(series "$m" sluice_scrape_skipped_interfaces)" 0 "and forgotten once it is gone"
exporter_stop TERM
! grep -q 'Sanitizer' "$EXPORTER_LOG" || fail "sanitizer report: $(cat "$EXPORTER_LOG")"
