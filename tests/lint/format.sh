#!/usr/bin/env bash
# lint/format: every C line changed since .clang-format came into the tree
# is as clang-format would write it (git clang-format over the changed
# lines only: the code before it is left as it was), up to layout: where
# lines break and how they align is the author's (clang-format's column
# layout of initialisers and its breaks between string literals read
# worse than the tree's, and it cannot keep the tabs that align #define
# values and trailing comments), so a hunk counts as formatted when its
# words and the blanks between them agree, blanks of any kind and length
# counted as one. Spacing (`if (`, `a + b`, `int *p`), braces and their
# placement are held, outside preprocessor lines (clang-format guesses at
# casts in macro bodies). And no changed line is indented with 8 spaces where
# a tab goes (checkpatch's rule). Exits 1 naming what differs, 77 without
# git clang-format or the base commit (a shallow clone).
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

# Each hunk's old and new text, joined and its blanks made one space: a
# hunk that still differs is a finding.
out=$(awk '
	function flush() {
		if (hunk != "" && norm(o) != norm(n)) { printf "%s\n%s", hunk, text; bad++ }
		hunk = ""; o = n = text = ""; pp["o"] = pp["n"] = 0
	}
	function norm(s) { gsub(/[ \t\n]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s); return s }
	/^diff --git/ { flush(); file = $3; sub(/^a\//, "", file); next }
	/^(index|---|\+\+\+) / { next }
	/^@@/ { flush(); hunk = file " " $0; next }
	# Preprocessor lines and their continuations are left out: clang-format
	# guesses at casts in macro bodies ("(gs)&1") and the tree does not.
	function code(line, side) {
		if (pp[side] || line ~ /^[ \t]*#/) {
			pp[side] = line ~ /\\$/
			return ""
		}
		return line "\n"
	}
	/^-/ { o = o code(substr($0, 2), "o"); text = text $0 "\n"; next }
	/^\+/ { n = n code(substr($0, 2), "n"); text = text $0 "\n"; next }
	END { flush(); if (bad) exit 1 }
' <<<"$diff")
ok_fmt=$?
# Changed lines indented with a run of 8 spaces.
spaces=$(git diff -U0 "$base" -- '*.c' '*.h' | awk '
	/^\+\+\+ / { file = substr($2, 3); next }
	/^@@/ { split($3, a, ","); line = substr(a[1], 2) - 1; next }
	/^\+/ { line++; if ($0 ~ /^\+\t*        /) printf "%s:%d: indented with spaces, not tabs\n", file, line }
')
((ok_fmt == 0)) && [[ -z $spaces ]] &&
	{ echo "lint/format: the C lines changed since ${base:0:12} are formatted (up to layout)"; exit 0; }
[[ -n $spaces ]] && printf '%s\n' "$spaces"
[[ -n $out ]] && printf '%s\n' "$out"
echo "lint/format: the lines above are not as .clang-format writes them: git clang-format ${base:0:12}"
exit 1
