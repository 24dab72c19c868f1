#!/usr/bin/env bash
# e2e/live_limit: changing the limit while a flood runs takes effect at once,
# without re-attaching: the pass rate follows the old limit, then the new one.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

RATE1=1000
RATE2=4000
BURST=100
SRC=198.18.0.66
WINDOW_US=1500000	# each rate is measured over 1.5 s

netns_init ll
netns_setup
sluice_attach
sluice_rx limit default --rate "$RATE1" --burst "$BURST"
prog0=$(sluice_jq '.interfaces[0].prog_id' status)

# 20000/s for at most 6 s, well above both limits and longer than the test
# needs (checked below).
flood_bg "$(netns_tmp flood.json)" --src "$SRC" --count 120000 --pps 20000 --seconds 6

us() { echo "${EPOCHREALTIME/[.,]/}"; }

# Reads the source's pass count again and again for one window, one line
# "BEFORE_US AFTER_US PASSED" per read: the count was taken somewhere
# between the two clock readings.
sample_window() { # FILE
	local end b a p
	end=$(($(us) + WINDOW_US))
	: >"$1"
	while (($(us) < end)); do
		b=$(us)
		p=$(sluice_passed "$SRC")
		a=$(us)
		echo "$b $a $p" >>"$1"
		sleep 0.05
	done
}

# While the flood keeps the bucket empty it admits one packet per 1/RATE s,
# so the pass count grows linearly at RATE. A read takes 20-200 ms on a busy
# VM, but the count is taken early in it (the time after goes to printing
# and jq), so the clock reading before each read dates it to within a few
# ms; the least-squares slope of count over that time, across the window's
# dozen or so reads, averages the rest out and must be within 3% of RATE.
# And whatever the reads cost, the window lies between (first after, last
# before) and (first before, last after), so the count must lie between
# RATE times each, give or take one packet and 3%.
check_rate() { # FILE RATE WHAT
	local file=$1 rate=$2 what=$3 stats n slope dp short long
	stats=$(awk 'NR == 1 { b1 = $1; a1 = $2; p1 = $3 } { bn = $1; an = $2; pn = $3 }
		{ x = ($1 - b1) / 1e6; y = $3 - p1; n++; sx += x; sy += y; sxx += x * x; sxy += x * y }
		END { printf "%d %.1f %d %.6f %.6f\n", n, (n * sxy - sx * sy) / (n * sxx - sx * sx),
			pn - p1, (bn - a1) / 1e6, (an - b1) / 1e6 }' "$file")
	read -r n slope dp short long <<<"$stats"
	echo "$what: $n reads, $dp passed in ${short}..${long}s"
	assert_ge "$n" 5 "$what, reads in the window"
	assert_near "$slope" "$rate" 3 "$what, pass rate per second (slope)"
	assert_ge "$dp" "$(calc "0.97 * $rate * $short - 1")" "$what, passes in the shortest possible window"
	assert_le "$dp" "$(calc "1.03 * $rate * $long + 1")" "$what, passes in the longest possible window"
}

# Wait for the flood to reach sluice, then let its first burst go by.
for ((i = 0; i < 200; i++)); do
	(($(sluice_passed "$SRC") > 0)) && break
	sleep 0.01
done
(($(sluice_passed "$SRC") > 0)) || fail "the flood never reached sluice"
sleep 0.3

sample_window "$(netns_tmp phase1)"
check_rate "$(netns_tmp phase1)" "$RATE1" "phase 1"

sluice_rx limit default --rate "$RATE2" --burst "$BURST"
# The bucket's cached policy is re-resolved on its next packet; its TAT,
# up to burst x the old interval ahead, settles within ~0.1 s.
sleep 0.3
sample_window "$(netns_tmp phase2)"
check_rate "$(netns_tmp phase2)" "$RATE2" "phase 2"

kill -0 "$FLOOD_PID" 2>/dev/null || fail "the flood ended before the second window did"
wait "$FLOOD_PID" || fail "sluice-flood failed"
echo "flood: $(cat "$(netns_tmp flood.json)")"
assert_eq "$(sluice_jq '.interfaces[0].prog_id' status)" "$prog0" "program id (never re-attached)"
assert_eq "$(sluice_jq .rate query "$SRC")" "$RATE2" "rate now in force"
