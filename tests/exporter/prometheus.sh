#!/usr/bin/env bash
# exporter/prometheus: a real Prometheus server, started by the test in its
# own namespace and listening on that namespace's loopback only, scrapes the
# exporter every second. After a bounded flood through the veth, PromQL over
# Prometheus's HTTP API gives sum(sluice_packets_total{action="drop"}) equal
# to the exact drop count of `sluice stats -j`, `up` is 1, the other
# families arrive too (sources, program info, policies), and every query of
# the Grafana dashboard in contrib/ evaluates and has data.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PROM_PORT=9090
PROM_URL=http://127.0.0.1:$PROM_PORT

exporter_init exp
PROMETHEUS=${PROMETHEUS:-$(command -v prometheus || true)}
[[ -n $PROMETHEUS ]] || skip "prometheus not installed (Debian package prometheus)"
netns_setup
sluice_attach
sluice_rx limit set 198.18.6.0/24 --rate 500 --burst 50 >/dev/null
sluice_rx deny 198.18.7.0/24 >/dev/null
nft_rx_init
nft_rx_counter quiet meta l4proto udp

exporter_start -i "$IF_RX"

conf=$(netns_tmp prometheus.yml)
cat >"$conf" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: sluice
    static_configs:
      - targets: ['127.0.0.1:$EXPORTER_PORT']
EOF
mkdir "$(netns_tmp tsdb)"
# Not through a function: $! must be Prometheus itself (ip netns exec execs it).
ip netns exec "$NS_RX" "$PROMETHEUS" --config.file="$conf" --storage.tsdb.path="$(netns_tmp tsdb)" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn \
	>"$(netns_tmp prometheus.log)" 2>&1 &
PROM_PID=$!
netns_track_pid "$PROM_PID"

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

wait_promql 'up{job="sluice"}' 1 "Prometheus scrapes the exporter"

flood --src 198.18.6.1 --sources 8 --count 20000 --pps 40000 --seconds 5 >/dev/null
flood --src 198.18.7.1 --sources 2 --count 1000 --pps 20000 --seconds 5 >/dev/null

# The exact count sluice holds, once it has stopped moving.
prev=
for ((i = 0; i < 20; i++)); do
	drops=$(stats_json | jq '.packets.drop | add')
	[[ $drops == "$prev" ]] && break
	prev=$drops
	sleep 0.3
done
assert_ge "$drops" 15000 "drops after the flood (sluice stats -j)"
wait_promql 'sum(sluice_packets_total{action="drop"})' "$drops" \
	"Prometheus's drop count equals sluice stats -j"
wait_promql 'sum(sluice_packets_total{action="drop",reason="denied"})' \
	"$(stats_json | jq .packets.drop.denied)" "denied drops"
wait_promql 'up{job="sluice"}' 1 "up is still 1"
wait_promql "sluice_tracked_sources{interface=\"$IF_RX\"}" "$(stats_json | jq .tracked_sources)" \
	"tracked sources"
wait_promql "count(sluice_program_info{interface=\"$IF_RX\",mode=\"native\"})" 1 "program info"
wait_promql "sum(sluice_policy_packets_total{policy=\"198.18.6.0/24\",action=\"drop\"})" \
	"$(sluice_rx -j limit list | jq '.[] | select(.cidr == "198.18.6.0/24") | .dropped')" \
	"drops of policy 198.18.6.0/24"
# The rule's info series, ingested: its empty match labels are absent ones.
wait_promql "count(sluice_rule_info{interface=\"$IF_RX\",policy=\"198.18.6.0/24\",kind=\"limit\",proto=\"\",syn=\"\"})" \
	1 "rule info of 198.18.6.0/24"

# Every query of the Grafana dashboard in contrib/ is valid PromQL and has
# data here, its variables set as Grafana would for "All".
dash=$SLUICE_ROOT/contrib/grafana/sluice-dashboard.json
nq=0
# shellcheck disable=SC2016 # Grafana's variables, literally
while IFS= read -r expr; do
	q=${expr//'$__rate_interval'/5s}
	q=${q//'$__range'/1m}
	q=${q//'$interface'/.*}
	q=${q//'$job'/.*}
	q=${q//'$top'/10}
	got=$(promql "$q")
	[[ $got != error && $got != none ]] || fail "dashboard query gave $got: $q"
	nq=$((nq + 1))
done < <(jq -r '.. | .expr? // empty' "$dash")
assert_ge "$nq" 10 "Grafana dashboard queries that evaluate with data"

# The scrape is healthy from Prometheus's side too.
health=$(in_rx curl -sS --max-time 5 "$PROM_URL/api/v1/targets" |
	jq -r '.data.activeTargets[] | select(.labels.job == "sluice") | .health + " " + .lastError')
assert_eq "$health" "up " "target health and last error"
exporter_stop TERM
