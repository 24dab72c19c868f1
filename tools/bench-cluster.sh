#!/usr/bin/env bash
# `make bench`, cluster part: the 4-host run of tests/cluster/accuracy.sh (a
# real Redis, hosts as namespaces, one source flooding a --cluster rule for
# 10 s evenly, then on one host), printing the admitted totals against
# burst + rate x t and each host's Redis commands per second; then the
# 50-host run of tools/bench-cluster-scale.sh (Redis operations per second,
# bytes per sync per agent, Redis's CPU). The datapath's cost of a
# --cluster rule is bench_xdp's "cluster rule vs plain" rows.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
echo
echo "cluster-wide limits, 4 hosts, one real Redis (tests/cluster/accuracy.sh 4):"
out=$(tests/cluster/accuracy.sh 4 2>&1) || { echo "$out" | tail -n 20 >&2; echo "bench-cluster.sh: the 4-host run failed" >&2; exit 1; }
grep '^RESULT' <<<"$out" | sed 's/^RESULT /  /'
echo
echo "cluster-wide limits, 50 hosts, one real Redis (tools/bench-cluster-scale.sh):"
out=$(tools/bench-cluster-scale.sh 2>&1) || { echo "$out" | tail -n 20 >&2; echo "bench-cluster.sh: the 50-host run failed" >&2; exit 1; }
grep '^  ' <<<"$out"
