#!/usr/bin/env bash
# The XDP program's cost per packet, this tree next to another revision
# (REV, default f81c630, whose rules are plain CIDRs only), for the plain CIDR
# cases both bench_xdp binaries print. They run interleaved, three rounds
# each, and the median of each is shown: one run, side by side, so the
# machine's noise hits both alike.
#   tools/bench-before.sh [REV]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

rev=${1:-${SLUICE_BENCH_BEFORE:-f81c630}}
[[ $(id -u) -eq 0 ]] || { echo "bench-before.sh: must run as root" >&2; exit 1; }
if ! git rev-parse -q --verify "$rev^{commit}" >/dev/null 2>&1; then
	echo "bench-before.sh: revision $rev is not in this clone (a shallow clone?): skipped"
	exit 0
fi
tmp=$(mktemp -d /tmp/sluice-before.XXXXXX)
out=$(mktemp -d /tmp/sluice-before-out.XXXXXX)
cleanup() {
	git worktree remove --force "$tmp" >/dev/null 2>&1 || rm -rf "$tmp"
	rm -rf "$out"
}
trap cleanup EXIT
git worktree add -q --detach "$tmp" "$rev"
mkdir -p "$tmp/build/tests"
make -s -C "$tmp" build/tests/bench_xdp >/dev/null
make -s build/tests/bench_xdp >/dev/null

for round in 1 2 3; do
	"$tmp/build/tests/bench_xdp" > "$out/before.$round"
	build/tests/bench_xdp > "$out/now.$round"
done

# Rows: the case name (up to the numbers), then ns/pkt.
rows() { grep -v '^  --max-sources' "$@" | sed -n 's/^\(.*[^ ]\)  *\([0-9][0-9.]*\)  *[0-9][0-9.]*.*$/\1\t\2/p'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-46s %12s %12s\n' "case (plain CIDR rules, median of 3 runs)" "before ns" "now ns"
rows "$out/before.1" | cut -f1 | while IFS= read -r name; do
	b=$(for r in 1 2 3; do rows "$out/before.$r"; done | awk -F'\t' -v n="$name" '$1 == n { print $2 }' | median)
	a=$(for r in 1 2 3; do rows "$out/now.$r"; done | awk -F'\t' -v n="$name" '$1 == n { print $2 }' | median)
	[[ -n $a ]] || continue
	printf '%-46s %12s %12s\n' "$name" "$b" "$a"
done
echo "(before: $(git log -1 --format='%h %s' "$rev" | cut -c1-70))"
