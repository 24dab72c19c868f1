#!/usr/bin/env bash
# e2e/check_nginx: Debian's nginx, configured from contrib/nginx/sluice-check.conf,
# serves a small static site behind auth_request to `sluice check-server`,
# with sluice attached to the server namespace's veth; curl from the client
# namespace, one client address per case:
#  1. Retry-After: over a 30/m limit with burst 3 the 4th request gets 429
#     with Retry-After: 2 and the RateLimit fields; a request arriving just
#     before those 2 s are up still gets 429, one sent 2 s after the 429
#     arrived gets 200.
#  2. Counts: requests back to back for 5.25 s under 2/s with burst 3: the 200s
#     are exactly burst + rate x t (t from the first to the last request,
#     known to within one request's round trip), every other answer is 429
#     with Retry-After: 1; nginx keeps its connections to the check server.
#  3. GET / goes through nginx's index (an internal redirect, so nginx asks
#     the check server twice, which its log shows) and is charged once: the
#     RateLimit field's remaining count falls by one per request.
#  4. A POST's body never reaches the check server (a capture of everything
#     nginx sends it: the check requests carry no body and no length), and
#     the client over its limit gets 429, not 403, with Retry-After and the
#     RateLimit fields; a 403 of the site itself stays 403; IPv6 clients are
#     counted; a client no rule covers gets 200 without RateLimit fields.
#
# It can fail: CHECK_NGINX_BREAK=NAME runs it against a deliberately broken
# nginx configuration, and each of these fails it:
#   error_page   no `error_page 403 = @sluice_over`: the client gets 403
#                where it should get 429 (case 1 fails at the 4th request);
#   request_id   no X-Request-ID to the check server, so it cannot tell the
#                index redirect's second check from a new request: GET / is
#                charged twice (case 3: remaining falls by 2);
#   body         without proxy_pass_request_body off, Content-Length "" and
#                proxy_pass_request_headers off: the check requests announce
#                the client's body (case 4's capture: Content-Length: N;
#                the check server then waits for a body nginx 1.22 does not
#                send, as it has not read it yet, and the POSTs get 500).
#   keepalive    GET instead of HEAD: nginx cannot keep a connection whose
#                answer has a body it does not read, so it opens one per
#                check (case 2: some 200 connections where 16 are allowed).
# Against a check server that does not charge (or charges per check), cases
# 1-3 fail on the counts.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# The check server on TCP (contrib's upstream line swapped for it): case 2
# counts nginx's TCP connections to it and case 4 captures what nginx sends
# it on loopback. check_nginx_ban and check_nginx_load use contrib's Unix
# socket as it is.
CHECK_VIA=tcp
# shellcheck source=tests/e2e/check_nginx_lib.sh
. "$(dirname "$0")/check_nginx_lib.sh"

# Cases 1 and 2 have a second and third client for runs the machine was too
# slow to judge.
RA=(198.18.0.1 198.18.0.11 198.18.0.12)		# case 1: --requests 30/m --burst 3
CNT=(198.18.0.5 198.18.0.15 198.18.0.16)	# case 2: --requests 2/s --burst 3
IDX=198.18.0.6	# case 3: --requests 1/h --burst 10
BODY=198.18.0.7	# case 4: --requests 1/h --burst 1
FREE=198.18.0.9	# no rule
V6=$TX6		# --requests 1/h --burst 5
RATE=2
BURST=3
RUN_S=5.25	# rate x t = 10.5 at most, so 13 (burst 3 + 10) whenever a round trip is under 0.25 s

declare -A BREAKS=(
	[error_page]='/error_page 403 = @sluice_over;/d'
	[request_id]='/proxy_set_header X-Request-ID/d'
	[body]='/proxy_pass_request_body off;/d;/proxy_set_header Content-Length "";/d;/proxy_pass_request_headers off;/d'
	[keepalive]='/proxy_method HEAD;/d'
)
sed_break=()
if [[ -n ${CHECK_NGINX_BREAK:-} ]]; then
	[[ -n ${BREAKS[$CHECK_NGINX_BREAK]:-} ]] ||
		fail "CHECK_NGINX_BREAK must be one of: ${!BREAKS[*]}"
	sed_break=("${BREAKS[$CHECK_NGINX_BREAK]}")
	echo "# deliberately broken configuration: $CHECK_NGINX_BREAK"
fi

netns_init cng
command -v netsniff-ng >/dev/null || skip "netsniff-ng not installed (tools/install-deps.sh)"
netns_setup
nginx_init
client_addrs "${RA[@]:1}" "${CNT[@]}" "$IDX" "$BODY" "$FREE"
sluice_attach
for a in "${RA[@]}"; do
	sluice_rx limit set "$a/32" --requests 30/m --burst 3 >/dev/null
done
for a in "${CNT[@]}"; do
	sluice_rx limit set "$a/32" --requests "$RATE/s" --burst "$BURST" >/dev/null
done
sluice_rx limit set "$IDX/32" --requests 1/h --burst 10 >/dev/null
sluice_rx limit set "$BODY/32" --requests 1/h --burst 1 >/dev/null
sluice_rx limit set "$V6/128" --requests 1/h --burst 5 >/dev/null
check_start
nginx_conf "$NGINX_DIR/site.conf" "${sed_break[@]}"
nginx_conf_main "$NGINX_DIR/nginx.conf" "$NGINX_DIR/site.conf"
nginx_start "$NGINX_DIR/nginx.conf"
# A file the workers (nobody) may not read: the site's own 403.
printf 'secret\n' >"$NGINX_SITE/secret.txt"
chmod 0600 "$NGINX_SITE/secret.txt"

# Splits a req line into CODE RETRY RL POLICY.
split() { IFS='|' read -r CODE RETRY RL POLICY <<<"$1"; }

# --- 1. Retry-After ---------------------------------------------------------
# 30/m is one request per T = 2 s after a burst of 3. The burst is spent at
# s1 (the server's time of the first request); the 4th request at s4 then
# waits s1 + 2 s - s4, under 2 s and over 1 s while s4 - s1 < 1 s, so
# Retry-After is 2 (rounded up). The moment it is admitted, s1 + 2 s, is no
# earlier than t1 + 2 s (t1: when the client sent the first request): a
# request that came back before t1 + 2 s was judged before it, and must be
# 429 ("just before": about 0.2 s before the 2 s are up). One sent 2 s after
# the 429 arrived is judged after s4 + 2 s and must be 200 (a Retry-After
# rounded down would fail here, the redis-cell bug).
# A run the machine was too slow to judge (another test hogging both CPUs)
# says so and returns 3; the case is then run again with a fresh client.
case_retry_after() { # ADDR
	local a=$1 t1 t4 took tb tbe i N
	t1=$(now)
	for i in 1 2 3; do
		split "$(req "$a" /hello.txt)"
		# Past 2 s after the first, a token would have come back.
		took=$(calc "$(now) - $t1")
		if ! num_lt "$took" 0.8; then
			echo "case 1: too slow to judge: $i requests took ${took}s"
			return 3
		fi
		assert_eq "$CODE" 200 "case 1: request $i of the burst of 3"
		[[ -n $RL && -n $POLICY ]] || fail "case 1: request $i: 200 without RateLimit fields ('$RL', '$POLICY')"
		assert_eq "$(rl_remaining "$RL")" $((3 - i)) "case 1: request $i: RateLimit remaining"
	done
	echo "case 1: RateLimit: $RL; RateLimit-Policy: $POLICY"
	split "$(req "$a" /hello.txt)"
	t4=$(now)
	assert_eq "$CODE" 429 "case 1: the 4th request"
	took=$(calc "$t4 - $t1")
	if ! num_lt "$took" 0.8; then
		echo "case 1: too slow to judge: 4 requests took ${took}s (need under 0.8 s for Retry-After to be 2)"
		return 3
	fi
	assert_eq "$RETRY" 2 "case 1: Retry-After of the 4th request (${took}s after the first)"
	N=$RETRY
	[[ -n $RL && -n $POLICY ]] || fail "case 1: 429 without RateLimit fields ('$RL', '$POLICY')"
	assert_eq "$(rl_remaining "$RL")" 0 "case 1: the 429's RateLimit remaining"
	echo "case 1: 429 with Retry-After: $RETRY; RateLimit: $RL; RateLimit-Policy: $POLICY"
	sleep_until "$(calc "$t1 + $N - 0.15")"
	tb=$(now)
	split "$(req "$a" /hello.txt)"
	tbe=$(now)
	if ! num_lt "$tbe" "$(calc "$t1 + $N")"; then
		echo "case 1: too slow to judge: the request meant to come back before $t1 + ${N}s came back at $tbe"
		return 3
	fi
	assert_eq "$CODE" 429 "case 1: a request $(calc "$tb - $t4" %.2f)s after the 429 (back $(calc "$t1 + $N - $tbe" %.2f)s before the ${N}s were up)"
	assert_ge "$RETRY" 1 "case 1: its Retry-After"
	sleep_until "$(calc "$t4 + $N")"
	split "$(req "$a" /hello.txt)"
	assert_eq "$CODE" 200 "case 1: the request sent ${N}s after the 429 arrived"
}

# Runs CASE ADDR for the addresses in turn until one run could be judged.
judged() { # CASE ADDR...
	local c=$1 a rc
	shift
	for a in "$@"; do
		rc=0
		"$c" "$a" || rc=$?
		((rc == 3)) || return "$rc"
		echo "$c: $a could not be judged; again with the next client"
	done
	fail "$c: the machine was too slow to judge it in ${#} runs"
}

judged case_retry_after "${RA[@]}"

# --- 2. Counts over a run ----------------------------------------------------
# GCRA admits a fresh bucket's burst at once and then one request each 1/rate
# s: over a span t from the first request to the last, with no gap between
# requests as long as 1/rate, exactly burst + floor(rate x t) are admitted
# (the longest gap counted is from one request's start to the next's end).
# The server's span lies between (last sent - first back) and (last back -
# first sent): the expected count is known exactly unless rate x t crosses
# a whole number inside that window of one round trip each side, the one
# boundary request the timing allows; then either count is right.
case_counts() { # ADDR
	local n n200 n429 nother gap lo hi conns loop
	loop=$(netns_tmp "loop_$1")
	req_loop "$1" /hello.txt "$RUN_S" 400 0 "$loop"
	read -r n n200 n429 nother gap lo hi < <(awk -F'\t' -v r="$RATE" -v b="$BURST" '
		NR == 1 { s1 = $1; e1 = $2 }
		{ n++; if ($3 == 200) a++; else if ($3 == 429) z++; else o++
		  if (NR > 1 && $2 - ps > g) g = $2 - ps; ps = $1; sl = $1; el = $2 }
		END { printf "%d %d %d %d %.3f %d %d\n", n, a, z, o, g,
			b + int(r * (sl - e1)), b + int(r * (el - s1)) }' "$loop")
	echo "case 2: $n requests in ${RUN_S}s: $n200 x 200, $n429 x 429, $nother other; longest gap ${gap}s; burst + rate x t: $lo..$hi"
	assert_eq "$nother" 0 "case 2: answers other than 200 and 429"
	if ! num_lt "$gap" "$(calc "1 / $RATE")" || ((hi - lo > 1)); then
		echo "case 2: too slow to count exactly (a gap of ${gap}s between requests, or round trips too long: $lo..$hi)"
		return 3
	fi
	assert_ge "$n" 50 "case 2: requests in ${RUN_S}s"
	if ((lo == hi)); then
		assert_eq "$n200" "$lo" "case 2: 200s = burst $BURST + $RATE/s x t"
	else
		assert_ge "$n200" "$lo" "case 2: 200s = burst $BURST + $RATE/s x t, t at a boundary"
		assert_le "$n200" "$hi" "case 2: 200s = burst $BURST + $RATE/s x t, t at a boundary"
	fi
	assert_eq $((n200 + n429)) "$n" "case 2: every request answered 200 or 429"
	assert_eq "$(awk -F'\t' '$3 == 429 && $4 != 1' "$loop" | wc -l)" 0 \
		"case 2: 429s with a Retry-After other than 1 (the wait is at most 1/rate = 0.5 s)"
	assert_eq "$(awk -F'\t' '$3 == 200 && $5 == ""' "$loop" | wc -l)" 0 "case 2: 200s without RateLimit"
	# nginx kept its connections to the check server for the next check: the
	# sockets to port 9465 in any state (TIME-WAIT included, 60 s) are few.
	conns=$(in_rx ss -Htan "( dport = :$CHECK_PORT )" | wc -l)
	assert_le "$conns" 16 "case 2: connections nginx opened to the check server for $n checks"
}

judged case_counts "${CNT[@]}"

# --- 3. GET / through the index: charged once ----------------------------
# /index.html directly, then / twice: remaining 9, 8, 7 of a burst of 10
# (1/h: nothing refills meanwhile). nginx checks / twice (before and after
# the internal redirect to /index.html), with the same $request_id: its log
# of check subrequests shows both.
split "$(req "$IDX" /index.html)"
assert_eq "$CODE" 200 "case 3: GET /index.html"
r1=$(rl_remaining "$RL")
assert_eq "$r1" 9 "case 3: remaining after GET /index.html"
split "$(req "$IDX" /)"
assert_eq "$CODE" 200 "case 3: GET /"
assert_eq "$(rl_remaining "$RL")" 8 "case 3: remaining after GET / (charged once)"
split "$(req "$IDX" /)"
assert_eq "$(rl_remaining "$RL")" 7 "case 3: remaining after a second GET / (charged once)"
checks=$(grep -c "^[0-9a-f]\{32\} $IDX \"GET / HTTP/1.1\" /.sluice/check " "$NGINX_ACCESS" || true)
assert_eq "$checks" 4 "case 3: check subrequests nginx made for the two GET / (two each)"
ids=$(grep "^[0-9a-f]\{32\} $IDX \"GET / HTTP/1.1\" /.sluice/check " "$NGINX_ACCESS" | cut -d' ' -f1 | sort -u | wc -l)
assert_eq "$ids" 2 "case 3: distinct request ids among them"

# --- 4. Body, 429 not 403, the site's own 403, IPv6, unlimited --------------
# Everything nginx sends to the check server during two POSTs with a body
# of some 5 KB, captured on the server namespace's loopback. Under 1/h with burst 1,
# the first POST is let through (405: the static site takes no POST), the
# second gets 429.
PCAP=$(netns_tmp check.pcap)
MARK=sluice-body-marker-$$
body=$(netns_tmp body)
for ((i = 0; i < 128; i++)); do printf '%s-%04d-abcdefghij\n' "$MARK" "$i"; done >"$body"
nsenter --net="/run/netns/$NS_RX" netsniff-ng --in lo --out "$PCAP" --silent \
	-f "tcp dst port $CHECK_PORT" >"$(netns_tmp netsniff.log)" 2>&1 &
SNIFF_PID=$!
netns_track_pid "$SNIFF_PID"
sleep 0.5 # netsniff-ng's ring is up (the capture of the checks below tells)
post1=$(req "$BODY" /index.html -H 'Expect:' --data-binary "@$body")
post2=$(req "$BODY" /index.html -H 'Expect:' --data-binary "@$body")
sleep 0.3
kill -INT "$SNIFF_PID"
wait "$SNIFF_PID" 2>/dev/null || true
assert_eq "$(grep -a -c "^X-Real-IP: $BODY" "$PCAP" || true)" 2 "case 4: check requests captured for the two POSTs"
assert_eq "$(grep -a -c "$MARK" "$PCAP" || true)" 0 "case 4: lines of the POST body in them"
assert_eq "$(grep -a -c -i -e '^Content-Length: [1-9]' -e '^Transfer-Encoding' "$PCAP" || true)" 0 \
	"case 4: check requests announcing a body"
split "$post1"
assert_eq "$CODE" 405 "case 4: first POST (allowed; the static site refuses POST)"
split "$post2"
assert_eq "$CODE" 429 "case 4: second POST, over the limit (429, not 403)"
assert_ge "$RETRY" 1 "case 4: its Retry-After"
[[ -n $RL && -n $POLICY ]] || fail "case 4: 429 without RateLimit fields ('$RL', '$POLICY')"
split "$(req "$FREE" /secret.txt)"
assert_eq "$CODE" 403 "case 4: the site's own 403 (a file nginx may not read) stays 403"
split "$(req "$FREE" /hello.txt)"
assert_eq "$CODE|$RETRY|$RL|$POLICY" "200|||" "case 4: a client no rule covers: 200, no RateLimit fields"
split "$(req "$V6" /)"
assert_eq "$CODE" 200 "case 4: IPv6 client: GET /"
assert_eq "$(rl_remaining "$RL")" 4 "case 4: IPv6 client: remaining of a burst of 5 after GET /"

! grep -E '\[(alert|emerg|crit)\]' "$NGINX_ERROR" || fail "nginx logged the errors above"
ok "check_nginx: all cases"
