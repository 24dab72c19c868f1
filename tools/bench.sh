#!/usr/bin/env bash
# `make bench`: sluice's per-packet cost next to baselines, measured side by
# side in one run. Ratios are what to read; absolute numbers move with the
# machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ $(id -u) -eq 0 ]] || { echo "bench.sh: must run as root (sudo make bench)" >&2; exit 1; }

echo "== XDP program cost, BPF_PROG_TEST_RUN =="
build/tests/bench_xdp
echo
echo "== Plain CIDR rules: this tree next to the version before policy model v2 =="
tools/bench-before.sh
tools/bench-veth.sh
BENCH_GEN=xdp tools/bench-veth.sh
