#!/usr/bin/env bash
# Runs the parser fuzz targets (tests/fuzz/fuzz_*.c, built into build/fuzz/):
# first every regression input of tests/fuzz/regress/TARGET/ once, then each
# target for SECONDS from the seed corpus tests/fuzz/corpus/TARGET/. Fails on
# any crash, leak, sanitizer report or broken property; prints the executions
# of each target. The targets run side by side, one a CPU. CI runs it as
# fuzz/parsers (20 s a target); `make fuzz` runs it through tools/fuzz.sh,
# as long as one likes.
#
# usage: tests/fuzz/run.sh [--seconds S] [--corpus DIR] [TARGET...]
#   --seconds S   fuzz each target S seconds (default $SLUICE_FUZZ_SECONDS or
#                 20; 0: regressions only)
#   --corpus DIR  keep what each target finds in DIR/TARGET/ (default: a
#                 temporary directory, removed at exit)
#   TARGET        rule, policy, parse, exporter, trace, check (default: all)
#
# FUZZ_JOBS sets how many targets fuzz at once (default: one a CPU).
# FUZZ_BIN_DIR picks other builds of the targets (default build/fuzz). To
# show it fails when it should, run the targets built with a planted
# off-by-one, or check's Retry-After rounded down (tests/fuzz/fuzz.mk):
#   make build/fuzz/planted/fuzz_rule build/fuzz/planted/fuzz_parse \
#	build/fuzz/planted/fuzz_check
#   FUZZ_BIN_DIR=build/fuzz/planted tests/fuzz/run.sh rule parse check
# fuzz_check makes BPF maps (the check server's ban table): run it as root.
set -uo pipefail

ALL_TARGETS=(rule policy parse exporter trace check)

usage() {
	echo "usage: tests/fuzz/run.sh [--seconds S] [--corpus DIR] [TARGET...]" >&2
	echo "  targets: ${ALL_TARGETS[*]}" >&2
	exit 2
}

die() {
	echo "tests/fuzz/run.sh: $*" >&2
	exit 2
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) || die "cannot find the repository root"
cd "$ROOT" || die "cannot cd to $ROOT"

seconds=${SLUICE_FUZZ_SECONDS:-20}
keep=
targets=()
while (($#)); do
	case $1 in
	--seconds)
		(($# >= 2)) || usage
		seconds=$2
		shift 2
		;;
	--corpus)
		(($# >= 2)) || usage
		keep=$2
		shift 2
		;;
	-h | --help) usage ;;
	-*) echo "tests/fuzz/run.sh: unknown option '$1'" >&2; usage ;;
	*)
		[[ " ${ALL_TARGETS[*]} " == *" $1 "* ]] || die "unknown target '$1': give ${ALL_TARGETS[*]}"
		targets+=("$1")
		shift
		;;
	esac
done
[[ $seconds =~ ^[0-9]+$ ]] || die "--seconds takes a whole number of seconds, got '$seconds'"
((${#targets[@]})) || targets=("${ALL_TARGETS[@]}")
bin_dir=${FUZZ_BIN_DIR:-build/fuzz}
for t in "${targets[@]}"; do
	[[ -x $bin_dir/fuzz_$t ]] || die "$bin_dir/fuzz_$t is missing: run 'make $bin_dir/fuzz_$t' (or make fuzz)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fuzz.XXXXXX") || die "cannot make a temporary directory"
trap 'rm -rf "$work"' EXIT
corpus_root=${keep:-$work/corpus}
crash_root=${keep:+$keep/crashes}
crash_root=${crash_root:-$work/crashes}

# libFuzzer's own detectors; a sanitizer report is a crash. A 16 MB
# quarantine (freed memory ASan keeps poisoned, 256 MB by default) still
# catches a use after free within a run and spares each target a slow
# start: policy check frees 100 KB a run, which filled the default's
# quarantine first at a sixth of the speed.
export ASAN_OPTIONS=${FUZZ_ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1:quarantine_size_mb=16}
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
FUZZ_FLAGS=(-max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)

# One target: its regression inputs, then SECONDS of fuzzing. Prints its
# report; writes its execution count to $work/T.execs and, when it fails,
# what failed to $work/T.failed.
fuzz_one() { # TARGET
	local t=$1 bin=$bin_dir/fuzz_$1 log=$work/$1.log start rc took execs rate entries a
	local -a regress
	echo 0 >"$work/$t.execs"

	# Regression inputs: each must run clean.
	mapfile -t regress < <(find "tests/fuzz/regress/$t" -type f 2>/dev/null | sort)
	if ((${#regress[@]})); then
		if ! "$bin" "${FUZZ_FLAGS[@]}" "${regress[@]}" >"$log" 2>&1; then
			echo "fuzz $t: a regression input fails:"
			grep -E "Running:|property failed|ERROR|SUMMARY|runtime error" "$log" | head -n 20
			echo "$t (regression)" >"$work/$t.failed"
			return
		fi
	fi
	if ((seconds == 0)); then
		echo "fuzz $t: ${#regress[@]} regression inputs clean"
		return
	fi

	mkdir -p "$corpus_root/$t" "$crash_root/$t" || {
		echo "fuzz $t: cannot make $corpus_root/$t"
		echo "$t (setup)" >"$work/$t.failed"
		return
	}
	start=$SECONDS
	"$bin" "${FUZZ_FLAGS[@]}" -max_total_time="$seconds" \
		-artifact_prefix="$crash_root/$t/" \
		"$corpus_root/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	took=$((SECONDS - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	execs=${execs:-0}
	echo "$execs" >"$work/$t.execs"
	rate=$((execs / (took ? took : 1)))
	entries=$(find "$corpus_root/$t" -type f | wc -l)
	if ((rc != 0)) || grep -qE "^(==[0-9]+==ERROR|SUMMARY: )|runtime error:" "$log"; then
		echo "fuzz $t: FAILED (exit $rc) after $execs executions in $took s:"
		grep -E "property failed|==ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -n 20
		for a in "$crash_root/$t"/*; do
			[[ -f $a ]] || continue
			echo "  input: $(od -An -c "$a" | head -n 4 | tr -s ' ')"
			[[ -n $keep ]] && echo "  kept as $a: minimise it with '$bin -minimize_crash=1" \
				"-runs=100000 $a' and add it to tests/fuzz/regress/$t/"
		done
		echo "$t" >"$work/$t.failed"
		return
	fi
	echo "fuzz $t: $execs executions in $took s ($rate/s), ${#regress[@]} regression inputs, corpus $entries entries, no crash"
}

# The targets run side by side, one a CPU (FUZZ_JOBS overrides); each gets
# its full SECONDS, the reports come out in order.
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[[ $jobs_max =~ ^[1-9][0-9]*$ ]] || die "FUZZ_JOBS must be a positive whole number, got '$jobs_max'"
for t in "${targets[@]}"; do
	while (($(jobs -rp | wc -l) >= jobs_max)); do
		wait -n
	done
	fuzz_one "$t" >"$work/$t.report" 2>&1 &
done
wait

failed=()
total_execs=0
for t in "${targets[@]}"; do
	cat "$work/$t.report"
	total_execs=$((total_execs + $(cat "$work/$t.execs" 2>/dev/null || echo 0)))
	if [[ -e $work/$t.failed ]]; then
		failed+=("$(cat "$work/$t.failed")")
	elif [[ ! -e $work/$t.execs ]]; then
		failed+=("$t (no report)")
	fi
done

if ((seconds)); then
	echo "fuzz: $total_execs executions over ${#targets[@]} targets"
fi
if ((${#failed[@]})); then
	echo "fuzz: FAILED: ${failed[*]}" >&2
	exit 1
fi
exit 0
