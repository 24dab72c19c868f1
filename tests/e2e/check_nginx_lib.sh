# shellcheck shell=bash
# Shared by tests/e2e/check_nginx*.sh and tools/bench-check.sh (sourced, not
# a test): Debian's nginx serving a small static site in the rx (server)
# namespace, configured from contrib/nginx/sluice-check.conf (the snippet
# in the site's server block) and sluice-check-upstream.conf, in front of
# `sluice check-server` on its Unix socket (as contrib has it, the socket in
# the test's scratch directory), or with CHECK_VIA=tcp on 127.0.0.1:9465 of
# the same namespace; curl from the tx (client) namespace, from one of
# several client addresses.
# Source tests/lib/netns.sh first, then:
#   nginx_init                 # checks nginx and curl, makes the site (after netns_init)
#   client_addrs ADDR...       # more client addresses on the tx veth (198.18.0.0/24)
#   nginx_conf FILE [SED...]   # a site with the contrib snippet, for this namespace (+ sed edits)
#   nginx_conf_main FILE SITE_CONF [HTTP_LINES]  # nginx.conf around a server block
#   nginx_start MAIN_CONF      # nginx in the rx namespace, waits until it listens
#   nginx_stop                 # stops it (waits for the master to exit)
#   check_start [OPTS...]      # sluice check-server for $IF_RX, waits until it listens
#   check_ask PATH [CURL_OPTS...]  # curl the check server itself (socket or TCP)
#   req SRC PATH [CURL_OPTS...]  # one request from SRC: prints "CODE|RETRY-AFTER|RATELIMIT|RATELIMIT-POLICY"
#   in_tx CMD..., in_rx CMD... # a command in the client / server namespace (network only)
#   req_loop SRC PATH SECONDS MAX GAP OUT [CURL_OPTS...]  # requests in a row, one line each to OUT
#   rl_remaining FIELD         # r= of a RateLimit field
#   sleep_until T              # sleep until the epoch time T (now's clock)
#   num_lt A B                 # whether decimal A < B
#
# nginx: a server block with the contrib snippet, listening on $RX4 and
# $RX6 port $HTTP_PORT only (never the host's namespace), its root on the
# site below; pid, logs and temp files in the test's scratch directory;
# workers as nobody in group sluice-check-clients, the check server's
# default --socket-group, as the recipe's 'user www-data
# sluice-check-clients;' line makes them. It logs every request and every check subrequest
# (log_subrequest) with its $request_id to $NGINX_ACCESS.

HTTP_PORT=8080
CHECK_ADDR=127.0.0.1
CHECK_PORT=9465
CHECK_VIA=${CHECK_VIA:-unix}
CHECK_SOCK=
CHECK_CONTRIB=$SLUICE_ROOT/contrib/nginx/sluice-check.conf
CHECK_UPSTREAM=$SLUICE_ROOT/contrib/nginx/sluice-check-upstream.conf
CHECK_SOCK_LINE='^\s*server unix:/run/sluice/check.sock;$'
NGINX=${NGINX:-/usr/sbin/nginx}
NGINX_PID=
CHECK_PID=

nginx_init() {
	local cmd
	[[ -x $NGINX ]] || skip "nginx not installed (tools/install-deps.sh)"
	for cmd in curl ss; do
		command -v "$cmd" >/dev/null || skip "$cmd not installed (tools/install-deps.sh)"
	done
	"$NGINX" -V 2>&1 | grep -q -- --with-http_auth_request_module ||
		skip "this nginx has no auth_request module"
	[[ -r $CHECK_CONTRIB ]] || fail "cannot read $CHECK_CONTRIB"
	[[ -r $CHECK_UPSTREAM ]] || fail "cannot read $CHECK_UPSTREAM"
	NGINX_DIR=$(netns_tmp nginx)
	NGINX_SITE=$NGINX_DIR/site
	NGINX_ACCESS=$NGINX_DIR/access.log
	CHECK_SOCK=$(netns_tmp check.sock)
	NGINX_ERROR=$NGINX_DIR/error.log
	mkdir -p "$NGINX_SITE/sub" "$NGINX_DIR/temp" || fail "cannot create $NGINX_DIR"
	printf '<!doctype html>\n<title>sluice test</title>\n<p>index</p>\n' >"$NGINX_SITE/index.html"
	printf 'hello\n' >"$NGINX_SITE/hello.txt"
	head -c 4096 /dev/zero | tr '\0' 'x' >"$NGINX_SITE/sub/4k.txt"
	# Workers run as nobody: they must traverse the scratch directory and
	# read the site (the directory holds nothing secret).
	chmod 0711 "$(netns_tmp '')" || fail "chmod scratch directory"
	chmod -R a+rX "$NGINX_DIR" || fail "chmod $NGINX_DIR"
	# On a failure, what nginx and the check server said, before the
	# cleanup removes it.
	trap 'nginx_diag_cleanup $?' EXIT
}

# netns_cleanup takes the test's exit status from $?: set it back after
# the diagnostics (errexit off, or a failed command here would skip the
# cleanup).
nginx_diag_cleanup() { # EXIT_STATUS
	local f
	set +e
	if (($1 != 0 && $1 != 77)); then
		for f in "$NGINX_ERROR" "$(netns_tmp check.log)"; do
			[[ -s $f ]] || continue
			echo "--- last lines of $(basename "$f") ---" >&2
			tail -n 15 "$f" >&2
		done
	fi
	(exit "$1")
	netns_cleanup
}

in_tx() { nsenter --net="/run/netns/$NS_TX" "$@"; }
in_rx() { nsenter --net="/run/netns/$NS_RX" "$@"; }

client_addrs() {
	local a
	for a in "$@"; do
		ip -n "$NS_TX" addr add "$a/24" dev "$IF_TX" || fail "address $a on $IF_TX"
	done
}

# The site: contrib's upstream (its socket line swapped for this test's
# check server) and a server block of the test's own, listening on this
# namespace's addresses and serving the site above (index index.html), with
# contrib's snippet in it, as a site includes it. The upstream's socket
# line must be there exactly once. Extra sed expressions (the tests'
# deliberately broken variants) follow, on the whole file; each must
# change it.
nginx_conf() { # OUT [SED_EXPR...]
	local out=$1 pat=$CHECK_SOCK_LINE e before
	shift
	local upstream=unix:$CHECK_SOCK
	[[ $CHECK_VIA == tcp ]] && upstream=$CHECK_ADDR:$CHECK_PORT
	[[ $(grep -c "$pat" "$CHECK_UPSTREAM") == 1 ]] ||
		fail "$CHECK_UPSTREAM: want exactly one line matching '$pat'"
	! grep -qE '^\s*(server|listen|root|server_name)\b' "$CHECK_CONTRIB" ||
		fail "$CHECK_CONTRIB: a snippet of server lines, without server, listen, root or server_name"
	{
		sed -e "s|^\(\s*\)server unix:/run/sluice/check.sock;$|\1server $upstream;|" "$CHECK_UPSTREAM"
		printf 'server {\n\tlisten %s:%s;\n\tlisten [%s]:%s;\n\tserver_name _;\n' \
			"$RX4" "$HTTP_PORT" "$RX6" "$HTTP_PORT"
		printf '\troot %s;\n\tindex index.html;\n' "$NGINX_SITE"
		sed 's/^/\t/' "$CHECK_CONTRIB"
		# shellcheck disable=SC2016 # nginx's variables, written as they are
		printf '\tlocation / {\n\t\ttry_files $uri $uri/ =404;\n\t}\n}\n'
	} >"$out" || fail "cannot write $out"
	for e in "$@"; do
		before=$(cat "$out")
		sed -i -e "$e" "$out" || fail "sed '$e' on $out"
		[[ $(cat "$out") != "$before" ]] || fail "sed '$e' changed nothing in $out"
	done
}

# nginx.conf around one server block file: pid, logs, temp paths in the
# scratch directory; workers as nobody; extra http-level lines may follow.
nginx_conf_main() { # OUT SITE_CONF [HTTP_LINES]
	local t=$NGINX_DIR/temp
	cat >"$1" <<-EOF || fail "cannot write $1"
		user nobody sluice-check-clients;
		worker_processes ${NGINX_WORKERS:-2};
		pid $NGINX_DIR/nginx.pid;
		error_log $NGINX_ERROR warn;
		events { worker_connections 1024; }
		http {
		    include /etc/nginx/mime.types;
		    default_type application/octet-stream;
		    sendfile on;
		    client_body_temp_path $t/body;
		    proxy_temp_path $t/proxy;
		    fastcgi_temp_path $t/fastcgi;
		    uwsgi_temp_path $t/uwsgi;
		    scgi_temp_path $t/scgi;
		    log_format sluice_test '\$request_id \$remote_addr "\$request" \$uri \$status';
		    access_log ${NGINX_ACCESS_LOG:-$NGINX_ACCESS sluice_test};
		    log_subrequest on;
		    ${3:-}
		    include $2;
		}
	EOF
}

# Waits up to 5 s for a TCP listener on PORT in the rx namespace.
wait_listen() { # PORT WHAT PID
	local i
	for ((i = 0; i < 50; i++)); do
		[[ -n $(in_rx ss -Hltn "sport = :$1") ]] && return 0
		kill -0 "$3" 2>/dev/null || fail "$2 exited before it listened on port $1"
		sleep 0.1
	done
	fail "$2 does not listen on port $1 after 5 s"
}

nginx_start() { # MAIN_CONF
	in_rx "$NGINX" -t -q -c "$1" -e "$NGINX_ERROR" || fail "nginx -t rejects $1: $(tail -n 3 "$NGINX_ERROR")"
	# nsenter execs nginx: $! is the master's PID
	nsenter --net="/run/netns/$NS_RX" "$NGINX" -c "$1" -e "$NGINX_ERROR" -g 'daemon off;' &
	NGINX_PID=$!
	netns_track_pid "$NGINX_PID"
	wait_listen "$HTTP_PORT" nginx "$NGINX_PID"
}

# TERM to the master, which stops its workers; it is forgotten by the cleanup.
nginx_stop() {
	local keep=() pid
	[[ -n $NGINX_PID ]] || return 0
	kill -TERM "$NGINX_PID" 2>/dev/null
	wait "$NGINX_PID" 2>/dev/null || true
	for pid in "${NETNS_PIDS[@]}"; do
		[[ $pid == "$NGINX_PID" ]] || keep+=("$pid")
	done
	NETNS_PIDS=("${keep[@]}")
	NGINX_PID=
}

# `sluice check-server` in the rx namespace through nsenter (network only,
# so it sees the host's bpffs and sluice's pins), stderr to check.log: on
# $CHECK_SOCK (group sluice-check-clients, its default), or on TCP with
# CHECK_VIA=tcp; with --trust-request-id, as the recipe starts it (its
# nginx configuration sets X-Request-ID from $request_id).
# shellcheck disable=SC2120 # callers may pass none
check_start() { # [OPTS...]
	local where=(--socket "$CHECK_SOCK") i
	[[ $CHECK_VIA == tcp ]] && where=(--listen "$CHECK_ADDR:$CHECK_PORT")
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" check-server \
		--trust-request-id "${where[@]}" "$@" 2>>"$(netns_tmp check.log)" &
	CHECK_PID=$!
	netns_track_pid "$CHECK_PID"
	if [[ $CHECK_VIA == tcp ]]; then
		wait_listen "$CHECK_PORT" "sluice check-server" "$CHECK_PID"
		return
	fi
	for ((i = 0; i < 50; i++)); do
		check_ask /metrics -o /dev/null 2>/dev/null && return 0
		kill -0 "$CHECK_PID" 2>/dev/null || fail "sluice check-server exited before it listened on $CHECK_SOCK"
		sleep 0.1
	done
	fail "sluice check-server does not answer on $CHECK_SOCK after 5 s"
}

check_ask() { # PATH [CURL_OPTS...]
	local path=$1
	shift
	if [[ $CHECK_VIA == tcp ]]; then
		in_rx curl -sf --max-time 2 "$@" "http://$CHECK_ADDR:$CHECK_PORT$path"
	else
		in_rx curl -sf --max-time 2 --unix-socket "$CHECK_SOCK" "$@" "http://localhost$path"
	fi
}

# One request through nginx: status and the three fields (empty if absent),
# separated by |. The URL takes IPv6 when SRC has a colon.
req() { # SRC PATH [CURL_OPTS...]
	local src=$1 path=$2 host=$RX4
	shift 2
	[[ $src == *:* ]] && host="[$RX6]"
	in_tx curl -sS -o /dev/null --interface "$src" --max-time 5 "$@" \
		-w '%{http_code}|%header{retry-after}|%header{ratelimit}|%header{ratelimit-policy}\n' \
		"http://$host:$HTTP_PORT$path"
}

# Requests from SRC, one after the other (GAP seconds apart, 0 for back to
# back), until SECONDS have passed or MAX were sent. One line per request to
# OUT: "START END CODE RETRY-AFTER RATELIMIT CURL_EXIT", tab-separated, the
# times from now's clock around the curl; CODE is 000 when no answer came
# (CURL_EXIT 28: timed out, 7: refused). --max-time bounds each request.
req_loop() { # SRC PATH SECONDS MAX GAP OUT [CURL_OPTS...]
	local src=$1 host=$RX4
	[[ $src == *:* ]] && host="[$RX6]"
	# One bash in the client namespace runs the loop: no fork per request
	# but curl's.
	in_tx bash -c "$(declare -f req_loop_ns); req_loop_ns \"\$@\"" req_loop \
		"$src" "http://$host:$HTTP_PORT$2" "$(secs_us "$3")" "$4" "$(secs_us "$5")" "${@:7}" >"$6" ||
		fail "req_loop from $src failed"
}

# req_loop's loop, in the client namespace; times in microseconds.
req_loop_ns() { # SRC URL SPAN_US MAX GAP_US [CURL_OPTS...]
	local src=$1 url=$2 span=$3 max=$4 gap=$5 n=0 t0 s e w rc d
	shift 5
	t0=${EPOCHREALTIME/[.,]/}
	while ((n < max)); do
		s=${EPOCHREALTIME/[.,]/}
		((s - t0 < span)) || break
		rc=0
		w=$(curl -s -o /dev/null --interface "$src" --max-time 5 "$@" \
			-w '%{http_code}\t%header{retry-after}\t%header{ratelimit}' "$url") || rc=$?
		e=${EPOCHREALTIME/[.,]/}
		printf '%d.%06d\t%d.%06d\t%s\t%d\n' $((s / 1000000)) $((s % 1000000)) \
			$((e / 1000000)) $((e % 1000000)) "$w" "$rc"
		n=$((n + 1))
		d=$((s + gap - ${EPOCHREALTIME/[.,]/}))
		((gap == 0 || d <= 0)) || sleep "$((d / 1000000)).$(printf %06d $((d % 1000000)))"
	done
}

# The clock of now() in integer microseconds, and seconds as microseconds.
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
secs_us() { calc "$1 * 1000000" %.0f; }

sleep_until() { # EPOCH_SECONDS (decimal)
	local d
	d=$(calc "$1 - $(now)")
	num_lt 0 "$d" && sleep "$d"
	return 0
}

# Whether decimal A < B.
num_lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# r=N of a RateLimit field ("NAME";r=N;t=S), or nothing.
rl_remaining() {
	[[ $1 =~ \;r=([0-9]+) ]] && echo "${BASH_REMATCH[1]}"
}
