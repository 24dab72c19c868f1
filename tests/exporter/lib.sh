# shellcheck shell=bash
# Helpers for the exporter tests, over tests/lib/netns.sh: the exporter and
# (for some tests) Prometheus run inside the test's rx namespace and listen
# on its loopback only, so their ports never collide with anything else.
#
#   exporter_start [ARGS...]   sluice exporter ARGS in $NS_RX, waits until it
#                              answers; sets EXPORTER_PID, EXPORTER_LOG
#   exporter_stop              SIGTERM, and the exit status must be 0
#   scrape [PATH]              curl the exporter (default /metrics) from $NS_RX
#   series FILE 'NAME{...}'    the value of one series in a scrape, or "absent"
#   in_rx CMD...               CMD in $NS_RX (ip netns exec)
#   stats_json                 `sluice stats -j` for $IF_RX
#   attach_extra IFACE         a second veth pair inside $NS_RX with sluice on
#                              IFACE; detached and removed by the cleanup
#   doc_families               the metric families doc/metrics.md documents
#   prometheus_start           the real Prometheus in $NS_RX, scraping every
#                              second what stdin's scrape_configs list; PROM_PID
#   promql EXPR                an instant query's first value, "none" or "error"
#   wait_promql EXPR WANT WHAT until EXPR gives WANT (at most 30 s), asserted
#
# SLUICE_EXPORTER picks the binary (default build/sluice; the robustness
# tests use the ASan/UBSan build, build/asan/sluice).

. "$(dirname "${BASH_SOURCE[0]}")/../lib/netns.sh"

HTTP_RAW=${HTTP_RAW:-$SLUICE_ROOT/build/tests/http_raw}
FILL_SOURCES=${FILL_SOURCES:-$SLUICE_ROOT/build/tests/fill_sources}
SLUICE_EXPORTER=${SLUICE_EXPORTER:-$SLUICE}
EXPORTER_PORT=9464
EXPORTER_URL=http://127.0.0.1:$EXPORTER_PORT
EXPORTER_PID=
EXPORTER_LOG=
EXTRA_IFACES=()
PROMETHEUS=${PROMETHEUS:-$(command -v prometheus || true)}
PROM_PORT=9090
PROM_URL=http://127.0.0.1:$PROM_PORT
PROM_PID=

in_rx() { ip netns exec "$NS_RX" "$@"; }

stats_json() { sluice_rx -j stats; }

# The first column of doc/metrics.md's metric tables, one family a line.
doc_families() {
	# shellcheck disable=SC2016 # backquotes of Markdown, literally
	grep -oE '^\| `sluice_[a-z_]+` \| (counter|gauge) \|' "$SLUICE_ROOT/doc/metrics.md" |
		grep -oE 'sluice_[a-z_]+' | sort -u
}

# netns_init plus what these tests need; chains its own cleanup in front of
# netns_cleanup (extra interfaces first, while their namespace exists).
exporter_init() {
	netns_init "$1"
	command -v curl >/dev/null || skip "curl not installed (tools/install-deps.sh)"
	[[ -x $SLUICE_EXPORTER ]] || fail "$SLUICE_EXPORTER not built: run make"
	trap exporter_cleanup EXIT
}

exporter_cleanup() {
	local rc=$? ifc
	set +e
	for ifc in "${EXTRA_IFACES[@]}"; do
		if [[ -e /run/netns/$NS_RX ]]; then
			nsenter --net="/run/netns/$NS_RX" "$SLUICE" detach "$ifc" >/dev/null 2>&1
		fi
		[[ -d $SLUICE_PIN_ROOT/$ifc ]] &&
			{ "$SLUICE" detach --force "$ifc" >/dev/null 2>&1 || rm -rf "${SLUICE_PIN_ROOT:?}/$ifc"; }
	done
	(exit "$rc")
	netns_cleanup
}

attach_extra() { # IFACE
	local ifc=$1
	in_rx ip link add "$ifc" type veth peer name "${ifc:0:12}p" ||
		fail "cannot create veth $ifc in $NS_RX"
	EXTRA_IFACES+=("$ifc")
	in_rx ip link set "$ifc" up || fail "link up $ifc"
	in_rx ip link set "${ifc:0:12}p" up || fail "link up ${ifc:0:12}p"
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" attach --mode native "$ifc" >/dev/null ||
		fail "sluice attach $ifc"
}

scrape() { # [PATH] [CURL ARGS...]
	local path=${1:-/metrics}
	shift || true
	in_rx curl -sS --max-time 5 "$@" "$EXPORTER_URL$path"
}

series() { # FILE SERIES
	# Through the environment: awk -v would eat the backslashes of escapes.
	SERIES=$2 awk '$1 == ENVIRON["SERIES"] { print $2; found = 1 }
		END { if (!found) print "absent" }' "$1"
}

exporter_start() {
	local i
	EXPORTER_LOG=$(netns_tmp exporter.log)
	nsenter --net="/run/netns/$NS_RX" "$SLUICE_EXPORTER" exporter "$@" >"$EXPORTER_LOG" 2>&1 &
	EXPORTER_PID=$!
	netns_track_pid "$EXPORTER_PID"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$EXPORTER_PID" 2>/dev/null || {
			cat "$EXPORTER_LOG" >&2
			fail "the exporter exited at startup"
		}
		# Answering, and past its startup line.
		in_rx curl -s --max-time 1 -o /dev/null "$EXPORTER_URL/" && [[ -s $EXPORTER_LOG ]] && {
			ok "exporter up: $(head -n 1 "$EXPORTER_LOG")"
			return 0
		}
		sleep 0.1
	done
	cat "$EXPORTER_LOG" >&2
	fail "the exporter did not answer within 10 s"
}

exporter_stop() { # [SIGNAL]
	local rc
	kill -"${1:-TERM}" "$EXPORTER_PID" || fail "the exporter is gone before SIG${1:-TERM}"
	rc=0
	wait "$EXPORTER_PID" || rc=$?
	if ((rc != 0)); then
		cat "$EXPORTER_LOG" >&2
		fail "exporter exit status after SIG${1:-TERM}: $rc, want 0"
	fi
	ok "exporter exits 0 on SIG${1:-TERM}"
	# Reaped: forget the PID so the cleanup never signals a reused one.
	local keep=() pid
	for pid in "${NETNS_PIDS[@]}"; do
		[[ $pid == "$EXPORTER_PID" ]] || keep+=("$pid")
	done
	NETNS_PIDS=("${keep[@]}")
	EXPORTER_PID=
}

# The scrape jobs on stdin, as the list under scrape_configs:. Prometheus
# keeps its data in the test's scratch directory.
prometheus_start() {
	local conf
	[[ -n $PROMETHEUS ]] || skip "prometheus not installed (Debian package prometheus)"
	conf=$(netns_tmp prometheus.yml)
	{
		cat <<-EOF
			global:
			  scrape_interval: 1s
			  scrape_timeout: 1s
			  evaluation_interval: 1s
			scrape_configs:
		EOF
		cat
	} >"$conf"
	mkdir "$(netns_tmp tsdb)"
	# Not through in_rx: $! must be Prometheus itself (ip netns exec execs it).
	ip netns exec "$NS_RX" "$PROMETHEUS" --config.file="$conf" --storage.tsdb.path="$(netns_tmp tsdb)" \
		--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn \
		>"$(netns_tmp prometheus.log)" 2>&1 &
	PROM_PID=$!
	netns_track_pid "$PROM_PID"
}

# PromQL over the HTTP API: the value of a one-element instant vector, or
# "none" if the result is empty.
promql() {
	in_rx curl -sS --max-time 5 --data-urlencode "query=$1" "$PROM_URL/api/v1/query" |
		jq -r 'if .status != "success" then "error"
		       elif (.data.result | length) == 0 then "none"
		       else .data.result[0].value[1] end'
}

# Until EXPR yields WANT (Prometheus scrapes every second), at most 30 s.
wait_promql() { # EXPR WANT WHAT
	local got=none i
	for ((i = 0; i < 150; i++)); do
		kill -0 "$PROM_PID" 2>/dev/null || {
			cat "$(netns_tmp prometheus.log)" >&2
			fail "prometheus exited"
		}
		got=$(promql "$1" 2>/dev/null || echo unreachable)
		[[ $got == "$2" ]] && break
		sleep 0.2
	done
	assert_eq "$got" "$2" "$3 ($1)"
}
