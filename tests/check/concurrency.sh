#!/usr/bin/env bash
# check/concurrency: checks of one source from many connections at once
# (wrk, 8 connections over 2 threads, for 3 s, served by the check
# server's 4 threads) admit what the token bucket allows, no more: with
# rate R and burst B over the t seconds the checks came in, the server's
# passed count (its metrics) lies within B + R x t + 1 and B + R x t - 2, t taken as wrk's
# own run time for the lower bound and the wall time around wrk for the
# upper one. Then the same against build/tests/sluice_check_racy, the
# check server linked with tests/check/racy_bucket.c (tests/tests.mk),
# which judges each bucket outside its lock: it must admit more than the
# bound (the lost updates of unlocked read-judge-write), or this test
# could not tell a racy server from a correct one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RATE=20
BURST=10
SECONDS_RUN=3
SRC=198.18.9.9
RACY=${SLUICE_CHECK_RACY_BIN:-$SLUICE_ROOT/build/tests/sluice_check_racy}

command -v wrk >/dev/null || skip "wrk not installed (tools/install-deps.sh)"
[[ -x $RACY ]] || fail "$RACY not built: run make build/tests/sluice_check_racy"
check_init ckc
sluice_rx limit set 198.18.0.0/15 --requests "$RATE" --burst "$BURST" >/dev/null

# Hammers SRC for SECONDS_RUN; prints "passed requests wrk_s wall_s".
hammer() {
	local out t0 t1 pass
	t0=$(now)
	out=$(in_rx wrk -t2 -c8 -d"${SECONDS_RUN}s" -H "X-Real-IP: $SRC" "$CHECK_URL/check") ||
		fail "wrk failed: $out"
	t1=$(now)
	pass=$(metric "sluice_check_requests_total{interface=\"$IF_RX\",rule=\"198.18.0.0/15\",verdict=\"pass\"}")
	echo "$pass $(awk '/requests in/ { print $1, $4 + 0 }' <<<"$out") $(calc "$t1 - $t0" %.3f)"
}

check_start
read -r pass reqs wrk_s wall_s < <(hammer)
echo "correct build: $pass of $reqs checks passed; wrk ran ${wrk_s}s, ${wall_s}s wall"
assert_ge "$reqs" $((20 * (BURST + RATE * SECONDS_RUN))) "checks sent (far over the limit)"
assert_ge "$pass" "$(calc "$BURST + $RATE * $wrk_s - 2" %.3f)" "passed >= B + R x t - 2 (one more for a loaded machine: wrk's t may begin before its first check)"
assert_le "$pass" "$(calc "$BURST + $RATE * $wall_s + 1" %.3f)" "passed <= B + R x t + 1"
check_stop

SLUICE_CHECK=$RACY check_start
read -r pass reqs wrk_s wall_s < <(hammer)
echo "racy build: $pass of $reqs checks passed; wrk ran ${wrk_s}s, ${wall_s}s wall"
bound=$(calc "$BURST + $RATE * $wall_s + 1" %.3f)
awk -v p="$pass" -v b="$bound" 'BEGIN { exit !(p > b) }' ||
	fail "the racy build passed $pass, within the bound $bound: the test cannot see a race"
ok "the racy build over-admits: $pass > $bound"
check_stop
