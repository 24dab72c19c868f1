#!/usr/bin/env bash
# e2e/check_nginx_ban: escalation through a real nginx. Under
# `limit set 198.18.0.0/24 --requests 2/s --burst 3 --ban 5s --ban-after 5`,
# a client that ignores 429 and keeps requesting back to back gets its
# burst, then 429s, and once it has been refused more than 5 times in a row
# (the 6th 429) the check server bans it in XDP: its next TCP connections
# never complete (sluice drops its SYNs as `banned`, `ban list` shows the
# ban), while a second client of the same rule that stays within the limit
# keeps getting 200s. 5 s after the ban began (never before) the first
# client is served again.
#
# It can fail: against a check server that never escalates (ban_put left
# out, or the rule without --ban) the ignoring client gets 429s to the end
# and no connection fails (tried: with check_escalate()'s ban_put call in
# user/daemon/check/escalation.c disabled, SLUICE=that build's sluice fails it with "a request
# of the ignoring client that failed (its line): got 0, want >= 1"); against one that bans on the 5th refusal (or the
# 7th) the run of 429s before the ban is 5 (or 7); a ban that does not
# expire, or an XDP program that does not drop banned sources, fails the
# "served again" or "connections fail" checks.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"
# shellcheck source=tests/e2e/check_nginx_lib.sh
. "$(dirname "$0")/check_nginx_lib.sh"

NET=198.18.0.0/24
BAD=198.18.0.3	# ignores 429
GOOD=198.18.0.4	# one request each 0.7 s: within 2/s
RATE=2
BURST=3
BAN=5		# seconds
BAN_AFTER=5

netns_init cnb
netns_setup
nginx_init
client_addrs "$BAD" "$GOOD"
sluice_attach
sluice_rx limit set "$NET" --requests "$RATE/s" --burst "$BURST" --ban "${BAN}s" --ban-after "$BAN_AFTER" >/dev/null
check_start
nginx_conf "$NGINX_DIR/site.conf"
nginx_conf_main "$NGINX_DIR/nginx.conf" "$NGINX_DIR/site.conf"
nginx_start "$NGINX_DIR/nginx.conf"

# The ignoring client, in the client namespace: requests back to back; each
# connection may take 1 s to complete (a SYN dropped by the ban is resent
# after 1 s, which the timeout then cuts off). Once a request has failed,
# it stops at the first 200 (served again). Lines as req_loop's.
ignore_429() { # SRC URL MAX SPAN_US
	local n=0 t0 s e w rc failed=0
	t0=${EPOCHREALTIME/[.,]/}
	while ((n < $3)); do
		s=${EPOCHREALTIME/[.,]/}
		((s - t0 < $4)) || break
		rc=0
		w=$(curl -s -o /dev/null --interface "$1" --connect-timeout 1 --max-time 2 \
			-w '%{http_code}\t%header{retry-after}\t%header{ratelimit}' "$2") || rc=$?
		e=${EPOCHREALTIME/[.,]/}
		printf '%d.%06d\t%d.%06d\t%s\t%d\n' $((s / 1000000)) $((s % 1000000)) \
			$((e / 1000000)) $((e % 1000000)) "$w" "$rc"
		n=$((n + 1))
		((rc == 0)) || failed=1
		((failed == 0)) || [[ $w != 200* ]] || break
	done
}

s0=$(stats_snap)
BAD_OUT=$(netns_tmp bad)
GOOD_OUT=$(netns_tmp good)
: >"$BAD_OUT"
# The well-behaved client runs all along (10 s, 15 requests at most).
req_loop "$GOOD" /hello.txt 10 15 0.7 "$GOOD_OUT" &
GOOD_PID=$!
netns_track_pid "$GOOD_PID"
sleep 0.3
in_tx bash -c "$(declare -f ignore_429); ignore_429 \"\$@\"" ignore_429 \
	"$BAD" "http://$RX4:$HTTP_PORT/hello.txt" 400 "$(secs_us $((BAN + 4)))" >"$BAD_OUT" &
BAD_PID=$!
netns_track_pid "$BAD_PID"

# During the ban: wait for the first failed connection, then read the ban
# list and the counters.
for ((i = 0; i < 50; i++)); do
	awk -F'\t' '$6 != 0 { f = 1 } END { exit !f }' "$BAD_OUT" && break
	sleep 0.1
done
entry=$(sluice_rx -j ban list | jq -c --arg a "$BAD" '[.[] | select(.source == $a)] | .[0] // empty') ||
	fail "sluice ban list -j failed"
metrics=$(check_ask /metrics) ||
	fail "cannot read the check server's metrics"
wait "$BAD_PID" || fail "the ignoring client's loop failed"
wait "$GOOD_PID" || fail "the well-behaved client's loop failed"
sleep 0.2
s1=$(stats_snap)

echo "ignoring client ($BAD), start end code retry-after ratelimit curl-exit:"
awk '{ print "  " $0 }' "$BAD_OUT"
# Before the first failure: the burst and the 429s; the run of 429s that
# ends the served part is ban_after + 1 (the refusal that exceeded 5).
read -r served run other fails first_fail back_code back_end ban_s ban_e ban_retry < <(awk -F'\t' '
	!f && $6 == 0 { served++; if ($3 == 429) { run++; ls = $1; le = $2; lr = $4 } else { run = 0; if ($3 != 200) o++ } }
	!f && $6 != 0 { f = 1; ff = NR }
	f && $6 != 0 { fails++ }
	f && $6 == 0 { bc = $3; be = $2 }
	END { printf "%d %d %d %d %d %s %s %s %s %s\n", served, run, o, fails, ff, bc ? bc : "-", be ? be : "-",
		ls ? ls : "-", le ? le : "-", lr != "" ? lr : "-" }' \
	"$BAD_OUT")
assert_eq "$other" 0 "answers other than 200 and 429 before the ban"
assert_ge "$served" $((BURST + BAN_AFTER + 1)) "requests answered before the ban"
assert_ge "$first_fail" 1 "a request of the ignoring client that failed (its line)"
assert_eq "$run" $((BAN_AFTER + 1)) "429s in a row before the ban (ban after more than $BAN_AFTER)"
# The refusal that starts the ban tells how long it lasts.
assert_eq "$ban_retry" "$BAN" "Retry-After of the 429 that started the ban"
assert_ge "$fails" 2 "failed connections during the ${BAN}s ban"
assert_eq "$(awk -F'\t' -v f="$first_fail" 'NR >= f && $6 != 0 && $6 != 28 && $6 != 7' "$BAD_OUT" | wc -l)" 0 \
	"failures other than a connect timeout or refusal"
assert_eq "$back_code" 200 "the ignoring client after the ban"
# The ban began when the 6th 429 was judged, between its send and its answer.
assert_ge "$(calc "$back_end - $ban_s")" "$BAN" "served again no sooner than ${BAN}s after the ban began"
assert_le "$(calc "$back_end - $ban_e")" "$((BAN + 2))" "served again at most 2 s after the ban's ${BAN}s"
banned=$(stats_delta "$s0" "$s1" packets drop banned)
assert_ge "$banned" "$fails" "packets dropped as banned (at least a SYN per failed connection)"
[[ -n $entry ]] || fail "ban list -j showed no ban for $BAD during the ban"
echo "ban list entry: $entry"
assert_le "$(jq -r .left_seconds <<<"$entry")" "$BAN" "the ban's time left"
bans=$(awk -v r="$NET" '$1 ~ /^sluice_check_escalation_bans_total\{/ && index($1, "rule=\"" r "\"") { s += $2 } END { print s + 0 }' <<<"$metrics")
assert_eq "$bans" 1 "sluice_check_escalation_bans_total of $NET"

echo "well-behaved client ($GOOD):"
awk '{ print "  " $0 }' "$GOOD_OUT"
assert_ge "$(wc -l <"$GOOD_OUT")" 10 "requests of the well-behaved client"
assert_eq "$(awk -F'\t' '$3 != 200' "$GOOD_OUT" | wc -l)" 0 "its answers other than 200"
ok "check_nginx_ban"
