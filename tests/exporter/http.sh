#!/usr/bin/env bash
# exporter/http: the HTTP surface, on the ASan/UBSan build. GET /metrics is
# 200 with the 0.0.4 text content type; HEAD gives the headers and no body;
# GET / is a page linking to /metrics; other paths 404; other methods 405
# with "Allow: GET, HEAD", before any request body is read; malformed
# requests get 400 (or 505 for an unknown HTTP version), or, when even the
# request line cannot be split, a closed connection, and the server goes on
# serving. A bad --listen is a one-line usage error (exit 2), a taken port
# a one-line runtime error (exit 1), [::1] works, and SIGTERM and SIGINT
# both end it with status 0 and no sanitizer report.
set -euo pipefail
SLUICE_EXPORTER=${SLUICE_EXPORTER:-$(dirname "$0")/../../build/asan/sluice}
. "$(dirname "$0")/lib.sh"

exporter_init exh
[[ -x $HTTP_RAW ]] || fail "$HTTP_RAW not built: run make build/tests/http_raw"
netns_setup
sluice_attach

# --- usage errors: exit 2, exactly one line on stderr, nothing started ---
for bad in localhost:9464 127.0.0.1 127.0.0.1: 127.0.0.1:65536 127.0.0.1:-1 \
	127.0.0.1:9x '[::1]9464' '[::1]:' '::1:9464' '[127.0.0.1]:9464' 300.1.1.1:80 ''; do
	rc=0
	err=$(nsenter --net="/run/netns/$NS_RX" "$SLUICE_EXPORTER" exporter --listen "$bad" 2>&1 >/dev/null) || rc=$?
	[[ $rc == 2 ]] || fail "--listen '$bad': exit $rc, want 2 ($err)"
	[[ $(wc -l <<<"$err") == 1 && $err == "sluice: bad --listen"* ]] ||
		fail "--listen '$bad': want one 'sluice: bad --listen' line, got: $err"
done
ok "bad --listen values: exit 2 with one line each"
for args in extra --bogus -x --listen '--listen= '; do
	rc=0
	# shellcheck disable=SC2086 # split on purpose
	err=$(nsenter --net="/run/netns/$NS_RX" "$SLUICE_EXPORTER" exporter $args 2>&1 >/dev/null) || rc=$?
	[[ $rc == 2 && $(wc -l <<<"$err") == 1 && $err == "sluice: "* ]] ||
		fail "exporter $args: exit $rc, want 2 and one 'sluice: ' line, got: $err"
done
ok "stray arguments and unknown options: exit 2 with one line each"
rc=0
"$SLUICE_EXPORTER" exporter --help | grep -q -- '--listen ADDR:PORT' || rc=$?
assert_eq "$rc" 0 "exporter --help shows the usage"

exporter_start

# --- GET /metrics, HEAD, GET / ---
hdr=$(netns_tmp headers)
body=$(netns_tmp body)
scrape /metrics -D "$hdr" -o "$body" || fail "GET /metrics failed"
grep -q '^HTTP/1.1 200' "$hdr" || fail "GET /metrics: $(head -n 1 "$hdr")"
grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8' "$hdr" ||
	fail "GET /metrics content type: $(grep -i content-type "$hdr")"
grep -q "^sluice_packets_total{interface=\"$IF_RX\"" "$body" || fail "no counters of $IF_RX in the body"
ok "GET /metrics: 200, text format 0.0.4, counters of $IF_RX"

dl=$(scrape /metrics -I -D "$hdr" -o /dev/null -w '%{size_download}') || fail "HEAD /metrics failed"
grep -q '^HTTP/1.1 200' "$hdr" || fail "HEAD /metrics: $(head -n 1 "$hdr")"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$hdr" || fail "HEAD: no content type"
len=$(awk 'tolower($1) == "content-length:" { print $2 + 0 }' "$hdr")
assert_ge "$len" 1000 "HEAD /metrics Content-Length (of the body it would send)"
assert_eq "$dl" 0 "HEAD /metrics body bytes"

scrape / -D "$hdr" -o "$body" || fail "GET / failed"
{ grep -q '^HTTP/1.1 200' "$hdr" && grep -qi '^Content-Type: text/html' "$hdr"; } ||
	fail "GET /: $(head -n 1 "$hdr")"
grep -q 'href="/metrics"' "$body" || fail "GET / does not link to /metrics"
ok "GET /: HTML page linking to /metrics"

# --- 404 and 405 ---
for path in /nope /metrics/ /metricsx /index.html '/../metrics' /favicon.ico; do
	code=$(scrape "$path" --path-as-is -o /dev/null -w '%{http_code}') || true
	[[ $code == 404 ]] || fail "GET $path: $code, want 404"
done
code=$(scrape '/metrics?x=1' -o /dev/null -w '%{http_code}')
assert_eq "$code" 200 "GET /metrics?x=1 (the query string is ignored)"
ok "other paths: 404"
for method in POST PUT DELETE PATCH OPTIONS TRACE; do
	scrape /metrics -X "$method" -D "$hdr" -o /dev/null || true
	grep -q '^HTTP/1.1 405' "$hdr" || fail "$method /metrics: $(head -n 1 "$hdr"), want 405"
	grep -qi '^Allow: GET, HEAD' "$hdr" || fail "$method /metrics: no 'Allow: GET, HEAD'"
done
ok "other methods: 405 with Allow: GET, HEAD"
# A large body is refused, not swallowed.
head -c 4000000 /dev/zero >"$(netns_tmp big)"
code=$(scrape /metrics -X POST --data-binary @"$(netns_tmp big)" -o /dev/null -w '%{http_code}') || true
assert_eq "$code" 405 "POST with a 4 MB body"

# --- malformed requests, raw ---
# The request is a printf format on purpose: \r\n and \001 escapes.
# shellcheck disable=SC2059
raw() { printf "$1" | in_rx "$HTTP_RAW" 127.0.0.1 "$EXPORTER_PORT"; }
declare -A want=(
	['GET /metrics\r\n\r\n']=400                                   # HTTP/0.9 form
	['GET /metrics HTTP/1.1\r\n\r\n']=400                          # no Host
	['GET /metrics FOO/1.1\r\nHost: a\r\n\r\n']=400                # not HTTP
	['GET /metrics HTTP/1.1 x\r\nHost: a\r\n\r\n']=400             # extra word
	['GET /metrics HTTP/1.1\r\nHost: a\r\nno colon\r\n\r\n']=400   # bad header
	['GET /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n']=400
	['\001\002 / HTTP/1.1\r\nHost: a\r\n\r\n']=400                 # binary method
	['GET /metrics HTTP/9.9\r\nHost: a\r\n\r\n']=505
	['GARBAGE\r\n\r\n']=closed                                     # no request line at all
	['GET /me trics HTTP/1.1\r\nHost: a\r\n\r\n']=closed           # space in the URL
)
for req in "${!want[@]}"; do
	got=$(raw "$req")
	case ${want[$req]} in
	closed) [[ $got == closed ]] || fail "request '$req': got '$got', want the connection closed" ;;
	*) [[ $got == "HTTP/1.1 ${want[$req]} "* ]] || fail "request '$req': got '$got', want ${want[$req]}" ;;
	esac
done
ok "malformed requests: 400 (505 for HTTP/9.9), unsplittable ones closed (${#want[@]} cases)"
assert_eq "$(raw 'GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')" \
	"HTTP/1.1 200 OK" "a well-formed raw request after them"

# Keep-alive: two requests on one connection.
n=$(scrape /metrics -o /dev/null -w '%{num_connects}\n' "$EXPORTER_URL/metrics" |
	awk '{ s += $1 } END { print s }')
assert_eq "$n" 1 "connections opened for two keep-alive requests"

# --- the listen address ---
rc=0
err=$(nsenter --net="/run/netns/$NS_RX" "$SLUICE_EXPORTER" exporter 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 1 "exit status when the port is taken"
[[ $(wc -l <<<"$err") == 1 && $err == *"address in use"* ]] || fail "port taken: $err"
ok "port taken: one line, $err"
exporter_stop TERM

EXPORTER_URL="http://[::1]:$EXPORTER_PORT"
exporter_start --listen "[::1]:$EXPORTER_PORT"
grep -q 'serving http://\[::1\]:9464/metrics' "$EXPORTER_LOG" || fail "startup line: $(cat "$EXPORTER_LOG")"
code=$(scrape /metrics -o /dev/null -w '%{http_code}')
assert_eq "$code" 200 "GET /metrics on [::1]"
code=$(in_rx curl -s --max-time 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EXPORTER_PORT/metrics") || true
assert_eq "$code" 000 "nothing listens on 127.0.0.1 when bound to [::1]"
exporter_stop INT
! grep -q 'Sanitizer' "$EXPORTER_LOG" || fail "sanitizer report: $(cat "$EXPORTER_LOG")"
ok "no sanitizer report"
