#!/usr/bin/env bash
# e2e/check_nginx_load: nginx (contrib/nginx/sluice-check.conf) under
# concurrent load, every client within its limit: wrk with 2 threads and
# 16 connections for 2 s, first straight at the check server on loopback
# (--listen, TCP), then through nginx to the check server on its Unix
# socket, as contrib has it. Every check must be answered 200 and every
# page 200, with no connection cut: the check server's one peer is nginx,
# which keeps a pool of connections to it and opens more under load (on the
# Unix socket no peer has an address: they must not count as one that is
# over the per-address limit).
#
# It failed before the check server's --trust peers were exempted from
# the guard against stalled clients it shares with the exporter (httpd.c:
# at most 8 connections of one address waiting for a request, the oldest
# closed beyond that): that closed nginx's connections while requests were
# on their way, and nginx answered those requests 500 ("upstream
# prematurely closed connection"; 4,824 of 15,861 pages), and wrk straight
# at the check server saw 13,333 read errors. With 8 connections or fewer
# it passed.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/e2e/check_nginx_lib.sh
. "$(dirname "$0")/check_nginx_lib.sh"

CONNS=${CHECK_NGINX_LOAD_CONNS:-16}

netns_init cnl
command -v wrk >/dev/null || skip "wrk not installed (tools/install-deps.sh)"
netns_setup
nginx_init
sluice_attach
sluice_rx limit set "$TX4/32" --requests 1000000/s --burst 1000000 >/dev/null
CHECK_VIA=tcp
check_start

# wrk's summary: requests, non-2xx answers, socket errors of all kinds.
wrk_summary() { # NS URL [WRK_OPTS...]
	local ns=$1 url=$2 out
	shift 2
	out=$(nsenter --net="/run/netns/$ns" wrk -t 2 -c "$CONNS" -d 2s "$@" "$url") || fail "wrk $url failed: $out"
	echo "$out" >&2
	awk '/requests in/ { n = $1 } /Non-2xx or 3xx responses:/ { bad = $NF }
		/Socket errors:/ { gsub(/,/, ""); e = $4 + $6 + $8 + $10 }
		END { printf "%d %d %d\n", n, bad, e }' <<<"$out"
}

read -r n bad errs < <(wrk_summary "$NS_RX" "http://$CHECK_ADDR:$CHECK_PORT/check" -H "X-Real-IP: $TX4")
assert_ge "$n" 1000 "checks answered on loopback in 2 s ($CONNS connections)"
assert_eq "$bad" 0 "checks answered other than 200"
assert_eq "$errs" 0 "connections to the check server cut (wrk's socket errors)"
kill -TERM "$CHECK_PID"
wait "$CHECK_PID" || fail "the TCP check server's exit status after SIGTERM: $?"

CHECK_VIA=unix
check_start
nginx_conf "$NGINX_DIR/site.conf"
NGINX_ACCESS_LOG=off nginx_conf_main "$NGINX_DIR/nginx.conf" "$NGINX_DIR/site.conf"
nginx_start "$NGINX_DIR/nginx.conf"

read -r n bad errs < <(wrk_summary "$NS_TX" "http://$RX4:$HTTP_PORT/hello.txt")
assert_ge "$n" 1000 "pages served through nginx in 2 s ($CONNS connections)"
assert_eq "$bad" 0 "pages answered other than 200"
assert_eq "$errs" 0 "connections to nginx cut"
assert_eq "$(grep -c 'prematurely closed' "$NGINX_ERROR" || true)" 0 "checks nginx lost to a closed connection"
ok "check_nginx_load"
