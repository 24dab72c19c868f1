#!/usr/bin/env bash
# cluster/redis_stop: Redis killed (SIGKILL) while four hosts flood one
# source under a --cluster rule. Every host enters fallback within one sync
# interval plus the command timeout S/2 (each agent's own record of the
# moment, `in_fallback_since_ms`, against the kill; measured and printed),
# `cluster status` says fallback and the exporter's sluice_cluster_up is 0;
# each host then admits R/N on its own (+-10 % over 3 s). Redis restarted:
# every host is up again with all its peers, sluice_cluster_up is 1, and the
# cluster admits R again (+-10 % over 2 s).
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

RATE=1000
BURST=500
SYNC_MS=100
PPS=5000
NH=4
SRC=198.18.0.1
# Scheduling slack on a busy 2-CPU machine: the agent's timer and the status
# reads are late by a few ms; 50 ms is half a sync interval.
SLACK_MS=50

cluster_up_flooding cs "$NH" redis_stop
for n in "${hosts[@]}"; do
	exporter_at "$n"
done
for n in "${hosts[@]}"; do
	assert_eq "$(exporter_up "$n")" 1 "host $n: sluice_cluster_up before the kill"
done

t_kill=$(now)
redis_kill
# Poll until every host says fallback; then each agent's own record of when.
end=$(calc "$t_kill + 3")
for n in "${hosts[@]}"; do
	wait_field "$n" mode fallback "$end" 0.01 "host $n not in fallback 3 s after Redis was killed"
done
t_all=$(now)
limit_ms=$((SYNC_MS + SYNC_MS / 2 + SLACK_MS))
worst=0
for n in "${hosts[@]}"; do
	read -r lat lo hi <<<"$(fallback_after "$n" "$t_kill")"
	echo "RESULT redis_stop host $n: fallback ${lat} ms after the kill (between $lo and $hi)"
	assert_le "$lat" "$limit_ms" "host $n: fallback within S + S/2 (+${SLACK_MS} ms slack) of the kill"
	assert_eq "$(cfield "$n" agent_alive peers)" "true $NH" "host $n in fallback: agent alive, N"
	((lat > worst)) && worst=$lat
	assert_eq "$(exporter_up "$n")" 0 "host $n: sluice_cluster_up in fallback"
done
echo "RESULT redis_stop: slowest host in fallback after ${worst} ms; all seen by polling after $(calc "($t_all - $t_kill) * 1000" %.0f) ms"

# Fallback: each host alone at R/N (burst B/N, long spent by the flood).
sleep 0.3
window_rates flood 3 "${hosts[@]}"
echo "RESULT redis_stop fallback rates: ${RATE_OF[*]:1} (R/N = $((RATE / NH)))"
for n in "${hosts[@]}"; do
	assert_near "${RATE_OF[n]}" $((RATE / NH)) 10 "host $n in fallback: admitted/s vs R/N"
done

t_start=$(now)
redis_start
wait_cluster up "$NH" 5
echo "RESULT redis_stop: all up with $NH peers $(calc "($(now) - $t_start) * 1000" %.0f) ms after Redis restarted"
for n in "${hosts[@]}"; do
	assert_eq "$(exporter_up "$n")" 1 "host $n: sluice_cluster_up after Redis returned"
	assert_eq "$(cstatus "$n" .in_fallback_since_ms)" null "host $n: in_fallback_since_ms when up"
	assert_ge "$(cstatus "$n" .fallback_seconds)" 0.1 "host $n: fallback_seconds counts the outage"
	assert_ge "$(cstatus "$n" .fallbacks)" 1 "host $n: fallbacks"
done
# The fresh Redis bucket holds B: let the flood spend it, then R again.
sleep 1
window_rates flood 2 "${hosts[@]}"
echo "RESULT redis_stop after rejoin: cluster admits $RATE_SUM/s (hosts: ${RATE_OF[*]:1})"
assert_near "$RATE_SUM" "$RATE" 10 "rejoined: the cluster's admitted rate"
flood_stop
agent_logs
