#!/usr/bin/env bash
# `make fuzz`: every parser fuzz target for FUZZ_SECONDS each (default 300),
# keeping what they find in build/fuzz/corpus/TARGET/ (crashes in
# build/fuzz/corpus/crashes/TARGET/) so that the next run starts from there;
# then the packet fuzzer, build/tests/fuzz_pkt, for as long, if it is built.
# Fails when any of them finds something.
#
# usage: [FUZZ_SECONDS=S] tools/fuzz.sh [TARGET...]   (targets: see tests/fuzz/run.sh)
set -uo pipefail

die() {
	echo "tools/fuzz.sh: $*" >&2
	exit 2
}

case ${1:-} in
-h | --help)
	echo "usage: [FUZZ_SECONDS=S] tools/fuzz.sh [TARGET...]" >&2
	echo "  fuzzes each parser target S seconds (default 300), then build/tests/fuzz_pkt if built" >&2
	exit 0
	;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || die "cannot find the repository root"
cd "$ROOT" || die "cannot cd to $ROOT"
seconds=${FUZZ_SECONDS:-300}
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] ||
	die "FUZZ_SECONDS must be a positive whole number of seconds, got '$seconds'"

rc=0
tests/fuzz/run.sh --seconds "$seconds" --corpus build/fuzz/corpus "$@" || rc=1

pkt=build/tests/fuzz_pkt
if (($# == 0)); then
	if [[ -x $pkt ]]; then
		echo "fuzz: the packet fuzzer, $seconds s"
		"$pkt" --seconds "$seconds" || rc=1
	else
		echo "fuzz: $pkt is not built: the packet path is not fuzzed"
	fi
fi
exit $rc
