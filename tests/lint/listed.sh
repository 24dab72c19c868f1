#!/usr/bin/env bash
# lint/listed: tests/list and the test files agree, so no test is written
# and never run. Each of these must be named by a command in the list:
#   - a shell script under tests/ whose first line is a #! (a test; a file
#     only sourced starts with `# shellcheck shell=bash`, has no #! and is
#     not executable),
#   - a C test tests/*/test_NAME.c, as its binary build/tests/test_NAME,
#   - a bad-input table tests/cli/cases*.txt.
# And every tests/ path a command names must exist. Exits 1 on a mismatch.
#
# usage: tests/lint/listed.sh [LIST]   (default tests/list)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) || exit 2
cd "$ROOT" || exit 2
list=${1:-tests/list}
[[ -r $list ]] || { echo "lint/listed: cannot read $list"; exit 2; }

# The commands' words, one a line.
words=$(awk -F'\t' '!/^[[:space:]]*(#|$)/ { print $2 }' "$list" | tr ' ' '\n' | grep -v '^$' | sort -u)
named() { grep -qxF "$1" <<<"$words"; }

bad=0
say() { echo "lint/listed: $*"; bad=1; }

while IFS= read -r f; do
	first=
	IFS= read -r first <"$f" || true
	if [[ $first == '#!'* ]]; then
		named "$f" || say "$f is a test (it starts with #!) that $list does not run: list it"
	elif [[ -x $f ]]; then
		say "$f is executable but has no #!: a sourced library is not executable (chmod -x)"
	fi
done < <(find tests -name '*.sh' -type f | sort)

while IFS= read -r f; do
	b=build/tests/$(basename "${f%.c}")
	named "$b" || say "$f builds $b, which $list does not run: list it"
done < <(find tests -name 'test_*.c' -type f | sort)

while IFS= read -r f; do
	named "$f" || say "$f is a bad-input table that $list does not run: list it"
done < <(find tests/cli -name 'cases*.txt' -type f | sort)

while IFS= read -r w; do
	[[ $w == tests/* && ! -e $w ]] && say "$list runs $w, which does not exist"
done <<<"$words"

((bad)) && exit 1
echo "lint/listed: every test file is in $list and every file it names exists"
