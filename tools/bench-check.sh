#!/usr/bin/env bash
# tools/bench-check.sh (part of `make bench`): what telling the
# client costs, measured side by side in one run with Debian's wrk inside
# the benchmark's namespaces (sluice attached to the server's veth all along):
#  (a) checks per second `sluice check-server` answers on loopback: GET
#      /check with X-Real-IP (and a fresh X-Request-ID, as nginx sends),
#      for one address within its limit, and for many addresses;
#  (b) nginx serving a small static file over the veth: no limiter, nginx's
#      own limit_req, and auth_request to the check server
#      (contrib/nginx/sluice-check.conf), all within the limit;
#  (c) the same with the client over the limit (10/s): every answer but the
#      first few is 429, from limit_req or from the check server.
# Ratios are what to read; absolute numbers move with the machine (and
# with whatever else runs on it). Rounds interleave the configurations; the
# median of BENCH_CHECK_ROUNDS (default 3) is printed.
#
# Environment: BENCH_CHECK_SECONDS per wrk run (default 3), BENCH_CHECK_ROUNDS,
# BENCH_CHECK_CONNS wrk connections (default 16; 2 threads).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=SCRIPTDIR/../tests/lib/netns.sh
. tests/lib/netns.sh
# The check server on TCP: wrk asks it straight as well as through nginx.
CHECK_VIA=tcp
# shellcheck source=SCRIPTDIR/../tests/e2e/check_nginx_lib.sh
. tests/e2e/check_nginx_lib.sh

SECS=${BENCH_CHECK_SECONDS:-3}
ROUNDS=${BENCH_CHECK_ROUNDS:-3}
CONNS=${BENCH_CHECK_CONNS:-16}
THREADS=2
MANY=16384			# addresses of (a)'s second run: 198.18.0.0 .. 198.18.63.255
PORT_OFF=8081			# (b) without a limiter
PORT_LREQ=8082			# (b) limit_req within the limit
PORT_LREQ_OVER=8083		# (c) limit_req over the limit
HIGH=1000000			# a limit nothing reaches: 1e6/s, burst 1e6
OVER=10				# (c)'s limit: 10/s, burst 10

for v in SECS ROUNDS CONNS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "bench-check.sh: BENCH_CHECK_$v must be a positive integer" >&2; exit 2; }
done
[[ $(id -u) -eq 0 ]] || { echo "bench-check.sh: must run as root (sudo make bench)" >&2; exit 1; }
[[ -x build/sluice ]] || { echo "bench-check.sh: build/sluice not built: run make" >&2; exit 1; }
command -v wrk >/dev/null || { echo "bench-check.sh: wrk not installed (tools/install-deps.sh)" >&2; exit 1; }

netns_init bc
netns_setup
nginx_init
# The rules: the client (TX4) within a limit nothing reaches, the many
# addresses of (a) likewise, one bucket each.
sluice_attach >/dev/null
sluice_rx limit set "$TX4/32" --requests "$HIGH/s" --burst "$HIGH" >/dev/null
sluice_rx limit set 198.18.0.0/15 --requests "$HIGH/s" --burst "$HIGH" >/dev/null
check_start

# nginx: the contrib configuration on $HTTP_PORT, and plain servers of the
# same site without a limiter and with limit_req, in one nginx (two
# workers), access log off.
nginx_conf "$NGINX_DIR/site.conf"
plain_server() { # PORT [LINES]
	cat <<-EOF
		server {
		    listen $RX4:$1;
		    root $NGINX_SITE;
		    index index.html;
		    ${2:-}
		    location / { try_files \$uri \$uri/ =404; }
		}
	EOF
}
{
	echo "limit_req_zone \$binary_remote_addr zone=bench_high:10m rate=${HIGH}r/s;"
	echo "limit_req_zone \$binary_remote_addr zone=bench_over:10m rate=${OVER}r/s;"
	plain_server "$PORT_OFF"
	plain_server "$PORT_LREQ" "limit_req zone=bench_high burst=$HIGH nodelay;"
	plain_server "$PORT_LREQ_OVER" "limit_req zone=bench_over burst=$OVER nodelay; limit_req_status 429;"
} >>"$NGINX_DIR/site.conf"
NGINX_ACCESS_LOG=off nginx_conf_main "$NGINX_DIR/nginx.conf" "$NGINX_DIR/site.conf"
nginx_start "$NGINX_DIR/nginx.conf"
for p in "$PORT_OFF" "$PORT_LREQ" "$PORT_LREQ_OVER"; do
	wait_listen "$p" nginx "$NGINX_PID"
done

# wrk's request scripts: a fresh X-Request-ID per request (thread number and
# count), and X-Real-IP one address or MANY in turn.
LUA_ONE=$(netns_tmp one.lua)
LUA_MANY=$(netns_tmp many.lua)
lua_common='local threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
local n = 0'
cat >"$LUA_ONE" <<-EOF
	$lua_common
	function request()
	    n = n + 1
	    return wrk.format("GET", "/check", { ["X-Real-IP"] = "$TX4",
	        ["X-Request-ID"] = string.format("%d-%d", tid, n) })
	end
EOF
cat >"$LUA_MANY" <<-EOF
	$lua_common
	function request()
	    n = n + 1
	    local a = (n * $THREADS + tid) % $MANY
	    return wrk.format("GET", "/check", { ["X-Real-IP"] = string.format("198.18.%d.%d", math.floor(a / 256), a % 256),
	        ["X-Request-ID"] = string.format("%d-%d", tid, n) })
	end
EOF

# One wrk run in a namespace; prints "REQ_PER_S P50_MS P99_MS NON2XX ERRORS".
wrk_run() { # NS URL [SCRIPT]
	local out
	out=$(nsenter --net="/run/netns/$1" wrk -t "$THREADS" -c "$CONNS" -d "${SECS}s" --latency \
		${3:+-s "$3"} "$2") || fail "wrk $2 failed: $out"
	awk '
		function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
		/^Requests\/sec:/ { r = $2 }
		$1 == "50%" { p50 = ms($2) } $1 == "99%" { p99 = ms($2) }
		/Non-2xx or 3xx responses:/ { bad = $NF }
		/Socket errors:/ { gsub(/,/, ""); e = $4 + $6 + $8 + $10 }
		END { if (r == "") exit 1; printf "%.0f %.3f %.3f %d %d\n", r, p50, p99, bad, e }' <<<"$out" ||
		fail "cannot read wrk's output: $out"
}

# The configurations, measured in turn each round.
declare -A NS URL LUA LABEL RES
add_cfg() { # NAME NS URL LUA LABEL
	NS[$1]=$2 URL[$1]=$3 LUA[$1]=$4 LABEL[$1]=$5 RES[$1]=
}
add_cfg one "$NS_RX" "http://$CHECK_ADDR:$CHECK_PORT/check" "$LUA_ONE" "check-server, one address"
add_cfg many "$NS_RX" "http://$CHECK_ADDR:$CHECK_PORT/check" "$LUA_MANY" "check-server, $MANY addresses"
add_cfg off "$NS_TX" "http://$RX4:$PORT_OFF/hello.txt" "" "nginx, no limiter"
add_cfg lreq "$NS_TX" "http://$RX4:$PORT_LREQ/hello.txt" "" "nginx + limit_req"
add_cfg check "$NS_TX" "http://$RX4:$HTTP_PORT/hello.txt" "" "nginx + auth_request to check-server"
add_cfg lreq_over "$NS_TX" "http://$RX4:$PORT_LREQ_OVER/hello.txt" "" "nginx + limit_req, over: 429"
add_cfg check_over "$NS_TX" "http://$RX4:$HTTP_PORT/hello.txt" "" "nginx + check-server, over: 429"
WITHIN=(one many off lreq check)
OVERS=(lreq_over check_over)

# The check server's rule for the client, for the runs within and over it;
# waits until the check server answers by it (it re-reads the policy within
# 100 ms of a change).
client_rule() {
	local i
	sluice_rx limit set "$TX4/32" --requests "$1/s" --burst "$1" >/dev/null
	for ((i = 0; i < 50; i++)); do
		in_rx curl -s -o /dev/null --max-time 2 -w '%header{ratelimit-policy}' -H "X-Real-IP: $TX4" \
			"http://$CHECK_ADDR:$CHECK_PORT/check" | grep -q ";q=$1;" && return 0
		sleep 0.05
	done
	fail "the check server does not apply the new rule for $TX4 (--requests $1/s) after 2.5 s"
}

echo "== Telling the client: check-server and nginx, wrk $THREADS threads x $CONNS connections, ${SECS}s per run, median of $ROUNDS rounds =="
t0=$(now)
for ((round = 1; round <= ROUNDS; round++)); do
	client_rule "$HIGH"
	for c in "${WITHIN[@]}"; do
		RES[$c]+="$(wrk_run "${NS[$c]}" "${URL[$c]}" "${LUA[$c]}");"
	done
	client_rule "$OVER"
	for c in "${OVERS[@]}"; do
		RES[$c]+="$(wrk_run "${NS[$c]}" "${URL[$c]}" "${LUA[$c]}");"
	done
done

# The round with the median rate of a configuration: "REQ_PER_S P50 P99 NON2XX ERRORS".
median() { tr ';' '\n' <<<"${RES[$1]}" | grep . | sort -n -k1,1 | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'; }
row() { # NAME REFERENCE_RATE
	local r p50 p99 bad err
	read -r r p50 p99 bad err <<<"$(median "$1")"
	printf '  %-40s %9d/s  p50 %7.3f ms  p99 %7.3f ms  non-2xx %7d  errors %d  %5.2fx\n' \
		"${LABEL[$1]}" "$r" "$p50" "$p99" "$bad" "$err" "$(calc "$r / $2")"
}
rate_of() { median "$1" | cut -d' ' -f1; }

echo "(a) GET /check on loopback, within the limit (relative to one address)"
row one "$(rate_of one)"
row many "$(rate_of one)"
echo "(b) GET /hello.txt through nginx over the veth, within every limit (relative to no limiter)"
row off "$(rate_of off)"
row lreq "$(rate_of off)"
row check "$(rate_of off)"
echo "(c) the same client over a ${OVER}/s limit: 429s (relative to limit_req's)"
row lreq_over "$(rate_of lreq_over)"
row check_over "$(rate_of lreq_over)"
echo "  check-server / limit_req within the limit: $(calc "$(rate_of check) / $(rate_of lreq)" %.2f)x;" \
	"over it: $(calc "$(rate_of check_over) / $(rate_of lreq_over)" %.2f)x;" \
	"checks/s on loopback / nginx+check req/s: $(calc "$(rate_of one) / $(rate_of check)" %.2f)x"
echo "  (${SECS}s x ${#RES[@]} configurations x $ROUNDS rounds in $(calc "$(now) - $t0" %.0f)s)"
