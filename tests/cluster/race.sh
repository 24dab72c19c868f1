#!/usr/bin/env bash
# cluster/race: the test can see a lost update. Four hosts flood one source
# evenly for 5 s under a --cluster rule twice: first with
# build/tests/sluice-racy-cluster as every host's agent (its Redis step is a
# GET, the GCRA in C on the host's clock, then a SET: a plain
# read-modify-write, its syncs aligned so the hosts contend), then with the
# real agent (one Lua script per grant). The racy agents must admit more
# than the bound of cluster/accuracy, B + R x (t + 2S) + R x S/2 + R x S/D + H;
# the real ones must not. Each run has a fresh Redis bucket (FLUSHALL, and a
# source of its own).
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

RATE=1000
BURST=500
SYNC_MS=100
SECS=5
PPS=10000
DIV=8
NH=4

cluster_init cr "$NH"
[[ -x $SLUICE_RACY_CLUSTER ]] || fail "$SLUICE_RACY_CLUSTER not built: make it (TEST_BINS)"
cluster_setup
redis_start
set_rule "$RATE" "$BURST"

# Runs the even flood with BIN as the agents; sets ADMITTED and BOUND.
ADMITTED=0 BOUND=0
run() { # LABEL BIN SRC
	local label=$1 bin=$2 src=$3 n expected ops=""
	redis_cli FLUSHALL >/dev/null || fail "FLUSHALL"
	for ((n = 1; n <= NH; n++)); do
		agent_start "$n" "$bin"
	done
	wait_cluster up "$NH" 10
	ok "$label: 4 agents up with $NH peers"
	run_phase "$label" "$src" "$PPS" "$SECS" 1 2 3 4
	for ((n = 1; n <= NH; n++)); do
		ops+=" h$n=${PH_OPS[n]}"
		agent_stop "$n"
	done
	ADMITTED=$PH_ADMITTED
	expected=$(calc "$BURST + $RATE * $PH_T" %.1f)
	BOUND=$(calc "$BURST + $RATE * ($PH_T + 2 * $SYNC_MS / 1000) + $RATE * $SYNC_MS / 2000 + $RATE * $SYNC_MS / 1000 / $DIV + $NH" %.1f)
	echo "RESULT race $label: t=${PH_T}s admitted=$ADMITTED expected=$expected ratio=$(calc "$ADMITTED / $expected" %.3f) bound=$BOUND per-host: ${PH_PASSED[*]:1}; Redis commands/s per host:$ops"
}

run racy "$SLUICE_RACY_CLUSTER" 198.18.0.1
awk -v a="$ADMITTED" -v b="$BOUND" 'BEGIN { exit !(a > b) }' ||
	fail "the racy agents admitted $ADMITTED, not above the bound $BOUND: this test cannot see a lost update"
ok "racy agents (GET then SET) over-admit: $ADMITTED > $BOUND"

run real "$SLUICE" 198.18.0.2
assert_le "$ADMITTED" "$BOUND" "real agents (Lua script): admitted vs the bound"
