#!/usr/bin/env bash
# exporter/prometheus: a real Prometheus server, started by the test in its
# own namespace and listening on that namespace's loopback only, scrapes the
# exporter every second. After a bounded flood through the veth, PromQL over
# Prometheus's HTTP API gives sum(sluice_packets_total{action="drop"}) equal
# to the exact drop count of `sluice stats -j`, `up` is 1, the other
# families arrive too (sources, program info, policies). The Grafana
# dashboard's queries are exporter/dashboard's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

exporter_init exp
[[ -n $PROMETHEUS ]] || skip "prometheus not installed (Debian package prometheus)"
netns_setup
sluice_attach
sluice_rx limit set 198.18.6.0/24 --rate 500 --burst 50 >/dev/null
sluice_rx deny 198.18.7.0/24 >/dev/null
nft_rx_init
nft_rx_counter quiet meta l4proto udp

exporter_start -i "$IF_RX"
prometheus_start <<EOF
  - job_name: sluice
    static_configs:
      - targets: ['127.0.0.1:$EXPORTER_PORT']
EOF

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

# The scrape is healthy from Prometheus's side too.
health=$(in_rx curl -sS --max-time 5 "$PROM_URL/api/v1/targets" |
	jq -r '.data.activeTargets[] | select(.labels.job == "sluice") | .health + " " + .lastError')
assert_eq "$health" "up " "target health and last error"
exporter_stop TERM
