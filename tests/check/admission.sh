#!/usr/bin/env bash
# check/admission: `sluice check-server` admits exactly what the request
# rule allows, per source, with the datapath's math, and says so in the
# answer. Token bucket 30/m, burst 3 (one request every 2 s): three 200s,
# then 429 with Retry-After 2; asked again just under 2 s after that 429
# it is still 429, just after it is 200. RateLimit-Policy and RateLimit
# carry q (burst), w (refill time), r (what is left) and t (until full).
# 20 quick checks of a 6/m burst 5 rule: exactly 5 pass. ?status=403 turns
# the 429 into a 403 with the same fields. --per /64 shares a bucket
# between two addresses of one /64. fixed-window: q is the budget, w the
# window. A changed rule carries a spent bucket over (still 429), a
# deleted one stops limiting, both within the server's 100 ms poll. The
# metrics count what was answered.
# Shown to fail: with judge() admitting every request (return after the
# first answer_fields, as if always admitted), the fourth check is 200 and
# the test stops at "4th check".
set -euo pipefail
# The ASan/UBSan build: a leak or overflow on any path here fails the test.
SLUICE_CHECK=${SLUICE_CHECK:-$(dirname "$0")/../../build/asan/sluice}
. "$(dirname "$0")/lib.sh"

check_init cka
sluice_rx limit set 198.18.0.0/17 --requests 30/m --burst 3 >/dev/null
sluice_rx limit set 198.19.0.0/16 --requests 6/m --burst 5 >/dev/null
sluice_rx limit set 198.18.128.0/17 --requests 4/m --algo fixed-window >/dev/null
sluice_rx limit set 2001:2::/48 --requests 6/m --burst 2 --per /64 >/dev/null
check_start

A=198.18.1.1
POL='"198.18.0.0/17";q=3;w=6'
t1=$(now)	# before the first check: the next token comes 2 s after it at the earliest
for i in 1 2 3; do
	code=$(check "$A")
	assert_eq "$code $(hdr RateLimit-Policy) $(hdr RateLimit) [$(hdr Retry-After)]" \
		"200 $POL \"198.18.0.0/17\";r=$((3 - i));t=$((2 * i)) []" "check $i of $A"
done
code=$(check "$A")
t429=$(now)
assert_eq "$code $(hdr RateLimit-Policy) $(hdr RateLimit) [$(hdr Retry-After)]" \
	"429 $POL \"198.18.0.0/17\";r=0;t=6 [2]" "4th check of $A (over the burst)"
# The next token comes 2 s after the first check was judged: asked 1.8 s
# after it was sent, still 429; asked 0.1 s after Retry-After ran out, 200.
sleep "$(calc "1.8 - ($(now) - $t1)")"
code=$(check "$A")
assert_eq "$code" 429 "check 1.8 s after the first one (just under the refill)"
assert_eq "$(hdr Retry-After)" 1 "Retry-After of that early retry"
sleep "$(calc "2 + 0.1 - ($(now) - $t429)")"
code=$(check "$A")
assert_eq "$code" 200 "check 2.1 s after the 429 (just after its Retry-After)"

# Exactly the burst of a slow rule passes, whatever the pace of the checks.
B=198.19.7.7
pass=0 lim=0
for ((i = 0; i < 20; i++)); do
	code=$(check "$B")
	case $code in
	200) pass=$((pass + 1)) ;;
	429) lim=$((lim + 1))
		r=$(hdr Retry-After)
		((r >= 1 && r <= 10)) || fail "Retry-After $r of a 6/m rule, want 1..10" ;;
	*) fail "check of $B: $code" ;;
	esac
done
assert_eq "$pass/$lim" 5/15 "20 quick checks of a 6/m burst 5 rule: passed/limited"
code=$(CHECK_QUERY='?status=403' check "$B")
assert_eq "$code" 403 "?status=403 over the limit"
rl=$(hdr RateLimit)
[[ $rl =~ ^\"198\.19\.0\.0/16\"\;r=0\;t=(4[0-9]|50)$ ]] ||
	fail "RateLimit of the 403: $rl, want r=0 and t 40..50 (5 spent tokens of 10 s each)"
[[ -n $(hdr Retry-After) ]] || fail "the 403 has no Retry-After"
ok "?status=403: 403 with Retry-After and the RateLimit fields"

# Outside every request rule: 200, no fields.
code=$(check 2001:3::1)
assert_eq "$code [$(hdr RateLimit-Policy)]" "200 []" "a client no request rule covers"

# --per /64: 2001:2::1 and 2001:2::2 share one bucket of 2; 2001:2:0:1::1 has its own.
codes="$(check 2001:2::1) $(check 2001:2::2) $(check 2001:2::1) $(check 2001:2:0:1::1)"
assert_eq "$codes" "200 200 429 200" "--per /64 buckets"

# fixed-window 4/m: q=4, w=60, 4 pass, then 429 until the window ends.
for i in 1 2 3 4; do
	code=$(check 198.18.130.1)
	[[ $code == 200 ]] || fail "fixed-window check $i: $code"
done
code=$(check 198.18.130.1)
assert_eq "$code $(hdr RateLimit-Policy)" '429 "198.18.128.0/17";q=4;w=60' "fixed-window, 5th check"
ra=$(hdr Retry-After)
t=$(hdr RateLimit | sed 's/.*;t=//')
assert_eq "$ra" "$t" "fixed-window: Retry-After is when the window ends"

# A changed rule carries the spent bucket over; a deleted one limits no more.
sluice_rx limit set 198.19.0.0/16 --requests 6/m --burst 8 >/dev/null
sleep 0.3
code=$(check "$B")
assert_eq "$code $(hdr RateLimit-Policy)" '429 "198.19.0.0/16";q=8;w=80' \
	"spent bucket after the burst grew to 8 (carried over, new policy)"
sluice_rx limit del 198.19.0.0/16 --requests >/dev/null
sleep 0.3
code=$(check "$B")
assert_eq "$code [$(hdr RateLimit)]" "200 []" "after the rule was deleted"

# What the metrics say.
m() { metric "sluice_check_$1{interface=\"$IF_RX\",$2}"; }
assert_eq "$(m requests_total 'rule="198.18.0.0/17",verdict="pass"')" 4 "requests passed by 198.18.0.0/17"
assert_eq "$(m requests_total 'rule="198.18.0.0/17",verdict="limited"')" 2 "requests limited by 198.18.0.0/17"
assert_eq "$(m requests_total 'rule="198.19.0.0/16",verdict="pass"')" absent "the deleted rule's series"
assert_eq "$(m answers_total 'outcome="unlimited"')" 2 "unlimited answers"
assert_eq "$(m answers_total 'outcome="limited"')" 21 "limited answers"
check_stop
ok "SIGTERM: exit 0"
