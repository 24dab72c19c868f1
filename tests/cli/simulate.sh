#!/usr/bin/env bash
# sluice simulate, as an operator sees it: the boundary attack (a fixed
# window admits 2N across a boundary, the sliding log at most N, the sliding
# window and the token bucket within their documented bounds), a small trace
# whose admitted counts were worked out by hand for every algorithm, bad
# input (exit 2, one line), the JSON shape, and --plot (a valid SVG and PNG,
# the temp files gone; exit 1 without gnuplot). Needs no root or network.
# usage: tests/cli/simulate.sh
# shellcheck disable=SC2016 # jq programs are in single quotes
set -uo pipefail

# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v jq >/dev/null || skip "jq not installed (tools/install-deps.sh)"
[[ -x $SLUICE ]] || die "$SLUICE not built: run make"
echo "# sluice binary: $SLUICE"
T=$(mktemp -d "${TMPDIR:-/tmp}/slsim.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$T"' EXIT
OUT=$T/stdout
ERR=$T/stderr

# sluice ARGS: RC, OUT, ERR; a sanitizer report is a failed check.
run() {
	"$SLUICE" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	if grep -qE 'Sanitizer|runtime error:|SUMMARY: ' "$ERR" || ((RC == 86 || RC == 87)); then
		SANITIZER_REPORTS=$((SANITIZER_REPORTS + 1))
		fail_check "sanitizer report from: sluice $*" "$(head -c 600 "$ERR")"
	fi
}

# run -j ARGS, which must succeed; then the jq value of EXPR.
run_json() {
	run -j simulate "$@"
	if ((RC != 0)) || [[ -s $ERR ]]; then
		die "sluice -j simulate $* exited $RC: $(head -c 300 "$ERR")"
	fi
	jq -e . "$OUT" >/dev/null || die "sluice -j simulate $* printed no JSON: $(head -c 300 "$OUT")"
}

# The value of field F ("admitted", "max_in_window", ...) of algorithm A.
alg() { jq -r --arg a "$1" --arg f "$2" '.algorithms[] | select(.name == $a) | .[$f]' "$OUT"; }

# A numeric comparison as a check, printing both sides.
is() { # MSG LEFT ==|<=|>= RIGHT
	local ok=false
	if [[ $2 =~ ^[0-9]+$ && $4 =~ ^[0-9]+$ ]]; then
		case $3 in
		==) (( $2 == $4 )) && ok=true ;;
		"<=") (( $2 <= $4 )) && ok=true ;;
		">=") (( $2 >= $4 )) && ok=true ;;
		*) die "is: unknown operator $3" ;;
		esac
	fi
	if $ok; then
		pass_check "$1: $2 $3 $4"
	else
		fail_check "$1: $2 $3 $4 does not hold"
	fi
}

# --- the boundary attack --------------------------------------------------
# --rate 100: N = 100 a 1 s window, burst 100. The first pair of bursts
# alone (--duration 1020ms): N in the 20 ms before the boundary at 1 s and N
# in the 20 ms after it.
run_json --pattern boundary --rate 100 --duration 1020ms
is "boundary, one pair: arrivals" "$(jq .arrivals "$OUT")" == 200
is "fixed-window admits 2N within 40 ms across the boundary" "$(alg fixed-window admitted)" == 200
is "sliding-log admits N of that pair" "$(alg sliding-log admitted)" == 100

# Ten seconds of it: five pairs.
run_json --pattern boundary --rate 100
N=$(jq .budget "$OUT")
B=$(jq .burst "$OUT")
is "budget N = rate x window" "$N" == 100
is "fixed-window max_in_window is 2N" "$(alg fixed-window max_in_window)" == $((2 * N))
is "sliding-log max_in_window <= N" "$(alg sliding-log max_in_window)" "<=" "$N"
# The sliding window admits at most 2N - 1 in any window-long interval; on
# this pattern at most N + N/50 (sluice(8), simulate): the burst before the
# boundary weighs at least 49/50 of itself on the one after.
sw=$(alg sliding-window max_in_window)
is "sliding-window max_in_window <= N + N/50" "$sw" "<=" $((N + N / 50))
is "sliding-window max_in_window >= N" "$sw" ">=" "$N"
# A token bucket passes at most burst + rate x span + 1 over any span.
is "token-bucket max_in_window <= burst + N + 1" "$(alg token-bucket max_in_window)" "<=" $((B + N + 1))
# A leaky bucket as a queue admits what the token bucket (GCRA, the leaky
# bucket as a meter) admits, here where T = 10 ms is exact in both.
is "leaky-bucket-queue admits what token-bucket admits" "$(alg leaky-bucket-queue admitted)" == \
	"$(alg token-bucket admitted)"
is "leaky-bucket-queue max_in_window <= N" "$(alg leaky-bucket-queue max_in_window)" "<=" "$N"

# --- a trace worked out by hand ------------------------------------------
# --rate 2: N = 2 a 1 s window (windows start at whole seconds), burst 2,
# T = 500 ms. Arrivals at 1000 s + 0.1 0.2 0.3 0.9 1.0 1.1 1.2 1.6 2.5:
#   token-bucket (admits when TAT - now <= (B-1)T): 0.1 0.2 0.9 1.1 1.6 2.5
#   leaky-bucket-queue: the same, waiting 0, .4, .2, .5, .5, .1 s:
#     mean 1.7 s / 6 = 283333333 ns, max 500 ms
#   fixed-window: 0.1 0.2 | 1.0 1.1 | 2.5
#   sliding-window: 0.1 0.2; at 1.0 to 1.2 the estimate is 0 + ceil(2 x
#     (1 - e)) = 2: rejected; at 1.6, 0 + ceil(0.8) = 1: admitted; at 2.5,
#     0 + ceil(1 x 0.5) = 1: admitted
#   sliding-log ((t - 1 s, t]): 0.1 0.2 1.1 1.2 2.5
#   sliding-window vs log: over 1 (1.6), under 2 (1.1 1.2), (4 - 5) / 5
cat >"$T/hand.trace" <<'EOF'
# worked out by hand in tests/cli/simulate.sh

1000.1
1000.200000000   # a comment after a time
  1000.30
1000.9
1001
1001.1
1001.2
1001.600
1002.5
EOF
run_json --trace "$T/hand.trace" --rate 2
want='{"arrivals":9,"budget":2,"burst":2,"window_ns":1000000000,
 "token-bucket":[6,3,3],"leaky-bucket-queue":[6,3,2],"fixed-window":[5,4,3],
 "sliding-window":[4,5,2],"sliding-log":[5,4,2],"delay":[283333333,500000000],
 "vs":{"over":1,"under":2,"relative_error":-0.2}}'
got=$(jq -c '{arrivals, budget, burst, window_ns}
	+ ([.algorithms[] | {(.name): [.admitted, .rejected, .max_in_window]}] | add)
	+ {delay: (.algorithms[] | select(.name == "leaky-bucket-queue")
		   | [.mean_delay_ns, .max_delay_ns]),
	   vs: .sliding_window_vs_log}' "$OUT")
if [[ $(jq -cS . <<<"$got") == "$(jq -cS . <<<"$want")" ]]; then
	pass_check "hand trace: every algorithm's admitted, rejected, max_in_window as worked out"
else
	fail_check "hand trace: not as worked out" "got:  $(jq -cS . <<<"$got")" \
		"want: $(jq -cS . <<<"$want")"
fi
# The text output says the same, one row per algorithm.
run simulate --trace "$T/hand.trace" --rate 2
rows=$(awk '$1 ~ /^(token-bucket|leaky-bucket-queue|fixed-window|sliding-window|sliding-log)$/ \
	{ printf "%s %s %s %s %s;", $1, $2, $3, $4, $5 }' "$OUT")
want_rows="token-bucket 9 6 3 3;leaky-bucket-queue 9 6 3 2;fixed-window 9 5 4 3;"
want_rows+="sliding-window 9 4 5 2;sliding-log 9 5 4 2;"
if ((RC == 0)) && [[ $rows == "$want_rows" ]] && grep -q '1 over, 2 under' "$OUT"; then
	pass_check "hand trace: text rows"
else
	fail_check "hand trace: text rows (exit $RC)" "$(cat "$OUT" "$ERR")"
fi

# --- the JSON shape -------------------------------------------------------
run_json --pattern steady --rate 50
names=$(jq -c '[.algorithms[].name]' "$OUT")
check "JSON: algorithm names in order" \
	test "$names" == '["token-bucket","leaky-bucket-queue","fixed-window","sliding-window","sliding-log"]'
check "JSON: top-level keys" jq -e '(.arrivals|type) == "number" and .rate_per_sec == 50 and
	.window_ns == 1000000000 and .budget == 50 and .burst == 50 and
	(.sliding_window_vs_log | has("over") and has("under") and has("relative_error"))' "$OUT"
check "JSON: each algorithm admitted + rejected = arrivals" \
	jq -e '.arrivals as $n | all(.algorithms[]; .admitted + .rejected == $n and
	(.max_in_window|type) == "number")' "$OUT"
check "JSON: the queue's delays" jq -e '.algorithms[1] | .mean_delay_ns > 0 and
	.max_delay_ns >= .mean_delay_ns' "$OUT"
# every pattern runs; the window and the rate's unit as 'limit set' reads them
for p in steady bursty boundary ramp; do
	run_json --pattern "$p" --rate 600/m --window 500ms --duration 3s
	check "pattern $p: runs, budget 600/m x 500ms = 5" jq -e '.budget == 5 and .arrivals > 0 and
		.rate_per_sec == 10 and .window_ns == 500000000' "$OUT"
done

# --- bad input: exit 2, one line "sluice: ...", nothing on stdout -----------
printf '1\n2\nabc\n' >"$T/bad-line.trace"
printf '1\n2\n1.5\n' >"$T/backwards.trace"
printf '1.1234567891\n' >"$T/ten-digits.trace"
printf '# only a comment\n\n' >"$T/empty.trace"
printf '1 2\n' >"$T/two.trace"
bad() { # STDERR_RE ARGS...
	local re=$1 lines
	shift
	run simulate "$@"
	lines=$(wc -l <"$ERR")
	if ((RC == 2)) && ((lines == 1)) && [[ ! -s $OUT ]] && grep -qE "^sluice: .*$re" "$ERR"; then
		pass_check "bad input: simulate $* -> $(head -c 120 "$ERR")"
	else
		fail_check "bad input: simulate $*: exit $RC, want 2, one line matching /$re/" \
			"stderr: $(head -c 300 "$ERR")" "stdout: $(head -c 200 "$OUT")"
	fi
}
bad "bad-line.trace:3: bad time 'abc'" --trace "$T/bad-line.trace" --rate 10
bad "backwards.trace:3: .*must not decrease" --trace "$T/backwards.trace" --rate 10
bad "ten-digits.trace:1: .*fraction digits" --trace "$T/ten-digits.trace" --rate 10
bad "two.trace:1: one time a line" --trace "$T/two.trace" --rate 10
bad "no arrivals" --trace "$T/empty.trace" --rate 10
bad "cannot read the trace" --trace "$T/missing.trace" --rate 10
bad "bad --pattern 'sawtooth'" --pattern sawtooth --rate 10
bad "missing --rate" --pattern steady
bad "give --trace FILE or --pattern" --rate 10
bad "not both" --pattern steady --trace "$T/hand.trace" --rate 10
bad "bad --rate '0'" --pattern steady --rate 0
bad "bad --rate '10/d'" --pattern steady --rate 10/d
bad "bad --burst '0'" --pattern steady --rate 10 --burst 0
bad "bad --burst 20000000: worth" --pattern steady --rate 10 --burst 20000000
bad "0.75 packets a window" --pattern steady --rate 3 --window 250ms
bad "bad --window '2h'" --pattern steady --rate 10 --window 2h
bad "bad --duration '10'" --pattern steady --rate 10 --duration 10
bad "--duration goes with --pattern" --trace "$T/hand.trace" --rate 10 --duration 1s
bad "boundary makes no arrival in --duration: its first comes at 3528s" --pattern boundary --rate 5/h
bad "more than 10000000 arrivals" --pattern steady --rate 1000000 --window 1ms --duration 6s
bad "bad --plot '.*x.pdf'" --pattern steady --rate 10 --plot "$T/x.pdf"
bad "unknown option '--algo'" --pattern steady --rate 10 --algo fixed-window

# --- --plot -----------------------------------------------------------------
mkdir -p "$T/tmp"
if command -v gnuplot >/dev/null; then
	TMPDIR=$T/tmp run simulate --pattern boundary --rate 100 --plot "$T/b.svg"
	if ((RC == 0)) && [[ ! -s $ERR ]] && grep -q '<svg' "$T/b.svg" 2>/dev/null &&
		{ ! command -v xmllint >/dev/null || xmllint --noout "$T/b.svg"; }; then
		pass_check "--plot FILE.svg writes a valid SVG ($(wc -c <"$T/b.svg") bytes)"
	else
		fail_check "--plot FILE.svg (exit $RC)" "$(head -c 300 "$ERR")"
	fi
	check "--plot: the SVG names every algorithm" \
		bash -c 'for a in token-bucket leaky-bucket-queue fixed-window sliding-window sliding-log; do grep -q ">$a<" "$1" || exit 1; done' _ "$T/b.svg"
	TMPDIR=$T/tmp run simulate --pattern ramp --rate 100 --plot "$T/r.png"
	if ((RC == 0)) && [[ $(head -c 8 "$T/r.png" 2>/dev/null | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; then
		pass_check "--plot FILE.png writes a PNG"
	else
		fail_check "--plot FILE.png (exit $RC)" "$(head -c 300 "$ERR")"
	fi
	check "--plot removes its temp dir" test -z "$(ls -A "$T/tmp")"
	run simulate --pattern steady --rate 10 --plot "$T/no-such-dir/x.svg"
	if ((RC == 1)) && (($(wc -l <"$ERR") == 1)) && grep -q '^sluice: cannot write --plot' "$ERR"; then
		pass_check "--plot into a missing directory: exit 1, one line"
	else
		fail_check "--plot into a missing directory: exit $RC" "$(head -c 300 "$ERR")"
	fi
else
	echo "# gnuplot not installed: SVG/PNG checks skipped (tools/install-deps.sh installs it)"
fi
env PATH="$T/nowhere" "$SLUICE" simulate --pattern steady --rate 10 --plot "$T/x.svg" >"$OUT" 2>"$ERR"
RC=$?
if ((RC == 1)) && (($(wc -l <"$ERR") == 1)) && grep -q '^sluice: gnuplot not found' "$ERR" &&
	[[ ! -e $T/x.svg ]]; then
	pass_check "--plot without gnuplot: exit 1, one line"
else
	fail_check "--plot without gnuplot: exit $RC" "$(head -c 300 "$ERR")"
fi

cli_finish
