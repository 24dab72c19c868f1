#!/usr/bin/env bash
# `make bench`, cluster part at scale: 50 hosts, one real Redis, in
# tests/cluster/scale.sh's topology (tests/cluster/lib_scale.sh: each host a
# namespace with one veth, sluice attached with small tables, its agent at
# S = 100 ms). Measures, with no assertion on time or totals:
#
#   idle          the agents' heartbeats alone, 5 s
#   spread        one source at all 50 hosts, 10 x R in total, 5 s
#   concentrated  another source at one host, 10 x R, 5 s
#
# and prints, for each, Redis's commands per second (total_commands_processed,
# the scripts' own calls included) and the agents' (their EVALSHAs: a
# heartbeat or a grant each), bytes per sync per agent (Redis's
# total_net_input_bytes + total_net_output_bytes over the heartbeats: one per
# sync of each agent), the CPU of Redis and of the agents, the admitted total
# against B + R x t, and failed syncs.
#
# usage: bench-cluster-scale.sh [H]   (default 50)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tests/cluster/lib_scale.sh
. tests/cluster/lib_scale.sh

RATE=1000
BURST=500
SYNC_MS=100
SECS=5
FLOOD=10000
DIV=8
NH=${1:-50}
PH_LEAD=3
IDLE_SECS=5
T0=$(now)

scale_init bs "$NH"
((FLOOD % NH == 0)) || fail "host count $NH must divide $FLOOD"
scale_setup
redis_start
set_rule "$RATE" "$BURST"
scale_agents "$SLUICE"
hosts=()
for ((n = 1; n <= NH; n++)); do
	hosts+=("$n")
done
echo "  $NH hosts up in $(calc "$(now) - $T0" %.0f) s (attach: $(attach_memlock 1) bytes of maps each)"

s0=$(scale_sample)
sleep "$IDLE_SECS"
s1=$(scale_sample)
echo "  idle: $(scale_delta "$s0" "$s1")"
f0=$(scale_sync_failures)
run_phase spread 198.18.1.1 $((FLOOD / NH)) "$SECS" "${hosts[@]}" >/dev/null
scale_report spread | sed 's/^RESULT */  /'
f1=$(scale_sync_failures)
run_phase concentrated 198.18.1.2 "$FLOOD" "$SECS" 1 >/dev/null
scale_report concentrated | sed 's/^RESULT */  /'
f2=$(scale_sync_failures)
echo "  failed syncs, all hosts: spread $((f1 - f0)), concentrated $((f2 - f1))"
