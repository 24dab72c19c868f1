#!/usr/bin/env bash
# lint/format: every C line changed since .clang-format came into the tree
# is as clang-format would write it (git clang-format over the changed
# lines only: the code before it is left as it was). Alignment is not
# held: a run of blanks inside a line may be tabs or spaces, one or many,
# as the tree aligns #define values and trailing comments with tabs,
# which clang-format cannot keep. Indentation, line breaks, braces and
# whether there is a blank at all are held. Exits 1 naming what differs,
# 77 without git clang-format or the base commit (a shallow clone).
#
# usage: tests/lint/format.sh [BASE]   (default $SLUICE_FORMAT_BASE, else
#        the commit that added .clang-format); fix with: git clang-format BASE
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) || exit 2
cd "$ROOT" || exit 2

command -v git-clang-format >/dev/null || { echo "lint/format: git-clang-format not installed (clang-format)"; exit 77; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "lint/format: not a git checkout"; exit 77; }
base=${1:-${SLUICE_FORMAT_BASE:-$(git log --diff-filter=A --format=%H -- .clang-format | tail -n 1)}}
[[ -n $base ]] && git cat-file -e "$base^{commit}" 2>/dev/null ||
	{ echo "lint/format: no base commit '${base:-}' (.clang-format not committed yet, or a shallow clone)"; exit 77; }

diff=$(git clang-format --diff --extensions c,h "$base" -- bpf include user tools tests 2>&1) || true
case $diff in
'' | 'no modified files to format' | 'clang-format did not modify any files')
	echo "lint/format: the C lines changed since ${base:0:12} are formatted"
	exit 0 ;;
esac

# Each hunk's old and new lines, blanks inside a line made one space: a
# hunk that still differs is a finding.
out=$(awk '
	function flush() {
		if (hunk != "" && o != n) { printf "%s\n%s", hunk, text; bad++ }
		hunk = ""; o = n = text = ""
	}
	function norm(s,   lead) {
		match(s, /^[ \t]*/); lead = substr(s, 1, RLENGTH)
		s = substr(s, RLENGTH + 1); gsub(/[ \t]+/, " ", s); sub(/ $/, "", s)
		return lead s
	}
	/^diff --git/ { flush(); file = $3; sub(/^a\//, "", file); next }
	/^(index|---|\+\+\+) / { next }
	/^@@/ { flush(); hunk = file " " $0; next }
	/^-/ { o = o norm(substr($0, 2)) "\n"; text = text $0 "\n"; next }
	/^\+/ { n = n norm(substr($0, 2)) "\n"; text = text $0 "\n"; next }
	END { flush(); if (bad) exit 1 }
' <<<"$diff") && { echo "lint/format: the C lines changed since ${base:0:12} are formatted (up to alignment)"; exit 0; }
printf '%s\n' "$out"
echo "lint/format: the hunks above are not as .clang-format writes them: git clang-format ${base:0:12}"
exit 1
