#!/usr/bin/env bash
# exporter/dashboard: every query of the Grafana dashboard has data in a
# real Prometheus. In the test's rx namespace, sluice carries a limit, a
# deny, a --monitor rule, a --cluster rule, a request rule, a ban list and
# a new-source budget; the exporter, a check server (TCP) and a cluster
# agent (over a redis-server on loopback) run there, and Prometheus scrapes
# the exporter (job sluice) and the check server (job sluice-check) every
# second, both as instance testhost, as doc/metrics.md suggests. After
# bounded floods and a few checks (one client escalated to an XDP ban):
#   - each variable's label_values() query finds the test's job, instance
#     and interface;
#   - every metric selector of every panel filters by $job and $instance,
#     and by $interface where the family has it, and every `by (...)` keeps
#     instance, so hosts never merge;
#   - the panels use every family doc/metrics.md lists, and no other;
#   - every panel query, its variables set as Grafana sets them, gives a
#     non-empty result.
# Usage: dashboard.sh [DASHBOARD.json] (default contrib/grafana's).
# Shown to fail: with sluice_cluster_leases misspelled in its panel, the
# test names the unknown metric; with reason="new_source_limited" of the
# budget panel misspelled, that query gives no data and the test prints it;
# with instance left out of a selector or a by (), it names the query.
set -euo pipefail
# shellcheck source=tests/exporter/lib.sh
. "$(dirname "$0")/lib.sh"
# check_start and check, for the check server's families.
# shellcheck source=tests/check/lib.sh
. "$(dirname "$0")/../check/lib.sh"

dash=${1:-$SLUICE_ROOT/contrib/grafana/sluice-dashboard.json}
INSTANCE=testhost
REDIS_PORT=6379

exporter_init dash
[[ -n $PROMETHEUS ]] || skip "prometheus not installed (Debian package prometheus)"
for cmd in redis-server redis-cli; do
	command -v "$cmd" >/dev/null || skip "$cmd not installed (tools/install-deps.sh)"
done
jq -e . "$dash" >/dev/null || fail "$dash is not JSON"

# The dashboard alone first: selectors, aggregations, families.
mapfile -t exprs < <(jq -r '.. | .expr? // empty' "$dash")
assert_ge "${#exprs[@]}" 40 "panel queries in the dashboard"
# shellcheck disable=SC2016 # Grafana's variables, literally
for e in "${exprs[@]}"; do
	while IFS= read -r s; do
		name=${s%%\{*}
		[[ $s == *'job=~"$job"'* && $s == *'instance=~"$instance"'* ]] ||
			fail "selector without job=~\"\$job\" and instance=~\"\$instance\": $s in: $e"
		case $name in
		up | sluice_build_info | sluice_scrape_*) ;;
		*) [[ $s == *'interface=~"$interface"'* ]] ||
			fail "selector without interface=~\"\$interface\": $s in: $e" ;;
		esac
	done < <(grep -oE '\b(sluice_[a-z_]+|up)\b(\{[^}]*\})?' <<<"$e")
	while IFS= read -r by; do
		[[ $by == *instance* ]] || fail "an aggregation that merges instances: $by in: $e"
	done < <(grep -oE '\bby \([^)]*\)' <<<"$e")
done
ok "every selector filters by job and instance (and interface); every by () keeps instance"
used=$(printf '%s\n' "${exprs[@]}" | grep -oE '\bsluice_[a-z_]+' | sort -u)
unknown=$(comm -13 <(doc_families) <(echo "$used"))
[[ -z $unknown ]] || fail "metrics in panels that doc/metrics.md does not list:"$'\n'"$unknown"
missing=$(comm -23 <(doc_families) <(echo "$used"))
[[ -z $missing ]] || fail "families of doc/metrics.md in no panel:"$'\n'"$missing"
ok "the panels use exactly the families of doc/metrics.md ($(doc_families | wc -l))"

netns_setup
sluice_attach
sluice_rx limit set 198.18.6.0/24 --rate 500 --burst 50 >/dev/null
sluice_rx deny 198.18.7.0/24 >/dev/null
sluice_rx limit set 198.18.8.0/24 --rate 1000 --burst 100 --cluster >/dev/null
sluice_rx limit set 198.18.9.0/24 --rate 100 --burst 10 --monitor >/dev/null
sluice_rx limit set 198.18.10.0/24 --requests 1/s --burst 2 --ban 30s --ban-after 3 >/dev/null
sluice_rx limit new-sources --rate 1000 --burst 200 >/dev/null
sluice_rx ban add 198.18.11.0/24 --list dash >/dev/null
nft_rx_init
nft_rx_counter quiet meta l4proto udp

exporter_start -i "$IF_RX"
# shellcheck disable=SC2034 # check's headers file
CHECK_HDR=$(netns_tmp check.hdr)
check_start
ip netns exec "$NS_RX" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' \
	--appendonly no --daemonize no --dir "$NETNS_TMP" >"$(netns_tmp redis.log)" 2>&1 &
netns_track_pid $!
for ((i = 0; ; i++)); do
	[[ $(in_rx timeout 1 redis-cli -p "$REDIS_PORT" PING 2>/dev/null) == PONG ]] && break
	((i < 100)) || fail "redis-server did not answer within 5 s: $(cat "$(netns_tmp redis.log)")"
	sleep 0.05
done
nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" cluster join "redis://127.0.0.1:$REDIS_PORT" \
	--node dash --sync 100 >"$(netns_tmp agent.log)" 2>&1 &
netns_track_pid $!

prometheus_start <<EOF
  - job_name: sluice
    static_configs:
      - targets: ['127.0.0.1:$EXPORTER_PORT']
        labels: {instance: $INSTANCE}
  - job_name: sluice-check
    static_configs:
      - targets: ['127.0.0.1:$CHECK_PORT']
        labels: {instance: $INSTANCE}
EOF
wait_promql "count(up{instance=\"$INSTANCE\"} == 1)" 2 "Prometheus scrapes the exporter and the check server"
wait_promql "sluice_cluster_up{instance=\"$INSTANCE\",interface=\"$IF_RX\"}" 1 "the cluster agent is up"

# Traffic for every family: limited, denied, clustered, monitored, banned.
flood --src 198.18.6.1 --sources 8 --count 20000 --pps 40000 --seconds 5 >/dev/null
flood --src 198.18.7.1 --sources 2 --count 1000 --pps 20000 --seconds 5 >/dev/null
flood --src 198.18.8.1 --count 4000 --pps 4000 --seconds 5 >/dev/null
flood --src 198.18.9.1 --count 2000 --pps 20000 --seconds 5 >/dev/null
flood --src 198.18.11.1 --count 500 --pps 20000 --seconds 5 >/dev/null
# A client that goes on past its 429s is banned in XDP.
codes=
for ((i = 0; i < 6; i++)); do
	codes+="$(check 198.18.10.5) "
done
assert_eq "$codes" "200 200 429 429 429 429 " "checks of 198.18.10.5"
wait_promql "sum(sluice_check_escalation_bans_total{instance=\"$INSTANCE\"})" 1 "the escalation ban, scraped"
wait_promql "sluice_bans{instance=\"$INSTANCE\",kind=\"escalated\"}" 1 "the escalated ban in the exporter's series"
wait_promql "sluice_cluster_leased_units_total{instance=\"$INSTANCE\"} > bool 0" 1 "Redis leased tokens"
wait_promql "sum(sluice_ban_dropped_packets_total{instance=\"$INSTANCE\",list=\"dash\"}) > bool 0" 1 \
	"packets dropped by the ban list"
wait_promql "sum(sluice_policy_monitored_packets_total{instance=\"$INSTANCE\"}) > bool 0" 1 \
	"would-drops of the --monitor rule"

# The variables, as Grafana asks for them: label_values(SELECTOR, LABEL).
job_re='sluice|sluice-check'
subst() { # EXPR: the variables as Grafana sets them for this test's host
	local q=$1 jobs="($job_re)"
	# shellcheck disable=SC2016 # Grafana's variables, literally
	q=${q//'$__rate_interval'/5s}
	# shellcheck disable=SC2016
	q=${q//'$__range'/1m}
	# shellcheck disable=SC2016
	q=${q//'$job'/$jobs}
	# shellcheck disable=SC2016
	q=${q//'$instance'/$INSTANCE}
	# shellcheck disable=SC2016
	q=${q//'$interface'/$IF_RX}
	# shellcheck disable=SC2016
	q=${q//'$top'/10}
	echo "$q"
}
for var in job:sluice-check instance:$INSTANCE interface:$IF_RX; do
	def=$(jq -r --arg n "${var%%:*}" '.templating.list[] | select(.name == $n) | .definition' "$dash")
	[[ $def =~ ^label_values\((.*),\ *([a-z_]+)\)$ ]] || fail "variable ${var%%:*}: $def"
	got=$(in_rx curl -sS --max-time 5 -G --data-urlencode "match[]=$(subst "${BASH_REMATCH[1]}")" \
		"$PROM_URL/api/v1/label/${BASH_REMATCH[2]}/values" | jq -r '.data[]?')
	grep -qxF "${var#*:}" <<<"$got" || fail "variable ${var%%:*} ($def) gives: $got"
done
ok "the variables find job sluice-check, instance $INSTANCE and interface $IF_RX"

for e in "${exprs[@]}"; do
	q=$(subst "$e")
	got=$(promql "$q")
	[[ $got != error && $got != none ]] || fail "a panel query gave $got: $q"
done
ok "all ${#exprs[@]} panel queries have data"
exporter_stop TERM
