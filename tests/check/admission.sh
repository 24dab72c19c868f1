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
# metrics count what was answered. A sliding window: the admissions of a
# burst, Retry-After and the fields as include/sluice/window.h computes
# them (below). On IPv6 loopback: --listen [::1]:PORT --trust ::1/128
# answers a check over IPv6, and the same --trust refuses it from
# 127.0.0.1 (403, nothing charged). An IPv4-mapped X-Real-IP
# (::ffff:198.18.62.5, as dual-stack gateways send IPv4 clients) is the
# IPv4 source: 198.18.62.5 then its mapped form share one bucket, 200
# then 429 (on the build that took it for an IPv6 source: 200 then 200).
# Shown to fail: with judge() admitting every request (return after the
# first answer_fields, as if always admitted), the fourth check is 200 and
# the test stops at "4th check". ADMISSION_BREAK=window makes the sliding
# window's rule --window 1s (budget 1) and the test stops at its burst;
# ADMISSION_BREAK=trust6 starts the IPv6 server with --trust 127.0.0.0/8
# (its check is refused: stops at "a check over IPv6 loopback");
# ADMISSION_BREAK=trust4 starts the 127.0.0.1 one with --trust
# ::1/128,127.0.0.1/32 (the check is answered: stops at "the same check
# from 127.0.0.1").
set -euo pipefail
# The ASan/UBSan build: a leak or overflow on any path here fails the test.
SLUICE_CHECK=${SLUICE_CHECK:-$(dirname "$0")/../../build/asan/sluice}
# shellcheck source=tests/check/lib.sh
. "$(dirname "$0")/lib.sh"

check_init cka
sluice_rx limit set 198.18.0.0/17 --requests 30/m --burst 3 >/dev/null
sluice_rx limit set 198.19.0.0/16 --requests 6/m --burst 5 >/dev/null
sluice_rx limit set 198.18.128.0/17 --requests 4/m --algo fixed-window >/dev/null
sluice_rx limit set 2001:2::/48 --requests 6/m --burst 2 --per /64 >/dev/null
SW_WINDOW=2s
[[ ${ADMISSION_BREAK:-} == window ]] && SW_WINDOW=1s
sluice_rx limit set 198.19.128.0/17 --requests 1/s --algo sliding-window --window "$SW_WINDOW" >/dev/null
sluice_rx limit set 198.18.62.0/24 --requests 1/m --burst 1 >/dev/null
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

# sliding-window, 1/s over a 2 s window: a budget N of 2 a window W.
# Windows are aligned to CLOCK_MONOTONIC (window.h), which the script reads
# in /proc/timer_list ("now at NS nsecs"): the checks of a source never
# seen (both counts 0) start 0.1 s into a window w. By window.h:
# - checks 1 and 2 are admitted (cur + prev's share is 0, then 1: below
#   N), RateLimit r = N - estimate = 1, then 0; t = what is left of the
#   window, rounded up: 2 in its first second;
# - checks 3 and 4 are over (cur = N): 429 with r=0, t=2; sw_wait finds no
#   room in w, and in w + 1 (where prev = N) the first offset e at which
#   prev's share, N x (W - e) / W rounded up (sw_share), leaves room for
#   one (at most N - 1 = 1) is W / 2 = 1 s (sw_offset_for): the wait is
#   (w + 1) W + 1 s - now, in (2, 3] s from the window's first second, so
#   Retry-After 3;
# - asked 0.5 s into w + 1 (anywhere in its first second: the share is
#   2 x more than 0.5, rounded up to 2): still 429, Retry-After 1 (the wait
#   to 1 s, up), r=0, t=2;
# - asked 1.2 s into w + 1 (anywhere in its second second: the share is
#   2 x at most 0.5, up to 1): 200, r = N - (1 + 1) = 0, t=1.
# A run the machine was too slow to keep within those spans is not judged:
# it is run again with a fresh source (at most 3 times).
mono_ns() {
	local l
	{ read -r; read -r; read -r l; } </proc/timer_list
	l=${l#now at }
	echo "${l% nsecs}"
}
sleep_until() { # MONO_NS
	local d=$(($1 - $(mono_ns)))
	((d <= 0)) || sleep "$(calc "$d / 1e9")"
}
SWP='"198.19.128.0/17";q=2;w=2'
sw_run() { # ADDR: 0 judged, 1 too slow to judge
	local addr=$1 W=2000000000 start got i
	start=$((($(mono_ns) / W + 1) * W))
	sleep_until $((start + 100000000))
	got=
	for i in 1 2 3 4; do
		code=$(check "$addr")
		got+="$code $(hdr RateLimit-Policy) $(hdr RateLimit) [$(hdr Retry-After)]; "
	done
	(($(mono_ns) < start + 1000000000)) || return 1
	assert_eq "$got" "200 $SWP \"198.19.128.0/17\";r=1;t=2 []; 200 $SWP \"198.19.128.0/17\";r=0;t=2 []; \
429 $SWP \"198.19.128.0/17\";r=0;t=2 [3]; 429 $SWP \"198.19.128.0/17\";r=0;t=2 [3]; " \
		"sliding window: a burst of 4 in the first second of a window"
	sleep_until $((start + W + 500000000))
	code=$(check "$addr")
	(($(mono_ns) < start + W + 1000000000)) || return 1
	assert_eq "$code $(hdr RateLimit) [$(hdr Retry-After)]" '429 "198.19.128.0/17";r=0;t=2 [1]' \
		"sliding window: asked in the next window's first second (before its Retry-After ran out)"
	sleep_until $((start + W + 1200000000))
	code=$(check "$addr")
	(($(mono_ns) < start + 2 * W)) || return 1
	assert_eq "$code $(hdr RateLimit) [$(hdr Retry-After)]" '200 "198.19.128.0/17";r=0;t=1 []' \
		"sliding window: asked in the next window's second second (after it ran out)"
}
for try in 1 2 3; do
	sw_run "198.19.128.$try" && break
	echo "sliding window: the machine was too slow to judge run $try"
	((try < 3)) || fail "sliding window: too slow to judge 3 runs"
done

# A dual-stack gateway names IPv4 client 198.18.62.5 ::ffff:198.18.62.5:
# the same source, one bucket (burst 1), whichever form comes first.
for pair in 198.18.62.5,::ffff:198.18.62.5 198.18.62.6,::FFFF:c612:3e06 \
	::ffff:198.18.62.7,198.18.62.7; do
	code=$(check "${pair%,*}")
	assert_eq "$code $(hdr RateLimit-Policy)" '200 "198.18.62.0/24";q=1;w=60' \
		"${pair%,*}, the first check of its bucket"
	code=$(check "${pair#*,}")
	assert_eq "$code $(hdr RateLimit-Policy)" '429 "198.18.62.0/24";q=1;w=60' \
		"then ${pair#*,}: the same source, its bucket spent"
done

check_stop
ok "SIGTERM: exit 0"

# IPv6 loopback: listening on [::1] with --trust ::1/128, a check over IPv6
# is judged (2001:2::/48, 6/m burst 2: r=1, and a token's 10 s to full).
CHECK_URL="http://[::1]:$CHECK_PORT"
trust=::1/128
[[ ${ADMISSION_BREAK:-} == trust6 ]] && trust=127.0.0.0/8
check_start --listen "[::1]:$CHECK_PORT" --trust "$trust"
[[ $(head -n 1 "$CHECK_LOG") == *"http://[::1]:$CHECK_PORT/check"* ]] ||
	fail "the server does not say it serves [::1]: $(head -n 1 "$CHECK_LOG")"
code=$(check 2001:2:0:7::1)
assert_eq "$code $(hdr RateLimit-Policy) $(hdr RateLimit)" \
	'200 "2001:2::/48";q=2;w=20 "2001:2::/48";r=1;t=10' "a check over IPv6 loopback"
check_stop
# The same --trust on 127.0.0.1: the same check from 127.0.0.1 is refused.
CHECK_URL=http://127.0.0.1:$CHECK_PORT
[[ ${ADMISSION_BREAK:-} == trust4 ]] && trust=::1/128,127.0.0.1/32
check_start --trust "$trust"
code=$(check 2001:2:0:7::1)
assert_eq "$code [$(hdr RateLimit)] [$(hdr Retry-After)]" "403 [] []" \
	"the same check from 127.0.0.1, --trust ::1/128"
ask /check -H "X-Real-IP: 2001:2:0:7::1" | grep -q "not in the check server's --trust" ||
	fail "the 403 does not say the peer is not trusted"
assert_eq "$(metric "sluice_check_tracked_sources{interface=\"$IF_RX\"}")" 0 \
	"sources tracked after the refused checks"
assert_eq "$(m answers_total 'outcome="untrusted"')" 2 "untrusted answers"
check_stop
ok "IPv6 loopback: served with --trust ::1/128, refused from 127.0.0.1"
