#!/usr/bin/env bash
# check/input: what the check server does with bad input, repeats, a full
# table and a detached interface. Usage errors (bad --listen, --trust,
# --address-header, --max-sources, unknown user or group, no such
# interface, -j) exit 2 with one line and start nothing; a taken port
# exits 1. A missing, repeated or garbled X-Real-IP gets 400 naming the
# header; a peer outside --trust gets 403 and is charged nothing (the
# trusted peer's next check still sees the whole burst); a bad status=
# gets 400, other paths 404, other methods 405. Blanks (spaces, tabs)
# around the address are not part of it: " 2001:2::5 " is that address (on
# the build that took them for part of it: 400, which nginx turns into 500).
# X-Request-ID: by default a client's fixed id is charged every time (on
# the build that always believed it: the second check uncharged, r=1 where
# r=0 is due); with --trust-request-id the same id twice is charged once
# and answered the same. With --max-sources 2, a
# third live source gets 429 table_full with Retry-After 1, and once an
# entry is idle again it is served. When the interface is detached the
# server says so and exits 1.
# With no request rules it serves anyway (200, unlimited) and warns.
# Shown to fail: with the trust check in serve_check() skipped, the
# untrusted peer gets 200 and the test stops at "untrusted peer".
set -euo pipefail
# The ASan/UBSan build: a leak or overflow on any path here fails the test.
SLUICE_CHECK=${SLUICE_CHECK:-$(dirname "$0")/../../build/asan/sluice}
. "$(dirname "$0")/lib.sh"

check_init cki

# No request rules yet: it serves anyway, every check 200, and says so.
check_start
assert_eq "$(check 198.18.5.5) [$(hdr RateLimit)]" "200 []" "a check with no request rules"
grep -q "warning: $IF_RX has no request rules" "$CHECK_LOG" || fail "no warning: $(cat "$CHECK_LOG")"
ok "warns: $(tail -n 1 "$CHECK_LOG")"
check_stop
sluice_rx limit set 198.18.0.0/15 --requests 1/s --burst 3 >/dev/null
# 198.18.5.5 (charges counted exactly: no refill during the test) and
# 198.18.6.6 (idle again a second after its check)
sluice_rx limit set 198.18.5.5/32 --requests 1/h --burst 3 >/dev/null

# --- usage errors: exit 2, one line, nothing started ---
usage() { # WANT ARGS...
	local want=$1 rc=0 err
	shift
	# Bounded: a server that starts where it should not is stopped, and fails.
	err=$(timeout 5 nsenter --net="/run/netns/$NS_RX" "$SLUICE_CHECK" "$@" 2>&1 >/dev/null) || rc=$?
	[[ $rc == "$want" && $(wc -l <<<"$err") == 1 && $err == "sluice: "* ]] ||
		fail "check-server ${*:2}: exit $rc, want $want and one 'sluice: ' line, got: $err"
}
for bad in localhost:9465 127.0.0.1 127.0.0.1:70000 '[::1]9465' ''; do
	usage 2 -i "$IF_RX" check-server --listen "$bad"
done
for bad in '' 10.0.0.0/33 nonsense 10.0.0.1/8 '127.0.0.0/8,' ',::1' '127.0.0.0/8,,::1'; do
	usage 2 -i "$IF_RX" check-server --trust "$bad"
done
for bad in '' 'X Real' 'a:b' 'X-Real-IP;' "$(printf 'X%.0s' {1..70})"; do
	usage 2 -i "$IF_RX" check-server --address-header "$bad"
done
for bad in 0 -1 abc 16777217 1e3; do
	usage 2 -i "$IF_RX" check-server --max-sources "$bad"
done
usage 2 -i "$IF_RX" check-server --user no-such-user-sluice
usage 2 -i "$IF_RX" check-server --group no-such-group-sluice
usage 2 -i "$IF_RX" check-server --user root
usage 2 -i nosuch0 check-server
# With -j the one error is a JSON object on stdout, and stderr is empty.
rc=0
out=$(timeout 5 nsenter --net="/run/netns/$NS_RX" "$SLUICE_CHECK" -i "$IF_RX" -j check-server 2>"$(netns_tmp j-err)") || rc=$?
[[ $rc == 2 && ! -s $(netns_tmp j-err) ]] && jq -e '.error | startswith("check-server has no JSON output")' <<<"$out" >/dev/null ||
	fail "-j check-server: exit $rc, want 2 and one JSON error on stdout, got: $out / $(cat "$(netns_tmp j-err)")"
usage 2 -i "$IF_RX" check-server extra
usage 2 -i "$IF_RX" check-server --bogus
ok "usage errors: exit 2 with one line each"
in_rx curl -s --max-time 1 -o /dev/null "$CHECK_URL/metrics" && fail "a check server answers after usage errors"

# remaining (r=) only: the reset (t=) rounds the time the checks took
remaining() { local rl; rl=$(hdr RateLimit); echo "${rl%%;t=*}"; }

# --- X-Request-ID with --trust-request-id: a repeat is answered as before
# and not charged (where the gateway sets the id itself, as nginx's
# $request_id in contrib/nginx) ---
check_start --trust-request-id
code=$(check 198.18.5.5 -H "X-Request-ID: 0123456789abcdef")
assert_eq "$code $(remaining)" '200 "198.18.5.5/32";r=2' "--trust-request-id: a check with X-Request-ID"
code=$(check 198.18.5.5 -H "X-Request-ID: 0123456789abcdef")
assert_eq "$code $(remaining)" '200 "198.18.5.5/32";r=2' \
	"--trust-request-id: the same X-Request-ID again, answered as the first"
code=$(check 198.18.5.5)
assert_eq "$code $(remaining)" '200 "198.18.5.5/32";r=1' \
	"--trust-request-id: the next check (the repeat cost nothing)"
assert_eq "$(metric "sluice_check_answers_total{interface=\"$IF_RX\",outcome=\"repeat\"}")" 1 \
	"--trust-request-id: answers counted as repeat"
check_stop

# Trusted: this namespace's own veth address only; the tx namespace's
# peer (198.18.0.1) is not. The server listens on RX4.
CHECK_URL=http://$RX4:$CHECK_PORT
check_start --listen "$RX4:$CHECK_PORT" --trust "$RX4/32" --max-sources 2
usage 1 -i "$IF_RX" check-server --listen "$RX4:$CHECK_PORT"
ok "a taken port: exit 1 with one line"

code=$(ip netns exec "$NS_TX" curl -sS --max-time 5 -o /dev/null -w '%{http_code}' \
	-H "X-Real-IP: 198.18.5.5" "$CHECK_URL/check")
assert_eq "$code" 403 "untrusted peer"
for i in 1 2; do
	code=$(ip netns exec "$NS_TX" curl -sS --max-time 5 -o /dev/null -w '%{http_code}' \
		-H "X-Real-IP: 198.18.5.5" "$CHECK_URL/check")
done
code=$(check 198.18.5.5)
assert_eq "$code $(remaining)" '200 "198.18.5.5/32";r=2' \
	"the trusted peer's first check after 3 untrusted ones (nothing charged)"

# --- bad requests ---
body=$(netns_tmp body)
for h in "" "X-Real-IP: " "X-Real-IP: 198.18.0.300" "X-Real-IP: 198.18.0.1, 198.18.0.2" \
	"X-Real-IP: 198.18.0.1:80" "X-Real-IP: [2001:2::1]" "X-Real-IP: 2001:2::1/64" "X-Real-IP: ::gg"; do
	code=$(in_rx curl -sS --max-time 5 -o "$body" -w '%{http_code}' ${h:+-H "$h"} "$CHECK_URL/check")
	assert_eq "$code $(cat "$body")" "400 400 bad request: X-Real-IP must hold exactly one IPv4 or IPv6 address" \
		"check with '${h:-no header}'"
done
code=$(in_rx curl -sS --max-time 5 -o /dev/null -w '%{http_code}' -H "X-Real-IP: 198.18.0.1" \
	-H "X-Real-IP: 198.18.0.2" "$CHECK_URL/check")
assert_eq "$code" 400 "two X-Real-IP headers"
code=$(CHECK_QUERY='?status=500' check 198.18.5.5)
assert_eq "$code" 400 "status=500"
code=$(ask /nope -o /dev/null -w '%{http_code}')
assert_eq "$code" 404 "GET /nope"
code=$(ask /check -X POST -o /dev/null -w '%{http_code}' -H "X-Real-IP: 198.18.5.5")
assert_eq "$code" 405 "POST /check"

# --- X-Request-ID without --trust-request-id: a client could set it, so a
# fixed id is charged every time ---
code=$(check 198.18.5.5 -H "X-Request-ID: 0123456789abcdef")
assert_eq "$code $(remaining)" '200 "198.18.5.5/32";r=1' "a check with X-Request-ID"
code=$(check 198.18.5.5 -H "X-Request-ID: 0123456789abcdef")
assert_eq "$code $(remaining)" '200 "198.18.5.5/32";r=0' \
	"the same X-Request-ID again: charged (no --trust-request-id)"
assert_eq "$(metric "sluice_check_answers_total{interface=\"$IF_RX\",outcome=\"repeat\"}")" 0 \
	"answers counted as repeat without --trust-request-id"

# --- blanks around the address: trimmed, not a bad request (raw requests:
# curl's -H might tidy them) ---
raw_check() { # VALUE: the status line's code for X-Real-IP: VALUE
	in_rx bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf "GET /check HTTP/1.1\r\nHost: x\r\nX-Real-IP:%s\r\nConnection: close\r\n\r\n" "$3" >&3 &&
		timeout 5 head -n 1 <&3' sh "$RX4" "$CHECK_PORT" "$1" | awk '{ print $2 }'
}
assert_eq "$(raw_check ' 2001:2::5 ')" 200 "X-Real-IP: ' 2001:2::5 ' (a trailing space)"
assert_eq "$(raw_check "$(printf '\t2001:2::5\t')")" 200 "X-Real-IP: a tab on each side"
assert_eq "$(raw_check '198.18.5.5  ')" 429 "X-Real-IP: '198.18.5.5  ' (judged: its bucket is spent)"

# --- a full table: two live sources, the third waits ---
assert_eq "$(check 198.18.6.6)" 200 "second source"
code=$(check 198.18.7.7)
assert_eq "$code $(hdr Retry-After) $(hdr RateLimit)" "429 1 " "third source, table full"
assert_eq "$(metric "sluice_check_answers_total{interface=\"$IF_RX\",outcome=\"table_full\"}")" 1 \
	"answers counted as table_full"
assert_eq "$(metric "sluice_check_tracked_sources{interface=\"$IF_RX\"}")" 2 "tracked sources"
sleep 1.1	# 198.18.6.6 spent 1 of 3 at 1/s: full again, idle (198.18.5.5 is not)
assert_eq "$(check 198.18.7.7)" 200 "third source once an entry is idle"

# --- the interface goes away under the server ---
sluice_rx detach "$IF_RX" >/dev/null
rc=0
for ((i = 0; i < 30; i++)); do
	kill -0 "$CHECK_PID" 2>/dev/null || break
	sleep 0.1
done
wait "$CHECK_PID" || rc=$?
assert_eq "$rc" 1 "exit status after the interface was detached"
grep -q "$IF_RX was detached" "$CHECK_LOG" || fail "no word of the detach: $(cat "$CHECK_LOG")"
ok "says: $(tail -n 1 "$CHECK_LOG")"
