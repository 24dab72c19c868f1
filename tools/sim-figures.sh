#!/usr/bin/env bash
# doc/rules.rst's "Choosing an algorithm" figures, made with `sluice simulate`:
#   doc/img/boundary.svg   the boundary attack, --rate 100, 10 s
#   the sliding window's error against the sliding log on a realistic
#   trace: CLIENTS on/off clients sharing one bucket (a --per rule or
#   --per /24 limit), heavy-tailed on and off periods (Pareto, shape 1.5),
#   Poisson arrivals while on, together LOAD times the limit on average.
# The trace comes from a fixed-seed generator written out here (a MINSTD
# random stream in awk, exact in any awk's doubles), so every run and every
# machine makes the same arrivals. Prints one JSON line per seed.
#
# usage: tools/sim-figures.sh [-b SLUICE] [-o DIR] [-k TRACE]
#   -b SLUICE  the binary (default build/sluice)
#   -o DIR     where boundary.svg goes (default doc/img)
#   -k TRACE   also keep the first seed's trace in TRACE
# Environment: RATE (1000), WINDOW (1s), CLIENTS (40), LOAD (1.1),
# SECONDS_LONG (120), SEEDS ("1 2 3 4 5").
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C	# a decimal point in awk and sort whatever the locale
bin=build/sluice
out=doc/img
keep=
while getopts "b:o:k:h" opt; do
	case $opt in
	b) bin=$OPTARG ;;
	o) out=$OPTARG ;;
	k) keep=$OPTARG ;;
	*) sed -n '2,18s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
[[ -x $bin ]] || { echo "sim-figures.sh: $bin not built: run make" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "sim-figures.sh: gnuplot missing: tools/install-deps.sh" >&2; exit 1; }

rate=${RATE:-1000}
window=${WINDOW:-1s}
clients=${CLIENTS:-40}
load=${LOAD:-1.1}
span=${SECONDS_LONG:-120}
seeds=${SEEDS:-1 2 3 4 5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sim-figures.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$out"
"$bin" simulate --pattern boundary --rate 100 --plot "$out/boundary.svg" >"$tmp/boundary.txt"
echo "# $out/boundary.svg: sluice simulate --pattern boundary --rate 100 --plot $out/boundary.svg"
sed 's/^/#   /' "$tmp/boundary.txt"

# onoff SEED: the trace on stdout. Each client starts at a random phase of
# its first period; on periods last Pareto(xm, 1.5) with mean 0.5 s, off
# periods Pareto with mean 1.5 s (a duty of 1/4); while on it sends
# Poisson at rate*load/(clients/4). Times in seconds, 9 digits, sorted.
onoff() {
	awk -v seed="$1" -v n="$clients" -v rate="$rate" -v load="$load" -v span="$span" '
	function rnd() {	# MINSTD: exact in doubles, the same in every awk
		state = (state * 48271) % 2147483647
		return state / 2147483647
	}
	function pareto(mean,   xm) {	# shape 1.5: mean = 3 xm
		xm = mean / 3
		return xm / rnd() ^ (1 / 1.5)
	}
	function expo(r) { return -log(rnd()) / r }
	BEGIN {
		state = 1 + seed * 7919
		for (i = 0; i < 10; i++) rnd()
		lambda = rate * load / (n / 4)
		for (c = 0; c < n; c++) {
			t = rnd() * 2.0
			on = rnd() < 0.25
			while (t < span) {
				if (on) {
					end = t + pareto(0.5)
					for (a = t + expo(lambda); a < end && a < span; a += expo(lambda))
						printf "%.9f\n", a
					t = end
				} else {
					t += pareto(1.5)
				}
				on = !on
			}
		}
	}' | sort -n
}

echo "# realistic: $clients on/off clients (Pareto 1.5 on/off, Poisson while on) at $load x --rate $rate, window $window, $span s"
first=1
for seed in $seeds; do
	onoff "$seed" >"$tmp/trace"
	if ((first)) && [[ -n $keep ]]; then
		cp "$tmp/trace" "$keep"
	fi
	first=0
	"$bin" -j simulate --trace "$tmp/trace" --rate "$rate" --window "$window" >"$tmp/run.json"
	jq -c --argjson seed "$seed" '{seed: $seed, arrivals,
		log: (.algorithms[] | select(.name == "sliding-log") | .admitted),
		sliding_window: (.algorithms[] | select(.name == "sliding-window") | .admitted),
		sw_max_in_window: (.algorithms[] | select(.name == "sliding-window") | .max_in_window),
		fixed_window_max_in_window: (.algorithms[] | select(.name == "fixed-window") | .max_in_window)}
		+ .sliding_window_vs_log' "$tmp/run.json"
done
