#!/usr/bin/env bash
# exporter/slowloris: 200 clients that each trickle one byte of a request
# every 4 s (so no idle timeout ever fires), 40 of them from the scraper's
# own address 127.0.0.1 and one each from 160 other loopback addresses, do
# not lock out scrapes: 5 scrapes from 127.0.0.1 during the trickle each
# get a 200 within 1 s. The server keeps at most 8 waiting connections from
# 127.0.0.1 and at most 128 in all, closing the oldest when over as soon as
# it counts as stalled (0.5 s without a request, all it sent read: within
# 1 s of its connect; a scrape displaces one), and closes every one it kept
# at the whole-request deadline (5 s after its connect, however it trickles).
set -euo pipefail
SLUICE_EXPORTER=${SLUICE_EXPORTER:-$(dirname "$0")/../../build/asan/sluice}
. "$(dirname "$0")/lib.sh"

DEADLINE=5		# HTTP_DEADLINE_S in user/daemon/exporter.c
PER_ADDR=8		# HTTP_WAITING_PER_ADDR
WAITING=128		# HTTP_WAITING_LIMIT
EVERY=4
HOLD=$((DEADLINE + 4))
SAME=40			# trickling from 127.0.0.1, the scraper's address
OTHERS=160		# from 127.0.0.2 .. 127.0.0.161, one each
SCRAPES=5

exporter_init exsl
[[ -x $HTTP_RAW ]] || fail "$HTTP_RAW not built: run make build/tests/http_raw"
netns_setup
sluice_attach
exporter_start

same_out=$(netns_tmp same.json)
others_out=$(netns_tmp others.json)
in_rx "$HTTP_RAW" --trickle "$OTHERS" --every "$EVERY" --hold "$HOLD" --from 127.0.0.2:"$OTHERS" \
	127.0.0.1 "$EXPORTER_PORT" >"$others_out" &
OTHERS_PID=$!
netns_track_pid "$OTHERS_PID"
sleep 0.3
in_rx "$HTTP_RAW" --trickle "$SAME" --every "$EVERY" --hold "$HOLD" --from 127.0.0.1:1 \
	127.0.0.1 "$EXPORTER_PORT" >"$same_out" &
SAME_PID=$!
netns_track_pid "$SAME_PID"
sleep 0.5

# --- scrapes while they trickle, all before the deadline ---
for ((i = 0; i < SCRAPES; i++)); do
	out=$(scrape /metrics --max-time 1 -o /dev/null -w '%{http_code} %{time_total}') ||
		fail "scrape $i with $((SAME + OTHERS)) trickling clients did not complete within 1 s"
	read -r code secs <<<"$out"
	[[ $code == 200 ]] || fail "scrape $i with $((SAME + OTHERS)) trickling clients: $code"
	assert_le "$secs" 1 "scrape $i (HTTP 200) with $((SAME + OTHERS)) trickling clients, seconds"
	sleep 0.4
done

wait "$SAME_PID" || fail "http_raw --trickle (127.0.0.1) failed"
wait "$OTHERS_PID" || fail "http_raw --trickle (others) failed"
all=$(netns_tmp all.json)
jq -s '[.[].conns[]]' "$same_out" "$others_out" >"$all"
assert_eq "$(jq -s 'map(.open) | add' "$same_out" "$others_out")" 0 \
	"trickling connections still open after $HOLD s"

# Each one was closed early (within 1 s: over a waiting limit), displaced
# later by a scrape (over the limit again), or at the deadline.
sel_deadline="select(.closed_after >= $DEADLINE - 0.1)"
early=$(jq '[.[] | select(.closed_after < 1)] | length' "$all")
kept=$(jq "[.[] | $sel_deadline] | length" "$all")
kept_same=$(jq "[.[] | $sel_deadline | select(.from == \"127.0.0.1\")] | length" "$all")
displaced=$((SAME + OTHERS - early - kept))
first=$(jq "[.[] | $sel_deadline | .closed_after] | min" "$all")
last=$(jq '[.[] | .closed_after] | max' "$all")
echo "closed at once: $early; displaced by a scrape: $displaced;" \
	"kept until the deadline: $kept ($kept_same from 127.0.0.1), closed between $first and $last s"
assert_le "$kept_same" "$PER_ADDR" "waiting connections kept from 127.0.0.1"
# The 127.0.0.1 ones came last: they displaced older ones up to their own
# limit, and then each scrape from 127.0.0.1 displaced one of them.
assert_ge "$kept_same" $((PER_ADDR - SCRAPES)) "waiting connections kept from 127.0.0.1"
assert_le "$kept" "$WAITING" "waiting connections kept in all"
assert_ge "$kept" $((WAITING - SCRAPES)) "waiting connections kept (the limit, less what the scrapes displaced)"
assert_le "$displaced" "$SCRAPES" "connections closed after 1 s but before the deadline"
assert_le "$last" "$DEADLINE.6" "seconds until the last one was closed (deadline $DEADLINE s)"

scrape /metrics -o /dev/null || fail "scrape after the trickle failed"
exporter_stop TERM
! grep -q 'Sanitizer' "$EXPORTER_LOG" || fail "sanitizer report: $(cat "$EXPORTER_LOG")"
ok "no sanitizer report"
